// The HTTP API of §4: every endpoint, every problem code this daemon can produce, and the
// choice, withdraw and idempotency rules. Each test gets an alertd of its own, in process
// by default (`withTestClient`); the tests with `arguments: TestMode.both` run live too.
// Moved from the end-to-end tier, assertions unchanged.

import AlertdTestSupport
import Foundation
import Testing

@Suite("API contract")
struct APIContractTests {}

// MARK: - Posting

extension APIContractTests {
    @Suite("Posting an alert")
    struct Posting {
        @Test("a new alert is 201 with its Location and every field of the resource", arguments: TestMode.both)
        func createdWithLocationAndFullResource(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let client = Contract.uniqueClient("post")
                let fields: [String: Any] = [
                    "title": "Deploy to prod?", "message": "Build 1234 is green.", "style": "action_sheet",
                    "buttons": [["title": "Deploy", "style": "destructive"], ["title": "Cancel", "style": "cancel"]],
                    "priority": 5, "expires_in": 120, "callback_url": "https://hooks.example.com/hook",
                    "metadata": ["build": 1234, "tags": ["a", ["deep": NSNull()]]],
                ]
                let response = try await api.post(client, fields)
                #expect(response.status == 201)
                #expect(response.header("Content-Type") == "application/json")
                let alert = try response.jsonObject()
                let id = try #require(alert["id"] as? String)
                #expect(Contract.isAlertID(id), "id \(id) is not 26 Crockford base32 characters")
                #expect(response.header("Location") == "/v1/clients/\(client)/alerts/\(id)")

                #expect(alert["client"] as? String == client)
                #expect(alert["state"] as? String == "displayed")
                #expect(alert["position"] as? Int == 0)
                #expect(alert["title"] as? String == "Deploy to prod?")
                #expect(alert["message"] as? String == "Build 1234 is green.")
                #expect(alert["style"] as? String == "action_sheet")
                #expect(Contract.buttons(alert) == ["Deploy/destructive", "Cancel/cancel"])
                #expect(alert["priority"] as? Int == 5)
                #expect(alert["expires_in"] as? Int == 120)
                #expect(alert["dismiss_after"] is NSNull, "an alert with buttons is never dismissed")
                #expect(alert["callback_url"] as? String == "https://hooks.example.com/hook")
                #expect(Contract.same(alert["metadata"], fields["metadata"]))
                let created = try #require(Contract.milliseconds(alert["created_at"]), "created_at: \(alert["created_at"] ?? "nil")")
                let displayed = try #require(
                    Contract.milliseconds(alert["displayed_at"]), "displayed_at: \(alert["displayed_at"] ?? "nil")")
                let expires = try #require(Contract.milliseconds(alert["expires_at"]), "expires_at: \(alert["expires_at"] ?? "nil")")
                #expect(displayed >= created)
                #expect(expires - created == 120_000)
                #expect(alert["decided_at"] is NSNull)
                #expect(alert["result"] is NSNull)
                let expectedKeys: Set<String> = [
                    "id", "client", "state", "position", "title", "message", "style", "buttons", "priority", "quorum", "expires_in",
                    "dismiss_after", "callback_url", "metadata", "created_at", "displayed_at", "decided_at", "expires_at",
                    "posted_by", "votes", "fields", "escalation", "escalated_to", "result",
                ]
                #expect(Set(alert.keys) == expectedKeys)
                #expect((alert["escalation"] as? [Any])?.isEmpty == true && (alert["escalated_to"] as? [Any])?.isEmpty == true)
                #expect(alert["posted_by"] is NSNull, "no tokens: no poster's name")
                #expect(alert["quorum"] as? Int == 1 && (alert["votes"] as? [Any])?.isEmpty == true)

                let fetched = try await api.get(try #require(response.header("Location")))
                #expect(fetched.status == 200)
                #expect(Contract.same(try fetched.jsonObject(), alert))
            }
        }

        @Test("omitted fields take their defaults, present as null where they do not apply")
        func defaults() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("defaults")
                let bare = try await api.create(client, ["title": "Disk full"])
                #expect(bare["message"] is NSNull)
                #expect(bare["style"] as? String == "alert")
                #expect(Contract.buttons(bare) == [])
                #expect(bare["priority"] as? Int == 0)
                #expect(bare["expires_in"] as? Int == 86_400)
                #expect(bare["dismiss_after"] as? Int == 2, "a buttonless alert is dismissed after the default 2 s")
                #expect(bare["callback_url"] is NSNull)
                #expect(bare["metadata"] is NSNull)

                let withButton = try await api.create(client, ["title": "OK?", "buttons": [["title": "OK"]]])
                #expect(Contract.buttons(withButton) == ["OK/default"])
                #expect(withButton["dismiss_after"] is NSNull)
            }
        }

        @Test("a second alert queues behind the displayed one, with its position and no displayed_at")
        func queuesBehindDisplayed() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("queue")
                let first = try await api.create(client)
                let second = try await api.create(client)
                let third = try await api.create(client)
                #expect(first["state"] as? String == "displayed")
                #expect(second["state"] as? String == "queued")
                #expect(second["position"] as? Int == 1)
                #expect(second["displayed_at"] is NSNull)
                #expect(third["position"] as? Int == 2)
            }
        }

        @Test("a queued alert of higher priority is displayed before older ones (fifo)")
        func priorityOrdersTheQueue() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("prio")
                let low = try await api.create(client, Contract.alert("low"))
                let older = try await api.create(client, Contract.alert("older", priority: 0))
                let urgent = try await api.create(client, Contract.alert("urgent", priority: 10))
                #expect(urgent["state"] as? String == "queued", "fifo never covers the displayed alert")
                #expect(urgent["position"] as? Int == 1)
                #expect(try await api.pendingIDs(client) == [Contract.id(low), Contract.id(urgent), Contract.id(older)])

                #expect(try await api.choose(client, Contract.id(low), ["button": "Yes"]).status == 200)
                let current = try await api.get("/v1/clients/\(client)/alerts/current")
                #expect(current.status == 200)
                #expect(try current.jsonObject()["id"] as? String == Contract.id(urgent))
            }
        }

        @Test("ids are unique and sort by creation as plain strings")
        func idsSortByCreation() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("ids")
                var ids: [String] = []
                for _ in 0..<8 { ids.append(Contract.id(try await api.create(client))) }
                #expect(Set(ids).count == ids.count)
                #expect(ids == ids.sorted())
            }
        }

        @Test(
            "a Content-Type of application/json is accepted with parameters and in any letter case",
            arguments: ["application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"])
        func contentTypeParameters(contentType: String) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("ctype")
                let response = try await api.post(
                    "/v1/clients/\(client)/alerts", json: jsonBody(Contract.alert("x")), headers: [("Content-Type", contentType)])
                #expect(response.status == 201, "\(response.status): \(response.text)")
            }
        }

        @Test(
            "a body that is not application/json is 415 unsupported-media-type and creates nothing",
            arguments: [nil, "text/plain", "application/x-www-form-urlencoded", "application/jsonp", "application/problem+json", ""]
                as [String?])
        func unsupportedMediaType(contentType: String?) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("415")
                let headers = contentType.map { [("Content-Type", $0)] } ?? []
                let response = try await api.request(
                    "POST", "/v1/clients/\(client)/alerts", headers: headers, body: Array(jsonBody(Contract.alert("x")).utf8))
                Contract.expectProblem(response, status: 415, code: "unsupported-media-type")
                #expect(try await api.allAlerts(client).isEmpty)
            }
        }

        @Test("a client id of 64 characters is valid; one of 65 is 400 bad-request")
        func clientIDLength() async throws {
            try await withTestClient { api in
                let tag = String(Contract.uniqueClient("").suffix(8))
                let longest = "c" + String(repeating: "x", count: 63 - tag.count) + tag
                #expect(longest.count == 64)
                #expect(try await api.post(longest, Contract.alert("x")).status == 201)
                Contract.expectProblem(try await api.post(longest + "y", Contract.alert("x")), status: 400, code: "bad-request")
            }
        }

        @Test("lengths count Unicode code points, not bytes")
        func codePoints() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("unicode")
                let title = String(repeating: "🚀", count: 256)  // 256 code points, 1024 UTF-8 bytes
                let created = try await api.create(client, ["title": title, "buttons": [["title": String(repeating: "é", count: 64)]]])
                #expect(created["title"] as? String == title)
                let tooLong = try await api.post(client, ["title": title + "🚀"])
                let problem = Contract.expectProblem(tooLong, status: 400, code: "invalid-alert")
                #expect(Contract.errorFields(problem) == ["title"])
            }
        }

        @Test("metadata is echoed back by get, list and current, whatever keys it holds")
        func metadataEchoed() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("meta")
                let metadata: [String: Any] = ["unknown_key": ["nested": [1, 2.5, true, NSNull(), "x"]], "titel": "not a typo here"]
                let created = try await api.create(client, ["title": "m", "buttons": [["title": "Yes"]], "metadata": metadata])
                let path = "/v1/clients/\(client)/alerts/\(Contract.id(created))"
                #expect(Contract.same(try await api.get(path).jsonObject()["metadata"], metadata))
                #expect(Contract.same(try await api.get("/v1/clients/\(client)/alerts/current").jsonObject()["metadata"], metadata))
                #expect(Contract.same(try await api.allAlerts(client).first?["metadata"], metadata))
            }
        }

        @Test("metadata of exactly 4096 bytes of compact JSON is accepted; 4097 is invalid-alert")
        func metadataLimit() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("metalimit")
                // {"k":"…"} is 8 bytes plus the string.
                let fits = try await api.post(
                    client, ["title": "m", "buttons": [["title": "Yes"]], "metadata": ["k": String(repeating: "a", count: 4088)]])
                #expect(fits.status == 201, "\(fits.status): \(fits.text.prefix(300))")
                let over = try await api.post(client, ["title": "m", "metadata": ["k": String(repeating: "a", count: 4089)]])
                #expect(Contract.errorFields(Contract.expectProblem(over, status: 400, code: "invalid-alert")) == ["metadata"])
            }
        }
    }
}

// MARK: - Invalid alerts

/// One posted body that breaks one rule of §2, and the field the daemon must name.
struct Violation: Sendable, CustomTestStringConvertible {
    let name: String
    let json: String
    let field: String
    var testDescription: String { name }

    static let all: [Violation] = {
        let button = #"{"title":"Yes"}"#
        return [
            Violation(name: "no title", json: #"{}"#, field: "title"),
            Violation(name: "an empty title", json: #"{"title":""}"#, field: "title"),
            Violation(name: "a title of 257 characters", json: #"{"title":"\#(String(repeating: "t", count: 257))"}"#, field: "title"),
            Violation(
                name: "a message of 4097 characters", json: #"{"title":"t","message":"\#(String(repeating: "m", count: 4097))"}"#,
                field: "message"),
            Violation(name: "an unknown style", json: #"{"title":"t","style":"popup"}"#, field: "style"),
            Violation(
                name: "17 buttons", json: #"{"title":"t","buttons":[\#((0..<17).map { #"{"title":"b\#($0)"}"# }.joined(separator: ","))]}"#,
                field: "buttons"),
            Violation(name: "an empty button title", json: #"{"title":"t","buttons":[{"title":""}]}"#, field: "buttons[0].title"),
            Violation(
                name: "a button title of 65 characters",
                json: #"{"title":"t","buttons":[{"title":"\#(String(repeating: "b", count: 65))"}]}"#, field: "buttons[0].title"),
            Violation(
                name: "two buttons with one title", json: #"{"title":"t","buttons":[\#(button),{"title":"No"},\#(button)]}"#,
                field: "buttons[2].title"),
            Violation(
                name: "two cancel buttons",
                json: #"{"title":"t","buttons":[{"title":"A","style":"cancel"},{"title":"B","style":"cancel"}]}"#, field: "buttons[1].style"
            ),
            Violation(
                name: "an unknown button style", json: #"{"title":"t","buttons":[{"title":"A","style":"primary"}]}"#,
                field: "buttons[0].style"),
            Violation(name: "priority 101", json: #"{"title":"t","priority":101}"#, field: "priority"),
            Violation(name: "priority -101", json: #"{"title":"t","priority":-101}"#, field: "priority"),
            Violation(name: "a fractional priority", json: #"{"title":"t","priority":1.5}"#, field: "priority"),
            Violation(name: "expires_in 0", json: #"{"title":"t","expires_in":0}"#, field: "expires_in"),
            Violation(name: "a negative expires_in", json: #"{"title":"t","expires_in":-5}"#, field: "expires_in"),
            Violation(name: "expires_in above the configured maximum", json: #"{"title":"t","expires_in":604801}"#, field: "expires_in"),
            Violation(name: "dismiss_after 0", json: #"{"title":"t","dismiss_after":0}"#, field: "dismiss_after"),
            Violation(
                name: "dismiss_after on an alert with buttons", json: #"{"title":"t","buttons":[\#(button)],"dismiss_after":3}"#,
                field: "dismiss_after"),
            Violation(name: "an ftp callback_url", json: #"{"title":"t","callback_url":"ftp://example.com/x"}"#, field: "callback_url"),
            Violation(name: "a relative callback_url", json: #"{"title":"t","callback_url":"/hook"}"#, field: "callback_url"),
            Violation(name: "a callback_url without a host", json: #"{"title":"t","callback_url":"http://"}"#, field: "callback_url"),
            Violation(name: "metadata that is not an object", json: #"{"title":"t","metadata":[1]}"#, field: "metadata"),
        ]
    }()
}

extension APIContractTests {
    @Suite("Invalid alerts")
    struct InvalidAlerts {
        @Test("a body that breaks one rule of §2 is 400 invalid-alert with one error naming the field", arguments: Violation.all)
        func oneViolationOneError(violation: Violation) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("invalid")
                let response = try await api.post("/v1/clients/\(client)/alerts", json: violation.json)
                let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
                #expect(Contract.errorFields(problem) == [violation.field])
                let reasons = (problem["errors"] as? [[String: Any]] ?? []).map { $0["reason"] as? String ?? "" }
                #expect(reasons.allSatisfy { !$0.isEmpty }, "every error has a reason: \(reasons)")
                #expect(try await api.allAlerts(client).isEmpty)
            }
        }

        @Test("every violation is reported, one error entry each")
        func everyViolationReported() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("invalid-many")
                let json = #"{"title":"","priority":500,"buttons":[{"title":"A"},{"title":"A","colour":"red"}],"extra":1}"#
                let problem = Contract.expectProblem(
                    try await api.post("/v1/clients/\(client)/alerts", json: json), status: 400, code: "invalid-alert")
                let fields = Contract.errorFields(problem)
                #expect(fields.count == 5, "\(fields)")
                #expect(Set(fields) == ["title", "priority", "buttons[1].title", "buttons[1].colour", "extra"])
                #expect(try await api.allAlerts(client).isEmpty)
            }
        }
    }
}

// MARK: - Idempotency

/// `Idempotency-Key` header values to send, in order.
struct KeyHeaders: Sendable, CustomTestStringConvertible {
    let name: String
    let values: [String]
    var testDescription: String { name }
}

extension APIContractTests {
    @Suite("Idempotent posting")
    struct Idempotency {
        @Test("the same key and body return the first alert with 200 and create nothing", arguments: TestMode.both)
        func replayReturnsFirst(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let client = Contract.uniqueClient("idem")
                let key = [("Idempotency-Key", "deploy-1234")]
                let first = try await api.post(client, Contract.alert("deploy"), headers: key)
                #expect(first.status == 201)
                let replay = try await api.post(client, Contract.alert("deploy"), headers: key)
                #expect(replay.status == 200)
                #expect(replay.header("Location") == first.header("Location"))
                #expect(Contract.same(try replay.jsonObject(), try first.jsonObject()))
                #expect(try await api.allAlerts(client).count == 1)
            }
        }

        @Test("the same key with a different body is 422 idempotency-mismatch and creates nothing")
        func differentBodyMismatch() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("idem-mismatch")
                let key = [("Idempotency-Key", "k1")]
                let first = try await api.post(client, Contract.alert("one"), headers: key)
                #expect(first.status == 201)
                let before = try await api.snapshot(client)
                Contract.expectProblem(
                    try await api.post(client, Contract.alert("two"), headers: key), status: 422, code: "idempotency-mismatch")
                #expect(try await api.snapshot(client) == before)
                #expect(
                    try await api.post(client, Contract.alert("one"), headers: key).status == 200, "the key still names the first alert")
            }
        }

        @Test("a key belongs to one client: the same key on another client creates a new alert")
        func keyScopedToClient() async throws {
            try await withTestClient { api in
                let (a, b) = (Contract.uniqueClient("idem-a"), Contract.uniqueClient("idem-b"))
                let key = [("Idempotency-Key", "shared")]
                let first = try await api.post(a, Contract.alert("x"), headers: key)
                let second = try await api.post(b, Contract.alert("x"), headers: key)
                #expect(first.status == 201)
                #expect(second.status == 201)
                #expect(try first.jsonObject()["id"] as? String != second.jsonObject()["id"] as? String)
            }
        }

        @Test("a replay after the alert was answered returns that alert, answered, with 200")
        func replayAfterDecision() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("idem-answered")
                let key = [("Idempotency-Key", "ask-once")]
                let created = try await api.post(client, Contract.alert("q"), headers: key).jsonObject()
                #expect(try await api.choose(client, Contract.id(created), ["button": "No"]).status == 200)
                let replay = try await api.post(client, Contract.alert("q"), headers: key)
                #expect(replay.status == 200)
                let alert = try replay.jsonObject()
                #expect(alert["id"] as? String == Contract.id(created))
                #expect(alert["state"] as? String == "answered")
                #expect(try await api.allAlerts(client).count == 1)
            }
        }

        @Test("concurrent posts with one key create exactly one alert", arguments: TestMode.both)
        func concurrentPostsOneAlert(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let client = Contract.uniqueClient("idem-race")
                let body = jsonBody(Contract.alert("race"))
                let posts = Parked(count: 6) {
                    try await api.post("/v1/clients/\(client)/alerts", json: body, headers: [("Idempotency-Key", "race")])
                }
                let answers = try await posts.awaitAll()
                #expect(answers.map(\.status).sorted() == [200, 200, 200, 200, 200, 201])
                let ids = Set(answers.compactMap { try? $0.jsonObject()["id"] as? String })
                #expect(ids.count == 1)
                #expect(try await api.allAlerts(client).count == 1)
            }
        }

        @Test(
            "an Idempotency-Key must be 1 to 255 printable ASCII characters and sent once, else 400 bad-request",
            arguments: [
                KeyHeaders(name: "a key of 256 characters", values: [String(repeating: "k", count: 256)]),
                // 100 characters but 3,300 bytes: on PostgreSQL more than its index takes (issue 27).
                KeyHeaders(
                    name: "100 letters with 16 combining marks each",
                    values: [String(repeating: "a" + String(repeating: "\u{301}", count: 16), count: 100)]),
                KeyHeaders(name: "a key with a letter beyond ASCII", values: ["clé-7"]),
                KeyHeaders(name: "an empty key", values: [""]),
                KeyHeaders(name: "two keys", values: ["a", "b"]),
            ])
        func keyBounds(key: KeyHeaders) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("idem-bad")
                let headers = key.values.map { ("Idempotency-Key", $0) }
                Contract.expectProblem(try await api.post(client, Contract.alert("x"), headers: headers), status: 400, code: "bad-request")
                #expect(try await api.allAlerts(client).isEmpty)
            }
        }

        @Test("an Idempotency-Key of exactly 255 characters is accepted")
        func longestKey() async throws {
            try await withTestClient { api async throws in
                let client = Contract.uniqueClient("idem-255")
                let key: [(String, String)] = [("Idempotency-Key", String(repeating: "k", count: 255))]
                #expect(try await api.post(client, Contract.alert("x"), headers: key).status == 201)
                #expect(try await api.post(client, Contract.alert("x"), headers: key).status == 200)
            }
        }
    }
}

// MARK: - The displayed alert

extension APIContractTests {
    @Suite("Reading the displayed alert")
    struct Current {
        @Test("a client never used has no displayed alert: 204 without a body")
        func neverUsedIs204() async throws {
            try await withTestClient { api in
                let response = try await api.get("/v1/clients/\(Contract.uniqueClient("ghost"))/alerts/current")
                #expect(response.status == 204)
                #expect(response.body.isEmpty)
            }
        }

        @Test("current is the displayed alert at position 0; after it is decided, the next one; then 204")
        func followsTheQueue() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("current")
                let first = try await api.create(client)
                let second = try await api.create(client)
                let shown = try await api.get("/v1/clients/\(client)/alerts/current")
                #expect(shown.status == 200)
                #expect(shown.header("Content-Type") == "application/json")
                let alert = try shown.jsonObject()
                #expect(alert["id"] as? String == Contract.id(first))
                #expect(alert["position"] as? Int == 0)
                #expect(alert["state"] as? String == "displayed")

                #expect(try await api.choose(client, Contract.id(first), ["button": "Yes"]).status == 200)
                #expect(try await api.get("/v1/clients/\(client)/alerts/current").jsonObject()["id"] as? String == Contract.id(second))
                #expect(try await api.withdraw(client, Contract.id(second)).status == 200)
                #expect(try await api.get("/v1/clients/\(client)/alerts/current").status == 204)
            }
        }

        @Test("waiters without after park until an alert is displayed, then all get it", arguments: TestMode.both)
        func waitersParkUntilDisplayed(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let client = Contract.uniqueClient("wait-current")
                let waiters = Parked(count: 3) { try await api.get("/v1/clients/\(client)/alerts/current?wait=30") }
                try await api.awaitWaiters(3)
                #expect(!waiters.anyAnswered)
                let posted = try await api.create(client)
                let answers = try await waiters.awaitAll()
                for answer in answers {
                    #expect(answer.status == 200)
                    #expect(try answer.jsonObject()["id"] as? String == Contract.id(posted))
                }
            }
        }

        @Test("a waiter with after=<displayed id> parks until the display changes: the next alert, or 204")
        func afterDisplayedParksUntilChange() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("wait-after")
                let first = try await api.create(client)
                let second = try await api.create(client)
                let firstID = Contract.id(first)
                let toNext = Parked(count: 1) {
                    try await api.get("/v1/clients/\(client)/alerts/current?wait=30&after=\(firstID)")
                }
                try await api.awaitWaiters(1)
                #expect(!toNext.anyAnswered)
                #expect(try await api.choose(client, Contract.id(first), ["button": "Yes"]).status == 200)
                let next = try #require(try await toNext.awaitAll().first)
                #expect(next.status == 200)
                #expect(try next.jsonObject()["id"] as? String == Contract.id(second))

                let secondID = Contract.id(second)
                let toNone = Parked(count: 1) {
                    try await api.get("/v1/clients/\(client)/alerts/current?wait=30&after=\(secondID)")
                }
                try await api.awaitWaiters(1)
                #expect(try await api.withdraw(client, Contract.id(second)).status == 200)
                let none = try #require(try await toNone.awaitAll().first)
                #expect(none.status == 204)
            }
        }

        @Test("after naming another alert than the displayed one returns at once")
        func afterOtherReturnsAtOnce() async throws {
            let client = Contract.uniqueClient("wait-other")
            try await withTestClient { api in
                let shown = try await api.create(client)
                let started = ContinuousClock.now
                let response = try await api.get("/v1/clients/\(client)/alerts/current?wait=30&after=01ARZ3NDEKTSV4RRFFQ69G5FAV")
                #expect(response.status == 200)
                #expect(try response.jsonObject()["id"] as? String == Contract.id(shown))
                let noAfter = try await api.get("/v1/clients/\(client)/alerts/current?wait=30&after=")
                #expect(ContinuousClock.now - started < .seconds(5), "a wait of 30 s parked")
                #expect(noAfter.status == 200, "an empty after means none, and an alert is displayed")
            }
        }

        @Test("a wait that runs out answers as without wait")
        func waitRunsOut() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("wait-timeout")
                let shown = try await api.create(client)
                let clock = ContinuousClock()
                var response: TestResponse?
                var started = clock.now
                response = try await api.get("/v1/clients/\(client)/alerts/current?wait=1&after=\(Contract.id(shown))")
                let elapsed = clock.now - started
                #expect(response?.status == 200)
                #expect(try response?.jsonObject()["id"] as? String == Contract.id(shown))
                #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(10), "waited \(elapsed)")

                let empty = Contract.uniqueClient("wait-timeout-empty")
                started = clock.now
                response = try await api.get("/v1/clients/\(empty)/alerts/current?wait=1")
                let emptyElapsed = clock.now - started
                #expect(response?.status == 204)
                #expect(emptyElapsed >= .milliseconds(900) && emptyElapsed < .seconds(10), "waited \(emptyElapsed)")
            }
        }
    }
}

// MARK: - Choosing

/// A choice body that names no button of the alert correctly.
struct BadChoice: Sendable, CustomTestStringConvertible {
    let json: String
    var testDescription: String { json }
}

extension APIContractTests {
    @Suite("Choosing a button")
    struct Choosing {
        @Test("choosing by title answers the alert with the full result and displays the next", arguments: TestMode.both)
        func byTitle(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let client = Contract.uniqueClient("choose")
                let asked = try await api.create(
                    client, Contract.alert("deploy", buttons: [("Deploy", "destructive"), ("Cancel", "cancel")]))
                let next = try await api.create(client)
                let response = try await api.choose(client, Contract.id(asked), ["button": "Deploy"])
                #expect(response.status == 200)
                let answered = try response.jsonObject()
                #expect(answered["state"] as? String == "answered")
                #expect(answered["position"] is NSNull, "a terminal alert has no position")
                #expect(Contract.milliseconds(answered["decided_at"]) != nil)
                let result = try #require(answered["result"] as? [String: Any])
                #expect(result["outcome"] as? String == "answered")
                #expect(result["button"] as? String == "Deploy")
                #expect(result["button_index"] as? Int == 0)
                #expect(result["cancelled"] as? Bool == false)
                #expect(result["decided_by"] is NSNull, "no auth: nobody is named")
                #expect(Set(result.keys) == ["outcome", "button", "button_index", "cancelled", "decided_by", "comment", "values", "votes"])
                // §10: the one choice of a quorum-1 alert is its one vote.
                let votes = try #require(result["votes"] as? [[String: Any]])
                #expect(votes.count == 1 && votes.first?["button"] as? String == "Deploy" && votes.first?["decided_by"] is NSNull)
                #expect(Contract.same(answered["votes"], result["votes"]))

                let current = try await api.get("/v1/clients/\(client)/alerts/current").jsonObject()
                #expect(current["id"] as? String == Contract.id(next))
                #expect(current["state"] as? String == "displayed")
            }
        }

        @Test(
            "choosing by index works (a whole number however written: 1, 1.0, 1e0), and a cancel-style button sets cancelled",
            arguments: ["1", "1.0", "1e0"])
        func byIndexCancel(index: String) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-index")
                let asked = try await api.create(client, Contract.alert("deploy", buttons: [("Deploy", "default"), ("Cancel", "cancel")]))
                let response = try await api.post(
                    "/v1/clients/\(client)/alerts/\(Contract.id(asked))/choice", json: #"{"button_index":\#(index)}"#)
                #expect(response.status == 200)
                let result = try #require(try response.jsonObject()["result"] as? [String: Any])
                #expect(result["button"] as? String == "Cancel")
                #expect(result["button_index"] as? Int == 1)
                #expect(result["cancelled"] as? Bool == true)
            }
        }

        @Test(
            "a body with neither or both of button and button_index, or of the wrong shape, is 400 bad-request",
            arguments: [
                #"{}"#, #"{"button":"Yes","button_index":0}"#, #"{"button":null}"#, #"{"button":1}"#,
                #"{"button_index":"0"}"#, #"{"button_index":1.5}"#, #"[]"#, #""Yes""#, #"{"button":"Yes","by":"me"}"#,
            ].map(BadChoice.init))
        func malformedChoice(choice: BadChoice) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-bad")
                let asked = try await api.create(client)
                let before = try await api.snapshot(client)
                let response = try await api.post("/v1/clients/\(client)/alerts/\(Contract.id(asked))/choice", json: choice.json)
                Contract.expectProblem(response, status: 400, code: "bad-request")
                #expect(try await api.snapshot(client) == before)
            }
        }

        @Test(
            "a button that is not on the alert is 422 unknown-button",
            arguments: [#"{"button":"Maybe"}"#, #"{"button":"yes"}"#, #"{"button_index":2}"#, #"{"button_index":-1}"#].map(BadChoice.init))
        func unknownButton(choice: BadChoice) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-unknown")
                let asked = try await api.create(client)
                let before = try await api.snapshot(client)
                let response = try await api.post("/v1/clients/\(client)/alerts/\(Contract.id(asked))/choice", json: choice.json)
                Contract.expectProblem(response, status: 422, code: "unknown-button")
                #expect(try await api.snapshot(client) == before)
            }
        }

        @Test("any choice for a buttonless alert is 422 unknown-button")
        func buttonlessAlert() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-buttonless")
                let notice = try await api.create(client, ["title": "FYI", "dismiss_after": 600])
                for body in [["button": "OK"], ["button_index": 0]] as [[String: Any]] {
                    Contract.expectProblem(try await api.choose(client, Contract.id(notice), body), status: 422, code: "unknown-button")
                }
                #expect(try await api.alert(client, Contract.id(notice))["state"] as? String == "displayed")
            }
        }

        @Test("choosing for a queued alert is 409 not-displayed, but an unknown button is 422 first")
        func queuedAlert() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-queued")
                _ = try await api.create(client)
                let queued = try await api.create(client)
                let before = try await api.snapshot(client)
                Contract.expectProblem(
                    try await api.choose(client, Contract.id(queued), ["button": "Yes"]), status: 409, code: "not-displayed")
                Contract.expectProblem(
                    try await api.choose(client, Contract.id(queued), ["button": "Maybe"]), status: 422, code: "unknown-button")
                #expect(try await api.snapshot(client) == before)
            }
        }

        @Test("a different choice for an answered alert is 409 already-decided with the alert")
        func differentChoiceAlreadyDecided() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-twice")
                let asked = try await api.create(client)
                let answered = try await api.choose(client, Contract.id(asked), ["button": "Yes"]).jsonObject()
                let before = try await api.snapshot(client)
                for body in [["button": "No"], ["button_index": 1]] as [[String: Any]] {
                    let problem = Contract.expectProblem(
                        try await api.choose(client, Contract.id(asked), body), status: 409, code: "already-decided")
                    let alert = try #require(problem["alert"] as? [String: Any], "the problem carries the alert")
                    #expect(Contract.same(alert, answered))
                }
                #expect(try await api.snapshot(client) == before)
            }
        }

        @Test("repeating the same choice, by title or by index, is 200 with the same result (a safe retry)")
        func sameChoiceIsSafe() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-retry")
                let asked = try await api.create(client)
                _ = try await api.create(client)
                let first = try await api.choose(client, Contract.id(asked), ["button": "No"])
                #expect(first.status == 200)
                let answered = try first.jsonObject()
                let before = try await api.snapshot(client)
                for body in [["button": "No"], ["button_index": 1]] as [[String: Any]] {
                    let retry = try await api.choose(client, Contract.id(asked), body)
                    #expect(retry.status == 200)
                    #expect(Contract.same(try retry.jsonObject(), answered))
                }
                #expect(try await api.snapshot(client) == before, "a retry changes nothing, the queue included")
            }
        }

        @Test("choosing for a withdrawn or expired alert is 409 already-decided with the alert")
        func terminalAlerts() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-terminal")
                let expiring = try await api.create(client, ["title": "soon", "buttons": [["title": "Yes"]], "expires_in": 0.3])
                let expired = try await api.awaitTerminal(client, Contract.id(expiring))
                #expect(expired["state"] as? String == "expired")
                let problem = Contract.expectProblem(
                    try await api.choose(client, Contract.id(expiring), ["button": "Yes"]), status: 409, code: "already-decided")
                #expect((problem["alert"] as? [String: Any])?["state"] as? String == "expired")

                let withdrawn = try await api.create(client)
                #expect(try await api.withdraw(client, Contract.id(withdrawn)).status == 200)
                let second = Contract.expectProblem(
                    try await api.choose(client, Contract.id(withdrawn), ["button": "Yes"]), status: 409, code: "already-decided")
                #expect((second["alert"] as? [String: Any])?["state"] as? String == "withdrawn")
            }
        }

        @Test("a choice must be sent as application/json, else 415")
        func choiceContentType() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("choose-415")
                let asked = try await api.create(client)
                let response = try await api.post(
                    "/v1/clients/\(client)/alerts/\(Contract.id(asked))/choice", json: #"{"button":"Yes"}"#,
                    headers: [("Content-Type", "text/plain")])
                Contract.expectProblem(response, status: 415, code: "unsupported-media-type")
                #expect(try await api.alert(client, Contract.id(asked))["state"] as? String == "displayed")
            }
        }
    }
}

// MARK: - Withdrawing

extension APIContractTests {
    @Suite("Withdrawing an alert")
    struct Withdrawing {
        @Test("withdrawing a queued alert is 200 with the withdrawn alert and leaves the displayed one", arguments: TestMode.both)
        func queued(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let client = Contract.uniqueClient("withdraw")
                let shown = try await api.create(client)
                let queued = try await api.create(client)
                let third = try await api.create(client)
                let response = try await api.withdraw(client, Contract.id(queued))
                #expect(response.status == 200)
                let withdrawn = try response.jsonObject()
                #expect(withdrawn["state"] as? String == "withdrawn")
                #expect(withdrawn["position"] is NSNull)
                #expect(Contract.milliseconds(withdrawn["decided_at"]) != nil)
                let result = try #require(withdrawn["result"] as? [String: Any])
                #expect(result["outcome"] as? String == "withdrawn")
                #expect(result["button"] is NSNull)
                #expect(result["button_index"] is NSNull)
                #expect(result["cancelled"] as? Bool == false)
                #expect(result["decided_by"] is NSNull)
                #expect(try await api.pendingIDs(client) == [Contract.id(shown), Contract.id(third)])
                #expect(try await api.alert(client, Contract.id(third))["position"] as? Int == 1)
            }
        }

        @Test("withdrawing the displayed alert displays the next")
        func displayed() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("withdraw-shown")
                let shown = try await api.create(client)
                let next = try await api.create(client)
                #expect(try await api.withdraw(client, Contract.id(shown)).status == 200)
                let current = try await api.get("/v1/clients/\(client)/alerts/current").jsonObject()
                #expect(current["id"] as? String == Contract.id(next))
            }
        }

        @Test("withdrawing a withdrawn alert again is 200 with the same alert (a safe retry)")
        func again() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("withdraw-again")
                let shown = try await api.create(client)
                let first = try await api.withdraw(client, Contract.id(shown)).jsonObject()
                let before = try await api.snapshot(client)
                let again = try await api.withdraw(client, Contract.id(shown))
                #expect(again.status == 200)
                #expect(Contract.same(try again.jsonObject(), first))
                #expect(try await api.snapshot(client) == before)
            }
        }

        @Test("withdrawing an answered or expired alert is 409 already-decided with the alert")
        func terminal() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("withdraw-terminal")
                let asked = try await api.create(client)
                let answered = try await api.choose(client, Contract.id(asked), ["button": "Yes"]).jsonObject()
                let problem = Contract.expectProblem(
                    try await api.withdraw(client, Contract.id(asked)), status: 409, code: "already-decided")
                #expect(Contract.same(problem["alert"], answered))

                let expiring = try await api.create(client, ["title": "soon", "buttons": [["title": "Yes"]], "expires_in": 0.3])
                _ = try await api.awaitTerminal(client, Contract.id(expiring))
                let second = Contract.expectProblem(
                    try await api.withdraw(client, Contract.id(expiring)), status: 409, code: "already-decided")
                #expect((second["alert"] as? [String: Any])?["state"] as? String == "expired")
            }
        }
    }
}

// MARK: - One alert

extension APIContractTests {
    @Suite("Reading one alert")
    struct OneAlert {
        @Test("an alert is 200 with its current position")
        func withPosition() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("get")
                let first = try await api.create(client)
                let second = try await api.create(client)
                #expect(try await api.alert(client, Contract.id(second))["position"] as? Int == 1)
                _ = try await api.choose(client, Contract.id(first), ["button": "Yes"])
                let now = try await api.alert(client, Contract.id(second))
                #expect(now["position"] as? Int == 0)
                #expect(now["state"] as? String == "displayed")
            }
        }

        @Test("wait parks until the alert is terminal and returns it decided")
        func waitUntilTerminal() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("get-wait")
                let asked = try await api.create(client)
                let askedID = Contract.id(asked)
                let waiters = Parked(count: 2) { try await api.get("/v1/clients/\(client)/alerts/\(askedID)?wait=30") }
                try await api.awaitWaiters(2)
                #expect(!waiters.anyAnswered)
                let answered = try await api.choose(client, Contract.id(asked), ["button": "Yes"]).jsonObject()
                let receipt = try await api.get("/v1/clients/\(client)/alerts/\(askedID)/receipt").jsonObject()
                for response in try await waiters.awaitAll() {
                    #expect(response.status == 200)
                    // The alert as decided, and the decision's receipt (SPEC §14).
                    var polled = try response.jsonObject()
                    #expect(Contract.same(polled.removeValue(forKey: "receipt"), receipt))
                    #expect(Contract.same(polled, answered))
                }
            }
        }

        @Test("wait on a terminal alert returns at once")
        func waitOnTerminal() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("get-terminal")
                let asked = try await api.create(client)
                _ = try await api.withdraw(client, Contract.id(asked))
                let started = ContinuousClock.now
                let response = try await api.get("/v1/clients/\(client)/alerts/\(Contract.id(asked))?wait=30")
                #expect(ContinuousClock.now - started < .seconds(5), "a wait of 30 s parked")
                #expect(response.status == 200)
                #expect(try response.jsonObject()["state"] as? String == "withdrawn")
            }
        }

        @Test("wait on a pending alert that stays pending returns it as it is when the wait runs out")
        func waitRunsOut() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("get-timeout")
                let asked = try await api.create(client)
                let started = ContinuousClock.now
                let response = try await api.get("/v1/clients/\(client)/alerts/\(Contract.id(asked))?wait=1")
                let elapsed = ContinuousClock.now - started
                #expect(response.status == 200)
                #expect(try response.jsonObject()["state"] as? String == "displayed")
                #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(10), "waited \(elapsed)")
            }
        }

        @Test("an alert asked for under another client is 404 not-found")
        func otherClient() async throws {
            try await withTestClient { api in
                let owner = Contract.uniqueClient("owner")
                let asked = try await api.create(owner)
                let path = "/v1/clients/\(Contract.uniqueClient("stranger"))/alerts/\(Contract.id(asked))"
                Contract.expectProblem(try await api.get(path), status: 404, code: "not-found")
            }
        }
    }
}

// MARK: - Listing

extension APIContractTests {
    @Suite("Listing alerts")
    struct Listing {
        static let allStates = "queued,displayed,answered,dismissed,expired,withdrawn"

        @Test("a client never used lists nothing")
        func neverUsed() async throws {
            try await withTestClient { api in
                let page = try await api.get("/v1/clients/\(Contract.uniqueClient("empty"))/alerts?state=\(Self.allStates)")
                #expect(page.status == 200)
                #expect(page.header("Content-Type") == "application/json")
                let object = try page.jsonObject()
                #expect((object["alerts"] as? [Any])?.isEmpty == true)
                #expect(object["next_cursor"] is NSNull)
            }
        }

        @Test("by default the pending alerts are listed in display order with their positions")
        func pendingInDisplayOrder() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("list")
                let a = try await api.create(client, Contract.alert("a"))
                let b = try await api.create(client, Contract.alert("b"))
                let c = try await api.create(client, Contract.alert("c", priority: 50))
                let d = try await api.create(client, Contract.alert("d"))
                let listed = try await api.list(client)
                #expect(listed.alerts.map(Contract.id) == [a, c, b, d].map(Contract.id))
                #expect(listed.alerts.map { $0["position"] as? Int } == [0, 1, 2, 3])
                #expect(listed.nextCursor == nil)
            }
        }

        @Test("state filters, pending first in display order, then terminal alerts newest first", arguments: TestMode.both)
        func stateFilter(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let client = Contract.uniqueClient("states")
                let history = try await MixedHistory(api, client)
                #expect(try await api.list(client).alerts.map(Contract.id) == [history.displayed, history.queued])
                #expect(try await api.list(client, "state=answered").alerts.map(Contract.id) == [history.answered])
                #expect(try await api.list(client, "state=dismissed").alerts.map(Contract.id) == [history.dismissed])
                #expect(try await api.list(client, "state=expired").alerts.map(Contract.id) == [history.expired])
                #expect(try await api.list(client, "state=withdrawn").alerts.map(Contract.id) == [history.withdrawn])
                #expect(try await api.list(client, "state=queued").alerts.map(Contract.id) == [history.queued])
                #expect(try await api.list(client, "state=displayed").alerts.map(Contract.id) == [history.displayed])
                #expect(
                    try await api.list(client, "state=withdrawn,answered").alerts.map(Contract.id) == [history.withdrawn, history.answered])
                let everything = try await api.list(client, "state=\(Self.allStates)").alerts
                #expect(everything.map(Contract.id) == history.inListingOrder)
                #expect(everything.map { $0["position"] as? Int } == [0, 1, nil, nil, nil, nil])
                #expect(everything.dropFirst(2).allSatisfy { $0["position"] is NSNull })
            }
        }

        @Test("limit and cursor page through pending then terminal alerts, each exactly once, for every page size")
        func pagingAcrossPendingAndTerminal() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("paging")
                let history = try await MixedHistory(api, client)
                let total = history.inListingOrder.count
                for limit in 1...(total + 1) {
                    var seen: [String] = []
                    var cursor: String?
                    var pages = 0
                    repeat {
                        var query = "state=\(Self.allStates)&limit=\(limit)"
                        if let cursor { query += "&cursor=\(cursor)" }
                        let page = try await api.list(client, query)
                        #expect(page.alerts.count <= limit)
                        seen += page.alerts.map(Contract.id)
                        cursor = page.nextCursor
                        pages += 1
                    } while cursor != nil && pages <= total + 1
                    #expect(seen == history.inListingOrder, "limit \(limit)")
                    #expect(pages == max(1, (total + limit - 1) / limit), "limit \(limit): \(pages) pages")
                }
            }
        }

        @Test("limit defaults to 100")
        func defaultLimit() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("hundred")
                for index in 0..<101 { _ = try await api.create(client, Contract.alert("n\(index)")) }
                let first = try await api.list(client)
                #expect(first.alerts.count == 100)
                let cursor = try #require(first.nextCursor)
                let second = try await api.list(client, "cursor=\(cursor)")
                #expect(second.alerts.count == 1)
                #expect(second.nextCursor == nil)
                #expect(try await api.list(client, "limit=1000").alerts.count == 101, "1000 is a valid limit")
            }
        }

        @Test("a cursor stays valid after the alert it names leaves the queue")
        func cursorSurvivesDecision() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("cursor")
                let a = try await api.create(client, Contract.alert("a"))
                let b = try await api.create(client, Contract.alert("b"))
                let c = try await api.create(client, Contract.alert("c"))
                let first = try await api.list(client, "limit=1")
                #expect(first.alerts.map(Contract.id) == [Contract.id(a)])
                let cursor = try #require(first.nextCursor)
                #expect(try await api.choose(client, Contract.id(a), ["button": "Yes"]).status == 200)
                let second = try await api.list(client, "limit=1&cursor=\(cursor)")
                #expect(second.alerts.map(Contract.id) == [Contract.id(b)])
                let third = try await api.list(client, "limit=1&cursor=\(try #require(second.nextCursor))")
                #expect(third.alerts.map(Contract.id) == [Contract.id(c)])
            }
        }
    }
}

/// Six alerts of one client, one in each state, built through the API:
/// dismissed, expired, answered, withdrawn (terminal) and displayed, queued (pending).
struct MixedHistory {
    let dismissed: String, expired: String, answered: String, withdrawn: String, displayed: String, queued: String

    /// `GET …/alerts?state=<all six>`: pending in display order, then terminal newest first.
    var inListingOrder: [String] { [displayed, queued, withdrawn, answered, expired, dismissed] }

    init(_ api: any TestClient, _ client: String) async throws {
        let notice = try await api.create(client, ["title": "notice", "dismiss_after": 0.2])
        #expect(try await api.awaitTerminal(client, Contract.id(notice))["state"] as? String == "dismissed")
        let expiring = try await api.create(client, ["title": "expiring", "buttons": [["title": "Yes"]], "expires_in": 0.3])
        #expect(try await api.awaitTerminal(client, Contract.id(expiring))["state"] as? String == "expired")
        let asked = try await api.create(client, Contract.alert("asked"))
        #expect(try await api.choose(client, Contract.id(asked), ["button": "Yes"]).status == 200)
        let shown = try await api.create(client, Contract.alert("shown"))
        let waiting = try await api.create(client, Contract.alert("waiting"))
        let dropped = try await api.create(client, Contract.alert("dropped"))
        #expect(try await api.withdraw(client, Contract.id(dropped)).status == 200)
        (dismissed, expired, answered) = (Contract.id(notice), Contract.id(expiring), Contract.id(asked))
        (withdrawn, displayed, queued) = (Contract.id(dropped), Contract.id(shown), Contract.id(waiting))
    }
}

// MARK: - Clients

extension APIContractTests {
    @Suite("Listing clients")
    struct Clients {
        @Test(
            "GET /v1/clients lists every client known, sorted, with its pending count, displayed alert and next_cursor",
            arguments: TestMode.both)
        func everyClient(mode: TestMode) async throws {
            try await withTestClient(mode) { api in
                let empty = try await api.get("/v1/clients")
                #expect(empty.status == 200)
                #expect(empty.header("Content-Type") == "application/json")
                #expect(Contract.same(try empty.jsonObject(), ["clients": [Any](), "next_cursor": NSNull()] as [String: Any]))

                let beta1 = try await api.create("beta")
                _ = try await api.create("beta")
                let alpha = try await api.create("alpha")
                _ = try await api.choose("alpha", Contract.id(alpha), ["button": "Yes"])
                let expected: [String: Any] = [
                    "clients": [
                        ["client": "alpha", "pending": 0, "displayed": NSNull()],
                        ["client": "beta", "pending": 2, "displayed": Contract.id(beta1)],
                    ],
                    "next_cursor": NSNull(),
                ]
                let listed = try await api.get("/v1/clients").jsonObject()
                #expect(Contract.same(listed, expected), "\(listed)")
            }
        }
    }
}

// MARK: - Health

extension APIContractTests {
    @Suite("Health and readiness")
    struct Health {
        @Test("/healthz and /readyz answer 200 with JSON", arguments: ["/healthz", "/readyz"])
        func healthy(path: String) async throws {
            try await withTestClient { api in
                let response = try await api.get(path)
                #expect(response.status == 200)
                #expect(response.header("Content-Type") == "application/json")
                #expect(try response.jsonObject()["status"] is String)
            }
        }
    }
}

// MARK: - Routing

/// A request that reaches a route, for checks that apply to every endpoint.
struct RouteCase: Sendable, CustomTestStringConvertible {
    let method: String
    let path: String
    let body: String?
    var testDescription: String { "\(method) \(path)" }

    /// Every endpoint, with `{c}` for a client and `{id}` for an alert id.
    static let all: [RouteCase] = [
        RouteCase(method: "GET", path: "/healthz", body: nil),
        RouteCase(method: "GET", path: "/readyz", body: nil),
        RouteCase(method: "GET", path: "/v1/clients", body: nil),
        RouteCase(method: "POST", path: "/v1/clients/{c}/alerts", body: #"{"title":"x","buttons":[{"title":"Yes"}]}"#),
        RouteCase(method: "GET", path: "/v1/clients/{c}/alerts", body: nil),
        RouteCase(method: "GET", path: "/v1/clients/{c}/alerts/current", body: nil),
        RouteCase(method: "GET", path: "/v1/clients/{c}/alerts/{id}", body: nil),
        RouteCase(method: "DELETE", path: "/v1/clients/{c}/alerts/{id}", body: nil),
        RouteCase(method: "POST", path: "/v1/clients/{c}/alerts/{id}/choice", body: #"{"button":"Yes"}"#),
    ]

    func request(_ api: any TestClient, client: String, id: String, query: String = "") async throws -> TestResponse {
        let target = path.replacingOccurrences(of: "{c}", with: client).replacingOccurrences(of: "{id}", with: id) + query
        let headers = body == nil ? [] : [("Content-Type", "application/json")]
        return try await api.request(method, target, headers: headers, body: body.map { Array($0.utf8) })
    }
}

/// A method a path does not take, and the methods its `Allow` must list.
struct WrongMethod: Sendable, CustomTestStringConvertible {
    let method: String
    let path: String
    let allow: Set<String>
    var testDescription: String { "\(method) \(path)" }
}

extension APIContractTests {
    @Suite("Routing")
    struct Routing {
        @Test(
            "a path the API does not have is 404 not-found",
            arguments: [
                "/v1", "/v1/", "/v2/clients", "/v1/clients/ops", "/v1/clients/ops/", "/healthz/", "/metricz",
                "/v1/clients/ops/alerts/01ARZ3NDEKTSV4RRFFQ69G5FAV/extra", "/v1/clients//alerts", "//v1/clients",
                "/v1/clients/ops/alerts/01ARZ3NDEKTSV4RRFFQ69G5FAV/choice/again",
            ])
        func unknownPath(path: String) async throws {
            try await withTestClient { api in
                Contract.expectProblem(try await api.get(path), status: 404, code: "not-found")
            }
        }

        @Test(
            "a method the path does not take is 405 method-not-allowed with Allow",
            arguments: [
                WrongMethod(method: "PUT", path: "/v1/clients/ops/alerts", allow: ["GET", "HEAD", "POST"]),
                WrongMethod(method: "DELETE", path: "/v1/clients/ops/alerts", allow: ["GET", "HEAD", "POST"]),
                WrongMethod(method: "PATCH", path: "/v1/clients/ops/alerts/01ARZ3NDEKTSV4RRFFQ69G5FAV", allow: ["GET", "HEAD", "DELETE"]),
                WrongMethod(method: "GET", path: "/v1/clients/ops/alerts/01ARZ3NDEKTSV4RRFFQ69G5FAV/choice", allow: ["POST"]),
                WrongMethod(method: "DELETE", path: "/v1/clients", allow: ["GET", "HEAD"]),
                WrongMethod(method: "POST", path: "/healthz", allow: ["GET", "HEAD"]),
                WrongMethod(method: "PUT", path: "/readyz", allow: ["GET", "HEAD"]),
                // `current` is its own resource, never the alert `{id}` "current": no DELETE.
                WrongMethod(method: "OPTIONS", path: "/v1/clients/ops/alerts/current", allow: ["GET", "HEAD"]),
                WrongMethod(method: "DELETE", path: "/v1/clients/ops/alerts/current", allow: ["GET", "HEAD"]),
            ])
        func wrongMethod(wrong: WrongMethod) async throws {
            try await withTestClient { api in
                let before = try await api.snapshot("ops")
                let response = try await api.request(
                    wrong.method, wrong.path, headers: [("Content-Type", "application/json")],
                    body: Array(#"{"title":"x","buttons":[{"title":"Yes"}]}"#.utf8))
                Contract.expectProblem(response, status: 405, code: "method-not-allowed")
                let allow = Set((response.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                #expect(allow == wrong.allow, "Allow: \(response.header("Allow") ?? "missing")")
                #expect(try await api.snapshot("ops") == before)
            }
        }

        @Test("HEAD answers wherever GET does, with GET's status and headers and no body")
        func headLikeGet() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("head")
                let shown = try await api.create(client)
                let paths = [
                    "/healthz", "/readyz", "/v1/clients", "/v1/clients/\(client)/alerts", "/v1/clients/\(client)/alerts/current",
                    "/v1/clients/\(client)/alerts/\(Contract.id(shown))", "/v1/clients/\(Contract.uniqueClient("none"))/alerts/current",
                    "/v1/clients/\(client)/alerts/01ARZ3NDEKTSV4RRFFQ69G5FAV",
                ]
                for path in paths {
                    let get = try await api.get(path)
                    let head = try await api.request("HEAD", path)
                    #expect(head.status == get.status, "HEAD \(path)")
                    #expect(head.header("Content-Type") == get.header("Content-Type"), "HEAD \(path)")
                    #expect(head.body.isEmpty, "HEAD \(path)")
                }
            }
        }

        @Test("every endpoint answers an unknown query parameter with 400 bad-request and changes nothing", arguments: RouteCase.all)
        func unknownQueryParameter(route: RouteCase) async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("query")
                let shown = try await api.create(client)
                let before = try await api.snapshot(client)
                let response = try await route.request(api, client: client, id: Contract.id(shown), query: "?verbose=1")
                Contract.expectProblem(response, status: 400, code: "bad-request")
                #expect(try await api.snapshot(client) == before)
            }
        }

        @Test("a query parameter given twice is 400 bad-request")
        func repeatedQueryParameter() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("twice")
                let shown = try await api.create(client)
                for path in [
                    "/v1/clients/\(client)/alerts?limit=1&limit=1", "/v1/clients/\(client)/alerts?state=queued&state=queued",
                    "/v1/clients/\(client)/alerts/current?wait=0&wait=0",
                    "/v1/clients/\(client)/alerts/\(Contract.id(shown))?wait=0&wait=0",
                ] {
                    Contract.expectProblem(try await api.get(path), status: 400, code: "bad-request")
                }
            }
        }
    }
}

// MARK: - Limits

extension APIContractTests {
    @Suite("Queue and waiter limits")
    struct Limits {
        static let config = Contract.baseConfig + "limits:\n  max_waiters: 2\nclients:\n  small: { max_pending: 2 }\n"

        @Test("a post over the client's pending limit is 429 queue-full and creates nothing")
        func queueFull() async throws {
            try await withTestClient(config: Self.config) { api in
                let first = try await api.create("small")
                _ = try await api.create("small")
                let before = try await api.snapshot("small")
                Contract.expectProblem(try await api.post("small", Contract.alert("third")), status: 429, code: "queue-full")
                #expect(try await api.snapshot("small") == before)
                for _ in 0..<3 { _ = try await api.create("roomy") }  // the limit is small's alone

                #expect(try await api.choose("small", Contract.id(first), ["button": "Yes"]).status == 200)
                #expect(try await api.post("small", Contract.alert("fits again")).status == 201, "an answered alert frees its place")
            }
        }

        @Test(
            "a request that would park a third waiter is 503 too-many-waiters with Retry-After",
            // limits.max_waiters bounds the requests parked on one instance (each costs that
            // process a connection and memory): two instances park four, and round-robin
            // puts the third on one that has room.
            .disabled(if: TestMode.isBalancedPass, "max_waiters is per instance"), arguments: TestMode.both)
        func tooManyWaiters(mode: TestMode) async throws {
            try await withTestClient(mode, config: Self.config) { api in
                let pending = try await api.create("waited-on")
                let parked = Parked(count: 2) { try await api.get("/v1/clients/parked/alerts/current?wait=30") }

                try await api.awaitWaiters(2)
                let started = ContinuousClock.now
                let problem = try await api.get("/v1/clients/third/alerts/current?wait=30")
                #expect(ContinuousClock.now - started < .seconds(5), "a third waiter parked")
                Contract.expectProblem(problem, status: 503, code: "too-many-waiters")
                #expect(problem.header("Retry-After") != nil)
                let alertWaiter = try await api.get("/v1/clients/waited-on/alerts/\(Contract.id(pending))?wait=1")
                Contract.expectProblem(alertWaiter, status: 503, code: "too-many-waiters")
                #expect(!parked.anyAnswered, "refusing a third waiter leaves the parked ones parked")

                let shown = try await api.create("parked")
                for answer in try await parked.awaitAll() {
                    #expect(answer.status == 200)
                    #expect(try answer.jsonObject()["id"] as? String == Contract.id(shown))
                }
                try await api.awaitWaiters(0)
                #expect(try await api.get("/v1/clients/third/alerts/current?wait=1").status == 204, "answered waiters free their places")
            }
        }
    }
}

// MARK: - Problem responses

extension APIContractTests {
    @Suite("Problem responses")
    struct Problems {
        @Test("a body over 64 KiB is 413 payload-too-large")
        func payloadTooLarge() async throws {
            // Live only: the body limit is the server's, before the handler.
            try await withTestClient(.live) { api in
                let client = Contract.uniqueClient("big")
                let body = #"{"title":"x"}"# + String(repeating: " ", count: 65_537 - 13)
                let response = try await api.post("/v1/clients/\(client)/alerts", json: body)
                Contract.expectProblem(response, status: 413, code: "payload-too-large")
                #expect(try await api.allAlerts(client).isEmpty)
            }
        }

        @Test("every problem names its type, title, status, detail and code, and nothing else but errors or alert")
        func problemMembers() async throws {
            try await withTestClient { api in
                let client = Contract.uniqueClient("members")
                let asked = try await api.create(client)
                _ = try await api.choose(client, Contract.id(asked), ["button": "Yes"])
                let responses = [
                    try await api.get("/nope"),
                    try await api.request("PUT", "/healthz"),
                    try await api.get("/v1/clients/-bad/alerts"),
                    try await api.post(client, ["title": ""]),
                    try await api.choose(client, Contract.id(asked), ["button": "No"]),
                ]
                for response in responses {
                    let problem = Contract.expectProblem(response, status: response.status, code: nil)
                    let allowed: Set<String> = ["type", "title", "status", "detail", "code", "errors", "alert"]
                    #expect(Set(problem.keys).isSubset(of: allowed), "\(problem.keys.sorted())")
                    #expect(problem["errors"] == nil || problem["code"] as? String == "invalid-alert")
                    #expect(problem["alert"] == nil || problem["code"] as? String == "already-decided")
                }
            }
        }
    }
}
