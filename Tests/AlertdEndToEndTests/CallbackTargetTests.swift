// Issue 44 items 8 and 9, against the real binary: a callback URL written as an IPv4
// address in a form the resolver reads as one (`127.1`, `0x7f000001`) is judged as that
// address when it is posted or registered, not retried for a day; a name that only begins
// like a loopback address is a name; and a URL alertd logs or answers carries none of the
// secrets its user info, path or query held.

import AlertdTestSupport
import Foundation
import Testing

@Suite("Callback targets: addresses in every form, names, and secrets kept out of the log")
struct CallbackTargetTests {
    /// 127.0.0.1 in the forms `inet_aton` (and so every resolver) reads, and a private address.
    static let disguised = [
        ("http://127.1:9/hook", "127.0.0.1"), ("http://0x7f000001/hook", "127.0.0.1"), ("http://2130706433/hook", "127.0.0.1"),
        ("http://0177.0.0.1/hook", "127.0.0.1"), ("http://0x7f.1/hook", "127.0.0.1"), ("http://127.0.1/hook", "127.0.0.1"),
        ("http://10.1/hook", "10.0.0.1"), ("http://0xa9.0xfe.0xa9.0xfe/latest/meta-data", "169.254.169.254"),
    ]

    @Test(
        "a callback_url or webhook naming a denied address in a non-canonical form is refused at once, as its canonical form is",
        arguments: disguised)
    func disguisedAddressesRefusedAtPost(url: String, canonical: String) async throws {
        // The default callbacks.deny, no exceptions.
        let daemon = try await Daemon.start(.init(config: callbackConfig(allow: [])))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let posted = try await http.post(
            "/v1/clients/ops/alerts", json: #"{"title":"Deploy?","buttons":[{"title":"OK"}],"callback_url":"\#(url)"}"#)
        #expect(posted.status == 400, "\(url): \(posted.status) \(posted.text)")
        let problem = try posted.jsonObject()
        #expect(problem["code"] as? String == "invalid-alert")
        let errors = problem["errors"] as? [[String: Any]] ?? []
        #expect(errors.first?["field"] as? String == "callback_url", "\(problem)")
        let reason = errors.first.flatMap { $0["reason"] as? String } ?? ""
        #expect(reason.contains("\(canonical) is in callbacks.deny"), "\(problem)")

        let registered = try await http.post("/v1/clients/ops/webhooks", json: #"{"url":"\#(url)"}"#)
        #expect(registered.status == 400, "webhook \(url): \(registered.status) \(registered.text)")
        #expect(try registered.jsonObject()["code"] as? String == "bad-request")
        #expect(registered.text.contains("\(canonical) is in callbacks.deny"), "\(registered.text)")
        let hooks = try await http.get("/v1/clients/ops/webhooks").jsonObject()["webhooks"] as? [[String: Any]] ?? []
        #expect(hooks.isEmpty, "a refused webhook was registered: \(hooks)")
    }

    @Test("the canonical form's exception holds for every form: callbacks.allow 127.0.0.1 lets 127.1 through too")
    func disguisedAddressAllowedAsItsCanonicalForm() async throws {
        let daemon = try await Daemon.start(.init(config: callbackConfig(allow: ["127.0.0.1"])))
        defer { daemon.cleanup() }
        let posted = try await daemon.client().post(
            "/v1/clients/ops/alerts", json: #"{"title":"Deploy?","buttons":[{"title":"OK"}],"callback_url":"http://127.1:9/hook"}"#)
        #expect(posted.status == 201, "\(posted.status) \(posted.text)")
    }

    @Test("a name that begins like a loopback address is a name: alertd will not listen on it without tokens")
    func loopbackLookalikeIsNotLoopback() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-lookalike-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        for (host, beyond) in [("127.0.0.1.nip.io", true), ("127.1", false), ("127.0.0.1", false)] {
            let file = scratch.appendingPathComponent("\(host).yaml")
            try "listen: \"\(host):8080\"\nstate_dir: \(scratch.path)/state\n".write(to: file, atomically: true, encoding: .utf8)
            let checked = try await Program.alertd(["check-config", file.path])
            if beyond {
                #expect(checked.status == 1, "\(host): \(checked)")
                #expect(checked.stderr.contains("refusing to listen on \(host):8080 without auth.tokens"), "\(host): \(checked)")
            } else {
                #expect(checked.status == 0, "\(host): \(checked)")
            }
        }
    }

    @Test("a PostgreSQL server at 127.0.0.1.nip.io is beyond this machine: check-config warns that it is not verified")
    func databaseAtLookalikeIsWarnedOf() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-lookalike-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        for (host, warned) in [("127.0.0.1.nip.io", true), ("127.0.0.1", false)] {
            let file = scratch.appendingPathComponent("\(host).yaml")
            try """
            store:
              backend: postgres
              postgres:
                url: "postgres://alertd@\(host)/alertd"
            """.write(to: file, atomically: true, encoding: .utf8)
            let checked = try await Program.alertd(["check-config", file.path])
            let output = checked.stdout + checked.stderr
            #expect(output.contains("the connection to \(host) goes") == warned, "\(host): \(checked)")
        }
    }

    @Test("the refused-target warning and the webhook-exists answer show a URL without its credentials, path or query values")
    func secretsKeptOutOfTheLog() async throws {
        // A config-file webhook, checked at delivery only: its name resolves to loopback there,
        // which the default deny refuses (a callback_url or an API webhook would be refused at once).
        let url = "http://bot:s3cr3tpw@localhost:9/hooks/T0KEN-in-path?token=abc123&v=2"
        let daemon = try await Daemon.start(.init(config: callbackConfig(webhooks: [("ops", url)], allow: [])))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try await http.postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"OK"}]}"#)
        #expect(try await http.choose("ops", id(alert), #"{"button":"OK"}"#).status == 200)
        try await daemon.waitForStderr(containing: "callback target refused")
        let line = try #require(daemon.stderrLines(containing: "callback target refused").first)
        #expect(Daemon.logfmtFields(String(line))["target"] == "http://***@localhost:9/***?token=***&v=***", "\(line)")
        for secret in ["s3cr3tpw", "T0KEN", "abc123"] {
            #expect(!daemon.stderrText.contains(secret), "the log holds \(secret): \(daemon.stderrText.suffix(2000))")
        }

        let hook = "https://bot:hunter2@hooks.example.com/services/XYZSECRET?sig=def456"
        #expect(try await http.post("/v1/clients/ops/webhooks", json: #"{"url":"\#(hook)"}"#).status == 201)
        let again = try await http.post("/v1/clients/ops/webhooks", json: #"{"url":"\#(hook)"}"#)
        #expect(again.status == 409)
        #expect(try again.jsonObject()["code"] as? String == "webhook-exists")
        for secret in ["hunter2", "XYZSECRET", "def456"] {
            #expect(!again.text.contains(secret), "the 409 repeats \(secret): \(again.text)")
        }
        #expect(again.text.contains("https://***@hooks.example.com/***?sig=***"), "\(again.text)")
    }
}
