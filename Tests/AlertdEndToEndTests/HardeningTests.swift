import Foundation
import Testing

@Suite("Hardening on the real daemon: rebinding, auth before the body, per-address connections", .ownThreads)
struct HardeningTests {
    @Test("without tokens, a request through a rebound name is 403 over the wire; loopback names are served")
    func rebinding() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client(timeout: 5)
        let rebound = try http.post(
            "/v1/clients/ops/webhooks", json: #"{"url":"http://attacker.example/steal"}"#,
            headers: [("Host", "attacker.example:\(daemon.port)")])
        #expect(rebound.status == 403)
        #expect(try rebound.jsonObject()["code"] as? String == "forbidden")
        let fromPage = try http.post(
            "/v1/clients/ops/alerts", json: #"{"title":"x"}"#,
            headers: [("Host", "localhost:\(daemon.port)"), ("Origin", "http://attacker.example")])
        #expect(fromPage.status == 403)
        #expect(try http.get("/v1/clients/ops/webhooks", headers: [("Host", "localhost:\(daemon.port)")]).text == #"{"webhooks":[]}"#)
        #expect(try http.get("/v1/clients", headers: [("Host", "[::1]:\(daemon.port)")]).status == 200)
    }

    /// Sends a request head that announces a 60 000-byte body and no body, and reads the answer.
    private static func headOnly(_ daemon: Daemon, token: String) throws -> (TestResponse, closed: Bool) {
        let client = daemon.client(timeout: 5)
        defer { client.close() }
        try client.sendRaw(
            Array(
                ("POST /v1/clients/ops/alerts HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n").utf8))
        // Before the fix the daemon waited for the body (until read_timeout_seconds, 30 s here): this read timed out.
        let response = try client.readResponse()
        return (response, client.awaitServerClose(timeout: 5))
    }

    @Test("a wrong token, or one without the route's role, is refused from the head: no body is waited for")
    func authBeforeBody() throws {
        let reader = "s3cret-reader-token"
        let hex = Program.sha256Hex(reader)
        let daemon = try Daemon.start(
            .init(config: "auth:\n  tokens:\n    - { name: reader, sha256: \"\(hex)\", roles: [read], clients: ['*'] }\n"))
        defer { daemon.cleanup() }
        let (unauthorized, closed) = try Self.headOnly(daemon, token: "wrong")
        #expect(unauthorized.status == 401)
        #expect(try unauthorized.jsonObject()["code"] as? String == "unauthorized")
        #expect(closed, "the announced body is not read: the connection is closed after the answer")
        let (forbidden, _) = try Self.headOnly(daemon, token: reader)
        #expect(forbidden.status == 403)
        #expect(try forbidden.jsonObject()["code"] as? String == "forbidden")
        // A refusal without a body keeps the connection.
        let http = daemon.client(timeout: 5)
        #expect(try http.get("/v1/clients", headers: [("Authorization", "Bearer wrong")]).status == 401)
        #expect(try http.get("/v1/clients", headers: [("Authorization", "Bearer \(reader)")]).status == 200)
        #expect(http.connectionsOpened == 1)
    }

    @Test("limits.max_connections_per_ip: the connection over it gets 429 and is closed; a freed slot serves again")
    func connectionsPerAddress() throws {
        let daemon = try Daemon.start(.init(config: "limits: { max_connections_per_ip: 2 }\n"))
        defer { daemon.cleanup() }
        let held = [daemon.client(timeout: 5), daemon.client(timeout: 5)]
        for client in held { #expect(try client.get("/healthz").status == 200) }
        let third = daemon.client(timeout: 5)
        let refused = try third.get("/healthz")
        #expect(refused.status == 429)
        #expect(try refused.jsonObject()["code"] as? String == "rate-limited")
        #expect(refused.header("Retry-After") != nil)
        #expect(third.awaitServerClose(timeout: 5))
        // Still served on the connections it holds.
        #expect(try held[0].get("/healthz").status == 200)
        held[1].close()
        // The daemon learns of the close asynchronously: a new connection is served once it has.
        let deadline = Date(timeIntervalSinceNow: 10)
        var status = 0
        while status != 200, Date() < deadline {
            let fresh = daemon.client(timeout: 2)
            status = (try? fresh.get("/healthz").status) ?? 0
            fresh.close()
            if status != 200 { usleep(20_000) }
        }
        #expect(status == 200)
    }
}
