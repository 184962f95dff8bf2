import Foundation
import Testing

@Suite("HTTP behaviour of the real daemon", .ownThreads)
struct HTTPBehaviourTests {
    @Test("one keep-alive connection carries inline answers, answers after a commit, a parked wait and errors")
    func keepAliveKept() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try http.postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#)  // answered after its commit
        let responses = [
            try http.get("/v1/clients/ops/alerts/current"),  // answered inline
            try http.get("/v1/clients/ops/alerts/current?wait=1&after=\(id(alert))"),  // parked, then its wait ran out
            try http.get("/v1/clients/ops/nothing"),  // 404
            try http.post("/v1/clients/ops/alerts", json: #"{"title":""}"#),  // 400 invalid-alert
            try http.choose("ops", id(alert), #"{"button":"Deploy"}"#),  // answered after its commit
            try http.get("/healthz"),
        ]
        #expect(responses.map(\.status) == [200, 200, 404, 400, 200, 200])
        #expect(responses.allSatisfy { $0.header("Connection")?.lowercased() != "close" })
        #expect(http.connectionsOpened == 1, "alertd closed a keep-alive connection")
    }

    @Test(
        "HEAD is answered wherever GET is, without a body",
        arguments: [
            "/v1/clients/ops/alerts/current", "/v1/clients/ops/alerts", "/v1/clients", "/healthz",
        ])
    func head(path: String) throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        _ = try http.postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#)
        let get = try http.get(path)
        let head = try http.request("HEAD", path)
        #expect(head.status == get.status)
        #expect(head.body.isEmpty)
        #expect(head.header("Content-Type") == get.header("Content-Type"))
        #expect(try http.get("/healthz").status == 200, "the connection goes on after a HEAD")
    }

    @Test("a configured limits.max_body_bytes bounds the body: the limit is accepted, one byte more is 413")
    func configuredBodyLimit() throws {
        let daemon = try Daemon.start(.init(config: "limits:\n  max_body_bytes: 2048\n"))
        defer { daemon.cleanup() }
        func body(_ size: Int) -> String {
            let frame = #"{"title":"padded","message":""}"#
            return #"{"title":"padded","message":"\#(String(repeating: "m", count: size - frame.utf8.count))"}"#
        }
        #expect(body(2048).utf8.count == 2048)
        let fits = try daemon.client().post("/v1/clients/ops/alerts", json: body(2048))
        #expect(fits.status == 201)
        let over = try daemon.client().post("/v1/clients/ops/alerts", json: body(2049))
        #expect(over.status == 413)
        #expect(try over.jsonObject()["code"] as? String == "payload-too-large")
        let listed = try daemon.client().get("/v1/clients/ops/alerts").jsonObject()["alerts"] as! [Any]
        #expect(listed.count == 1)
    }
}
