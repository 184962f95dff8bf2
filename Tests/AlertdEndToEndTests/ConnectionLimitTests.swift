import Foundation
import Testing

@Suite("limits.max_connections bounds the connections held at once", .ownThreads)
struct ConnectionLimitTests {
    @Test("beyond max_connections a new connection gets 503 and is closed, not left waiting; afterwards the daemon serves normally")
    func connectionLimit() throws {
        // 2 in all: one per libmicrohttpd daemon on this machine's cores (at most 2 here).
        let daemon = try Daemon.start(.init(config: "limits: { max_connections: 2, max_wait_seconds: 2 }\n"))
        defer { daemon.cleanup() }
        let park = Array("GET /v1/clients/ops/alerts/current?wait=2 HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        let clients = (0..<6).map { _ in daemon.client(timeout: 5) }
        defer { clients.forEach { $0.close() } }
        for client in clients { try? client.sendRaw(park) }
        // Each is either parked (answered 204 when its 2 s wait ends) or refused at once with 503.
        var statuses: [Int] = []
        for client in clients { statuses.append((try? client.readResponse().status) ?? -1) }
        let refused = statuses.filter { $0 == 503 }.count
        #expect(statuses.allSatisfy { $0 == 503 || $0 == 204 }, "\(statuses)")
        #expect(refused >= 4, "at most max_connections are served at once: \(statuses)")
        clients.forEach { $0.close() }
        // The held connections are gone: the daemon serves new ones normally.
        let deadline = Date(timeIntervalSinceNow: 10)
        var status = 0
        while status != 200, Date() < deadline {
            status = (try? daemon.client(timeout: 2).get("/healthz").status) ?? 0
            if status != 200 { usleep(20_000) }
        }
        #expect(status == 200)
    }
}
