import AlertdTestSupport
import Foundation
import Testing

@Suite("Request ids: on every answer and on the request's log line")
struct RequestLogTests {
    @Test("a client's X-Request-Id is echoed and logged with the request at debug; a bad one is replaced")
    func requestIDs() async throws {
        let daemon = try await Daemon.start(.init(config: "log: { level: debug }\n"))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let given = try await http.get("/healthz", headers: [("X-Request-Id", "deploy-42.a_b")])
        #expect(given.header("X-Request-Id") == "deploy-42.a_b")
        try await daemon.waitForStderr(containing: "request_id=deploy-42.a_b")
        let line = try #require(daemon.stderrText.split(separator: "\n").first { $0.contains("request_id=deploy-42.a_b") })
        let fields = Daemon.logfmtFields(String(line))
        #expect(fields["msg"] == "request" && fields["method"] == "GET" && fields["path"] == "/healthz" && fields["status"] == "200")
        #expect(Double(fields["ms"] ?? "") != nil)

        // Generated when absent or unusable, and different each time; errors carry one too.
        let first = try await http.get("/v1/clients").header("X-Request-Id")
        let second = try await http.get("/v1/nowhere")
        #expect(first != nil && second.header("X-Request-Id") != nil && first != second.header("X-Request-Id"))
        #expect(second.status == 404)
        let replaced = try await http.get("/healthz", headers: [("X-Request-Id", "has spaces and \"quotes\"")]).header("X-Request-Id")
        #expect(replaced != nil && replaced?.contains(" ") == false)
        let long = String(repeating: "x", count: 65)
        #expect(try await http.get("/healthz", headers: [("X-Request-Id", long)]).header("X-Request-Id") != long)
    }

    @Test("at info level no per-request line is written")
    func quietAtInfo() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let response = try await daemon.client().get("/healthz", headers: [("X-Request-Id", "quiet-1")])
        #expect(response.header("X-Request-Id") == "quiet-1")
        #expect(try await daemon.terminate() == 0)
        #expect(!daemon.stderrText.contains("request_id=quiet-1"))
    }

    @Test("a warning logged while answering a request carries that request's id")
    func warningsCarryTheRequestID() async throws {
        let first = try await Daemon.start(.init(config: "callbacks: { signing_secret: s3cret }\n"))
        defer { first.cleanup() }
        let alert = try await first.client().postAlert(
            "ops", #"{"title": "T", "buttons": [{"title": "ok"}], "callback_url": "http://hooks.example.com:1/cb"}"#)
        // Restarted without callbacks.signing_secret: the callback cannot be signed, and the choice says so.
        try first.rewriteConfig("log: { level: info }\n")
        let daemon = try await first.restart()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let chosen = try await http.post(
            "/v1/clients/ops/alerts/\(id(alert))/choice", json: #"{"button": "ok"}"#, headers: [("X-Request-Id", "choice-7")])
        #expect(chosen.status == 200)
        try await daemon.waitForStderr(containing: "request_id=choice-7")
        let line = try #require(daemon.stderrText.split(separator: "\n").first { $0.contains("request_id=choice-7") })
        let fields = Daemon.logfmtFields(String(line))
        #expect(fields["level"] == "warning" && fields["msg"]?.contains("signing_secret") == true && fields["alert"] == id(alert))
    }
}
