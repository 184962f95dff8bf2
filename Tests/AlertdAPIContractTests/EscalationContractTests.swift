// Escalation (SPEC §12, issue 42): an alert nobody answers is also queued on the client its
// next step names. One alert, one id, one result, reached through either client; its steps
// announced to both clients' webhooks. On either store, in process, live or through two
// instances behind nginx.

import AlertdClient
import AlertdPush
import AlertdTestSupport
import Foundation
import Testing

/// A question that escalates to `to` after `after` seconds.
private func escalating(_ title: String, to: String, after: Double = 0.5, priority: Int? = nil) -> [String: Any] {
    var fields = Contract.alert(title, priority: priority, buttons: [("Deploy", "default"), ("Cancel", "cancel")])
    fields["escalation"] = [["after": after, "to": to]]
    return fields
}

/// `client` of each entry of `escalated_to`.
private func escalatedTo(_ alert: [String: Any]) -> [String] {
    (alert["escalated_to"] as? [[String: Any]] ?? []).map { $0["client"] as? String ?? "?" }
}

extension TestClient {
    /// The alert `current` of `client` shows once it is not `after` (a long poll: alertd's
    /// deadlines move it); requires 200.
    fileprivate func awaitCurrent(
        _ client: String, after: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String: Any] {
        let response = try await get("/v1/clients/\(client)/alerts/current?wait=15&after=\(after)")
        try #require(response.status == 200, "current of \(client) answered \(response.status) after 15 s", sourceLocation: sourceLocation)
        return try response.jsonObject()
    }
}

@Suite("Escalation: when nobody answers, ask someone else (SPEC §12)")
struct EscalationContractTests {
    @Test(
        "a step queues the alert on its client too: one id reached through both paths, as each client holds it, announced to both clients' webhooks"
    )
    func stepAndEvents() async throws {
        let hookOps = try await WebhookReceiver.listening()
        let hookLead = try await WebhookReceiver.listening()
        defer { [hookOps, hookLead].forEach { $0.close() } }
        let config = callbackConfig(webhooks: [("ops", hookOps.url), ("ops-lead", hookLead.url)])
        try await withTestClient(config: config) { http in
            let blocker = try await http.create("ops", Contract.alert("blocker"))
            let posted = try await http.create("ops", escalating("Deploy build 1234?", to: "ops-lead"))
            let id = Contract.id(posted)
            #expect(posted["escalation"] as? [[String: Any]] != nil, "\(posted)")
            #expect((posted["escalation"] as? [[String: Any]])?.first?["to"] as? String == "ops-lead")
            #expect((posted["escalation"] as? [[String: Any]])?.first?["after"] as? Double == 0.5)
            #expect(escalatedTo(posted).isEmpty && posted["escalated_to"] is [Any], "escalated_to is [] before any step")

            // The step: displayed on ops-lead, whose queue was empty.
            let there = try await http.awaitCurrent("ops-lead")
            #expect(Contract.id(there) == id)
            #expect(there["client"] as? String == "ops", "the alert's own client, where it came from")
            #expect(there["state"] as? String == "displayed" && there["position"] as? Int == 0)
            #expect(escalatedTo(there) == ["ops-lead"])
            let step = try #require((there["escalated_to"] as? [[String: Any]])?.first)
            #expect(Contract.milliseconds(step["at"]).map { $0 >= Contract.milliseconds(posted["created_at"])! + 500 } == true)
            // Through its own client it is still queued behind the blocker.
            let own = try await http.alert("ops", id)
            #expect(own["state"] as? String == "queued" && own["position"] as? Int == 1)
            #expect(escalatedTo(own) == ["ops-lead"])
            #expect(try await http.pendingIDs("ops") == [Contract.id(blocker), id])
            #expect(try await http.pendingIDs("ops-lead") == [id])
            let clients = try await http.get("/v1/clients").jsonObject()["clients"] as? [[String: Any]] ?? []
            #expect(clients.first { $0["client"] as? String == "ops-lead" }?["displayed"] as? String == id)
            // A client it is not on does not reach it.
            Contract.expectProblem(try await http.get("/v1/clients/elsewhere/alerts/\(id)"), status: 404, code: "not-found")

            // alert.escalated to both clients' webhooks: one event, one webhook-id.
            let toOps = try await hookOps.waitForRequests(count: 1, timeout: 20)
            let toLead = try await hookLead.waitForRequests(count: 1, timeout: 20)
            let event = try verify(toOps[0])
            #expect(event["type"] as? String == "alert.escalated", "\(event)")
            let data = try #require(event["data"] as? [String: Any])
            #expect(Contract.id(data["alert"] as? [String: Any] ?? [:]) == id)
            let announced = try #require(data["escalation"] as? [String: Any])
            #expect(announced["to"] as? String == "ops-lead" && announced["index"] as? Int == 0 && announced["after"] as? Double == 0.5)
            #expect(try verify(toLead[0])["type"] as? String == "alert.escalated")
            #expect(toOps[0].header("webhook-id") == toLead[0].header("webhook-id"))

            // Answered through ops-lead, where it is displayed: decided everywhere.
            let answered = try await http.choose("ops-lead", id, ["button": "Deploy"])
            #expect(answered.status == 200, "\(answered.text)")
            let result = try answered.jsonObject()
            #expect(result["state"] as? String == "answered" && (result["result"] as? [String: Any])?["button"] as? String == "Deploy")
            #expect(try await http.alert("ops", id)["state"] as? String == "answered", "one result, whichever path")
            #expect(try await http.get("/v1/clients/ops-lead/alerts/current").status == 204, "ops-lead's display was not freed")
            #expect(try await http.pendingIDs("ops") == [Contract.id(blocker)])
            #expect(try await http.list("ops-lead", "state=answered").alerts.map(Contract.id) == [id], "ops-lead's list lost it")
            // Again through ops: a safe retry, the same result.
            #expect(try await http.choose("ops", id, ["button": "Deploy"]).status == 200)

            // The terminal event goes to its own client's webhook (§5); the deliveries say so.
            let all = try await deliveries(http, "ops-lead", id) {
                $0.count == 3 && $0.allSatisfy { $0["state"] as? String == "delivered" }
            }
            let types = all.map { $0["type"] as? String ?? "?" }.sorted()
            #expect(types == ["alert.answered", "alert.escalated", "alert.escalated"], "\(all)")
            #expect(all.filter { $0["type"] as? String == "alert.answered" }.map { $0["target"] as? String } == [hookOps.url])
        }
    }

    @Test("a stack client shows an escalated alert of higher priority at once; its own goes back to queued")
    func stackTarget() async throws {
        let config = Contract.baseConfig + "clients:\n  ops-lead: { policy: stack }\n"
        try await withTestClient(config: config) { http in
            let own = try await http.create("ops-lead", Contract.alert("lead's own", priority: 5))
            _ = try await http.create("ops", Contract.alert("blocker"))
            let posted = try await http.create("ops", escalating("urgent", to: "ops-lead", priority: 50))
            let shown = try await http.awaitCurrent("ops-lead", after: Contract.id(own))
            #expect(Contract.id(shown) == Contract.id(posted))
            let covered = try await http.alert("ops-lead", Contract.id(own))
            #expect(covered["state"] as? String == "queued" && covered["position"] as? Int == 1 && covered["displayed_at"] is NSNull)
        }
    }

    @Test("a client's policy from the config applies to its alerts; an alert's own replaces it, [] turns it off")
    func configPolicy() async throws {
        let config = Contract.baseConfig + "clients:\n  ops:\n    escalation:\n      - { after: 500ms, to: ops-lead }\n"
        try await withTestClient(config: config) { http in
            // Displayed, and off: the next ones wait behind it.
            var off = Contract.alert("not escalated")
            off["escalation"] = [Any]()
            let quiet = try await http.create("ops", off)
            #expect((quiet["escalation"] as? [Any])?.isEmpty == true)
            let byPolicy = try await http.create("ops", Contract.alert("by the client's policy"))
            #expect((byPolicy["escalation"] as? [[String: Any]])?.first?["to"] as? String == "ops-lead")
            #expect((byPolicy["escalation"] as? [[String: Any]])?.first?["after"] as? Double == 0.5)
            let shown = try await http.awaitCurrent("ops-lead")
            #expect(Contract.id(shown) == Contract.id(byPolicy))
            // The one that turned it off never came: ops-lead holds the other only.
            #expect(try await http.pendingIDs("ops-lead") == [Contract.id(byPolicy)])
            #expect(escalatedTo(try await http.alert("ops", Contract.id(quiet))).isEmpty)
        }
    }

    @Test(
        "each invalid step is 400 invalid-alert naming it, and nothing is created",
        arguments: [
            (#"[{"after": 60, "to": "ops"}]"#, "escalation[0].to"),
            (#"[{"after": 60, "to": "a"}, {"after": 30, "to": "b"}]"#, "escalation[1].after"),
            (#"[{"after": 90000, "to": "a"}]"#, "escalation[0].after"),
            (#"[{"after": 60, "to": "not a client"}]"#, "escalation[0].to"),
            (#"[{"after": 60}]"#, "escalation[0].to"),
            (
                #"[{"after": 1, "to": "a"}, {"after": 2, "to": "b"}, {"after": 3, "to": "c"}, {"after": 4, "to": "d"}, {"after": 5, "to": "e"}, {"after": 6, "to": "f"}]"#,
                "escalation"
            ),
            (#"[{"after": 60, "to": "a", "then": "b"}]"#, "escalation[0].then"),
            (#"{"after": 60, "to": "a"}"#, "escalation"),
        ] as [(String, String)])
    func invalidStep(escalation: String, field: String) async throws {
        try await withTestClient { http in
            let response = try await http.post(
                "/v1/clients/ops/alerts", json: #"{"title": "t", "buttons": [{"title": "OK"}], "escalation": \#(escalation)}"#)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem).contains(field), "\(problem)")
            #expect(try await http.list("ops", "state=\(Contract.allStates)").alerts.isEmpty)
        }
    }

    @Test("tokens: a step to a client the poster may not touch is 403; a reader needs its role on the client in the path")
    func tokens() async throws {
        let (tokens, secrets) = try await roleTokens()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let deployer = bearer(secrets["deployer"])
            let refused = try await http.post(
                "/v1/clients/ops/alerts", json: jsonBody(escalating("q", to: "cto")), headers: deployer)
            let problem = Contract.expectProblem(refused, status: 403, code: "forbidden")
            #expect((problem["detail"] as? String)?.contains("escalation[0].to") == true, "\(problem)")
            let posted = try await http.post(
                "/v1/clients/ops/alerts", json: jsonBody(escalating("q", to: "team-lead", after: 0.2)), headers: deployer)
            #expect(posted.status == 201, "\(posted.text)")
            let id = Contract.id(try posted.jsonObject())
            let root = bearer(secrets["root"])
            let waited = try await http.get("/v1/clients/team-lead/alerts/current?wait=15", headers: root)
            #expect(Contract.id(try waited.jsonObject()) == id)
            // console may answer on ops only: team-lead's path is not its to use, even for an alert of ops.
            Contract.expectProblem(
                try await http.post(
                    "/v1/clients/team-lead/alerts/\(id)/choice", json: #"{"button":"Deploy"}"#, headers: bearer(secrets["console"])),
                status: 403, code: "forbidden")
        }
    }

    @Test(
        "/metrics counts escalations by client and target, by name for the clients the config names, as other for the rest",
        .disabled(if: TestMode.isBalancedPass, "each instance counts the steps it took"))
    func metrics() async throws {
        let config = Contract.baseConfig + "clients:\n  ops:\n    escalation: [{ after: 200ms, to: ops-lead }]\n"
        try await withTestClient(config: config) { http in
            _ = try await http.create("ops", Contract.alert("by policy"))
            _ = try await http.create("stranger", escalating("own", to: "somebody", after: 0.2))
            _ = try await http.awaitCurrent("ops-lead")
            _ = try await http.awaitCurrent("somebody")
            let text = try await http.get("/metrics").text
            #expect(
                text.contains(#"alertd_escalations_total{client="ops",to="ops-lead"} 1"#),
                "\(text.split(separator: "\n").filter { $0.contains("escalat") })")
            #expect(text.contains(#"alertd_escalations_total{client="other",to="other"} 1"#))
            #expect(!text.contains("stranger") && !text.contains("somebody"), "a client the config does not name became a label")
        }
    }

    @Test(
        "a push goes to the subscriptions of the client it escalated to when displayed there, saying where it came from; its answer_url answers it"
    )
    func pushToTheTarget() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(201))
        let (tokens, secrets) = try await roleTokens()
        let config = callbackConfig() + tokens + "push:\n  subject: \"mailto:ops@example.com\"\n  allow_http: true\n"
        try await withTestClient(config: config) { http in
            let device = PushDevice()
            let made = try await http.post(
                "/v1/push/subscriptions", json: device.subscription(endpoint: service.url, clients: ["team-lead"], answer: true),
                headers: bearer(secrets["root"]))
            #expect(made.status == 201, "\(made.text)")
            let deployer = bearer(secrets["deployer"])
            _ = try await http.postAlert("ops", #"{"title":"blocker","buttons":[{"title":"OK"}]}"#, headers: deployer)
            let alert = try await http.postAlert("ops", jsonBody(escalating("Deploy?", to: "team-lead", after: 0.2)), headers: deployer)
            let id = Contract.id(alert)

            let pushed = try #require(try await service.waitForRequests(count: 1, timeout: 20).first)
            #expect(pushed.header("topic") == id)
            let payload = try device.payload(pushed.body)
            #expect(payload["type"] as? String == "alert.displayed")
            let shown = try #require(payload["alert"] as? [String: Any])
            #expect(shown["id"] as? String == id)
            #expect(shown["client"] as? String == "team-lead", "a tap opens the dashboard where it is asked now")
            #expect(shown["escalated_from"] as? String == "ops")
            let answerURL = try #require(payload["answer_url"] as? String)
            let answered = try await http.post(answerURL, json: #"{"button":"Deploy"}"#)
            #expect(answered.status == 200, "\(answered.text)")
            #expect((try answered.jsonObject()["result"] as? [String: Any])?["decided_by"] as? String == "root")
            let all = try await service.waitForRequests(count: 2, timeout: 20)
            let decided = try device.payload(all[1].body)
            #expect(decided["type"] as? String == "alert.decided")
            #expect((decided["alert"] as? [String: Any])?["client"] as? String == "team-lead")
        }
    }

    @Test("an Alertmanager resolution withdraws its alert from every client it escalated to")
    func alertmanagerResolution() async throws {
        let config = AM.config(more: "clients:\n  am-ops:\n    escalation: [{ after: 200ms, to: am-lead }]\n")
        try await withTestClient(config: config) { http in
            let firing = AM.alert("escalated-job")
            let created = try await http.receipts("am-ops", [firing])
            let id = try #require(created.first?["alert_id"] as? String)
            let shown = try await http.awaitCurrent("am-lead")
            #expect(Contract.id(shown) == id)
            var resolved = firing
            resolved["status"] = "resolved"
            let receipts = try await http.receipts("am-ops", [resolved])
            #expect(receipts.first?["outcome"] as? String == "withdrawn", "\(receipts)")
            #expect(try await http.get("/v1/clients/am-lead/alerts/current").status == 204)
            #expect(try await http.alert("am-lead", id)["state"] as? String == "withdrawn")
        }
    }

    @Test("quorum votes cast through two clients count once per decider")
    func quorumAcrossClients() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (deployer, alice, bob) = (As(http, secrets["deployer"]), As(http, secrets["alice"]), As(http, secrets["bob"]))
            var fields = approval(2)
            fields["escalation"] = [["after": 0.3, "to": "ops-lead"]]
            let id = Contract.id(try await deployer.create("ops", fields))
            let shown = try await alice.get("/v1/clients/ops-lead/alerts/current?wait=15")
            #expect(Contract.id(try shown.jsonObject()) == id)
            #expect(try await alice.vote("ops", id, "Deploy").status == 200)
            // alice again through ops-lead: the same vote, not a second one.
            let again = try await alice.vote("ops-lead", id, "Deploy")
            let votes = try again.jsonObject()["votes"]
            #expect(again.status == 200 && ballot(votes) == ["alice:Deploy"], "\(again.text)")
            Contract.expectProblem(try await alice.vote("ops-lead", id, "Roll back"), status: 409, code: "already-voted")
            let done = try await bob.vote("ops-lead", id, "Deploy")
            #expect(try done.jsonObject()["state"] as? String == "answered", "\(done.text)")
            #expect(ballot(try await alice.alert("ops", id)["votes"]) == ["alice:Deploy", "bob:Deploy"])
        }
    }
}
