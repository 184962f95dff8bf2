import Foundation
import Testing

@Suite("Slow clients: a whole request within limits.read_timeout_seconds, or the connection is closed", .ownThreads)
struct SlowClientTests {
    static let config = "limits:\n  read_timeout_seconds: 1\n  max_wait_seconds: 5\n"

    /// Sends `bytes` one at a time, 50 ms apart, until the daemon closes the connection;
    /// returns the seconds that took, or nil when every byte went out and it stayed open.
    static func trickle(_ bytes: [UInt8], on connection: TestHTTPClient) -> Double? {
        let start = Date()
        for byte in bytes {
            do {
                try connection.sendRaw([byte])
            } catch {
                return connection.awaitServerClose(timeout: 1) ? Date().timeIntervalSince(start) : nil
            }
            if connection.awaitServerClose(timeout: 0.05) { return Date().timeIntervalSince(start) }
        }
        return nil
    }

    @Test("a header trickled a byte at a time is cut off; the daemon serves others meanwhile and after")
    func slowHeader() throws {
        let daemon = try Daemon.start(.init(config: Self.config))
        defer { daemon.cleanup() }
        let slow = daemon.client()
        let others = daemon.client()
        let header = Array("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 400)
        let cut = try #require(Self.trickle(header, on: slow), "a header trickled for 20 s was never cut off")
        #expect(cut >= 0.9 && cut < 4, "cut after \(cut) s with a 1 s read timeout")
        #expect(try others.get("/healthz").status == 200)
        #expect(try daemon.client().get("/healthz").status == 200)
    }

    @Test("a body trickled a byte at a time is cut off and creates nothing")
    func slowBody() throws {
        let daemon = try Daemon.start(.init(config: Self.config))
        defer { daemon.cleanup() }
        let slow = daemon.client()
        let body = Array(#"{"title": "never arrives completely", "message": "\#(String(repeating: "x", count: 300))"}"#.utf8)
        let head =
            "POST /v1/clients/ops/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        try slow.sendRaw(Array(head.utf8))
        let cut = try #require(Self.trickle(body, on: slow), "a body trickled for 15 s was never cut off")
        #expect(cut >= 0.9 && cut < 4, "cut after \(cut) s")
        let list = try daemon.client().get("/v1/clients/ops/alerts").jsonObject()
        #expect((list["alerts"] as? [Any])?.isEmpty == true)
    }

    @Test("an idle keep-alive connection is closed after the timeout; one that keeps asking is not")
    func idleKeepAlive() throws {
        let daemon = try Daemon.start(.init(config: Self.config))
        defer { daemon.cleanup() }
        let busy = daemon.client()
        let idle = daemon.client()
        #expect(try idle.get("/healthz").status == 200)
        let start = Date()
        // Requests every 300 ms keep their connection: each answer gives the next request a new second.
        while Date().timeIntervalSince(start) < 2.5 {
            #expect(try busy.get("/healthz").header("Connection")?.lowercased() != "close")
            usleep(300_000)
        }
        #expect(idle.awaitServerClose(timeout: 0.1), "the idle connection is still open after 2.5 s")
        #expect(busy.isConnected && busy.connectionsOpened == 1, "the busy connection was closed and reopened")
    }

    @Test("a long-poll longer than the read timeout is answered, not cut")
    func parkedIsNotTimed() throws {
        let daemon = try Daemon.start(.init(config: Self.config))
        defer { daemon.cleanup() }
        let waiter = daemon.client()
        let start = Date()
        let answer = try waiter.get("/v1/clients/ops/alerts/current?wait=3")
        #expect(answer.status == 204 && Date().timeIntervalSince(start) >= 2.9)
        #expect(try waiter.get("/healthz").status == 200)
        #expect(waiter.connectionsOpened == 1, "the long-poll's connection was closed")
    }
}
