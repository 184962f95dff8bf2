// Alerts that need several people (SPEC §10): votes by token name, the cancel-style veto,
// the safe retry and already-voted, the waiters and callbacks that see only the decision.
// On either store, in process, live or through two instances.

import AlertdTestSupport
import Foundation
import Testing

/// A deploy approval: Deploy, Roll back (destructive), Cancel (cancel), with `quorum`.
func approval(_ quorum: Any) -> [String: Any] {
    [
        "title": "Deploy build 1234?", "quorum": quorum,
        "buttons": [["title": "Deploy"], ["title": "Roll back", "style": "destructive"], ["title": "Cancel", "style": "cancel"]],
    ]
}

/// `decider:button` of each vote of `votes` (a resource's or a result's), in order.
func ballot(_ votes: Any?) -> [String] {
    (votes as? [[String: Any]] ?? []).map { "\($0["decided_by"] as? String ?? "-"):\($0["button"] as? String ?? "?")" }
}

/// Requests made as one token.
struct As: Sendable {
    let http: any TestClient
    let headers: [(String, String)]

    init(_ http: any TestClient, _ secret: String?) {
        self.http = http
        headers = bearer(secret)
    }

    func post(_ client: String, _ fields: [String: Any]) async throws -> TestResponse {
        try await http.post("/v1/clients/\(client)/alerts", json: jsonBody(fields), headers: headers)
    }

    func create(_ client: String, _ fields: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any]
    {
        let response = try await post(client, fields)
        try #require(response.status == 201, "POST answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        return try response.jsonObject()
    }

    func vote(_ client: String, _ id: String, _ button: String) async throws -> TestResponse {
        try await http.post("/v1/clients/\(client)/alerts/\(id)/choice", json: jsonBody(["button": button]), headers: headers)
    }

    func get(_ path: String) async throws -> TestResponse { try await http.get(path, headers: headers) }

    func alert(_ client: String, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let response = try await get("/v1/clients/\(client)/alerts/\(id)")
        try #require(response.status == 200, "GET answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        return try response.jsonObject()
    }
}

@Suite("Alerts that need several people (§10)")
struct QuorumContractTests {
    @Test("two tokens' votes answer it: the first leaves it displayed with its vote, the second answers it with every vote")
    func twoDeciders() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (deployer, alice, bob) = (As(http, secrets["deployer"]), As(http, secrets["alice"]), As(http, secrets["bob"]))
            let posted = try await deployer.create("ops", approval(2))
            let id = Contract.id(posted)
            #expect(posted["quorum"] as? Int == 2)
            #expect(posted["votes"] as? [Any] != nil && ballot(posted["votes"]).isEmpty, "votes is [] when none")

            let first = try await alice.vote("ops", id, "Deploy")
            #expect(first.status == 200, "\(first.text)")
            let voted = try first.jsonObject()
            #expect(voted["state"] as? String == "displayed" && voted["position"] as? Int == 0)
            #expect(voted["result"] is NSNull)
            #expect(ballot(voted["votes"]) == ["alice:Deploy"])
            let vote = try #require((voted["votes"] as? [[String: Any]])?.first)
            #expect(vote["button_index"] as? Int == 0 && Contract.milliseconds(vote["at"]) != nil)
            // Committed before its answer: every read shows it.
            #expect(ballot(try await bob.alert("ops", id)["votes"]) == ["alice:Deploy"])
            let current = try await bob.get("/v1/clients/ops/alerts/current")
            #expect(ballot(try current.jsonObject()["votes"]) == ["alice:Deploy"])

            let second = try await bob.vote("ops", id, "Deploy")
            #expect(second.status == 200, "\(second.text)")
            let answered = try second.jsonObject()
            #expect(answered["state"] as? String == "answered")
            let result = try #require(answered["result"] as? [String: Any])
            #expect(result["button"] as? String == "Deploy" && result["button_index"] as? Int == 0)
            #expect(result["cancelled"] as? Bool == false && result["decided_by"] as? String == "bob")
            #expect(ballot(result["votes"]) == ["alice:Deploy", "bob:Deploy"])
            #expect(Contract.same(result["votes"], answered["votes"]))
            #expect(Contract.same(try await alice.alert("ops", id)["result"], result))
            #expect(try await alice.get("/v1/clients/ops/alerts/current").status == 204)
        }
    }

    @Test("votes for other buttons count for those; a third token's vote for the cancel button stops it at once")
    func cancelVetoes() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (alice, bob, carol) = (As(http, secrets["alice"]), As(http, secrets["bob"]), As(http, secrets["carol"]))
            let id = Contract.id(try await As(http, secrets["deployer"]).create("ops", approval(2)))
            #expect(try await alice.vote("ops", id, "Deploy").status == 200)
            let split = try await bob.vote("ops", id, "Roll back")
            #expect(try split.jsonObject()["state"] as? String == "displayed", "one vote each: no button has two")
            let vetoed = try await carol.vote("ops", id, "Cancel")
            #expect(vetoed.status == 200)
            let alert = try vetoed.jsonObject()
            let result = try #require(alert["result"] as? [String: Any])
            #expect(alert["state"] as? String == "answered")
            #expect(result["button"] as? String == "Cancel" && result["cancelled"] as? Bool == true)
            #expect(result["decided_by"] as? String == "carol")
            #expect(ballot(result["votes"]) == ["alice:Deploy", "bob:Roll back", "carol:Cancel"])
            // Decided: anyone's further choice is the decision's rules (already-decided, with the alert).
            let late = try await alice.vote("ops", id, "Roll back")
            let problem = Contract.expectProblem(late, status: 409, code: "already-decided")
            #expect((problem["alert"] as? [String: Any])?["state"] as? String == "answered")
        }
    }

    @Test("the same decider's same vote again is 200 and changes nothing; another button after voting is 409 already-voted")
    func retriesAndChangedMinds() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let alice = As(http, secrets["alice"])
            let id = Contract.id(try await As(http, secrets["deployer"]).create("ops", approval(3)))
            let first = try await alice.vote("ops", id, "Deploy")
            #expect(first.status == 200)
            let before = try await alice.get("/v1/clients/ops/alerts/\(id)").text

            let again = try await alice.vote("ops", id, "Deploy")
            #expect(again.status == 200, "\(again.text)")
            #expect(again.text == first.text, "the same answer")
            #expect(try await alice.get("/v1/clients/ops/alerts/\(id)").text == before, "nothing changed")

            for other in ["Roll back", "Cancel"] {
                let refused = try await alice.vote("ops", id, other)
                let problem = Contract.expectProblem(refused, status: 409, code: "already-voted")
                let alert = try #require(problem["alert"] as? [String: Any], "already-voted carries the alert")
                #expect(alert["state"] as? String == "displayed" && ballot(alert["votes"]) == ["alice:Deploy"])
                #expect(alert["position"] as? Int == 0)
            }
            #expect(try await alice.get("/v1/clients/ops/alerts/\(id)").text == before, "nothing changed")
        }
    }

    @Test("a vote for a queued alert is 409 not-displayed; withdraw and expiry end it as any alert, with its votes")
    func queuedWithdrawnExpired() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (deployer, alice) = (As(http, secrets["deployer"]), As(http, secrets["alice"]))
            let shown = Contract.id(try await deployer.create("ops", approval(2)))
            let queued = Contract.id(try await deployer.create("ops", approval(2)))
            Contract.expectProblem(try await alice.vote("ops", queued, "Deploy"), status: 409, code: "not-displayed")
            #expect(ballot(try await alice.alert("ops", queued)["votes"]).isEmpty)

            #expect(try await alice.vote("ops", shown, "Deploy").status == 200)
            let withdrawn = try await http.delete("/v1/clients/ops/alerts/\(shown)", headers: deployer.headers)
            #expect(withdrawn.status == 200)
            let alert = try withdrawn.jsonObject()
            #expect(alert["state"] as? String == "withdrawn")
            #expect(ballot(alert["votes"]) == ["alice:Deploy"])
            #expect(ballot((alert["result"] as? [String: Any])?["votes"]) == ["alice:Deploy"])
            Contract.expectProblem(try await alice.vote("ops", shown, "Roll back"), status: 409, code: "already-decided")

            // The queued one is displayed now; a vote, then its expiry.
            var expiring = approval(2)
            expiring["expires_in"] = 3
            let short = Contract.id(try await deployer.create("short", expiring))
            #expect(try await alice.vote("short", short, "Roll back").status == 200)
            let expired = try await http.get("/v1/clients/short/alerts/\(short)?wait=15", headers: alice.headers).jsonObject()
            #expect(expired["state"] as? String == "expired")
            #expect(ballot(expired["votes"]) == ["alice:Roll back"])
            #expect((expired["result"] as? [String: Any])?["decided_by"] is NSNull)
        }
    }

    @Test("quorum is checked: 1 to 10, above 1 only with buttons")
    func validation() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let deployer = As(http, secrets["deployer"])
            for bad in [0, 11, 1.5, "2", -1] as [Any] {
                let problem = Contract.expectProblem(try await deployer.post("ops", approval(bad)), status: 400, code: "invalid-alert")
                #expect(Contract.errorFields(problem) == ["quorum"], "quorum \(bad)")
            }
            let buttonless = Contract.expectProblem(
                try await deployer.post("ops", ["title": "FYI", "quorum": 2]), status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(buttonless) == ["quorum"])
            let ten = try await deployer.create("ops", approval(10))
            #expect(ten["quorum"] as? Int == 10)
            let plain = try await deployer.create("ops", ["title": "FYI"])
            #expect(plain["quorum"] as? Int == 1 && ballot(plain["votes"]).isEmpty)
        }
    }

    @Test("every alert carries posted_by, the posting token's name, wherever it is read")
    func postedBy() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (deployer, alice) = (As(http, secrets["deployer"]), As(http, secrets["alice"]))
            let posted = try await deployer.create("ops", approval(2))
            let id = Contract.id(posted)
            #expect(posted["posted_by"] as? String == "deployer", "\(posted)")
            #expect(try await alice.alert("ops", id)["posted_by"] as? String == "deployer")
            #expect(try await alice.get("/v1/clients/ops/alerts/current").jsonObject()["posted_by"] as? String == "deployer")
            let listed = try await alice.get("/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
            #expect(listed.first?["posted_by"] as? String == "deployer")
            _ = try await alice.vote("ops", id, "Cancel")
            let decided = try await alice.alert("ops", id)
            #expect(decided["state"] as? String == "answered" && decided["posted_by"] as? String == "deployer")
        }
        try await withTestClient { http in
            let anonymous = try await http.create("ops", approval(1))
            #expect(anonymous["posted_by"] is NSNull, "without tokens posted_by is null: \(anonymous)")
        }
    }

    @Test(
        "the poster cannot approve its own alert: 403 forbidden for a non-cancel button, the alert unchanged; it may cancel or withdraw",
        arguments: ["Deploy", "Roll back"])
    func posterCannotApprove(button: String) async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (lead, alice, bob) = (As(http, secrets["lead"]), As(http, secrets["alice"]), As(http, secrets["bob"]))
            let id = Contract.id(try await lead.create("ops", approval(2)))
            let problem = Contract.expectProblem(try await lead.vote("ops", id, button), status: 403, code: "forbidden")
            #expect((problem["detail"] as? String ?? "").contains("the poster cannot approve its own alert"), "\(problem)")
            let unchanged = try await alice.alert("ops", id)
            #expect(unchanged["state"] as? String == "displayed" && ballot(unchanged["votes"]).isEmpty, "\(unchanged)")
            // Two others approve it.
            #expect(try await alice.vote("ops", id, button).status == 200)
            let answered = try await bob.vote("ops", id, button).jsonObject()
            #expect(answered["state"] as? String == "answered" && ballot(answered["votes"]) == ["alice:\(button)", "bob:\(button)"])

            // It may stop its own: cancel answers it at once, withdraw too.
            let second = Contract.id(try await lead.create("ops", approval(2)))
            let cancelled = try await lead.vote("ops", second, "Cancel")
            #expect(cancelled.status == 200, "\(cancelled.text)")
            #expect((try cancelled.jsonObject()["result"] as? [String: Any])?["cancelled"] as? Bool == true)
            let third = Contract.id(try await lead.create("ops", approval(2)))
            let withdrawn = try await http.delete("/v1/clients/ops/alerts/\(third)", headers: lead.headers)
            #expect(withdrawn.status == 200, "\(withdrawn.text)")
            // Four eyes are what a quorum asks for: with quorum 1 the poster answers like anyone.
            let single = Contract.id(try await lead.create("ops", approval(1)))
            #expect(try await lead.vote("ops", single, "Deploy").status == 200)
        }
    }

    @Test("without tokens (an anonymous API) quorum above 1 is 400 invalid-alert at quorum; quorum 1 is answered with its one vote")
    func anonymousRefusesQuorum() async throws {
        try await withTestClient { http in
            let refused = Contract.expectProblem(try await http.post("ops", approval(2)), status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(refused) == ["quorum"])
            let reason = (refused["errors"] as? [[String: Any]])?.first?["reason"] as? String ?? ""
            #expect(reason.contains("auth.tokens"), "\(reason)")

            let id = Contract.id(try await http.create("ops", approval(1)))
            let answered = try await http.choose("ops", id, ["button": "Deploy"]).jsonObject()
            let result = try #require(answered["result"] as? [String: Any])
            #expect(answered["state"] as? String == "answered" && result["decided_by"] is NSNull)
            // The one choice is the one vote (decided_by null without tokens), in the result too.
            #expect(ballot(answered["votes"]) == ["-:Deploy"] && ballot(result["votes"]) == ["-:Deploy"])
        }
    }

    @Test("a vote wakes current?wait waiters parked after the alert, not the alert's own waiters; votes=N answers at once when it differs")
    func waitersSeeVotes() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (alice, bob, carol) = (As(http, secrets["alice"]), As(http, secrets["bob"]), As(http, secrets["carol"]))
            let id = Contract.id(try await As(http, secrets["deployer"]).create("ops", approval(2)))
            let onCurrent = Parked(count: 1) { try await carol.get("/v1/clients/ops/alerts/current?wait=60&after=\(id)") }
            let onAlert = Parked(count: 1) { try await carol.get("/v1/clients/ops/alerts/\(id)?wait=60") }
            try await http.awaitWaiters(2)

            #expect(try await alice.vote("ops", id, "Deploy").status == 200)
            let woken = try await onCurrent.awaitAll(timeout: .seconds(10))[0]
            #expect(woken.status == 200)
            let shown = try woken.jsonObject()
            #expect(Contract.id(shown) == id && ballot(shown["votes"]) == ["alice:Deploy"])
            // The vote decided nothing: the alert's waiter is still parked.
            try await http.awaitWaiters(1)
            #expect(!onAlert.anyAnswered)

            // A reader that shows no vote learns of the one committed at once.
            let behind = try await carol.get("/v1/clients/ops/alerts/current?wait=60&after=\(id)&votes=0")
            #expect(ballot(try behind.jsonObject()["votes"]) == ["alice:Deploy"])
            // One that shows it parks, and is woken by the decision like any waiter after the alert.
            let upToDate = Parked(count: 1) { try await carol.get("/v1/clients/ops/alerts/current?wait=60&after=\(id)&votes=1") }
            try await http.awaitWaiters(2)
            Contract.expectProblem(try await carol.get("/v1/clients/ops/alerts/current?votes=x"), status: 400, code: "bad-request")

            #expect(try await bob.vote("ops", id, "Deploy").status == 200)
            let decided = try await onAlert.awaitAll(timeout: .seconds(10))[0].jsonObject()
            #expect(decided["state"] as? String == "answered")
            #expect(ballot((decided["result"] as? [String: Any])?["votes"]) == ["alice:Deploy", "bob:Deploy"])
            #expect(try await upToDate.awaitAll(timeout: .seconds(10))[0].status == 204)
        }
    }

    @Test("callbacks and webhooks get one event, the decision's, with every vote; a vote writes none")
    func oneTerminalEvent() async throws {
        let callback = try await WebhookReceiver.listening()
        let hook = try await WebhookReceiver.listening()
        defer { [callback, hook].forEach { $0.close() } }
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: callbackConfig(webhooks: [("ops", hook.url)]) + tokens) { http in
            let (alice, bob) = (As(http, secrets["alice"]), As(http, secrets["bob"]))
            var fields = approval(2)
            fields["callback_url"] = callback.url
            let id = Contract.id(try await As(http, secrets["deployer"]).create("ops", fields))
            #expect(try await alice.vote("ops", id, "Deploy").status == 200)
            // Events are written in the transaction of the change they report: a vote's would be here now.
            let afterVote = try await http.get("/v1/clients/ops/alerts/\(id)/deliveries", headers: alice.headers)
            #expect((try afterVote.jsonObject()["deliveries"] as? [Any])?.isEmpty == true, "\(afterVote.text)")

            #expect(try await bob.vote("ops", id, "Deploy").status == 200)
            let list = try await deliveries(http, "ops", id, headers: alice.headers) {
                $0.count == 2 && $0.allSatisfy { $0["state"] as? String == "delivered" }
            }
            #expect(Set(list.map { $0["event_id"] as? String }).count == 1, "one event")
            for receiver in [callback, hook] {
                let requests = try await receiver.waitForRequests(count: 1, timeout: 20)
                #expect(requests.count == 1)
                let event = try verify(requests[0])
                #expect(event["type"] as? String == "alert.answered")
                let alert = try #require((event["data"] as? [String: Any])?["alert"] as? [String: Any])
                let result = try #require(alert["result"] as? [String: Any])
                #expect(result["decided_by"] as? String == "bob")
                #expect(ballot(result["votes"]) == ["alice:Deploy", "bob:Deploy"])
                #expect(ballot(alert["votes"]) == ["alice:Deploy", "bob:Deploy"])
            }
        }
    }
}
