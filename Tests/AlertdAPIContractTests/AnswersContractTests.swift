// Answers with words (SPEC §13): an alert's fields, a choice's comment and values, kept in the
// vote and the result, seen by readers, long-polls and callbacks, and refused (400
// invalid-answer) when they do not fit, with nothing lost. On either store, in process, live
// or through two instances.

import AlertdTestSupport
import Foundation
import Testing

/// Deploy (default), Roll back (destructive), Cancel (cancel); a required ticket (at most 12)
/// for the first two, an optional reason for Cancel; `quorum` when above 1.
func askingDeploy(quorum: Int = 1) -> [String: Any] {
    var alert: [String: Any] = [
        "title": "Deploy build 1234?",
        "buttons": [["title": "Deploy"], ["title": "Roll back", "style": "destructive"], ["title": "Cancel", "style": "cancel"]],
        "fields": [
            ["name": "ticket", "label": "Change ticket", "placeholder": "OPS-123", "required": true, "max_length": 12],
            ["name": "reason", "buttons": ["Cancel"]],
        ],
    ]
    if quorum > 1 { alert["quorum"] = quorum }
    return alert
}

/// `decider:button:comment` of each vote.
private func said(_ votes: Any?) -> [String] {
    (votes as? [[String: Any]] ?? []).map {
        "\($0["decided_by"] as? String ?? "-"):\($0["button"] as? String ?? "?"):\($0["comment"] as? String ?? "-")"
    }
}

@Suite("Answers with words (§13)")
struct AnswersContractTests {
    @Test("an alert's fields are in the resource, each with its buttons resolved; none is []")
    func fieldsInTheResource() async throws {
        try await withTestClient(config: Contract.baseConfig) { http in
            let client = Contract.uniqueClient("words")
            let alert = try await http.create(client, askingDeploy())
            let fields = try #require(alert["fields"] as? [[String: Any]])
            #expect(fields.count == 2)
            #expect(fields[0]["name"] as? String == "ticket" && fields[0]["label"] as? String == "Change ticket")
            #expect(fields[0]["placeholder"] as? String == "OPS-123" && fields[0]["required"] as? Bool == true)
            #expect(fields[0]["max_length"] as? Int == 12 && fields[0]["buttons"] as? [String] == ["Deploy", "Roll back"])
            #expect(fields[1]["label"] is NSNull && fields[1]["placeholder"] is NSNull && fields[1]["required"] as? Bool == false)
            #expect(fields[1]["max_length"] as? Int == 200 && fields[1]["buttons"] as? [String] == ["Cancel"])
            // Read back the same, from the store.
            #expect(Contract.same(try await http.alert(client, Contract.id(alert))["fields"], alert["fields"]))
            let plain = try await http.create(client, Contract.alert("plain"))
            #expect((plain["fields"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("a choice's comment and values are in the result and its vote, for every reader, the waiter and the callback")
    func keptEverywhere() async throws {
        let callback = try await WebhookReceiver.listening()
        defer { callback.close() }
        try await withTestClient(config: callbackConfig()) { http in
            let client = Contract.uniqueClient("words")
            var body = askingDeploy()
            body["callback_url"] = callback.url
            let id = Contract.id(try await http.create(client, body))
            let waiter = Parked(count: 1) { try await http.get("/v1/clients/\(client)/alerts/\(id)?wait=60") }
            try await http.awaitWaiters(1)

            let chosen = try await http.choose(
                client, id, ["button": "Deploy", "comment": "window agreed with payments", "values": ["ticket": "OPS-77"]])
            #expect(chosen.status == 200, "\(chosen.text)")
            for alert in [
                try chosen.jsonObject(), try await http.alert(client, id),
                try await waiter.awaitAll(timeout: .seconds(10))[0].jsonObject(),
            ] {
                let result = try #require(alert["result"] as? [String: Any])
                #expect(result["comment"] as? String == "window agreed with payments")
                #expect(result["values"] as? [String: String] == ["ticket": "OPS-77"])
                #expect(said(result["votes"]) == ["-:Deploy:window agreed with payments"])
                #expect((alert["votes"] as? [[String: Any]])?.first?["values"] as? [String: String] == ["ticket": "OPS-77"])
            }
            let requests = try await callback.waitForRequests(count: 1, timeout: 20)
            let event = try verify(requests[0])
            let alert = try #require((event["data"] as? [String: Any])?["alert"] as? [String: Any])
            let result = try #require(alert["result"] as? [String: Any])
            #expect(result["comment"] as? String == "window agreed with payments")
            #expect(result["values"] as? [String: String] == ["ticket": "OPS-77"])
            // In the history as well.
            let listed = try await http.list(client, "state=answered").alerts.first { Contract.id($0) == id }
            #expect((listed?["result"] as? [String: Any])?["comment"] as? String == "window agreed with payments")
        }
    }

    @Test("no words: comment null, values {} in the result and the vote")
    func noWords() async throws {
        try await withTestClient(config: Contract.baseConfig) { http in
            let client = Contract.uniqueClient("words")
            let id = Contract.id(try await http.create(client, Contract.alert("plain")))
            let alert = try await http.choose(client, id, ["button": "Yes"]).jsonObject()
            let result = try #require(alert["result"] as? [String: Any])
            #expect(result["comment"] is NSNull)
            #expect((result["values"] as? [String: Any])?.isEmpty == true)
            let vote = try #require((alert["votes"] as? [[String: Any]])?.first)
            #expect(vote["comment"] is NSNull && (vote["values"] as? [String: Any])?.isEmpty == true)
            // A withdrawn alert has no words either.
            let other = Contract.id(try await http.create(client, Contract.alert("other")))
            let withdrawn = try await http.withdraw(client, other).jsonObject()
            let ended = try #require(withdrawn["result"] as? [String: Any])
            #expect(ended["comment"] is NSNull && (ended["values"] as? [String: Any])?.isEmpty == true)
        }
    }

    @Test(
        "words that do not fit are 400 invalid-answer, each at its path, and nothing is chosen",
        arguments: [
            (#"{"button":"Deploy"}"#, ["values.ticket"]),
            (#"{"button":"Deploy","values":{"ticket":""}}"#, ["values.ticket"]),
            (#"{"button":"Roll back","values":{}}"#, ["values.ticket"]),
            (#"{"button":"Deploy","values":{"ticket":"OPS-1234567890"}}"#, ["values.ticket"]),
            (#"{"button":"Deploy","values":{"ticket":"OPS-1","tikcet":"x"}}"#, ["values.tikcet"]),
            (#"{"button":"Deploy","values":{"ticket":"OPS-1","reason":"x"}}"#, ["values.reason"]),
            (#"{"button":"Deploy","values":{"ticket":"OPS-1"},"comment":"\#(String(repeating: "c", count: 1001))"}"#, ["comment"]),
            (#"{"button":"Deploy","values":{"ticket":5}}"#, ["values.ticket"]),
            (#"{"button":"Deploy","values":["OPS-1"]}"#, ["values"]),
            (#"{"button":"Deploy","values":{"ticket":"OPS-1"},"comment":7}"#, ["comment"]),
            (#"{"button":"Deploy","values":{"ticket":"\#(String(repeating: "v", count: 1001))"}}"#, ["values.ticket"]),
            (#"{"button":"Deploy","values":{"ticket":"OPS-1"},"comment":"a\u0000b"}"#, ["comment"]),
        ])
    func refused(choice: String, paths: [String]) async throws {
        try await withTestClient(config: Contract.baseConfig) { http in
            let client = Contract.uniqueClient("words")
            let id = Contract.id(try await http.create(client, askingDeploy()))
            let before = try await http.snapshot(client)
            let answer = try await http.post("/v1/clients/\(client)/alerts/\(id)/choice", json: choice)
            let problem = Contract.expectProblem(answer, status: 400, code: "invalid-answer")
            #expect(Contract.errorFields(problem) == paths, "\(problem)")
            #expect((problem["errors"] as? [[String: Any]])?.allSatisfy { ($0["reason"] as? String)?.isEmpty == false } == true)
            #expect(try await http.snapshot(client) == before, "nothing was chosen")
            // Fixed, it is taken.
            let fixed = try await http.choose(client, id, ["button": "Deploy", "values": ["ticket": "OPS-1"]])
            #expect(fixed.status == 200, "\(fixed.text)")
        }
    }

    @Test("the cancel button needs no ticket: a person says no, and why")
    func cancelWithReason() async throws {
        try await withTestClient(config: Contract.baseConfig) { http in
            let client = Contract.uniqueClient("words")
            let id = Contract.id(try await http.create(client, askingDeploy()))
            let alert = try await http.choose(
                client, id, ["button": "Cancel", "comment": "freeze until Monday", "values": ["reason": "freeze"]]
            )
            .jsonObject()
            let result = try #require(alert["result"] as? [String: Any])
            #expect(result["cancelled"] as? Bool == true && result["comment"] as? String == "freeze until Monday")
            #expect(result["values"] as? [String: String] == ["reason": "freeze"])
        }
    }

    @Test("a choice for a terminal alert is 409 before its words are looked at; the same choice again is 200 whatever its words")
    func stateBeforeWords() async throws {
        try await withTestClient(config: Contract.baseConfig) { http in
            let client = Contract.uniqueClient("words")
            let id = Contract.id(try await http.create(client, askingDeploy()))
            let first = try await http.choose(client, id, ["button": "Deploy", "values": ["ticket": "OPS-1"]])
            #expect(first.status == 200)
            let retry = try await http.choose(client, id, ["button": "Deploy"])
            #expect(retry.status == 200, "a safe retry: \(retry.text)")
            #expect(((try retry.jsonObject()["result"] as? [String: Any])?["values"] as? [String: String]) == ["ticket": "OPS-1"])
            Contract.expectProblem(try await http.choose(client, id, ["button": "Roll back"]), status: 409, code: "already-decided")
        }
    }

    @Test("under a quorum each vote keeps its words; the result has the deciding vote's; a cancel's comment says why it stopped")
    func quorumVotesWithComments() async throws {
        let (tokens, secrets) = try await deciders()
        try await withTestClient(config: Contract.baseConfig + tokens) { http in
            let (deployer, alice, bob, carol) = (
                As(http, secrets["deployer"]), As(http, secrets["alice"]), As(http, secrets["bob"]), As(http, secrets["carol"])
            )
            let id = Contract.id(try await deployer.create("ops", askingDeploy(quorum: 2)))
            let vote = { (who: As, body: [String: Any]) in
                try await http.post("/v1/clients/ops/alerts/\(id)/choice", json: jsonBody(body), headers: who.headers)
            }
            let first = try await vote(alice, ["button": "Deploy", "comment": "LGTM", "values": ["ticket": "OPS-1"]])
            #expect(first.status == 200, "\(first.text)")
            #expect(said(try first.jsonObject()["votes"]) == ["alice:Deploy:LGTM"])
            let shown = try await alice.get("/v1/clients/ops/alerts/current").jsonObject()
            #expect(said(shown["votes"]) == ["alice:Deploy:LGTM"])
            // A vote that does not fit is refused like any answer, and the first stays alone.
            Contract.expectProblem(try await vote(bob, ["button": "Deploy"]), status: 400, code: "invalid-answer")
            let second = try await vote(bob, ["button": "Deploy", "values": ["ticket": "OPS-2"], "comment": "ok by me"])
            let answered = try second.jsonObject()
            let result = try #require(answered["result"] as? [String: Any])
            #expect(answered["state"] as? String == "answered")
            #expect(said(result["votes"]) == ["alice:Deploy:LGTM", "bob:Deploy:ok by me"])
            #expect(result["comment"] as? String == "ok by me" && result["values"] as? [String: String] == ["ticket": "OPS-2"])
            #expect(((result["votes"] as? [[String: Any]])?.first?["values"] as? [String: String]) == ["ticket": "OPS-1"])
            #expect(Contract.same(try await carol.alert("ops", id)["result"], result))

            let stopped = Contract.id(try await deployer.create("ops", askingDeploy(quorum: 2)))
            _ = try await http.post(
                "/v1/clients/ops/alerts/\(stopped)/choice", json: jsonBody(["button": "Deploy", "values": ["ticket": "OPS-3"]]),
                headers: alice.headers)
            let veto = try await http.post(
                "/v1/clients/ops/alerts/\(stopped)/choice", json: jsonBody(["button": "Cancel", "comment": "wrong build"]),
                headers: carol.headers
            ).jsonObject()
            let vetoed = try #require(veto["result"] as? [String: Any])
            #expect(vetoed["cancelled"] as? Bool == true && vetoed["comment"] as? String == "wrong build")
            #expect(said(vetoed["votes"]) == ["alice:Deploy:-", "carol:Cancel:wrong build"])
        }
    }

    @Test("fields are checked when posted: a bad name, six fields, a button the alert lacks, no buttons")
    func postedFieldsChecked() async throws {
        try await withTestClient(config: Contract.baseConfig) { http in
            let client = Contract.uniqueClient("words")
            let cases: [([String: Any], [String])] = [
                (["title": "x", "buttons": [["title": "OK"]], "fields": [["name": "Ticket"]]], ["fields[0].name"]),
                (["title": "x", "buttons": [["title": "OK"]], "fields": (1...6).map { ["name": "f\($0)"] }], ["fields"]),
                (["title": "x", "buttons": [["title": "OK"]], "fields": [["name": "a", "buttons": ["Nope"]]]], ["fields[0].buttons[0]"]),
                (["title": "x", "fields": [["name": "a"]]], ["fields"]),
                (["title": "x", "buttons": [["title": "OK"]], "fields": [["name": "a", "max_length": 1001]]], ["fields[0].max_length"]),
            ]
            for (body, paths) in cases {
                let problem = Contract.expectProblem(try await http.post(client, body), status: 400, code: "invalid-alert")
                #expect(Contract.errorFields(problem) == paths, "\(body)")
            }
            #expect(try await http.list(client).alerts.isEmpty)
        }
    }
}
