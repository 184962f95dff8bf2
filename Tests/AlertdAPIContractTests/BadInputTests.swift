// Bad input of every kind that reaches alertd's handler: bodies that are not JSON or not
// UTF-8, wrong types, unknown fields, bad client and alert ids, bad query values. For every
// case: the spec'd status and problem `code`, alertd still answers `GET /healthz`, and the
// store is exactly as before (`GET /v1/clients` and every client's alerts in every state).
// Each case gets an alertd of its own holding a fixture of alerts in known states (see
// `BadInputFixture`). Moved from the end-to-end tier, which keeps the bad bytes that never
// reach the handler (framing, garbage, sizes: BadInputWireTests).

import AlertdTestSupport
import Foundation
import Testing

@Suite("Bad input")
struct BadInputTests {
    // MARK: Bodies that are not JSON

    @Test("a posted alert that is not JSON is 400 bad-request", arguments: BadBody.notJSON)
    func alertNotJSON(body: BadBody) async throws {
        try await BadInputFixture.expectHarmless { http, _ in
            let response = try await http.request(
                "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")], body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("a choice that is not JSON is 400 bad-request", arguments: BadBody.notJSON)
    func choiceNotJSON(body: BadBody) async throws {
        try await BadInputFixture.expectHarmless { http, fixture in
            let response = try await http.request(
                "POST", "/v1/clients/fixture/alerts/\(fixture.displayed)/choice", headers: [("Content-Type", "application/json")],
                body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    // MARK: Invalid UTF-8

    @Test("a posted alert with invalid UTF-8 is 400 bad-request", arguments: BadBody.invalidUTF8)
    func alertInvalidUTF8(body: BadBody) async throws {
        try await BadInputFixture.expectHarmless { http, _ in
            let response = try await http.request(
                "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")], body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("a choice with invalid UTF-8 is 400 bad-request", arguments: BadBody.invalidUTF8)
    func choiceInvalidUTF8(body: BadBody) async throws {
        try await BadInputFixture.expectHarmless { http, fixture in
            let response = try await http.request(
                "POST", "/v1/clients/fixture/alerts/\(fixture.displayed)/choice", headers: [("Content-Type", "application/json")],
                body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    // MARK: Wrong types and unknown fields

    @Test("a field of the wrong type is 400 invalid-alert naming it", arguments: FieldCase.wrongTypes)
    func wrongType(field: FieldCase) async throws {
        try await BadInputFixture.expectHarmless { http, _ in
            let response = try await http.post("/v1/clients/fixture/alerts", json: field.json)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == [field.field])
        }
    }

    @Test("an unknown field at any depth is 400 invalid-alert naming its path", arguments: FieldCase.unknownFields)
    func unknownField(field: FieldCase) async throws {
        try await BadInputFixture.expectHarmless { http, _ in
            let response = try await http.post("/v1/clients/fixture/alerts", json: field.json)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == [field.field])
        }
    }

    @Test(
        "U+0000 in an alert's text is 400 invalid-alert naming the field, the same on SQLite and PostgreSQL (whose text cannot hold it)",
        arguments: [
            (#"{"title":"a\u0000b"}"#, "title"), (#"{"title":"x","message":"\u0000"}"#, "message"),
            (#"{"title":"x","buttons":[{"title":"Yes\u0000"}]}"#, "buttons[0].title"),
        ])
    func nulInText(json: String, field: String) async throws {
        try await BadInputFixture.expectHarmless { http, _ in
            let response = try await http.post("/v1/clients/fixture/alerts", json: json)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == [field])
        }
    }

    @Test("a webhook secret with U+0000 is 400 bad-request, and no webhook is registered")
    func nulInWebhookSecret() async throws {
        try await BadInputFixture.expectHarmless { http, _ in
            let response = try await http.post(
                "/v1/clients/fixture/webhooks", json: #"{"url":"https://hooks.example/a","secret":"raw\u0000secret"}"#)
            Contract.expectProblem(response, status: 400, code: "bad-request")
            let list = try await http.get("/v1/clients/fixture/webhooks")
            #expect(list.status == 200)
            #expect(!list.text.contains("hooks.example"), "\(list.text)")
        }
    }

    @Test(
        "a choice with an unknown or misspelt member is 400 bad-request",
        arguments: [#"{"button":"Yes","note":"sure"}"#, #"{"buttonIndex":0}"#, #"{"Button":"Yes"}"#, #"{"button_title":"Yes"}"#])
    func choiceUnknownField(json: String) async throws {
        try await BadInputFixture.expectHarmless { http, fixture in
            let response = try await http.post("/v1/clients/fixture/alerts/\(fixture.displayed)/choice", json: json)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("a body that is not JSON, and one with an unknown field, are refused the same way live", arguments: TestMode.both)
    func refusedLiveToo(mode: TestMode) async throws {
        try await BadInputFixture.expectHarmless(mode) { http, _ in
            for body in BadBody.notJSON.prefix(4) + BadBody.invalidUTF8.prefix(2) {
                let response = try await http.request(
                    "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")], body: body.bytes)
                Contract.expectProblem(response, status: 400, code: "bad-request")
            }
            let unknown = try await http.post("/v1/clients/fixture/alerts", json: FieldCase.unknownFields[0].json)
            #expect(Contract.errorFields(Contract.expectProblem(unknown, status: 400, code: "invalid-alert")) == ["titel"])
        }
    }

    // MARK: Paths

    @Test(
        "a client id that does not match the pattern is 400 bad-request on every endpoint", arguments: BadInputFixture.badClientIDs,
        RouteCase.all.filter { $0.path.contains("{c}") })
    func badClientID(clientID: String, route: RouteCase) async throws {
        try await BadInputFixture.expectHarmless { http, fixture in
            let target = fixture.fill(route.path)
                .replacingOccurrences(of: "{id}", with: fixture.displayed).replacingOccurrences(of: "{c}", with: clientID)
            let headers = route.body == nil ? [] : [("Content-Type", "application/json")]
            let response = try await http.request(route.method, target, headers: headers, body: route.body.map { Array($0.utf8) })
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("an alert id that is unknown, malformed or another client's is 404 not-found", arguments: BadRequestCase.unknownAlerts)
    func unknownAlert(request: BadRequestCase) async throws {
        try await BadInputFixture.expectHarmless { http, fixture in
            Contract.expectProblem(try await request.send(http, fixture), status: 404, code: "not-found")
        }
    }

    // MARK: Query values

    @Test("a query value that is not what it should be is 400 bad-request", arguments: BadRequestCase.badQueries)
    func badQuery(request: BadRequestCase) async throws {
        try await BadInputFixture.expectHarmless { http, fixture in
            Contract.expectProblem(try await request.send(http, fixture), status: 400, code: "bad-request")
        }
    }
}

// MARK: - Cases

/// A request body, by name.
struct BadBody: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    var testDescription: String { name }

    init(_ name: String, _ text: String) {
        self.name = name
        self.bytes = Array(text.utf8)
    }

    init(_ name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    static let notJSON: [BadBody] = [
        BadBody("an empty body", ""),
        BadBody("whitespace only", " \r\n\t "),
        BadBody("an unclosed object", #"{"title":"x","buttons":[{"title":"Yes"}]"#),
        BadBody("a trailing comma", #"{"title":"x","buttons":[{"title":"Yes"}],}"#),
        BadBody("trailing characters", #"{"title":"x","buttons":[{"title":"Yes"}]} {}"#),
        BadBody("single quotes", #"{'title':'x'}"#),
        BadBody("a comment", #"{"title":"x" /* hi */,"buttons":[{"title":"Yes"}]}"#),
        BadBody("unquoted keys", #"{title:"x"}"#),
        BadBody("a duplicate key", #"{"title":"x","title":"y","buttons":[{"title":"Yes"}]}"#),
        BadBody("a leading zero", #"{"title":"x","priority":01}"#),
        BadBody("NaN", #"{"title":"x","priority":NaN}"#),
        BadBody("a raw control character in a string", "{\"title\":\"a\u{01}b\",\"buttons\":[{\"title\":\"Yes\"}]}"),
        BadBody("a lone surrogate escape", #"{"title":"\ud800","buttons":[{"title":"Yes"}]}"#),
        BadBody("an invalid escape", #"{"title":"\x41","buttons":[{"title":"Yes"}]}"#),
        BadBody("a form-encoded body", "title=x&buttons=Yes"),
        BadBody("a byte order mark", bytes: [0xEF, 0xBB, 0xBF] + Array(#"{"title":"x","buttons":[{"title":"Yes"}]}"#.utf8)),
        BadBody("a NUL byte after the document", bytes: Array(#"{"title":"x","buttons":[{"title":"Yes"}]}"#.utf8) + [0]),
    ]

    static let invalidUTF8: [BadBody] = {
        func alert(title: [UInt8]) -> [UInt8] {
            Array(#"{"title":""#.utf8) + title + Array(#"","buttons":[{"title":"Yes"}]}"#.utf8)
        }
        return [
            BadBody("0xFF in a string", bytes: alert(title: [0x61, 0xFF, 0x62])),
            BadBody("a lone continuation byte", bytes: alert(title: [0x80])),
            BadBody("an overlong encoding of /", bytes: alert(title: [0xC0, 0xAF])),
            BadBody("an encoded surrogate", bytes: alert(title: [0xED, 0xA0, 0x80])),
            BadBody("a sequence cut short", bytes: alert(title: [0xE2, 0x82])),
            BadBody("a code point above U+10FFFF", bytes: alert(title: [0xF4, 0x90, 0x80, 0x80])),
            BadBody("Latin-1 instead of UTF-8", bytes: alert(title: [0x63, 0x61, 0x66, 0xE9])),
            BadBody("invalid UTF-8 in a key", bytes: [0x7B, 0x22, 0xFE, 0x22, 0x3A, 0x31, 0x7D]),
            BadBody("UTF-16", bytes: Array(#"{"title":"x"}"#.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })),
        ]
    }()
}

/// A posted alert body with one problem in one field.
struct FieldCase: Sendable, CustomTestStringConvertible {
    let json: String
    let field: String
    var testDescription: String { json }

    static let wrongTypes: [FieldCase] = [
        FieldCase(json: #"{"title":5}"#, field: "title"),
        FieldCase(json: #"{"title":null}"#, field: "title"),
        FieldCase(json: #"{"title":["x"]}"#, field: "title"),
        FieldCase(json: #"{"title":{"text":"x"}}"#, field: "title"),
        FieldCase(json: #"{"title":"x","message":5}"#, field: "message"),
        FieldCase(json: #"{"title":"x","style":1}"#, field: "style"),
        FieldCase(json: #"{"title":"x","buttons":"Yes"}"#, field: "buttons"),
        FieldCase(json: #"{"title":"x","buttons":{"title":"Yes"}}"#, field: "buttons"),
        FieldCase(json: #"{"title":"x","buttons":["Yes"]}"#, field: "buttons[0]"),
        FieldCase(json: #"{"title":"x","buttons":[{"title":"Yes"},null]}"#, field: "buttons[1]"),
        FieldCase(json: #"{"title":"x","buttons":[{"title":7}]}"#, field: "buttons[0].title"),
        FieldCase(json: #"{"title":"x","buttons":[{"title":"Yes","style":true}]}"#, field: "buttons[0].style"),
        FieldCase(json: #"{"title":"x","priority":"5"}"#, field: "priority"),
        FieldCase(json: #"{"title":"x","priority":true}"#, field: "priority"),
        FieldCase(json: #"{"title":"x","priority":[5]}"#, field: "priority"),
        FieldCase(json: #"{"title":"x","expires_in":"60"}"#, field: "expires_in"),
        FieldCase(json: #"{"title":"x","dismiss_after":[]}"#, field: "dismiss_after"),
        FieldCase(json: #"{"title":"x","callback_url":42}"#, field: "callback_url"),
        FieldCase(json: #"{"title":"x","metadata":"m"}"#, field: "metadata"),
        FieldCase(json: #"{"title":"x","metadata":true}"#, field: "metadata"),
    ]

    static let unknownFields: [FieldCase] = [
        FieldCase(json: #"{"title":"x","titel":"y"}"#, field: "titel"),
        FieldCase(json: #"{"title":"x","Title":"y"}"#, field: "Title"),
        FieldCase(json: #"{"title":"x","expiresIn":60}"#, field: "expiresIn"),
        FieldCase(json: #"{"title":"x","button":[{"title":"Yes"}]}"#, field: "button"),
        FieldCase(json: #"{"title":"x","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}"#, field: "id"),
        FieldCase(json: #"{"title":"x","state":"answered"}"#, field: "state"),
        FieldCase(json: #"{"title":"x","buttons":[{"title":"Yes","colour":"red"}]}"#, field: "buttons[0].colour"),
        FieldCase(json: #"{"title":"x","buttons":[{"title":"Yes"},{"title":"No","stlye":"cancel"}]}"#, field: "buttons[1].stlye"),
    ]
}

/// A request with `{c}`-free paths on the fixture: `{displayed}`, `{queued}`, `{answered}`,
/// `{withdrawn}` and `{bystander}` name its alerts.
struct BadRequestCase: Sendable, CustomTestStringConvertible {
    let method: String
    let path: String
    let body: String?
    var testDescription: String { "\(method) \(path)" }

    init(_ method: String, _ path: String, body: String? = nil) {
        self.method = method
        self.path = path
        self.body = body
    }

    func send(_ http: any TestClient, _ fixture: BadInputFixture) async throws -> TestResponse {
        let headers = body == nil ? [] : [("Content-Type", "application/json")]
        return try await http.request(method, fixture.fill(path), headers: headers, body: body.map { Array($0.utf8) })
    }

    static let unknownAlerts: [BadRequestCase] = {
        let ids = [
            "01ARZ3NDEKTSV4RRFFQ69G5FAV",  // well-formed, never issued
            "nope", "{displayed}X", "{displayed-short}", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "01ARZ3NDEKTSV4RRFFQ69G5FAU",
            "01ARZ3NDEKTSV4RRFFQ69G5FA%21",
        ]
        var cases: [BadRequestCase] = []
        for id in ids {
            cases.append(BadRequestCase("GET", "/v1/clients/fixture/alerts/\(id)"))
            cases.append(BadRequestCase("DELETE", "/v1/clients/fixture/alerts/\(id)"))
            cases.append(BadRequestCase("POST", "/v1/clients/fixture/alerts/\(id)/choice", body: #"{"button":"Yes"}"#))
        }
        // Never parks: an unknown alert cannot become terminal.
        cases.append(BadRequestCase("GET", "/v1/clients/fixture/alerts/01ARZ3NDEKTSV4RRFFQ69G5FAV?wait=30"))
        // Real alerts, asked for under the wrong client: nothing may happen to them.
        for (client, id) in [("bystander", "{displayed}"), ("fixture", "{bystander}"), ("nobody", "{displayed}")] {
            cases.append(BadRequestCase("GET", "/v1/clients/\(client)/alerts/\(id)"))
            cases.append(BadRequestCase("GET", "/v1/clients/\(client)/alerts/\(id)?wait=30"))
            cases.append(BadRequestCase("DELETE", "/v1/clients/\(client)/alerts/\(id)"))
            cases.append(BadRequestCase("POST", "/v1/clients/\(client)/alerts/\(id)/choice", body: #"{"button":"Yes"}"#))
        }
        return cases
    }()

    static let badQueries: [BadRequestCase] = {
        let current = "/v1/clients/fixture/alerts/current"
        let one = "/v1/clients/fixture/alerts/{displayed}"
        let list = "/v1/clients/fixture/alerts"
        var cases: [BadRequestCase] = []
        for wait in ["-1", "abc", "1.5", "", "+1", "0x10", "1e3", "%201", "%E2%91%A0"] {
            cases.append(BadRequestCase("GET", "\(current)?wait=\(wait)"))
            cases.append(BadRequestCase("GET", "\(one)?wait=\(wait)"))
        }
        cases.append(BadRequestCase("GET", "\(current)?wait"))
        for after in ["garbage", "{displayed}X", "{displayed-short}", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"] {
            cases.append(BadRequestCase("GET", "\(current)?wait=1&after=\(after)"))
        }
        for limit in ["0", "1001", "-1", "abc", "", "1.0", "99999999999999999999", "%2B5"] {
            cases.append(BadRequestCase("GET", "\(list)?limit=\(limit)"))
        }
        for state in ["bogus", "", "QUEUED", "pending", "queued,,answered", "queued,bogus", "queued%20", "terminal"] {
            cases.append(BadRequestCase("GET", "\(list)?state=\(state)"))
        }
        for cursor in [
            "garbage", "", "p.0.short", "p.101.{displayed}", "p.abc.{displayed}", "t.nope", "x.{displayed}",
            "t.{displayed}.extra", "p..{displayed}",
        ] {
            cases.append(BadRequestCase("GET", "\(list)?cursor=\(cursor)"))
        }
        cases += [
            BadRequestCase("GET", "\(list)?Limit=1"),
            BadRequestCase("GET", "\(list)?wait=1"),
            BadRequestCase("GET", "\(list)?limit=1&limit=1"),
            BadRequestCase("GET", "\(current)?after=&after="),
            BadRequestCase("GET", "\(current)?limit=1"),
            BadRequestCase("GET", "\(one)?after={displayed}"),
            BadRequestCase("GET", "/v1/clients?limit=0"),
            BadRequestCase("GET", "/v1/clients?page=1"),
            BadRequestCase("GET", "/healthz?verbose=1"),
            BadRequestCase("GET", "/readyz?x"),
            BadRequestCase("DELETE", "\(one)?force=1"),
            BadRequestCase("POST", "\(list)?dry_run=1", body: #"{"title":"x","buttons":[{"title":"Yes"}]}"#),
            BadRequestCase("POST", "\(one)/choice?note=1", body: #"{"button":"Yes"}"#),
        ]
        return cases
    }()
}

// MARK: - Fixture

/// Alerts in known states on client `fixture`, and one displayed alert on `bystander`:
/// answered and withdrawn (terminal), displayed and queued (pending). All have buttons
/// and the default day of life, so nothing about them changes while the suite runs.
struct BadInputFixture: Sendable {
    let displayed: String
    let queued: String
    let answered: String
    let withdrawn: String
    let bystander: String

    static let badClientIDs = [
        "-dash-first", ".dot-first", "_underscore-first", String(repeating: "a", count: 65), "has%20space", "bang!",
        "caf%C3%A9", "semi;colon", "star*", "tilde~", "at@sign", "colon:x", "%2E%2E", "quote%22", "tab%09",
    ]

    /// Posts the fixture's alerts and returns their ids.
    static func prepare(_ api: any TestClient) async throws -> BadInputFixture {
        let answered = try await api.create("fixture", Contract.alert("answered"))
        try #require(try await api.choose("fixture", Contract.id(answered), ["button": "Yes"]).status == 200)
        let withdrawn = try await api.create("fixture", Contract.alert("withdrawn"))
        try #require(try await api.withdraw("fixture", Contract.id(withdrawn)).status == 200)
        let displayed = try await api.create("fixture", Contract.alert("displayed"))
        let queued = try await api.create("fixture", Contract.alert("queued"))
        let bystander = try await api.create("bystander", Contract.alert("bystander"))
        return BadInputFixture(
            displayed: Contract.id(displayed), queued: Contract.id(queued), answered: Contract.id(answered),
            withdrawn: Contract.id(withdrawn), bystander: Contract.id(bystander))
    }

    /// A path with the fixture's ids filled in.
    func fill(_ template: String) -> String {
        template
            .replacingOccurrences(of: "{displayed-short}", with: String(displayed.dropLast()))
            .replacingOccurrences(of: "{displayed}", with: displayed)
            .replacingOccurrences(of: "{queued}", with: queued)
            .replacingOccurrences(of: "{answered}", with: answered)
            .replacingOccurrences(of: "{withdrawn}", with: withdrawn)
            .replacingOccurrences(of: "{bystander}", with: bystander)
    }

    /// Runs `send` against a new alertd holding the fixture, then checks that it still
    /// answers `GET /healthz` and that the store is exactly as before.
    static func expectHarmless(
        _ mode: TestMode = .default, sourceLocation: SourceLocation = #_sourceLocation,
        _ send: (any TestClient, BadInputFixture) async throws -> Void
    ) async throws {
        try await withTestClient(mode, sourceLocation: sourceLocation) { api in
            let fixture = try await prepare(api)
            let before = try await api.snapshot(["fixture", "bystander"], includeClientList: true)
            do {
                try await send(api, fixture)
            } catch {
                Issue.record(error, sourceLocation: sourceLocation)
            }
            let health = try await api.get("/healthz")
            #expect(health.status == 200, "GET /healthz answered \(health.status)", sourceLocation: sourceLocation)
            let after = try await api.snapshot(["fixture", "bystander"], includeClientList: true)
            if let changes = after.changes(since: before) {
                Issue.record("the store changed:\n\(changes)", sourceLocation: sourceLocation)
            }
        }
    }
}
