// The Alertmanager integration (docs/alertmanager.md) as alertd's API shows it: its webhook
// payload taken on POST /v1/integrations/alertmanager/{client}, one pending alert per
// fingerprint, resolutions withdrawing, bad payloads refused whole; and a silence button's
// silence created in the real Alertmanager (Debian's prometheus-alertmanager) through the
// outbox, retried while Alertmanager is down. In process by default, on PostgreSQL with
// ALERTD_TEST_STORE=postgres. The loop with Alertmanager posting to a real alertd binary
// is the end-to-end tier's (AlertmanagerLoopTests).

import AlertdTestSupport
import Foundation
import Testing

/// Builds Alertmanager's webhook payloads (version 4) as Alertmanager 0.25 writes them.
enum AM {
    static let startsAt = "2026-11-21T19:01:00.123456789Z"

    /// One alert of a payload, its labels `alertname`, `instance`, `job` (`job`, which tells
    /// the tests' alerts apart) and `severity`, and their fingerprint as Alertmanager computes it.
    static func alert(
        _ job: String, status: String = "firing", alertname: String? = "DiskFull", severity: String? = "critical",
        instance: String = "db1:9100", summary: String? = "Disk full on db1", description: String? = "/var is 99% full",
        startsAt: String = AM.startsAt
    ) -> [String: Any] {
        var labels = ["instance": instance, "job": job]
        if let alertname { labels["alertname"] = alertname }
        if let severity { labels["severity"] = severity }
        return alert(labels: labels, status: status, summary: summary, description: description, startsAt: startsAt)
    }

    /// One alert of a payload with exactly `labels`.
    static func alert(
        labels: [String: String], status: String = "firing", summary: String? = "Disk full on db1",
        description: String? = "/var is 99% full", startsAt: String = AM.startsAt
    ) -> [String: Any] {
        let fingerprint = TestAlertmanager.fingerprint(labels)
        var annotations: [String: String] = [:]
        if let summary { annotations["summary"] = summary }
        if let description { annotations["description"] = description }
        return [
            "status": status, "labels": labels, "annotations": annotations, "startsAt": startsAt,
            "endsAt": status == "resolved" ? "2026-11-21T20:00:00Z" : "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus:9090/graph?g0.expr=disk", "fingerprint": fingerprint,
        ]
    }

    /// A whole notification around `alerts`.
    static func payload(_ alerts: [[String: Any]]) -> [String: Any] {
        [
            "receiver": "alertd", "status": alerts.contains { $0["status"] as? String == "firing" } ? "firing" : "resolved",
            "alerts": alerts, "groupLabels": ["alertname": "DiskFull"], "commonLabels": [:], "commonAnnotations": [:],
            "externalURL": "http://alertmanager:9093", "version": "4", "groupKey": "{}:{alertname=\"DiskFull\"}", "truncatedAlerts": 0,
        ]
    }

    /// The config with `integrations.alertmanager` (its url `url`), plus `more` YAML at the top level.
    static func config(url: String? = "http://127.0.0.1:9", integration: String = "", more: String = "") -> String {
        var text = Contract.baseConfig + more
        text += "integrations:\n  alertmanager:\n"
        if let url {
            text += "    url: \"\(url)\"\n"
        } else {
            text += "    buttons: [{title: Acknowledge}, {title: Ignore, style: cancel}]\n"
        }
        return text + integration
    }
}

extension TestClient {
    /// Posts a notification to the receiver for `client`.
    func notify(_ client: String, _ alerts: [[String: Any]], headers: [(String, String)] = []) async throws -> TestResponse {
        try await post("/v1/integrations/alertmanager/\(client)", json: jsonBody(AM.payload(alerts)), headers: headers)
    }

    /// Posts a notification and returns each alert's receipt (`outcome`, `alert_id`); requires 200.
    func receipts(
        _ client: String, _ alerts: [[String: Any]], headers: [(String, String)] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [[String: Any]] {
        let response = try await notify(client, alerts, headers: headers)
        try #require(response.status == 200, "the receiver answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        return try #require(try response.jsonObject()["alerts"] as? [[String: Any]], sourceLocation: sourceLocation)
    }
}

private func outcomes(_ receipts: [[String: Any]]) -> [String] { receipts.map { $0["outcome"] as? String ?? "?" } }
private func ids(_ receipts: [[String: Any]]) -> [String] { receipts.map { $0["alert_id"] as? String ?? "-" } }

@Suite("The Alertmanager receiver: one pending alert per fingerprint")
struct AlertmanagerReceiverTests {
    @Test(
        "firing alerts become alerts with the mapped title, message, priority, buttons and metadata; repeats create nothing",
        arguments: TestMode.both)
    func firingAndRepeats(mode: TestMode) async throws {
        try await withTestClient(mode, config: AM.config()) { http in
            let client = Contract.uniqueClient("am")
            let disk = AM.alert("aaaaaaaaaaaaaaa1")
            let load = AM.alert("aaaaaaaaaaaaaaa2", alertname: "HighLoad", severity: "warning", summary: nil, description: nil)
            let first = try await http.receipts(client, [disk, load])
            #expect(outcomes(first) == ["created", "created"])
            #expect(first.map { $0["fingerprint"] as? String } == [disk["fingerprint"] as? String, load["fingerprint"] as? String])

            let pending = try await http.list(client).alerts
            // Priority orders the queue: the critical alert (50) before the warning (0).
            #expect(pending.map(Contract.id) == ids(first))
            let shown = try #require(pending.first)
            #expect(shown["title"] as? String == "Disk full on db1")
            // What a silence would match is the message's last paragraph: every label, by default.
            #expect(
                shown["message"] as? String
                    == "/var is 99% full\n\nA silence matches: alertname=\"DiskFull\", instance=\"db1:9100\", job=\"aaaaaaaaaaaaaaa1\", "
                    + "severity=\"critical\"")
            #expect(shown["priority"] as? Int == 50)
            #expect(Contract.buttons(shown) == ["Acknowledge/default", "Silence 1h/default", "Silence 24h/default", "Ignore/cancel"])
            let metadata = try #require((shown["metadata"] as? [String: Any])?["alertmanager"] as? [String: Any])
            #expect(metadata["fingerprint"] as? String == disk["fingerprint"] as? String)
            #expect(metadata["silence_matchers"] as? [String] == ["alertname", "instance", "job", "severity"])
            #expect(metadata["starts_at"] as? String == AM.startsAt)
            #expect(metadata["generator_url"] as? String == "http://prometheus:9090/graph?g0.expr=disk")
            #expect(
                metadata["labels"] as? [String: String]
                    == ["alertname": "DiskFull", "instance": "db1:9100", "job": "aaaaaaaaaaaaaaa1", "severity": "critical"])
            let second = try #require(pending.last)
            #expect(second["title"] as? String == "HighLoad", "no summary: the alertname")
            #expect((second["message"] as? String)?.hasPrefix("A silence matches: alertname=\"HighLoad\"") == true, "no description")
            #expect(second["priority"] as? Int == 0)

            // Alertmanager notifies again (repeat_interval), its text changed: nothing new.
            var repeated = disk
            repeated["annotations"] = ["summary": "Disk fuller on db1"]
            let again = try await http.receipts(client, [repeated, load])
            #expect(outcomes(again) == ["repeated", "repeated"])
            #expect(ids(again) == ids(first))
            #expect(try await http.allAlerts(client).count == 2)
        }
    }

    @Test(
        "resolved withdraws the pending alert, decided_by alertmanager (resolved); a new firing asks again, the old one not",
        arguments: TestMode.both)
    func resolution(mode: TestMode) async throws {
        try await withTestClient(mode, config: AM.config()) { http in
            let client = Contract.uniqueClient("am")
            let created = try await http.receipts(client, [AM.alert("bbbbbbbbbbbbbbb1")])
            let id = try #require(ids(created).first)
            let resolved = try await http.receipts(client, [AM.alert("bbbbbbbbbbbbbbb1", status: "resolved")])
            #expect(outcomes(resolved) == ["withdrawn"] && ids(resolved) == [id])
            let alert = try await http.alert(client, id)
            #expect(alert["state"] as? String == "withdrawn")
            #expect((alert["result"] as? [String: Any])?["decided_by"] as? String == "alertmanager (resolved)")

            #expect(outcomes(try await http.receipts(client, [AM.alert("bbbbbbbbbbbbbbb1", status: "resolved")])) == ["not_pending"])
            #expect(outcomes(try await http.receipts(client, [AM.alert("bbbbbbbbbbbbbbb1")])) == ["repeated"], "the same firing, late")
            #expect(try await http.pendingIDs(client).isEmpty)

            let refired = try await http.receipts(client, [AM.alert("bbbbbbbbbbbbbbb1", startsAt: "2026-11-22T08:00:00Z")])
            #expect(outcomes(refired) == ["created"])
            #expect(ids(refired) != [id])
            #expect(try await http.pendingIDs(client) == ids(refired))
        }
    }

    @Test("an answered firing is not asked again while Alertmanager repeats it; its next firing is")
    func answeredStaysAnswered() async throws {
        try await withTestClient(config: AM.config()) { http in
            let client = Contract.uniqueClient("am")
            let id = try #require(ids(try await http.receipts(client, [AM.alert("ccccccccccccccc1")])).first)
            #expect(try await http.choose(client, id, ["button": "Acknowledge"]).status == 200)
            #expect(outcomes(try await http.receipts(client, [AM.alert("ccccccccccccccc1")])) == ["repeated"])
            #expect(try await http.pendingIDs(client).isEmpty)
            // The delivery list of an acknowledged alert is empty: nothing is sent back.
            let deliveries = try await http.get("/v1/clients/\(client)/alerts/\(id)/deliveries").jsonObject()["deliveries"] as? [Any]
            #expect(deliveries?.isEmpty == true)
            let next = try await http.receipts(client, [AM.alert("ccccccccccccccc1", startsAt: "2026-11-23T00:00:00Z")])
            #expect(outcomes(next) == ["created"])
        }
    }

    @Test("the severity map, default priority, buttons and expiry come from the config")
    func configured() async throws {
        let integration = """
                severity_priority: {page: 90, ticket: -20}
                default_priority: 5
                expires_in: 600
                buttons:
                  - {title: Mute 2h, silence: 2h}
                  - {title: Fine, style: cancel}

            """
        try await withTestClient(config: AM.config(integration: integration)) { http in
            let client = Contract.uniqueClient("am")
            let receipts = try await http.receipts(
                client, [AM.alert("ddddddddddddddd1", severity: "page"), AM.alert("ddddddddddddddd2", severity: "critical")])
            let first = try await http.alert(client, ids(receipts)[0])
            let second = try await http.alert(client, ids(receipts)[1])
            #expect(first["priority"] as? Int == 90 && second["priority"] as? Int == 5)
            #expect(Contract.buttons(first) == ["Mute 2h/default", "Fine/cancel"])
            let created = try #require(Contract.milliseconds(first["created_at"]))
            #expect(Contract.milliseconds(first["expires_at"]) == created + 600_000)
        }
    }

    @Test("alerts of one notification are taken apart: a firing and a resolution of two fingerprints at once")
    func mixedNotification() async throws {
        try await withTestClient(config: AM.config()) { http in
            let client = Contract.uniqueClient("am")
            let old = try #require(ids(try await http.receipts(client, [AM.alert("eeeeeeeeeeeeeee1")])).first)
            let both = try await http.receipts(client, [AM.alert("eeeeeeeeeeeeeee1", status: "resolved"), AM.alert("eeeeeeeeeeeeeee2")])
            #expect(outcomes(both) == ["withdrawn", "created"])
            #expect(try await http.pendingIDs(client) == [ids(both)[1]])
            #expect(try await http.alert(client, old)["state"] as? String == "withdrawn")
        }
    }
}

@Suite("The Alertmanager receiver refuses what is not Alertmanager's payload, storing nothing")
struct AlertmanagerBadInputTests {
    static var valid: [String: Any] { AM.alert("fffffffffffffff1") }

    @Test(
        "a payload that is not Alertmanager's is 400 invalid-alert naming the field; none of its alerts is stored",
        arguments: [
            (jsonBody(["version": "4"]), ["alerts"]),
            (jsonBody(AM.payload([valid]).merging(["version": "3"]) { $1 }), ["version"]),
            (jsonBody(AM.payload([valid]).filter { $0.key != "version" }), ["version"]),
            (jsonBody(AM.payload([valid, valid.filter { $0.key != "fingerprint" }])), ["alerts[1].fingerprint"]),
            // The fingerprint is Alertmanager's hash of the labels: not any hex, not another alert's.
            (jsonBody(AM.payload([valid.merging(["fingerprint": "0"]) { $1 }])), ["alerts[0].fingerprint"]),
            (
                jsonBody(AM.payload([valid, AM.alert("other").merging(["fingerprint": valid["fingerprint"]!]) { $1 }])),
                ["alerts[1].fingerprint"]
            ),
            (jsonBody(AM.payload([valid, valid.merging(["status": "pending"]) { $1 }])), ["alerts[1].status"]),
            (jsonBody(AM.payload([valid.merging(["labels": ["alertname": 5]]) { $1 }])), ["alerts[0].labels.alertname"]),
            (jsonBody(AM.payload([valid.merging(["startsAt": "yesterday"]) { $1 }])), ["alerts[0].startsAt"]),
            (
                jsonBody(AM.payload([AM.alert(labels: ["alertname": String(repeating: "x", count: 4200)])])),
                ["alerts[0].labels"]
            ),
            (#"{"title":"Disk full","buttons":[{"title":"OK"}]}"#, ["version", "alerts"]),
        ] as [(String, [String])])
    func invalidPayloads(body: String, fields: [String]) async throws {
        try await withTestClient(config: AM.config()) { http in
            let client = Contract.uniqueClient("am-bad")
            let before = try await http.snapshot(client)
            let response = try await http.post("/v1/integrations/alertmanager/\(client)", json: body)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == fields)
            #expect((problem["detail"] as? String)?.contains("Alertmanager") == true, "\(problem)")
            let after = try await http.snapshot(client)
            #expect(after.changes(since: before) == nil, "\(after.changes(since: before) ?? "")")
        }
    }

    @Test("malformed JSON and a body that is not an object are 400 bad-request / invalid-alert; a wrong type 415")
    func framing() async throws {
        try await withTestClient(config: AM.config()) { http in
            let path = "/v1/integrations/alertmanager/ops"
            Contract.expectProblem(try await http.post(path, json: #"{"version":"4","alerts":["#), status: 400, code: "bad-request")
            let notObject = Contract.expectProblem(try await http.post(path, json: "[]"), status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(notObject) == [""])
            let text = try await http.request("POST", path, headers: [("Content-Type", "text/plain")], body: Array("{}".utf8))
            Contract.expectProblem(text, status: 415, code: "unsupported-media-type")
            Contract.expectProblem(
                try await http.post(path + "?x=1", json: jsonBody(AM.payload([Self.valid]))), status: 400, code: "bad-request")
            Contract.expectProblem(
                try await http.post("/v1/integrations/alertmanager/-bad-", json: jsonBody(AM.payload([Self.valid]))), status: 400,
                code: "bad-request")
            #expect(try await http.allAlerts("ops").isEmpty)
        }
    }

    @Test(
        "a plain post cannot pass for the integration's: metadata.alertmanager is 400 invalid-alert, an alertmanager: key 400 bad-request"
    )
    func forgedPlainPost() async throws {
        try await withTestClient(config: AM.config()) { http in
            let client = Contract.uniqueClient("am-forged")
            // Chosen, such an alert's "Silence 24h" would silence whatever labels the poster wrote.
            let forged =
                #"{"title":"Restart?","buttons":[{"title":"Silence 24h"}],"metadata":{"alertmanager":{"labels":{"severity":"critical"}}}}"#
            let refused = Contract.expectProblem(
                try await http.post("/v1/clients/\(client)/alerts", json: forged), status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(refused) == ["metadata.alertmanager"])
            // A key taken first by a plain post would make the fingerprint's firing a "repeat".
            let keyed = try await http.post(
                "/v1/clients/\(client)/alerts", json: #"{"title":"x"}"#, headers: [("Idempotency-Key", "alertmanager:cccccccccccccccc")])
            Contract.expectProblem(keyed, status: 400, code: "bad-request")
            #expect(try await http.allAlerts(client).isEmpty)
            // The receiver's own alert is unaffected, and other metadata still posts.
            #expect(outcomes(try await http.receipts(client, [AM.alert("cccccccccccccccc")])) == ["created"])
            let plain = try await http.post(
                "/v1/clients/\(client)/alerts", json: #"{"title":"x","metadata":{"alertmanagers":1}}"#,
                headers: [("Idempotency-Key", "alertmanager-cccc")])
            #expect(plain.status == 201)
        }
    }

    @Test("without integrations.alertmanager the receiver is 404, saying what to configure")
    func off() async throws {
        try await withTestClient { http in
            let response = try await http.notify("ops", [Self.valid])
            let problem = Contract.expectProblem(response, status: 404, code: "not-found")
            #expect((problem["detail"] as? String)?.contains("integrations.alertmanager") == true)
            Contract.expectProblem(try await http.post("/v1/integrations/alertmanager/ops", json: "{}"), status: 404, code: "not-found")
            #expect(try await http.allAlerts("ops").isEmpty)
        }
    }

    @Test(
        "the receiver needs the alertmanager role on the client: 401 without a token, 403 for post alone, a reader or another client"
    )
    func auth() async throws {
        var (tokens, secrets) = try await roleTokens()
        let (receiver, entry) = try await newToken("prometheus-am", roles: "alertmanager", clients: "ops")
        tokens += entry
        secrets["prometheus-am"] = receiver
        try await withTestClient(config: AM.config(more: tokens)) { http in
            let as_: (String) -> [(String, String)] = { bearer(secrets[$0]) }
            Contract.expectProblem(try await http.notify("ops", [Self.valid]), status: 401, code: "unauthorized")
            Contract.expectProblem(try await http.notify("ops", [Self.valid], headers: as_("reader")), status: 403, code: "forbidden")
            // A service's post token cannot send the alerts a silence button acts on.
            let postOnly = Contract.expectProblem(
                try await http.notify("ops", [Self.valid], headers: as_("deployer")), status: 403, code: "forbidden")
            #expect((postOnly["detail"] as? String)?.contains("alertmanager") == true, "\(postOnly)")
            Contract.expectProblem(try await http.notify("db", [Self.valid], headers: as_("prometheus-am")), status: 403, code: "forbidden")
            let everything = "/v1/clients/%@/alerts?state=\(Contract.allStates)"
            for client in ["ops", "db"] {
                let listed = try await http.get(String(format: everything, client), headers: as_("reader"))
                let alerts = try listed.jsonObject()["alerts"] as? [Any]
                #expect(listed.status == 200 && alerts?.isEmpty == true, "\(listed.text)")
            }
            #expect(outcomes(try await http.receipts("ops", [Self.valid], headers: as_("prometheus-am"))) == ["created"])
            // The role is the receiver's alone: it posts nothing else.
            Contract.expectProblem(
                try await http.post("/v1/clients/ops/alerts", json: #"{"title":"x"}"#, headers: as_("prometheus-am")), status: 403,
                code: "forbidden")
            #expect(outcomes(try await http.receipts("ops", [AM.alert("by-admin")], headers: as_("root"))) == ["created"])
        }
    }

    @Test(
        "an alert without alertname (the review's forged severity=critical) gets no silence button, and the message says why"
    )
    func noSilenceWithoutAlertname() async throws {
        try await withTestClient(config: AM.config()) { http in
            let client = Contract.uniqueClient("am-forged")
            let forged = AM.alert(labels: ["severity": "critical"], summary: nil, description: nil)
            let id = try #require(ids(try await http.receipts(client, [forged])).first)
            let alert = try await http.alert(client, id)
            #expect(Contract.buttons(alert) == ["Acknowledge/default", "Ignore/cancel"])
            #expect(
                (alert["message"] as? String)?.hasPrefix("No silence from alertd: the alert has no label alertname") == true, "\(alert)")
            let metadata = try #require((alert["metadata"] as? [String: Any])?["alertmanager"] as? [String: Any])
            #expect(metadata["silence_matchers"] == nil)
            Contract.expectProblem(
                try await http.choose(client, id, ["button": "Silence 24h"], headers: []), status: 422, code: "unknown-button")
            #expect(try await http.choose(client, id, ["button": "Acknowledge"], headers: []).status == 200)
            let deliveries = try await http.get("/v1/clients/\(client)/alerts/\(id)/deliveries").jsonObject()["deliveries"] as? [Any]
            #expect(deliveries?.isEmpty == true, "no silence is sent")
        }
    }

    @Test("with matcher_labels a silence matches alertname and those labels; an alert lacking one gets no silence button")
    func matcherLabels() async throws {
        try await withTestClient(config: AM.config(integration: "    matcher_labels: [instance]\n")) { http in
            let client = Contract.uniqueClient("am-matchers")
            let full = AM.alert("with-instance")
            let partial = AM.alert(labels: ["alertname": "NoInstance", "severity": "critical"], description: nil)
            let receipts = try await http.receipts(client, [full, partial])
            let silenced = try await http.alert(client, ids(receipts)[0])
            #expect(Contract.buttons(silenced) == ["Acknowledge/default", "Silence 1h/default", "Silence 24h/default", "Ignore/cancel"])
            #expect(
                (silenced["message"] as? String)?.hasSuffix("\n\nA silence matches: alertname=\"DiskFull\", instance=\"db1:9100\"") == true)
            let metadata = try #require((silenced["metadata"] as? [String: Any])?["alertmanager"] as? [String: Any])
            #expect(metadata["silence_matchers"] as? [String] == ["alertname", "instance"])
            let refused = try await http.alert(client, ids(receipts)[1])
            #expect(Contract.buttons(refused) == ["Acknowledge/default", "Ignore/cancel"])
            #expect((refused["message"] as? String)?.hasPrefix("No silence from alertd: the alert has no label instance") == true)
        }
    }
}

/// The real Alertmanager, or a test issue saying how to install it.
func startAlertmanager(receiver: String = "http://127.0.0.1:9/unused") async throws -> TestAlertmanager {
    #expect(TestAlertmanager.binary != nil, "install Debian's prometheus-alertmanager (make test-deps)")
    return try await TestAlertmanager.start(receiver: receiver)
}

/// The active silences of `list` that match `alertname`.
func activeSilences(_ list: [[String: Any]], alertname: String) -> [[String: Any]] {
    list.filter { silence in
        (silence["status"] as? [String: Any])?["state"] as? String == "active"
            && (silence["matchers"] as? [[String: Any]] ?? []).contains {
                $0["name"] as? String == "alertname" && $0["value"] as? String == alertname
            }
    }
}

@Suite("A silence button creates a silence in Alertmanager, through the outbox")
struct AlertmanagerSilenceTests {
    /// A config with a token `oncall-alice` that answers and one that posts, the integration pointing at `url`.
    static func config(url: String, more: String = "", integration: String = "") async throws -> (String, [String: String]) {
        let (answer, answerEntry) = try await newToken("oncall-alice", roles: "answer", clients: "*")
        let (post, postEntry) = try await newToken("alertmanager", roles: "alertmanager", clients: "*")
        let tokens = "auth:\n  tokens:\n" + answerEntry + postEntry
        let fast = "callbacks:\n  signing_secret: e2e-signing-secret\n  retry_initial_seconds: 0.2\n  retry_max_interval_seconds: 0.5\n"
        let config = AM.config(url: url, integration: integration, more: tokens + more)
            .replacingOccurrences(of: "callbacks:\n  signing_secret: e2e-signing-secret\n", with: fast)
        return (config, ["answer": answer, "alertmanager": post])
    }

    @Test(
        "Silence 1h: an active silence on the alert's labels, ending an hour after the choice, created by the token; its id in the deliveries"
    )
    func silenceOneHour() async throws {
        let am = try await startAlertmanager()
        defer { am.stop() }
        let (config, secrets) = try await Self.config(url: am.baseURL)
        try await withTestClient(config: config) { http in
            let client = Contract.uniqueClient("am-silence")
            let id = try #require(
                ids(
                    try await http.receipts(
                        client, [AM.alert("1111111111111111", alertname: "SilenceMe")], headers: bearer(secrets["alertmanager"]))
                )
                .first)
            let chosen = try await http.choose(client, id, ["button": "Silence 1h"], headers: bearer(secrets["answer"]))
            try #require(chosen.status == 200, "\(chosen.text)")
            let decidedAt = try #require(Contract.milliseconds(try chosen.jsonObject()["decided_at"]))

            let silences = try await am.awaitSilences { !activeSilences($0, alertname: "SilenceMe").isEmpty }
            let silence = try #require(activeSilences(silences, alertname: "SilenceMe").first)
            let matchers = (silence["matchers"] as? [[String: Any]] ?? []).map {
                "\($0["name"] as? String ?? "?")=\($0["value"] as? String ?? "?") regex:\($0["isRegex"] as? Bool ?? true)"
            }
            #expect(
                Set(matchers) == [
                    "alertname=SilenceMe regex:false", "instance=db1:9100 regex:false", "job=1111111111111111 regex:false",
                    "severity=critical regex:false",
                ])
            #expect(silence["createdBy"] as? String == "oncall-alice")
            #expect((silence["comment"] as? String)?.contains(id) == true, "\(silence)")
            // Alertmanager writes a silence's times with milliseconds, as alertd does.
            let endsAt = try #require(Contract.milliseconds(silence["endsAt"]), "\(silence)")
            #expect(abs(endsAt - (decidedAt + 3_600_000)) < 2000, "ends an hour after the choice")

            let records = try await deliveries(http, client, id, headers: bearer(secrets["answer"])) {
                $0.first?["state"] as? String == "delivered"
            }
            let record = try #require(records.first)
            #expect(records.count == 1)
            #expect(record["type"] as? String == "alertmanager.silence")
            // Targets are redacted past the host for tokens without admin, as every callback's.
            #expect((record["target"] as? String)?.hasPrefix(am.baseURL + "/") == true, "\(record)")
            #expect(record["silence_id"] as? String == silence["id"] as? String)
            #expect(attempts(record).map { $0["status_code"] as? Int } == [200])
        }
    }

    @Test(
        "Alertmanager down when the silence is chosen: the choice is answered, each failed attempt shown, the silence made once it is back")
    func alertmanagerDown() async throws {
        let am = try await startAlertmanager()
        defer { am.stop() }
        let (config, secrets) = try await Self.config(url: am.baseURL)
        try await withTestClient(config: config) { http in
            let client = Contract.uniqueClient("am-down")
            let id = try #require(
                ids(
                    try await http.receipts(
                        client, [AM.alert("2222222222222222", alertname: "WhileDown")], headers: bearer(secrets["alertmanager"]))
                )
                .first)
            await am.kill()
            let chosen = try await http.choose(client, id, ["button": "Silence 24h"], headers: bearer(secrets["answer"]))
            #expect(chosen.status == 200, "acknowledged on commit, not when Alertmanager answers")
            let failing = try await deliveries(http, client, id, headers: bearer(secrets["answer"])) {
                attempts($0.first ?? [:]).count >= 2
            }
            #expect(failing.first?["state"] as? String == "pending")
            #expect(attempts(failing.first ?? [:]).allSatisfy { $0["status_code"] is NSNull && ($0["error"] as? String)?.isEmpty == false })
            #expect(failing.first?["silence_id"] is NSNull)

            try await am.restart()
            let silences = try await am.awaitSilences { !activeSilences($0, alertname: "WhileDown").isEmpty }
            #expect(activeSilences(silences, alertname: "WhileDown").count == 1)
            let done = try await deliveries(http, client, id, headers: bearer(secrets["answer"])) {
                $0.first?["state"] as? String == "delivered"
            }
            #expect(attempts(done.first ?? [:]).last?["status_code"] as? Int == 200)
            #expect(done.first?["silence_id"] as? String == activeSilences(silences, alertname: "WhileDown").first?["id"] as? String)
        }
    }

    @Test("the configured Alertmanager on loopback is called though the default callbacks.deny covers loopback, which still stops webhooks")
    func trustedDespiteDenyList() async throws {
        let am = try await startAlertmanager()
        defer { am.stop() }
        let hook = try await WebhookReceiver.listening()
        defer { hook.close() }
        let more = "webhooks:\n  - {client: \"am-deny\", url: \"\(hook.url)\", secret: \"\(callbackSecret)\"}\n"
        let (config, secrets) = try await Self.config(url: am.baseURL, more: more)
        try await withTestClient(config: config) { http in
            let id = try #require(
                ids(
                    try await http.receipts(
                        "am-deny", [AM.alert("3333333333333333", alertname: "Denied")], headers: bearer(secrets["alertmanager"]))
                )
                .first)
            #expect(
                try await http.choose("am-deny", id, ["button": "Silence 1h"], headers: bearer(secrets["answer"])).status == 200)
            try await am.awaitSilences { !activeSilences($0, alertname: "Denied").isEmpty }
            let records = try await deliveries(http, "am-deny", id, headers: bearer(secrets["answer"])) { list in
                list.count == 2
                    && list.contains { $0["type"] as? String == "alertmanager.silence" && $0["state"] as? String == "delivered" }
                    && list.contains { $0["type"] as? String == "alert.answered" && !attempts($0).isEmpty }
            }
            let webhook = try #require(records.first { $0["type"] as? String == "alert.answered" })
            #expect((attempts(webhook).first?["error"] as? String)?.contains("refused") == true, "\(webhook)")
            #expect(hook.requests.isEmpty)
        }
    }
}

extension TestClient {
    func choose(_ client: String, _ id: String, _ choice: [String: Any], headers: [(String, String)]) async throws -> TestResponse {
        try await post("/v1/clients/\(client)/alerts/\(id)/choice", json: jsonBody(choice), headers: headers)
    }
}
