import AlertdTestSupport
import Foundation
import Testing

@Suite("HTTP behaviour of the real daemon")
struct HTTPBehaviourTests {
    @Test("one keep-alive connection carries inline answers, answers after a commit, a parked wait and errors")
    func keepAliveKept() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let connection = try await daemon.rawConnection()
        let json = [("Content-Type", "application/json")]
        let posted = try await connection.request(
            "POST", "/v1/clients/ops/alerts", headers: json, body: Array(#"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#.utf8))
        let alert = try posted.jsonObject()  // answered after its commit
        let responses = [
            posted,
            try await connection.request("GET", "/v1/clients/ops/alerts/current"),  // answered inline
            // parked, then its wait ran out
            try await connection.request("GET", "/v1/clients/ops/alerts/current?wait=1&after=\(id(alert))"),
            try await connection.request("GET", "/v1/clients/ops/nothing"),  // 404
            try await connection.request("POST", "/v1/clients/ops/alerts", headers: json, body: Array(#"{"title":""}"#.utf8)),  // 400
            try await connection.request(
                "POST", "/v1/clients/ops/alerts/\(id(alert))/choice", headers: json, body: Array(#"{"button":"Deploy"}"#.utf8)),
            try await connection.request("GET", "/healthz"),
        ]
        #expect(responses.map(\.status) == [201, 200, 200, 404, 400, 200, 200])
        #expect(responses.allSatisfy { $0.header("Connection")?.lowercased() != "close" })
        #expect(connection.isOpen, "alertd closed a keep-alive connection")
    }

    @Test(
        "HEAD is answered wherever GET is, without a body",
        arguments: [
            "/v1/clients/ops/alerts/current", "/v1/clients/ops/alerts", "/v1/clients", "/healthz",
        ])
    func head(path: String) async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        _ = try await daemon.client().postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#)
        let connection = try await daemon.rawConnection()
        let get = try await connection.request("GET", path)
        let head = try await connection.request("HEAD", path)
        #expect(head.status == get.status)
        #expect(head.body.isEmpty)
        #expect(head.header("Content-Type") == get.header("Content-Type"))
        #expect(try await connection.request("GET", "/healthz").status == 200, "the connection goes on after a HEAD")
    }

    @Test("a configured limits.max_body_bytes bounds the body: the limit is accepted, one byte more is 413")
    func configuredBodyLimit() async throws {
        let daemon = try await Daemon.start(.init(config: "limits:\n  max_body_bytes: 2048\n"))
        defer { daemon.cleanup() }
        func body(_ size: Int) -> String {
            let frame = #"{"title":"padded","message":""}"#
            return #"{"title":"padded","message":"\#(String(repeating: "m", count: size - frame.utf8.count))"}"#
        }
        #expect(body(2048).utf8.count == 2048)
        let fits = try await daemon.client().post("/v1/clients/ops/alerts", json: body(2048))
        #expect(fits.status == 201)
        let over = try await daemon.client().post("/v1/clients/ops/alerts", json: body(2049))
        #expect(over.status == 413)
        #expect(try over.jsonObject()["code"] as? String == "payload-too-large")
        let listed = try await daemon.client().get("/v1/clients/ops/alerts").jsonObject()["alerts"] as? [Any]
        #expect(listed?.count == 1)
    }
}
