import AlertdTestSupport
import Foundation
import Testing

@Suite("limits.max_connections bounds the connections held at once")
struct ConnectionLimitTests {
    @Test("beyond max_connections a new connection gets 503 and is closed, not left waiting; afterwards the daemon serves normally")
    func connectionLimit() async throws {
        // 2 in all: one per libmicrohttpd daemon on this machine's cores (at most 2 here).
        let daemon = try await Daemon.start(.init(config: "limits: { max_connections: 2, max_wait_seconds: 2 }\n"))
        defer { daemon.cleanup() }
        let park = Array("GET /v1/clients/ops/alerts/current?wait=2 HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        var connections: [RawConnection] = []
        for _ in 0..<6 { connections.append(try await daemon.rawConnection()) }
        for connection in connections { try? await connection.send(park) }
        // Each is either parked (answered 204 when its 2 s wait ends) or refused at once with 503.
        var statuses: [Int] = []
        for connection in connections { statuses.append((try? await connection.readResponse(timeout: .seconds(5)).status) ?? -1) }
        let refused = statuses.filter { $0 == 503 }.count
        #expect(statuses.allSatisfy { $0 == 503 || $0 == 204 }, "\(statuses)")
        #expect(refused >= 4, "at most max_connections are served at once: \(statuses)")
        for connection in connections { await connection.close() }
        // The held connections are gone: the daemon serves new ones normally.
        let deadline = ContinuousClock.now + .seconds(10)
        var status = 0
        while status != 200, ContinuousClock.now < deadline {
            status = (try? await daemon.rawConnection().request("GET", "/healthz", timeout: .seconds(2)).status) ?? 0
            if status != 200 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(status == 200)
    }
}
