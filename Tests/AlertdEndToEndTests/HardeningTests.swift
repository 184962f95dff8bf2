import AlertdTestSupport
import Foundation
import Testing

@Suite("Hardening on the real daemon: rebinding, auth before the body, per-address connections")
struct HardeningTests {
    @Test("without tokens, a request through a rebound name is 403 over the wire; loopback names are served")
    func rebinding() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client(timeout: .seconds(5))
        let rebound = try await http.post(
            "/v1/clients/ops/webhooks", json: #"{"url":"http://attacker.example/steal"}"#,
            headers: [("Host", "attacker.example:\(daemon.port)")])
        #expect(rebound.status == 403)
        #expect(try rebound.jsonObject()["code"] as? String == "forbidden")
        let fromPage = try await http.post(
            "/v1/clients/ops/alerts", json: #"{"title":"x"}"#,
            headers: [("Host", "localhost:\(daemon.port)"), ("Origin", "http://attacker.example")])
        #expect(fromPage.status == 403)
        #expect(try await http.get("/v1/clients/ops/webhooks", headers: [("Host", "localhost:\(daemon.port)")]).text == #"{"webhooks":[]}"#)
        #expect(try await http.get("/v1/clients", headers: [("Host", "[::1]:\(daemon.port)")]).status == 200)
    }

    /// Sends a request head that announces a 60 000-byte body and no body, and reads the answer.
    private static func headOnly(_ daemon: Daemon, token: String) async throws -> (TestResponse, closed: Bool) {
        let connection = try await daemon.rawConnection()
        try await connection.send(
            Array(
                ("POST /v1/clients/ops/alerts HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n").utf8))
        // Before the fix the daemon waited for the body (until read_timeout_seconds, 30 s here): this read timed out.
        let response = try await connection.readResponse(timeout: .seconds(5))
        return (response, await connection.awaitClose(timeout: .seconds(5)))
    }

    @Test("a wrong token, or one without the route's role, is refused from the head: no body is waited for")
    func authBeforeBody() async throws {
        let reader = "s3cret-reader-token"
        let hex = await Program.sha256Hex(reader)
        let daemon = try await Daemon.start(
            .init(config: "auth:\n  tokens:\n    - { name: reader, sha256: \"\(hex)\", roles: [read], clients: ['*'] }\n"))
        defer { daemon.cleanup() }
        let (unauthorized, closed) = try await Self.headOnly(daemon, token: "wrong")
        #expect(unauthorized.status == 401)
        #expect(try unauthorized.jsonObject()["code"] as? String == "unauthorized")
        #expect(closed, "the announced body is not read: the connection is closed after the answer")
        let (forbidden, _) = try await Self.headOnly(daemon, token: reader)
        #expect(forbidden.status == 403)
        #expect(try forbidden.jsonObject()["code"] as? String == "forbidden")
        // A refusal without a body keeps the connection.
        let connection = try await daemon.rawConnection()
        #expect(try await connection.request("GET", "/v1/clients", headers: [("Authorization", "Bearer wrong")]).status == 401)
        #expect(try await connection.request("GET", "/v1/clients", headers: [("Authorization", "Bearer \(reader)")]).status == 200)
        #expect(connection.isOpen)
    }

    @Test(
        "limits.max_connections_per_ip: a connection over it is closed as it is accepted, before it sends a byte; a freed slot serves again"
    )
    func connectionsPerAddress() async throws {
        let daemon = try await Daemon.start(.init(config: "limits: { max_connections_per_ip: 2, first_byte_timeout_seconds: 30 }\n"))
        defer { daemon.cleanup() }
        let held = [try await daemon.rawConnection(), try await daemon.rawConnection()]
        for connection in held { #expect(try await connection.request("GET", "/healthz").status == 200) }
        // Silent sockets from the same address: before, each took a connection slot until
        // its first request (and the watchdog's probe, from loopback too, queued behind them).
        for _ in 0..<5 {
            let third = try IdleSocket(port: daemon.port)
            #expect(await third.awaitClose(timeout: .seconds(5)), "a connection over the per-address limit stayed open")
        }
        // Still served on the connections it holds.
        #expect(try await held[0].request("GET", "/healthz").status == 200)
        await held[1].close()
        // The daemon learns of the close asynchronously: a new connection is served once it has.
        let deadline = ContinuousClock.now + .seconds(10)
        var status = 0
        while status != 200, ContinuousClock.now < deadline {
            let fresh = try await daemon.rawConnection()
            status = (try? await fresh.request("GET", "/healthz", timeout: .seconds(2)).status) ?? 0
            await fresh.close()
            if status != 200 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(status == 200)
        // On the connection still held: a new one could be refused while the daemon has
        // not yet learnt that the last one closed.
        let text = try await held[0].request("GET", "/metrics").text
        #expect((metric(text, #"alertd_http_connections_refused_total{reason="address"}"#) ?? 0) >= 5, "\(text)")
    }
}
