// Signed receipts (SPEC §14) through the API: a decided alert's receipt is the same bytes at
// `GET …/receipt`, in the terminal long-poll answer, in the terminal callback event and in
// the audit log; it verifies with `GET /v1/keys` against the alert it is about; the audit
// log is one chain however many instances decide (the balanced pass runs this suite through
// two instances on one PostgreSQL database).

import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// The receipt object in `object[member]`, as canonical JSON (the bytes it was signed as).
private func canonical(_ value: Any?) throws -> [UInt8] {
    let data = try JSONSerialization.data(withJSONObject: try #require(value as? [String: Any]))
    return try JCS.canonicalize(try JSONParser.parse(Array(data)))
}

/// The daemon's receipt keys.
private func keys(_ http: some TestClient, headers: [(String, String)] = []) async throws -> ReceiptKeySet {
    let response = try await http.get("/v1/keys", headers: headers)
    try #require(response.status == 200, "GET /v1/keys answered \(response.status)")
    return try ReceiptKeySet(jwks: try JSONParser.parse(response.body))
}

/// An alert's body as the SDK reads it (the long-poll's `receipt` member aside).
private func resource(_ body: [UInt8]) throws -> AlertResource {
    try JSONValueDecoder().decode(AlertResource.self, from: body)
}

/// Every receipt of the audit log, page by page (`limit` a page), as its lines.
private func auditLines(_ http: some TestClient, headers: [(String, String)] = [], limit: Int = 1000) async throws -> [String] {
    var lines: [String] = []
    var after = 0
    while true {
        let response = try await http.get("/v1/audit?after=\(after)&limit=\(limit)", headers: headers)
        try #require(response.status == 200, "GET /v1/audit answered \(response.status): \(response.text.prefix(300))")
        let page = try response.jsonObject()
        let receipts = try #require(page["receipts"] as? [[String: Any]])
        let next = try #require(page["next_after"] as? Int)
        if receipts.isEmpty {
            #expect(next == after, "an empty page's next_after is the after asked")
            return lines
        }
        for receipt in receipts { lines.append(String(decoding: try canonical(receipt), as: UTF8.self)) }
        #expect(next == receipts.last?["seq"] as? Int)
        after = next
    }
}

@Suite("Signed receipts through the API (SPEC §14)")
struct ReceiptContractTests {
    @Test(
        "a decided alert's receipt: 404 while pending; the same bytes in GET …/receipt, the long-poll answer and the callback event; it verifies",
        arguments: TestMode.both)
    func oneReceiptEverywhere(mode: TestMode) async throws {
        let hook = try await WebhookReceiver.listening()
        defer { hook.close() }
        try await withTestClient(mode, config: callbackConfig(webhooks: [("ops", hook.url)])) { http in
            let posted = try await http.create(
                "ops",
                [
                    "title": "Deploy build 4711?", "buttons": [["title": "Deploy"], ["title": "Cancel", "style": "cancel"]],
                    "metadata": ["build": 4711, "ratio": 0.25, "nested": ["b": [1, 2.5], "a": "é"]],
                ])
            let id = Contract.id(posted)
            Contract.expectProblem(try await http.get("/v1/clients/ops/alerts/\(id)/receipt"), status: 404, code: "not-found")
            let pending = try await http.get("/v1/clients/ops/alerts/\(id)?wait=0")
            #expect(try pending.jsonObject().keys.contains("receipt") && (try pending.jsonObject()["receipt"]) is NSNull)

            // A long-poll parked before the decision is answered with the receipt.
            let poll = Task { try await http.get("/v1/clients/ops/alerts/\(id)?wait=20") }
            let parkedBy = ContinuousClock.now + .seconds(20)
            while try await http.waiters() == 0, ContinuousClock.now < parkedBy { try await Task.sleep(for: .milliseconds(5)) }
            let chosen = try await http.choose("ops", id, ["button": "Deploy", "comment": "window agreed"])
            #expect(chosen.status == 200)
            #expect(!(try chosen.jsonObject().keys.contains("receipt")), "a choice's answer is the alert alone")
            let polled = try await poll.value
            #expect(polled.status == 200)
            let polledReceipt = try canonical(try polled.jsonObject()["receipt"])

            let fetched = try await http.get("/v1/clients/ops/alerts/\(id)/receipt")
            #expect(fetched.status == 200 && fetched.header("Content-Type") == "application/json")
            #expect(fetched.body == polledReceipt, "the long-poll's receipt is not GET …/receipt's")
            #expect(try canonical(try fetched.jsonObject()) == fetched.body, "GET …/receipt is not canonical JSON")

            let event = try verify(try #require(try await hook.waitForRequests(count: 1, timeout: 20).first))
            let data = try #require(event["data"] as? [String: Any])
            #expect(try canonical(data["receipt"]) == fetched.body, "the callback event's receipt is not GET …/receipt's")

            // Without wait, the alert alone; with wait on a terminal alert, at once with its receipt.
            #expect(!(try await http.alert("ops", id).keys.contains("receipt")))
            let again = try await http.get("/v1/clients/ops/alerts/\(id)?wait=5")
            #expect(try canonical(try again.jsonObject()["receipt"]) == fetched.body)

            let signed = try SignedReceipt(text: fetched.text)
            let alert = try resource(try await http.get("/v1/clients/ops/alerts/\(id)").body)
            try signed.verify(with: try await keys(http), for: alert)
            #expect(signed.receipt.outcome == .answered && signed.receipt.button == "Deploy" && signed.receipt.buttonIndex == 0)
            #expect(signed.receipt.comment == "window agreed" && signed.receipt.alertID == id && signed.receipt.client == "ops")
            #expect(try await auditLines(http).contains(fetched.text), "the audit log does not hold the receipt")

            // Another alert's receipt is not this alert's.
            let other = try await http.create("ops", Contract.alert("Other"))
            #expect(try await http.withdraw("ops", Contract.id(other)).status == 200)
            let otherReceipt = try SignedReceipt(text: try await http.get("/v1/clients/ops/alerts/\(Contract.id(other))/receipt").text)
            let deployment = try await keys(http)
            #expect(throws: ReceiptError.notThisAlert) { try otherReceipt.verify(with: deployment, for: alert) }
            Contract.expectProblem(
                try await http.get("/v1/clients/ops/alerts/01JR0000000000000000000000/receipt"), status: 404, code: "not-found")
            Contract.expectProblem(try await http.get("/v1/clients/ops/alerts/\(id)/receipt?x=1"), status: 400, code: "bad-request")
        }
    }

    @Test("GET /v1/audit pages the receipts in seq order with next_after; bounds and roles are refused with their codes")
    func auditLog() async throws {
        let (config, secrets) = try await roleTokens()
        let (opsAdmin, entry) = try await newToken("ops-admin", roles: "admin", clients: "ops")
        try await withTestClient(config: config + entry) { http in
            let root = bearer(secrets["root"])
            var decided: [String] = []
            for index in 0..<5 {
                let alert = try await http.post("ops", Contract.alert("Q\(index)"), headers: root).jsonObject()
                let id = Contract.id(alert)
                #expect(try await http.withdraw("ops", id, headers: root).status == 200)
                decided.append(id)
            }
            let first = try await http.get("/v1/audit?limit=2", headers: root).jsonObject()
            let page = try #require(first["receipts"] as? [[String: Any]])
            #expect(page.compactMap { $0["seq"] as? Int } == [1, 2] && first["next_after"] as? Int == 2)
            let lines = try await auditLines(http, headers: root, limit: 2)
            #expect(lines.count == 5)
            let report = ChainVerifier.verify(lines: lines, keys: try await keys(http, headers: root))
            #expect(report.isValid && report.firstLinkChecked && report.count == 5, "\(report)")
            #expect(try lines.map { try SignedReceipt(text: $0).receipt.alertID } == decided)
            let last = try await http.get("/v1/audit?after=5", headers: root).jsonObject()
            #expect((last["receipts"] as? [Any])?.isEmpty == true && last["next_after"] as? Int == 5)

            for query in [
                "after=-1", "after=x", "after=", "after=99999999999999999999", "after=9007199254740992", "limit=0", "limit=1001", "from=1",
            ] {
                Contract.expectProblem(try await http.get("/v1/audit?\(query)", headers: root), status: 400, code: "bad-request")
            }
            Contract.expectProblem(try await http.get("/v1/audit", headers: bearer(secrets["reader"])), status: 403, code: "forbidden")
            let limited = Contract.expectProblem(try await http.get("/v1/audit", headers: bearer(opsAdmin)), status: 403, code: "forbidden")
            #expect((limited["detail"] as? String)?.contains(#"clients: ["*"]"#) == true, "\(limited)")
            Contract.expectProblem(try await http.get("/v1/audit"), status: 401, code: "unauthorized")
        }
    }

    /// The issue's "two instances deciding at full speed": in the balanced pass the requests go
    /// round-robin over two alertd processes on one database, so both decide at once.
    @Test("decisions at full speed on many clients: the audit log is one chain, no gap, no fork, one receipt per alert")
    func decisionsAtFullSpeed() async throws {
        try await withTestClient { http in
            let lanes = 6
            let perLane = 20
            let ids = try await withThrowingTaskGroup(of: [String].self) { group in
                for lane in 0..<lanes {
                    group.addTask {
                        var ids: [String] = []
                        // Two lanes share each client: their alerts queue behind one another.
                        let client = "speed-\(lane / 2)"
                        for round in 0..<perLane {
                            let alert = try await http.create(client, Contract.alert("L\(lane) R\(round)"))
                            let id = Contract.id(alert)
                            // Withdrawn (it may be queued behind another lane's); every other one answered when displayed.
                            let answer = try await http.choose(client, id, ["button_index": 0])
                            if answer.status != 200 { #expect(try await http.withdraw(client, id).status == 200) }
                            ids.append(id)
                        }
                        return ids
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            let lines = try await auditLines(http)
            #expect(lines.count == lanes * perLane, "\(lines.count) receipts for \(lanes * perLane) decisions")
            let report = ChainVerifier.verify(lines: lines, keys: try await keys(http))
            #expect(report.isValid && report.firstLinkChecked && report.count == lines.count, "\(report)")
            let alerts = try lines.map { try SignedReceipt(text: $0).receipt.alertID }
            #expect(Set(alerts) == Set(ids) && Set(alerts).count == alerts.count, "a decision without a receipt, or one with two")
        }
    }

    @Test("a metadata number beyond a double's range is 400 invalid-alert at its path; nothing is posted", arguments: TestMode.both)
    func metadataBeyondADouble(mode: TestMode) async throws {
        try await withTestClient(mode) { http in
            let response = try await http.post(
                "/v1/clients/ops/alerts",
                json: #"{"title":"T","metadata":{"limits":[1,1e400,2],"deep":{"x":-1E999},"fine":1e308,"tiny":1e-400}}"#)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == ["metadata.limits[1]", "metadata.deep.x"], "\(problem)")
            let reasons = (problem["errors"] as? [[String: Any]] ?? []).compactMap { $0["reason"] as? String }
            #expect(reasons.first?.contains("1e400 is beyond the range of a double") == true, "\(reasons)")
            #expect(try await http.pendingIDs("ops").isEmpty)
        }
    }
}

extension TestClient {
    fileprivate func withdraw(_ client: String, _ id: String, headers: [(String, String)]) async throws -> TestResponse {
        try await delete("/v1/clients/\(client)/alerts/\(id)", headers: headers)
    }
}
