import AlertdInProcess
import AlertdTestSupport
import AlertdEngine
import AlertdWire
import Foundation
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdHTTP

@Suite("Registered webhooks")
struct WebhookAPITests {
    // Loopback receivers: the default callbacks.deny refuses them, callbacks.allow names them.
    static let config = """
        callbacks: { allow: ["127.0.0.0/8", "::1"] }
        webhooks:
          - { client: ops, url: "http://127.0.0.1:9000/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }
        """

    @Test("registering without a secret generates a whsec_ secret of 32 random bytes, shown once")
    func generatedSecret() async throws {
        try await withAlertd { daemon in
            let created = try await daemon.send("POST", "/v1/clients/ops/webhooks", json: #"{"url":"https://hooks.example/alerts"}"#)
            #expect(created.status == 201)
            let body = try created.jsonObject()
            let id = try #require(body["id"] as? String)
            #expect(id.hasPrefix("wh_"))
            #expect(created.header("Location") == "/v1/clients/ops/webhooks/\(id)")
            let secret = try #require(body["secret"] as? String)
            #expect(secret.hasPrefix("whsec_"))
            #expect(Data(base64Encoded: String(secret.dropFirst(6)))?.count == 32)
            let other = try await daemon.send("POST", "/v1/clients/ops/webhooks", json: #"{"url":"https://hooks.example/other"}"#)
                .jsonObject()
            #expect(other["secret"] as? String != secret)

            let listed = try await daemon.send("GET", "/v1/clients/ops/webhooks")
            #expect(listed.text.contains(secret) == false, "secrets are not shown again")
            let one = try await daemon.send("GET", "/v1/clients/ops/webhooks/\(id)").jsonObject()
            #expect(one["url"] as? String == "https://hooks.example/alerts")
            #expect(one["secret"] == nil)
        }
    }

    @Test("a URL the client has already is 409 webhook-exists naming the webhook; another client may have it")
    func duplicateURL() async throws {
        try await withAlertd(config: Self.config) { daemon in
            let url = #"{"url":"https://hooks.example/alerts"}"#
            let first = try await daemon.send("POST", "/v1/clients/ops/webhooks", json: url)
            #expect(first.status == 201)
            let id = try #require(try first.jsonObject()["id"] as? String)
            let again = try await daemon.send("POST", "/v1/clients/ops/webhooks", json: url)
            #expect(again.status == 409)
            #expect(try again.jsonObject()["code"] as? String == "webhook-exists")
            #expect((try again.jsonObject()["detail"] as? String)?.contains(id) == true, "\(again.text)")
            // The config file's webhook counts too.
            let configured = try await daemon.send("POST", "/v1/clients/ops/webhooks", json: #"{"url":"http://127.0.0.1:9000/hook"}"#)
            #expect(configured.status == 409, "\(configured.text)")
            #expect(try await daemon.send("POST", "/v1/clients/team/webhooks", json: url).status == 201)
            // Once removed, the URL can be registered again.
            #expect(try await daemon.send("DELETE", "/v1/clients/ops/webhooks/\(id)").status == 204)
            #expect(try await daemon.send("POST", "/v1/clients/ops/webhooks", json: url).status == 201)
            let list = try await daemon.send("GET", "/v1/clients/ops/webhooks").jsonObject()["webhooks"] as! [[String: Any]]
            #expect(list.count(where: { $0["url"] as? String == "https://hooks.example/alerts" }) == 1)
        }
    }

    @Test("two registrations of one URL at once: one is 201, the other 409")
    func concurrentDuplicates() async throws {
        try await withAlertd { daemon in
            for round in 0..<20 {
                let body = #"{"url":"https://hooks.example/r\#(round)"}"#
                let answers = (0..<4).map { _ in daemon.begin("POST", "/v1/clients/ops/webhooks", json: body) }
                var statuses: [Int] = []
                for answer in answers { statuses.append(try await answer.value().status) }
                #expect(statuses.sorted() == [201, 409, 409, 409], "round \(round): \(statuses)")
            }
            let list = try await daemon.send("GET", "/v1/clients/ops/webhooks").jsonObject()["webhooks"] as! [[String: Any]]
            #expect(list.count == 20)
        }
    }

    @Test("a given secret is kept, and webhooks survive a restart")
    func givenSecretAndRestart() async throws {
        try await withAlertd { daemon in
            let created = try await daemon.send(
                "POST", "/v1/clients/ops/webhooks", json: #"{"url":"https://hooks.example.com/h","secret":"my secret, long enough"}"#)
            #expect(try created.jsonObject()["secret"] as? String == "my secret, long enough")
            let id = try created.jsonObject()["id"] as! String
            try await daemon.restart()
            let list = try await daemon.send("GET", "/v1/clients/ops/webhooks").jsonObject()["webhooks"] as! [[String: Any]]
            #expect(list.map { $0["id"] as? String } == [id])
            #expect(list.first?["source"] as? String == "api")
            #expect((try await daemon.send("GET", "/v1/clients/other/webhooks").jsonObject()["webhooks"] as! [Any]).isEmpty)
        }
    }

    @Test("deleting removes it for good; an unknown id is 404")
    func delete() async throws {
        try await withAlertd { daemon in
            let id =
                try await daemon.send("POST", "/v1/clients/ops/webhooks", json: #"{"url":"https://a.example/h"}"#).jsonObject()["id"]
                as! String
            #expect(try await daemon.send("DELETE", "/v1/clients/ops/webhooks/\(id)").status == 204)
            #expect(try await daemon.send("GET", "/v1/clients/ops/webhooks/\(id)").status == 404)
            #expect(try await daemon.send("DELETE", "/v1/clients/ops/webhooks/\(id)").status == 404)
            #expect(try await daemon.send("DELETE", "/v1/clients/other/webhooks/\(id)").status == 404)
            try await daemon.restart()
            #expect((try await daemon.send("GET", "/v1/clients/ops/webhooks").jsonObject()["webhooks"] as! [Any]).isEmpty)
        }
    }

    @Test("webhooks from the config are listed with source config and cannot be deleted through the API")
    func configWebhooks() async throws {
        try await withAlertd(config: Self.config) { daemon in
            let list = try await daemon.send("GET", "/v1/clients/ops/webhooks").jsonObject()["webhooks"] as! [[String: Any]]
            #expect(list.count == 1)
            let id = try #require(list.first?["id"] as? String)
            #expect(id.hasPrefix("wh_cfg_"))
            #expect(list.first?["source"] as? String == "config")
            let refused = try await daemon.send("DELETE", "/v1/clients/ops/webhooks/\(id)")
            #expect(refused.status == 403)
            #expect(try refused.jsonObject()["code"] as? String == "forbidden")
            try await daemon.restart(config: Self.config)
            let again = try await daemon.send("GET", "/v1/clients/ops/webhooks").jsonObject()["webhooks"] as! [[String: Any]]
            #expect(again.first?["id"] as? String == id, "config webhook ids are stable across restarts")
        }
    }

    @Test(
        "an invalid registration is 400 with the reason",
        arguments: [
            (#"{"url":"ftp://x/hook"}"#, "http or https"),
            (#"{"url":"http:///hook"}"#, "host"),
            (#"{"url":"http://x:99999/"}"#, "port"),
            (#"{"url":"https://x/","secret":"whsec_!!!"}"#, "base64"),
            (#"{"url":"https://x/","secret":""}"#, "secret"),
            (#"{"url":"https://x/","events":["all"]}"#, "unknown field events"),
            (#"{"secret":"s"}"#, "url is required"),
            (#"{"url":5}"#, "url is required"),
            (#"["https://x/"]"#, "JSON object"),
            (#"{"url":"#, "not valid JSON"),
        ])
    func invalid(body: String, reason: String) async throws {
        try await withAlertd { daemon in
            let response = try await daemon.send("POST", "/v1/clients/ops/webhooks", json: body)
            #expect(response.status == 400)
            #expect(try response.jsonObject()["code"] as? String == "bad-request")
            #expect((try response.jsonObject()["detail"] as? String ?? "").contains(reason), "\(response.text)")
            #expect((try await daemon.send("GET", "/v1/clients/ops/webhooks").jsonObject()["webhooks"] as! [Any]).isEmpty)
        }
    }
}
