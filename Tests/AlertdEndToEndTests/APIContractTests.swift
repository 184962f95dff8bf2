// The HTTP API of §4 against the real binary: every endpoint, every problem code this
// daemon can produce, and the choice, withdraw and idempotency rules.
//
// Most suites share one daemon (`.sharedAlertd()`) and run in parallel, each test on
// clients of its own (`Contract.uniqueClient`). Suites that need an exact global view
// (`GET /v1/clients`) or special limits start their own.

import Foundation
import Testing

@Suite("API contract", .sharedAlertd(), .ownThreads)
struct APIContractTests {}

// MARK: - Posting

extension APIContractTests {
    @Suite("Posting an alert")
    struct Posting {
        @Test("a new alert is 201 with its Location and every field of the resource")
        func createdWithLocationAndFullResource() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("post")
            let fields: [String: Any] = [
                "title": "Deploy to prod?", "message": "Build 1234 is green.", "style": "action_sheet",
                "buttons": [["title": "Deploy", "style": "destructive"], ["title": "Cancel", "style": "cancel"]],
                "priority": 5, "expires_in": 120, "callback_url": "http://127.0.0.1:9/hook",
                "metadata": ["build": 1234, "tags": ["a", ["deep": NSNull()]]],
            ]
            let response = try api.post(client, fields)
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
            #expect(alert["callback_url"] as? String == "http://127.0.0.1:9/hook")
            #expect(Contract.same(alert["metadata"], fields["metadata"]))
            let created = try #require(Contract.milliseconds(alert["created_at"]), "created_at: \(alert["created_at"] ?? "nil")")
            let displayed = try #require(Contract.milliseconds(alert["displayed_at"]), "displayed_at: \(alert["displayed_at"] ?? "nil")")
            let expires = try #require(Contract.milliseconds(alert["expires_at"]), "expires_at: \(alert["expires_at"] ?? "nil")")
            #expect(displayed >= created)
            #expect(expires - created == 120_000)
            #expect(alert["decided_at"] is NSNull)
            #expect(alert["result"] is NSNull)
            let expectedKeys: Set<String> = [
                "id", "client", "state", "position", "title", "message", "style", "buttons", "priority", "expires_in",
                "dismiss_after", "callback_url", "metadata", "created_at", "displayed_at", "decided_at", "expires_at",
                "result",
            ]
            #expect(Set(alert.keys) == expectedKeys)

            let fetched = try api.http.get(try #require(response.header("Location")))
            #expect(fetched.status == 200)
            #expect(Contract.same(try fetched.jsonObject(), alert))
        }

        @Test("omitted fields take their defaults, present as null where they do not apply")
        func defaults() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("defaults")
            let bare = try api.create(client, ["title": "Disk full"])
            #expect(bare["message"] is NSNull)
            #expect(bare["style"] as? String == "alert")
            #expect(Contract.buttons(bare) == [])
            #expect(bare["priority"] as? Int == 0)
            #expect(bare["expires_in"] as? Int == 86_400)
            #expect(bare["dismiss_after"] as? Int == 2, "a buttonless alert is dismissed after the default 2 s")
            #expect(bare["callback_url"] is NSNull)
            #expect(bare["metadata"] is NSNull)

            let withButton = try api.create(client, ["title": "OK?", "buttons": [["title": "OK"]]])
            #expect(Contract.buttons(withButton) == ["OK/default"])
            #expect(withButton["dismiss_after"] is NSNull)
        }

        @Test("a second alert queues behind the displayed one, with its position and no displayed_at")
        func queuesBehindDisplayed() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("queue")
            let first = try api.create(client)
            let second = try api.create(client)
            let third = try api.create(client)
            #expect(first["state"] as? String == "displayed")
            #expect(second["state"] as? String == "queued")
            #expect(second["position"] as? Int == 1)
            #expect(second["displayed_at"] is NSNull)
            #expect(third["position"] as? Int == 2)
        }

        @Test("a queued alert of higher priority is displayed before older ones (fifo)")
        func priorityOrdersTheQueue() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("prio")
            let low = try api.create(client, Contract.alert("low"))
            let older = try api.create(client, Contract.alert("older", priority: 0))
            let urgent = try api.create(client, Contract.alert("urgent", priority: 10))
            #expect(urgent["state"] as? String == "queued", "fifo never covers the displayed alert")
            #expect(urgent["position"] as? Int == 1)
            #expect(try api.pendingIDs(client) == [Contract.id(low), Contract.id(urgent), Contract.id(older)])

            #expect(try api.choose(client, Contract.id(low), ["button": "Yes"]).status == 200)
            let current = try api.http.get("/v1/clients/\(client)/alerts/current")
            #expect(current.status == 200)
            #expect(try current.jsonObject()["id"] as? String == Contract.id(urgent))
        }

        @Test("ids are unique and sort by creation as plain strings")
        func idsSortByCreation() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("ids")
            var ids: [String] = []
            for _ in 0..<8 { ids.append(Contract.id(try api.create(client))) }
            #expect(Set(ids).count == ids.count)
            #expect(ids == ids.sorted())
        }

        @Test(
            "a Content-Type of application/json is accepted with parameters and in any letter case",
            arguments: ["application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"])
        func contentTypeParameters(contentType: String) throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("ctype")
            let response = try api.http.post(
                "/v1/clients/\(client)/alerts", json: jsonBody(Contract.alert("x")), headers: [("Content-Type", contentType)])
            #expect(response.status == 201, "\(response.status): \(response.text)")
        }

        @Test(
            "a body that is not application/json is 415 unsupported-media-type and creates nothing",
            arguments: [nil, "text/plain", "application/x-www-form-urlencoded", "application/jsonp", "application/problem+json", ""]
                as [String?])
        func unsupportedMediaType(contentType: String?) throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("415")
            let headers = contentType.map { [("Content-Type", $0)] } ?? []
            let response = try api.http.request(
                "POST", "/v1/clients/\(client)/alerts", headers: headers, body: Array(jsonBody(Contract.alert("x")).utf8))
            Contract.expectProblem(response, status: 415, code: "unsupported-media-type")
            #expect(try api.allAlerts(client).isEmpty)
        }

        @Test("a client id of 64 characters is valid; one of 65 is 400 bad-request")
        func clientIDLength() throws {
            let api = try ContractClient()
            let tag = String(Contract.uniqueClient("").suffix(8))
            let longest = "c" + String(repeating: "x", count: 63 - tag.count) + tag
            #expect(longest.count == 64)
            #expect(try api.post(longest, Contract.alert("x")).status == 201)
            Contract.expectProblem(try api.post(longest + "y", Contract.alert("x")), status: 400, code: "bad-request")
        }

        @Test("lengths count Unicode code points, not bytes")
        func codePoints() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("unicode")
            let title = String(repeating: "🚀", count: 256)  // 256 code points, 1024 UTF-8 bytes
            let created = try api.create(client, ["title": title, "buttons": [["title": String(repeating: "é", count: 64)]]])
            #expect(created["title"] as? String == title)
            let tooLong = try api.post(client, ["title": title + "🚀"])
            let problem = Contract.expectProblem(tooLong, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == ["title"])
        }

        @Test("metadata is echoed back by get, list and current, whatever keys it holds")
        func metadataEchoed() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("meta")
            let metadata: [String: Any] = ["unknown_key": ["nested": [1, 2.5, true, NSNull(), "x"]], "titel": "not a typo here"]
            let created = try api.create(client, ["title": "m", "buttons": [["title": "Yes"]], "metadata": metadata])
            let path = "/v1/clients/\(client)/alerts/\(Contract.id(created))"
            #expect(Contract.same(try api.http.get(path).jsonObject()["metadata"], metadata))
            #expect(Contract.same(try api.http.get("/v1/clients/\(client)/alerts/current").jsonObject()["metadata"], metadata))
            #expect(Contract.same(try api.allAlerts(client).first?["metadata"], metadata))
        }

        @Test("metadata of exactly 4096 bytes of compact JSON is accepted; 4097 is invalid-alert")
        func metadataLimit() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("metalimit")
            // {"k":"…"} is 8 bytes plus the string.
            let fits = try api.post(
                client, ["title": "m", "buttons": [["title": "Yes"]], "metadata": ["k": String(repeating: "a", count: 4088)]])
            #expect(fits.status == 201, "\(fits.status): \(fits.text.prefix(300))")
            let over = try api.post(client, ["title": "m", "metadata": ["k": String(repeating: "a", count: 4089)]])
            #expect(Contract.errorFields(Contract.expectProblem(over, status: 400, code: "invalid-alert")) == ["metadata"])
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
        func oneViolationOneError(violation: Violation) throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("invalid")
            let response = try api.http.post("/v1/clients/\(client)/alerts", json: violation.json)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == [violation.field])
            let reasons = (problem["errors"] as? [[String: Any]] ?? []).map { $0["reason"] as? String ?? "" }
            #expect(reasons.allSatisfy { !$0.isEmpty }, "every error has a reason: \(reasons)")
            #expect(try api.allAlerts(client).isEmpty)
        }

        @Test("every violation is reported, one error entry each")
        func everyViolationReported() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("invalid-many")
            let json = #"{"title":"","priority":500,"buttons":[{"title":"A"},{"title":"A","colour":"red"}],"extra":1}"#
            let problem = Contract.expectProblem(
                try api.http.post("/v1/clients/\(client)/alerts", json: json), status: 400, code: "invalid-alert")
            let fields = Contract.errorFields(problem)
            #expect(fields.count == 5, "\(fields)")
            #expect(Set(fields) == ["title", "priority", "buttons[1].title", "buttons[1].colour", "extra"])
            #expect(try api.allAlerts(client).isEmpty)
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
        @Test("the same key and body return the first alert with 200 and create nothing")
        func replayReturnsFirst() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("idem")
            let key = [("Idempotency-Key", "deploy-1234")]
            let first = try api.post(client, Contract.alert("deploy"), headers: key)
            #expect(first.status == 201)
            let replay = try api.post(client, Contract.alert("deploy"), headers: key)
            #expect(replay.status == 200)
            #expect(replay.header("Location") == first.header("Location"))
            #expect(Contract.same(try replay.jsonObject(), try first.jsonObject()))
            #expect(try api.allAlerts(client).count == 1)
        }

        @Test("the same key with a different body is 422 idempotency-mismatch and creates nothing")
        func differentBodyMismatch() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("idem-mismatch")
            let key = [("Idempotency-Key", "k1")]
            let first = try api.post(client, Contract.alert("one"), headers: key)
            #expect(first.status == 201)
            let before = try api.snapshot(client)
            Contract.expectProblem(try api.post(client, Contract.alert("two"), headers: key), status: 422, code: "idempotency-mismatch")
            #expect(try api.snapshot(client) == before)
            #expect(try api.post(client, Contract.alert("one"), headers: key).status == 200, "the key still names the first alert")
        }

        @Test("a key belongs to one client: the same key on another client creates a new alert")
        func keyScopedToClient() throws {
            let api = try ContractClient()
            let (a, b) = (Contract.uniqueClient("idem-a"), Contract.uniqueClient("idem-b"))
            let key = [("Idempotency-Key", "shared")]
            let first = try api.post(a, Contract.alert("x"), headers: key)
            let second = try api.post(b, Contract.alert("x"), headers: key)
            #expect(first.status == 201)
            #expect(second.status == 201)
            #expect(try first.jsonObject()["id"] as? String != second.jsonObject()["id"] as? String)
        }

        @Test("a replay after the alert was answered returns that alert, answered, with 200")
        func replayAfterDecision() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("idem-answered")
            let key = [("Idempotency-Key", "ask-once")]
            let created = try api.post(client, Contract.alert("q"), headers: key).jsonObject()
            #expect(try api.choose(client, Contract.id(created), ["button": "No"]).status == 200)
            let replay = try api.post(client, Contract.alert("q"), headers: key)
            #expect(replay.status == 200)
            let alert = try replay.jsonObject()
            #expect(alert["id"] as? String == Contract.id(created))
            #expect(alert["state"] as? String == "answered")
            #expect(try api.allAlerts(client).count == 1)
        }

        @Test("concurrent posts with one key create exactly one alert")
        func concurrentPostsOneAlert() throws {
            let daemon = try SharedAlertd.daemon()
            let api = try ContractClient()
            let client = Contract.uniqueClient("idem-race")
            let posts = try ParkedRequests(
                port: daemon.port, count: 6, method: "POST", path: "/v1/clients/\(client)/alerts",
                headers: [("Content-Type", "application/json"), ("Idempotency-Key", "race")],
                body: Array(jsonBody(Contract.alert("race")).utf8))
            let answers = try posts.awaitAll(timeout: 15)
            #expect(answers.map(\.status).sorted() == [200, 200, 200, 200, 200, 201])
            let ids = Set(answers.compactMap { try? $0.jsonObject()["id"] as? String })
            #expect(ids.count == 1)
            #expect(try api.allAlerts(client).count == 1)
        }

        @Test(
            "an Idempotency-Key must be 1 to 255 characters and sent once, else 400 bad-request",
            arguments: [
                KeyHeaders(name: "a key of 256 characters", values: [String(repeating: "k", count: 256)]),
                KeyHeaders(name: "an empty key", values: [""]),
                KeyHeaders(name: "two keys", values: ["a", "b"]),
            ])
        func keyBounds(key: KeyHeaders) throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("idem-bad")
            let headers = key.values.map { ("Idempotency-Key", $0) }
            Contract.expectProblem(try api.post(client, Contract.alert("x"), headers: headers), status: 400, code: "bad-request")
            #expect(try api.allAlerts(client).isEmpty)
        }

        @Test("an Idempotency-Key of exactly 255 characters is accepted")
        func longestKey() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("idem-255")
            let key = [("Idempotency-Key", String(repeating: "k", count: 255))]
            #expect(try api.post(client, Contract.alert("x"), headers: key).status == 201)
            #expect(try api.post(client, Contract.alert("x"), headers: key).status == 200)
        }
    }
}

// MARK: - The displayed alert

extension APIContractTests {
    @Suite("Reading the displayed alert")
    struct Current {
        @Test("a client never used has no displayed alert: 204 without a body")
        func neverUsedIs204() throws {
            let api = try ContractClient()
            let response = try api.http.get("/v1/clients/\(Contract.uniqueClient("ghost"))/alerts/current")
            #expect(response.status == 204)
            #expect(response.body.isEmpty)
        }

        @Test("current is the displayed alert at position 0; after it is decided, the next one; then 204")
        func followsTheQueue() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("current")
            let first = try api.create(client)
            let second = try api.create(client)
            let shown = try api.http.get("/v1/clients/\(client)/alerts/current")
            #expect(shown.status == 200)
            #expect(shown.header("Content-Type") == "application/json")
            let alert = try shown.jsonObject()
            #expect(alert["id"] as? String == Contract.id(first))
            #expect(alert["position"] as? Int == 0)
            #expect(alert["state"] as? String == "displayed")

            #expect(try api.choose(client, Contract.id(first), ["button": "Yes"]).status == 200)
            #expect(try api.http.get("/v1/clients/\(client)/alerts/current").jsonObject()["id"] as? String == Contract.id(second))
            #expect(try api.withdraw(client, Contract.id(second)).status == 200)
            #expect(try api.http.get("/v1/clients/\(client)/alerts/current").status == 204)
        }

        @Test("waiters without after park until an alert is displayed, then all get it")
        func waitersParkUntilDisplayed() throws {
            let daemon = try SharedAlertd.daemon()
            let api = try ContractClient()
            let client = Contract.uniqueClient("wait-current")
            let waiters = try ParkedRequests(
                port: daemon.port, count: 3, method: "GET", path: "/v1/clients/\(client)/alerts/current?wait=30")
            #expect(!waiters.anyAnswered())
            let posted = try api.create(client)
            let answers = try waiters.awaitAll(timeout: 15)
            for answer in answers {
                #expect(answer.status == 200)
                #expect(try answer.jsonObject()["id"] as? String == Contract.id(posted))
            }
        }

        @Test("a waiter with after=<displayed id> parks until the display changes: the next alert, or 204")
        func afterDisplayedParksUntilChange() throws {
            let daemon = try SharedAlertd.daemon()
            let api = try ContractClient()
            let client = Contract.uniqueClient("wait-after")
            let first = try api.create(client)
            let second = try api.create(client)
            let toNext = try ParkedRequests(
                port: daemon.port, count: 1, method: "GET",
                path: "/v1/clients/\(client)/alerts/current?wait=30&after=\(Contract.id(first))")
            #expect(!toNext.anyAnswered())
            #expect(try api.choose(client, Contract.id(first), ["button": "Yes"]).status == 200)
            let next = try #require(try toNext.awaitAll(timeout: 15).first)
            #expect(next.status == 200)
            #expect(try next.jsonObject()["id"] as? String == Contract.id(second))

            let toNone = try ParkedRequests(
                port: daemon.port, count: 1, method: "GET",
                path: "/v1/clients/\(client)/alerts/current?wait=30&after=\(Contract.id(second))")
            #expect(try api.withdraw(client, Contract.id(second)).status == 200)
            let none = try #require(try toNone.awaitAll(timeout: 15).first)
            #expect(none.status == 204)
        }

        @Test("after naming another alert than the displayed one returns at once")
        func afterOtherReturnsAtOnce() throws {
            let daemon = try SharedAlertd.daemon()
            let client = Contract.uniqueClient("wait-other")
            let api = try ContractClient()
            let shown = try api.create(client)
            let quick = daemon.client(timeout: 5)  // a wait of 30 s that parked would time this out
            let response = try quick.get("/v1/clients/\(client)/alerts/current?wait=30&after=01ARZ3NDEKTSV4RRFFQ69G5FAV")
            #expect(response.status == 200)
            #expect(try response.jsonObject()["id"] as? String == Contract.id(shown))
            let noAfter = try quick.get("/v1/clients/\(client)/alerts/current?wait=30&after=")
            #expect(noAfter.status == 200, "an empty after means none, and an alert is displayed")
        }

        @Test("a wait that runs out answers as without wait")
        func waitRunsOut() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("wait-timeout")
            let shown = try api.create(client)
            let clock = ContinuousClock()
            var response: TestResponse?
            let elapsed = try clock.measure {
                response = try api.http.get("/v1/clients/\(client)/alerts/current?wait=1&after=\(Contract.id(shown))")
            }
            #expect(response?.status == 200)
            #expect(try response?.jsonObject()["id"] as? String == Contract.id(shown))
            #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(10), "waited \(elapsed)")

            let empty = Contract.uniqueClient("wait-timeout-empty")
            let emptyElapsed = try clock.measure {
                response = try api.http.get("/v1/clients/\(empty)/alerts/current?wait=1")
            }
            #expect(response?.status == 204)
            #expect(emptyElapsed >= .milliseconds(900) && emptyElapsed < .seconds(10), "waited \(emptyElapsed)")
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
        @Test("choosing by title answers the alert with the full result and displays the next")
        func byTitle() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose")
            let asked = try api.create(client, Contract.alert("deploy", buttons: [("Deploy", "destructive"), ("Cancel", "cancel")]))
            let next = try api.create(client)
            let response = try api.choose(client, Contract.id(asked), ["button": "Deploy"])
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
            #expect(Set(result.keys) == ["outcome", "button", "button_index", "cancelled", "decided_by"])

            let current = try api.http.get("/v1/clients/\(client)/alerts/current").jsonObject()
            #expect(current["id"] as? String == Contract.id(next))
            #expect(current["state"] as? String == "displayed")
        }

        @Test("choosing by index works, and a cancel-style button sets cancelled")
        func byIndexCancel() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-index")
            let asked = try api.create(client, Contract.alert("deploy", buttons: [("Deploy", "default"), ("Cancel", "cancel")]))
            let response = try api.choose(client, Contract.id(asked), ["button_index": 1])
            #expect(response.status == 200)
            let result = try #require(try response.jsonObject()["result"] as? [String: Any])
            #expect(result["button"] as? String == "Cancel")
            #expect(result["button_index"] as? Int == 1)
            #expect(result["cancelled"] as? Bool == true)
        }

        @Test(
            "a body with neither or both of button and button_index, or of the wrong shape, is 400 bad-request",
            arguments: [
                #"{}"#, #"{"button":"Yes","button_index":0}"#, #"{"button":null}"#, #"{"button":1}"#,
                #"{"button_index":"0"}"#, #"{"button_index":1.5}"#, #"[]"#, #""Yes""#, #"{"button":"Yes","by":"me"}"#,
            ].map(BadChoice.init))
        func malformedChoice(choice: BadChoice) throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-bad")
            let asked = try api.create(client)
            let before = try api.snapshot(client)
            let response = try api.http.post("/v1/clients/\(client)/alerts/\(Contract.id(asked))/choice", json: choice.json)
            Contract.expectProblem(response, status: 400, code: "bad-request")
            #expect(try api.snapshot(client) == before)
        }

        @Test(
            "a button that is not on the alert is 422 unknown-button",
            arguments: [#"{"button":"Maybe"}"#, #"{"button":"yes"}"#, #"{"button_index":2}"#, #"{"button_index":-1}"#].map(BadChoice.init))
        func unknownButton(choice: BadChoice) throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-unknown")
            let asked = try api.create(client)
            let before = try api.snapshot(client)
            let response = try api.http.post("/v1/clients/\(client)/alerts/\(Contract.id(asked))/choice", json: choice.json)
            Contract.expectProblem(response, status: 422, code: "unknown-button")
            #expect(try api.snapshot(client) == before)
        }

        @Test("any choice for a buttonless alert is 422 unknown-button")
        func buttonlessAlert() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-buttonless")
            let notice = try api.create(client, ["title": "FYI", "dismiss_after": 600])
            for body in [["button": "OK"], ["button_index": 0]] as [[String: Any]] {
                Contract.expectProblem(try api.choose(client, Contract.id(notice), body), status: 422, code: "unknown-button")
            }
            #expect(try api.alert(client, Contract.id(notice))["state"] as? String == "displayed")
        }

        @Test("choosing for a queued alert is 409 not-displayed, but an unknown button is 422 first")
        func queuedAlert() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-queued")
            _ = try api.create(client)
            let queued = try api.create(client)
            let before = try api.snapshot(client)
            Contract.expectProblem(try api.choose(client, Contract.id(queued), ["button": "Yes"]), status: 409, code: "not-displayed")
            Contract.expectProblem(try api.choose(client, Contract.id(queued), ["button": "Maybe"]), status: 422, code: "unknown-button")
            #expect(try api.snapshot(client) == before)
        }

        @Test("a different choice for an answered alert is 409 already-decided with the alert")
        func differentChoiceAlreadyDecided() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-twice")
            let asked = try api.create(client)
            let answered = try api.choose(client, Contract.id(asked), ["button": "Yes"]).jsonObject()
            let before = try api.snapshot(client)
            for body in [["button": "No"], ["button_index": 1]] as [[String: Any]] {
                let problem = Contract.expectProblem(
                    try api.choose(client, Contract.id(asked), body), status: 409, code: "already-decided")
                let alert = try #require(problem["alert"] as? [String: Any], "the problem carries the alert")
                #expect(Contract.same(alert, answered))
            }
            #expect(try api.snapshot(client) == before)
        }

        @Test("repeating the same choice, by title or by index, is 200 with the same result (a safe retry)")
        func sameChoiceIsSafe() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-retry")
            let asked = try api.create(client)
            _ = try api.create(client)
            let first = try api.choose(client, Contract.id(asked), ["button": "No"])
            #expect(first.status == 200)
            let answered = try first.jsonObject()
            let before = try api.snapshot(client)
            for body in [["button": "No"], ["button_index": 1]] as [[String: Any]] {
                let retry = try api.choose(client, Contract.id(asked), body)
                #expect(retry.status == 200)
                #expect(Contract.same(try retry.jsonObject(), answered))
            }
            #expect(try api.snapshot(client) == before, "a retry changes nothing, the queue included")
        }

        @Test("choosing for a withdrawn or expired alert is 409 already-decided with the alert")
        func terminalAlerts() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-terminal")
            let expiring = try api.create(client, ["title": "soon", "buttons": [["title": "Yes"]], "expires_in": 0.3])
            let expired = try api.awaitTerminal(client, Contract.id(expiring))
            #expect(expired["state"] as? String == "expired")
            let problem = Contract.expectProblem(
                try api.choose(client, Contract.id(expiring), ["button": "Yes"]), status: 409, code: "already-decided")
            #expect((problem["alert"] as? [String: Any])?["state"] as? String == "expired")

            let withdrawn = try api.create(client)
            #expect(try api.withdraw(client, Contract.id(withdrawn)).status == 200)
            let second = Contract.expectProblem(
                try api.choose(client, Contract.id(withdrawn), ["button": "Yes"]), status: 409, code: "already-decided")
            #expect((second["alert"] as? [String: Any])?["state"] as? String == "withdrawn")
        }

        @Test("a choice must be sent as application/json, else 415")
        func choiceContentType() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("choose-415")
            let asked = try api.create(client)
            let response = try api.http.post(
                "/v1/clients/\(client)/alerts/\(Contract.id(asked))/choice", json: #"{"button":"Yes"}"#,
                headers: [("Content-Type", "text/plain")])
            Contract.expectProblem(response, status: 415, code: "unsupported-media-type")
            #expect(try api.alert(client, Contract.id(asked))["state"] as? String == "displayed")
        }
    }
}

// MARK: - Withdrawing

extension APIContractTests {
    @Suite("Withdrawing an alert")
    struct Withdrawing {
        @Test("withdrawing a queued alert is 200 with the withdrawn alert and leaves the displayed one")
        func queued() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("withdraw")
            let shown = try api.create(client)
            let queued = try api.create(client)
            let third = try api.create(client)
            let response = try api.withdraw(client, Contract.id(queued))
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
            #expect(try api.pendingIDs(client) == [Contract.id(shown), Contract.id(third)])
            #expect(try api.alert(client, Contract.id(third))["position"] as? Int == 1)
        }

        @Test("withdrawing the displayed alert displays the next")
        func displayed() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("withdraw-shown")
            let shown = try api.create(client)
            let next = try api.create(client)
            #expect(try api.withdraw(client, Contract.id(shown)).status == 200)
            let current = try api.http.get("/v1/clients/\(client)/alerts/current").jsonObject()
            #expect(current["id"] as? String == Contract.id(next))
        }

        @Test("withdrawing a withdrawn alert again is 200 with the same alert (a safe retry)")
        func again() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("withdraw-again")
            let shown = try api.create(client)
            let first = try api.withdraw(client, Contract.id(shown)).jsonObject()
            let before = try api.snapshot(client)
            let again = try api.withdraw(client, Contract.id(shown))
            #expect(again.status == 200)
            #expect(Contract.same(try again.jsonObject(), first))
            #expect(try api.snapshot(client) == before)
        }

        @Test("withdrawing an answered or expired alert is 409 already-decided with the alert")
        func terminal() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("withdraw-terminal")
            let asked = try api.create(client)
            let answered = try api.choose(client, Contract.id(asked), ["button": "Yes"]).jsonObject()
            let problem = Contract.expectProblem(try api.withdraw(client, Contract.id(asked)), status: 409, code: "already-decided")
            #expect(Contract.same(problem["alert"], answered))

            let expiring = try api.create(client, ["title": "soon", "buttons": [["title": "Yes"]], "expires_in": 0.3])
            _ = try api.awaitTerminal(client, Contract.id(expiring))
            let second = Contract.expectProblem(try api.withdraw(client, Contract.id(expiring)), status: 409, code: "already-decided")
            #expect((second["alert"] as? [String: Any])?["state"] as? String == "expired")
        }
    }
}

// MARK: - One alert

extension APIContractTests {
    @Suite("Reading one alert")
    struct OneAlert {
        @Test("an alert is 200 with its current position")
        func withPosition() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("get")
            let first = try api.create(client)
            let second = try api.create(client)
            #expect(try api.alert(client, Contract.id(second))["position"] as? Int == 1)
            _ = try api.choose(client, Contract.id(first), ["button": "Yes"])
            let now = try api.alert(client, Contract.id(second))
            #expect(now["position"] as? Int == 0)
            #expect(now["state"] as? String == "displayed")
        }

        @Test("wait parks until the alert is terminal and returns it decided")
        func waitUntilTerminal() throws {
            let daemon = try SharedAlertd.daemon()
            let api = try ContractClient()
            let client = Contract.uniqueClient("get-wait")
            let asked = try api.create(client)
            let waiters = try ParkedRequests(
                port: daemon.port, count: 2, method: "GET", path: "/v1/clients/\(client)/alerts/\(Contract.id(asked))?wait=30")
            #expect(!waiters.anyAnswered())
            let answered = try api.choose(client, Contract.id(asked), ["button": "Yes"]).jsonObject()
            for response in try waiters.awaitAll(timeout: 15) {
                #expect(response.status == 200)
                #expect(Contract.same(try response.jsonObject(), answered))
            }
        }

        @Test("wait on a terminal alert returns at once")
        func waitOnTerminal() throws {
            let daemon = try SharedAlertd.daemon()
            let api = try ContractClient()
            let client = Contract.uniqueClient("get-terminal")
            let asked = try api.create(client)
            _ = try api.withdraw(client, Contract.id(asked))
            let response = try daemon.client(timeout: 5).get("/v1/clients/\(client)/alerts/\(Contract.id(asked))?wait=30")
            #expect(response.status == 200)
            #expect(try response.jsonObject()["state"] as? String == "withdrawn")
        }

        @Test("wait on a pending alert that stays pending returns it as it is when the wait runs out")
        func waitRunsOut() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("get-timeout")
            let asked = try api.create(client)
            var response: TestResponse?
            let elapsed = try ContinuousClock().measure {
                response = try api.http.get("/v1/clients/\(client)/alerts/\(Contract.id(asked))?wait=1")
            }
            #expect(response?.status == 200)
            #expect(try response?.jsonObject()["state"] as? String == "displayed")
            #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(10), "waited \(elapsed)")
        }

        @Test("an alert asked for under another client is 404 not-found")
        func otherClient() throws {
            let api = try ContractClient()
            let owner = Contract.uniqueClient("owner")
            let asked = try api.create(owner)
            let path = "/v1/clients/\(Contract.uniqueClient("stranger"))/alerts/\(Contract.id(asked))"
            Contract.expectProblem(try api.http.get(path), status: 404, code: "not-found")
        }
    }
}

// MARK: - Listing

extension APIContractTests {
    @Suite("Listing alerts")
    struct Listing {
        static let allStates = "queued,displayed,answered,dismissed,expired,withdrawn"

        @Test("a client never used lists nothing")
        func neverUsed() throws {
            let api = try ContractClient()
            let page = try api.http.get("/v1/clients/\(Contract.uniqueClient("empty"))/alerts?state=\(Self.allStates)")
            #expect(page.status == 200)
            #expect(page.header("Content-Type") == "application/json")
            let object = try page.jsonObject()
            #expect((object["alerts"] as? [Any])?.isEmpty == true)
            #expect(object["next_cursor"] is NSNull)
        }

        @Test("by default the pending alerts are listed in display order with their positions")
        func pendingInDisplayOrder() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("list")
            let a = try api.create(client, Contract.alert("a"))
            let b = try api.create(client, Contract.alert("b"))
            let c = try api.create(client, Contract.alert("c", priority: 50))
            let d = try api.create(client, Contract.alert("d"))
            let listed = try api.list(client)
            #expect(listed.alerts.map(Contract.id) == [a, c, b, d].map(Contract.id))
            #expect(listed.alerts.map { $0["position"] as? Int } == [0, 1, 2, 3])
            #expect(listed.nextCursor == nil)
        }

        @Test("state filters, pending first in display order, then terminal alerts newest first")
        func stateFilter() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("states")
            let history = try MixedHistory(api, client)
            #expect(try api.list(client).alerts.map(Contract.id) == [history.displayed, history.queued])
            #expect(try api.list(client, "state=answered").alerts.map(Contract.id) == [history.answered])
            #expect(try api.list(client, "state=dismissed").alerts.map(Contract.id) == [history.dismissed])
            #expect(try api.list(client, "state=expired").alerts.map(Contract.id) == [history.expired])
            #expect(try api.list(client, "state=withdrawn").alerts.map(Contract.id) == [history.withdrawn])
            #expect(try api.list(client, "state=queued").alerts.map(Contract.id) == [history.queued])
            #expect(try api.list(client, "state=displayed").alerts.map(Contract.id) == [history.displayed])
            #expect(try api.list(client, "state=withdrawn,answered").alerts.map(Contract.id) == [history.withdrawn, history.answered])
            let everything = try api.list(client, "state=\(Self.allStates)").alerts
            #expect(everything.map(Contract.id) == history.inListingOrder)
            #expect(everything.map { $0["position"] as? Int } == [0, 1, nil, nil, nil, nil])
            #expect(everything.dropFirst(2).allSatisfy { $0["position"] is NSNull })
        }

        @Test("limit and cursor page through pending then terminal alerts, each exactly once, for every page size")
        func pagingAcrossPendingAndTerminal() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("paging")
            let history = try MixedHistory(api, client)
            let total = history.inListingOrder.count
            for limit in 1...(total + 1) {
                var seen: [String] = []
                var cursor: String?
                var pages = 0
                repeat {
                    var query = "state=\(Self.allStates)&limit=\(limit)"
                    if let cursor { query += "&cursor=\(cursor)" }
                    let page = try api.list(client, query)
                    #expect(page.alerts.count <= limit)
                    seen += page.alerts.map(Contract.id)
                    cursor = page.nextCursor
                    pages += 1
                } while cursor != nil && pages <= total + 1
                #expect(seen == history.inListingOrder, "limit \(limit)")
                #expect(pages == max(1, (total + limit - 1) / limit), "limit \(limit): \(pages) pages")
            }
        }

        @Test("limit defaults to 100")
        func defaultLimit() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("hundred")
            for index in 0..<101 { _ = try api.create(client, Contract.alert("n\(index)")) }
            let first = try api.list(client)
            #expect(first.alerts.count == 100)
            let cursor = try #require(first.nextCursor)
            let second = try api.list(client, "cursor=\(cursor)")
            #expect(second.alerts.count == 1)
            #expect(second.nextCursor == nil)
            #expect(try api.list(client, "limit=1000").alerts.count == 101, "1000 is a valid limit")
        }

        @Test("a cursor stays valid after the alert it names leaves the queue")
        func cursorSurvivesDecision() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("cursor")
            let a = try api.create(client, Contract.alert("a"))
            let b = try api.create(client, Contract.alert("b"))
            let c = try api.create(client, Contract.alert("c"))
            let first = try api.list(client, "limit=1")
            #expect(first.alerts.map(Contract.id) == [Contract.id(a)])
            let cursor = try #require(first.nextCursor)
            #expect(try api.choose(client, Contract.id(a), ["button": "Yes"]).status == 200)
            let second = try api.list(client, "limit=1&cursor=\(cursor)")
            #expect(second.alerts.map(Contract.id) == [Contract.id(b)])
            let third = try api.list(client, "limit=1&cursor=\(try #require(second.nextCursor))")
            #expect(third.alerts.map(Contract.id) == [Contract.id(c)])
        }
    }
}

/// Six alerts of one client, one in each state, built through the API:
/// dismissed, expired, answered, withdrawn (terminal) and displayed, queued (pending).
struct MixedHistory {
    let dismissed: String, expired: String, answered: String, withdrawn: String, displayed: String, queued: String

    /// `GET …/alerts?state=<all six>`: pending in display order, then terminal newest first.
    var inListingOrder: [String] { [displayed, queued, withdrawn, answered, expired, dismissed] }

    init(_ api: ContractClient, _ client: String) throws {
        let notice = try api.create(client, ["title": "notice", "dismiss_after": 0.2])
        #expect(try api.awaitTerminal(client, Contract.id(notice))["state"] as? String == "dismissed")
        let expiring = try api.create(client, ["title": "expiring", "buttons": [["title": "Yes"]], "expires_in": 0.3])
        #expect(try api.awaitTerminal(client, Contract.id(expiring))["state"] as? String == "expired")
        let asked = try api.create(client, Contract.alert("asked"))
        #expect(try api.choose(client, Contract.id(asked), ["button": "Yes"]).status == 200)
        let shown = try api.create(client, Contract.alert("shown"))
        let waiting = try api.create(client, Contract.alert("waiting"))
        let dropped = try api.create(client, Contract.alert("dropped"))
        #expect(try api.withdraw(client, Contract.id(dropped)).status == 200)
        (dismissed, expired, answered) = (Contract.id(notice), Contract.id(expiring), Contract.id(asked))
        (withdrawn, displayed, queued) = (Contract.id(dropped), Contract.id(shown), Contract.id(waiting))
    }
}

// MARK: - Clients

extension APIContractTests {
    @Suite("Listing clients")
    struct Clients {
        @Test("GET /v1/clients lists every client known, sorted, with its pending count, displayed alert and next_cursor")
        func everyClient() throws {
            let daemon = try Daemon.start(.init(config: SharedAlertd.baseConfig))
            defer { daemon.cleanup() }
            let api = ContractClient(daemon)
            let empty = try api.http.get("/v1/clients")
            #expect(empty.status == 200)
            #expect(empty.header("Content-Type") == "application/json")
            #expect(Contract.same(try empty.jsonObject(), ["clients": [Any](), "next_cursor": NSNull()] as [String: Any]))

            let beta1 = try api.create("beta")
            _ = try api.create("beta")
            let alpha = try api.create("alpha")
            _ = try api.choose("alpha", Contract.id(alpha), ["button": "Yes"])
            let expected: [String: Any] = [
                "clients": [
                    ["client": "alpha", "pending": 0, "displayed": NSNull()],
                    ["client": "beta", "pending": 2, "displayed": Contract.id(beta1)],
                ],
                "next_cursor": NSNull(),
            ]
            let listed = try api.http.get("/v1/clients").jsonObject()
            #expect(Contract.same(listed, expected), "\(listed)")
        }
    }
}

// MARK: - Health

extension APIContractTests {
    @Suite("Health and readiness")
    struct Health {
        @Test("/healthz and /readyz answer 200 with JSON", arguments: ["/healthz", "/readyz"])
        func healthy(path: String) throws {
            let api = try ContractClient()
            let response = try api.http.get(path)
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(try response.jsonObject()["status"] is String)
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

    func request(_ api: ContractClient, client: String, id: String, query: String = "") throws -> TestResponse {
        let target = path.replacingOccurrences(of: "{c}", with: client).replacingOccurrences(of: "{id}", with: id) + query
        let headers = body == nil ? [] : [("Content-Type", "application/json")]
        return try api.http.request(method, target, headers: headers, body: body.map { Array($0.utf8) })
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
        func unknownPath(path: String) throws {
            let api = try ContractClient()
            Contract.expectProblem(try api.http.get(path), status: 404, code: "not-found")
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
                WrongMethod(method: "OPTIONS", path: "/v1/clients/ops/alerts/current", allow: ["GET", "HEAD", "DELETE"]),
            ])
        func wrongMethod(wrong: WrongMethod) throws {
            let api = try ContractClient()
            let before = try api.snapshot("ops")
            let response = try api.http.request(
                wrong.method, wrong.path, headers: [("Content-Type", "application/json")],
                body: Array(#"{"title":"x","buttons":[{"title":"Yes"}]}"#.utf8))
            Contract.expectProblem(response, status: 405, code: "method-not-allowed")
            let allow = Set((response.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(allow == wrong.allow, "Allow: \(response.header("Allow") ?? "missing")")
            #expect(try api.snapshot("ops") == before)
        }

        @Test("HEAD answers wherever GET does, with GET's status and headers and no body")
        func headLikeGet() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("head")
            let shown = try api.create(client)
            let paths = [
                "/healthz", "/readyz", "/v1/clients", "/v1/clients/\(client)/alerts", "/v1/clients/\(client)/alerts/current",
                "/v1/clients/\(client)/alerts/\(Contract.id(shown))", "/v1/clients/\(Contract.uniqueClient("none"))/alerts/current",
                "/v1/clients/\(client)/alerts/01ARZ3NDEKTSV4RRFFQ69G5FAV",
            ]
            for path in paths {
                let get = try api.http.get(path)
                let head = try api.http.request("HEAD", path)
                #expect(head.status == get.status, "HEAD \(path)")
                #expect(head.header("Content-Type") == get.header("Content-Type"), "HEAD \(path)")
                #expect(head.body.isEmpty, "HEAD \(path)")
            }
        }

        @Test("every endpoint answers an unknown query parameter with 400 bad-request and changes nothing", arguments: RouteCase.all)
        func unknownQueryParameter(route: RouteCase) throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("query")
            let shown = try api.create(client)
            let before = try api.snapshot(client)
            let response = try route.request(api, client: client, id: Contract.id(shown), query: "?verbose=1")
            Contract.expectProblem(response, status: 400, code: "bad-request")
            #expect(try api.snapshot(client) == before)
        }

        @Test("a query parameter given twice is 400 bad-request")
        func repeatedQueryParameter() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("twice")
            let shown = try api.create(client)
            for path in [
                "/v1/clients/\(client)/alerts?limit=1&limit=1", "/v1/clients/\(client)/alerts?state=queued&state=queued",
                "/v1/clients/\(client)/alerts/current?wait=0&wait=0", "/v1/clients/\(client)/alerts/\(Contract.id(shown))?wait=0&wait=0",
            ] {
                Contract.expectProblem(try api.http.get(path), status: 400, code: "bad-request")
            }
        }
    }
}

// MARK: - Limits

extension APIContractTests {
    @Suite(
        "Queue and waiter limits", .serialized,
        .sharedAlertd(SharedAlertd.baseConfig + "limits:\n  max_waiters: 2\nclients:\n  small: { max_pending: 2 }\n"))
    struct Limits {
        @Test("a post over the client's pending limit is 429 queue-full and creates nothing")
        func queueFull() throws {
            let api = try ContractClient()
            let first = try api.create("small")
            _ = try api.create("small")
            let before = try api.snapshot("small")
            Contract.expectProblem(try api.post("small", Contract.alert("third")), status: 429, code: "queue-full")
            #expect(try api.snapshot("small") == before)
            for _ in 0..<3 { _ = try api.create("roomy") }  // the limit is small's alone

            #expect(try api.choose("small", Contract.id(first), ["button": "Yes"]).status == 200)
            #expect(try api.post("small", Contract.alert("fits again")).status == 201, "an answered alert frees its place")
        }

        @Test("a request that would park a third waiter is 503 too-many-waiters with Retry-After")
        func tooManyWaiters() throws {
            let daemon = try SharedAlertd.daemon()
            let api = try ContractClient()
            let pending = try api.create("waited-on")
            let parked = try ParkedRequests(
                port: daemon.port, count: 2, method: "GET", path: "/v1/clients/parked/alerts/current?wait=30")

            try api.awaitParkedWaiters(2)
            let third = daemon.client(timeout: 5)  // a third that parked for 30 s would time this out
            let problem = try third.get("/v1/clients/third/alerts/current?wait=30")
            Contract.expectProblem(problem, status: 503, code: "too-many-waiters")
            #expect(problem.header("Retry-After") != nil)
            let alertWaiter = try third.get("/v1/clients/waited-on/alerts/\(Contract.id(pending))?wait=1")
            Contract.expectProblem(alertWaiter, status: 503, code: "too-many-waiters")
            #expect(!parked.anyAnswered(), "refusing a third waiter leaves the parked ones parked")

            let shown = try api.create("parked")
            for answer in try parked.awaitAll(timeout: 15) {
                #expect(answer.status == 200)
                #expect(try answer.jsonObject()["id"] as? String == Contract.id(shown))
            }
            try api.awaitParkedWaiters(0)
            #expect(try third.get("/v1/clients/third/alerts/current?wait=1").status == 204, "answered waiters free their places")
        }
    }
}

// MARK: - Problem responses

extension APIContractTests {
    @Suite("Problem responses")
    struct Problems {
        @Test("a body over 64 KiB is 413 payload-too-large")
        func payloadTooLarge() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("big")
            let body = #"{"title":"x"}"# + String(repeating: " ", count: 65_537 - 13)
            let response = try api.http.post("/v1/clients/\(client)/alerts", json: body)
            Contract.expectProblem(response, status: 413, code: "payload-too-large")
            #expect(try api.allAlerts(client).isEmpty)
        }

        @Test("every problem names its type, title, status, detail and code, and nothing else but errors or alert")
        func problemMembers() throws {
            let api = try ContractClient()
            let client = Contract.uniqueClient("members")
            let asked = try api.create(client)
            _ = try api.choose(client, Contract.id(asked), ["button": "Yes"])
            let responses = [
                try api.http.get("/nope"),
                try api.http.request("PUT", "/healthz"),
                try api.http.get("/v1/clients/-bad/alerts"),
                try api.post(client, ["title": ""]),
                try api.choose(client, Contract.id(asked), ["button": "No"]),
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

// MARK: - Support for the API and bad-input tests

/// Runs one `alertd` around a whole suite, nested suites included; the tests reach it
/// through `SharedAlertd.daemon()`. A nested suite with its own trait gets its own daemon.
struct SharedAlertd: SuiteTrait, TestScoping {
    /// Fast commits (these tests are not about durability) and the `listening` log line.
    static let baseConfig = "durability: normal\nlog:\n  level: info\ncallbacks:\n  signing_secret: e2e-signing-secret\n"

    let config: String
    /// Runs once after the daemon started, before any test of the suite.
    let prepare: (@Sendable (Daemon) throws -> Void)?

    @TaskLocal static var current: Daemon?

    /// The daemon of the innermost suite that has this trait.
    static func daemon(sourceLocation: SourceLocation = #_sourceLocation) throws -> Daemon {
        try #require(current, "no shared alertd: give the suite the .sharedAlertd() trait", sourceLocation: sourceLocation)
    }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> SharedAlertd? {
        test.isSuite ? self : nil
    }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // Starting, preparing and stopping block: on a thread of their own, not the pool's.
        let executor = DedicatedThreads(name: "e2e-suite", count: 1)
        defer { executor.shutdown() }
        let daemon = try await withTaskExecutorPreference(executor) { [config, prepare] in
            let daemon = try Daemon.start(.init(config: config))
            do { try prepare?(daemon) } catch {
                daemon.cleanup()
                throw error
            }
            return daemon
        }
        defer { daemon.cleanup() }
        try await Self.$current.withValue(daemon) { try await function() }
        #expect(
            daemon.isRunning,
            "alertd exited during the suite (status \(daemon.exitStatus.map(String.init) ?? "?"))\n\(daemon.stderrText.suffix(4000))")
    }
}

extension Trait where Self == SharedAlertd {
    static func sharedAlertd(
        _ config: String = SharedAlertd.baseConfig, prepare: (@Sendable (Daemon) throws -> Void)? = nil
    ) -> Self {
        SharedAlertd(config: config, prepare: prepare)
    }
}

/// Everything a client's alerts and the client list say, to show a request changed nothing.
struct StoreSnapshot: Equatable, CustomStringConvertible {
    /// `GET /v1/clients`, when the snapshot covers every client.
    var clients: String?
    /// `"<status> <body>"` of `GET /v1/clients/{c}/alerts?state=<all six>&limit=1000` by client.
    var alerts: [String: String]

    /// One line per client: its alerts as `id:state@position`.
    var description: String {
        var lines = clients.map { ["clients: \($0)"] } ?? []
        for name in alerts.keys.sorted() {
            let text = alerts[name] ?? ""
            let body = text.drop { $0 != " " }.dropFirst()
            let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            let summary = (object?["alerts"] as? [[String: Any]])?.map { alert in
                "\(Contract.id(alert)):\(alert["state"] as? String ?? "?")@\(alert["position"] as? Int ?? -1)"
            }
            lines.append("\(name): " + (summary.map { $0.joined(separator: ", ") } ?? String(text.prefix(200))))
        }
        return lines.joined(separator: "\n")
    }

    /// What differs from `before`, in full, or nil when nothing does.
    func changes(since before: StoreSnapshot) -> String? {
        var lines: [String] = []
        if clients != before.clients {
            lines.append("GET /v1/clients was \(before.clients ?? "-")\n  and is now \(clients ?? "-")")
        }
        for name in Set(alerts.keys).union(before.alerts.keys).sorted() where alerts[name] != before.alerts[name] {
            lines.append("the alerts of \(name) were \(before.alerts[name] ?? "-")\n  and are now \(alerts[name] ?? "-")")
        }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }
}

/// One connection to a daemon, with the requests the tests repeat.
struct ContractClient {
    let daemon: Daemon
    let http: TestHTTPClient

    init(_ daemon: Daemon) {
        self.daemon = daemon
        self.http = daemon.client(timeout: 20)
    }

    /// A client of the suite's shared daemon.
    init(sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.init(try SharedAlertd.daemon(sourceLocation: sourceLocation))
    }

    func post(_ client: String, _ fields: [String: Any], headers: [(String, String)] = []) throws -> TestResponse {
        try http.post("/v1/clients/\(client)/alerts", json: jsonBody(fields), headers: headers)
    }

    /// Posts an alert (two buttons, Yes and No, unless told) and returns it; requires 201.
    func create(
        _ client: String, _ fields: [String: Any] = Contract.alert("question"), sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        let response = try post(client, fields)
        try #require(
            response.status == 201, "POST answered \(response.status): \(response.text.prefix(500))", sourceLocation: sourceLocation)
        return try response.jsonObject()
    }

    func choose(_ client: String, _ id: String, _ choice: [String: Any]) throws -> TestResponse {
        try http.post("/v1/clients/\(client)/alerts/\(id)/choice", json: jsonBody(choice))
    }

    func withdraw(_ client: String, _ id: String) throws -> TestResponse {
        try http.delete("/v1/clients/\(client)/alerts/\(id)")
    }

    /// `GET` one alert; requires 200.
    func alert(_ client: String, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let response = try http.get("/v1/clients/\(client)/alerts/\(id)")
        try #require(response.status == 200, "GET alert answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        return try response.jsonObject()
    }

    /// Long-polls an alert until it is terminal (the daemon's own deadlines decide it).
    func awaitTerminal(_ client: String, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let response = try http.get("/v1/clients/\(client)/alerts/\(id)?wait=15")
        try #require(response.status == 200, "wait answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        let alert = try response.jsonObject()
        let state = alert["state"] as? String ?? "?"
        try #require(!["queued", "displayed"].contains(state), "alert \(id) still \(state) after 15 s", sourceLocation: sourceLocation)
        return alert
    }

    /// Waits (bounded, polling `/readyz`) until the daemon has `count` parked waiters.
    func awaitParkedWaiters(_ count: Int, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var parked = -1
        while ContinuousClock.now < deadline {
            parked = try http.get("/readyz").jsonObject()["waiters"] as? Int ?? -1
            if parked == count { return }
            usleep(2_000)
        }
        Issue.record("\(parked) waiters parked after \(timeout) s, wanted \(count)", sourceLocation: sourceLocation)
    }

    /// One page of `GET …/alerts`; requires 200.
    func list(
        _ client: String, _ query: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (alerts: [[String: Any]], nextCursor: String?) {
        let response = try http.get("/v1/clients/\(client)/alerts" + (query.isEmpty ? "" : "?\(query)"))
        try #require(response.status == 200, "list answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        let object = try response.jsonObject()
        let alerts = try #require(object["alerts"] as? [[String: Any]], "no alerts array: \(response.text)", sourceLocation: sourceLocation)
        try #require(object.keys.contains("next_cursor"), "no next_cursor member", sourceLocation: sourceLocation)
        return (alerts, object["next_cursor"] as? String)
    }

    func pendingIDs(_ client: String) throws -> [String] {
        try list(client).alerts.map(Contract.id)
    }

    /// Every alert of a client, in every state.
    func allAlerts(_ client: String) throws -> [[String: Any]] {
        try list(client, "state=\(APIContractTests.Listing.allStates)&limit=1000").alerts
    }

    /// The listing of each given client, on a fresh connection.
    func snapshot(_ clients: String...) throws -> StoreSnapshot {
        try Contract.snapshot(daemon, clients: clients, includeClientList: false)
    }
}

/// Checks and builders shared by the API and bad-input tests.
enum Contract {
    /// A client id no other test uses.
    static func uniqueClient(_ prefix: String) -> String {
        let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        return prefix.isEmpty ? "c" + suffix : "\(prefix)-\(suffix)"
    }

    /// An alert body with buttons (so it is never dismissed); Yes and No unless told.
    static func alert(
        _ title: String, priority: Int? = nil, buttons: [(String, String)] = [("Yes", "default"), ("No", "default")]
    ) -> [String: Any] {
        var fields: [String: Any] = ["title": title, "buttons": buttons.map { ["title": $0.0, "style": $0.1] }]
        if let priority { fields["priority"] = priority }
        return fields
    }

    static func id(_ alert: [String: Any]) -> String { alert["id"] as? String ?? "<no id>" }

    /// `"title/style"` of each button.
    static func buttons(_ alert: [String: Any]) -> [String] {
        (alert["buttons"] as? [[String: Any]] ?? []).map { "\($0["title"] as? String ?? "?")/\($0["style"] as? String ?? "?")" }
    }

    /// `field` of each entry of an invalid-alert problem's `errors`, in order.
    static func errorFields(_ problem: [String: Any]) -> [String] {
        (problem["errors"] as? [[String: Any]] ?? []).map { $0["field"] as? String ?? "<no field>" }
    }

    static func isAlertID(_ text: String) -> Bool {
        text.utf8.count == 26 && text.first.map { "01234567".contains($0) } == true
            && text.allSatisfy { "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains($0) }
    }

    /// Milliseconds since 1970 of an RFC 3339 UTC timestamp with milliseconds, else nil.
    static func milliseconds(_ value: Any?) -> Int64? {
        guard let text = value as? String, text.count == 24, text.hasSuffix("Z"), text.dropFirst(19).first == "." else {
            return nil
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }

    /// JSON equality of two decoded values.
    static func same(_ a: Any?, _ b: Any?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return NSArray(array: [a]).isEqual(to: [b])
        default: return false
        }
    }

    /// Checks an RFC 9457 problem: status, content type, the five members, the code
    /// (any non-empty one when `code` is nil). Returns the problem object.
    @discardableResult
    static func expectProblem(
        _ response: TestResponse, status: Int, code: String?, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [String: Any] {
        #expect(
            response.status == status, "status \(response.status), wanted \(status): \(response.text.prefix(300))",
            sourceLocation: sourceLocation)
        let contentType = response.header("Content-Type") ?? "<none>"
        #expect(
            contentType.hasPrefix("application/problem+json"), "Content-Type \(contentType): \(response.text.prefix(200).debugDescription)",
            sourceLocation: sourceLocation)
        guard let problem = try? response.jsonObject() else {
            Issue.record("the body is not a JSON object: \(response.text.prefix(300).debugDescription)", sourceLocation: sourceLocation)
            return [:]
        }
        #expect((problem["type"] as? String)?.isEmpty == false, "type: \(problem["type"] ?? "missing")", sourceLocation: sourceLocation)
        #expect((problem["title"] as? String)?.isEmpty == false, "title: \(problem["title"] ?? "missing")", sourceLocation: sourceLocation)
        #expect(
            problem["status"] as? Int == response.status, "status member: \(problem["status"] ?? "missing")", sourceLocation: sourceLocation
        )
        #expect(problem["detail"] is String, "detail: \(problem["detail"] ?? "missing")", sourceLocation: sourceLocation)
        if let code {
            #expect(
                problem["code"] as? String == code, "code \(problem["code"] ?? "missing"), wanted \(code)", sourceLocation: sourceLocation)
        } else {
            #expect((problem["code"] as? String)?.isEmpty == false, "code: \(problem["code"] ?? "missing")", sourceLocation: sourceLocation)
        }
        return problem
    }

    /// The listing of `clients` in every state, and `GET /v1/clients` plus the listing
    /// of every client it names when `includeClientList`, read on a fresh connection.
    static func snapshot(_ daemon: Daemon, clients: [String], includeClientList: Bool) throws -> StoreSnapshot {
        let http = daemon.client(timeout: 10)
        var snapshot = StoreSnapshot(clients: nil, alerts: [:])
        var names = Set(clients)
        if includeClientList {
            let listed = try http.get("/v1/clients")
            try #require(listed.status == 200, "GET /v1/clients answered \(listed.status)")
            snapshot.clients = listed.text
            for entry in try listed.jsonObject()["clients"] as? [[String: Any]] ?? [] {
                if let name = entry["client"] as? String { names.insert(name) }
            }
        }
        for name in names.sorted() {
            let page = try http.get("/v1/clients/\(name)/alerts?state=\(APIContractTests.Listing.allStates)&limit=1000")
            snapshot.alerts[name] = "\(page.status) \(page.text)"
        }
        return snapshot
    }
}
