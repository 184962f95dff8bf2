// Bad input against the real binary. For every case: the spec'd status and problem
// `code`, the daemon still answers `GET /healthz` on a fresh connection, and the store
// is exactly as before (`GET /v1/clients` and every client's alerts in every state).
//
// One daemon serves the whole suite, with a fixture of alerts in known states (see
// `BadInputFixture`); the tests run one after another so that "the store is unchanged"
// can be checked exactly.

import Foundation
import Testing

@Suite("Bad input", .serialized, .sharedAlertd(prepare: BadInputFixture.prepare), .ownThreads)
struct BadInputTests {
    // MARK: Bodies that are not JSON

    @Test("a posted alert that is not JSON is 400 bad-request", arguments: BadBody.notJSON)
    func alertNotJSON(body: BadBody) throws {
        try BadInputFixture.expectHarmless { http, _ in
            let response = try http.request(
                "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")], body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("a choice that is not JSON is 400 bad-request", arguments: BadBody.notJSON)
    func choiceNotJSON(body: BadBody) throws {
        try BadInputFixture.expectHarmless { http, fixture in
            let response = try http.request(
                "POST", "/v1/clients/fixture/alerts/\(fixture.displayed)/choice", headers: [("Content-Type", "application/json")],
                body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    // MARK: Invalid UTF-8

    @Test("a posted alert with invalid UTF-8 is 400 bad-request", arguments: BadBody.invalidUTF8)
    func alertInvalidUTF8(body: BadBody) throws {
        try BadInputFixture.expectHarmless { http, _ in
            let response = try http.request(
                "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")], body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("a choice with invalid UTF-8 is 400 bad-request", arguments: BadBody.invalidUTF8)
    func choiceInvalidUTF8(body: BadBody) throws {
        try BadInputFixture.expectHarmless { http, fixture in
            let response = try http.request(
                "POST", "/v1/clients/fixture/alerts/\(fixture.displayed)/choice", headers: [("Content-Type", "application/json")],
                body: body.bytes)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("invalid UTF-8 written on the wire as raw bytes is 400 bad-request")
    func invalidUTF8Raw() throws {
        try BadInputFixture.expectHarmless { http, _ in
            let body: [UInt8] = Array(#"{"title":""#.utf8) + [0xC3, 0x28, 0xA0, 0xA1] + Array(#"","buttons":[{"title":"Yes"}]}"#.utf8)
            let head =
                "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.count)\r\n\r\n"
            try http.sendRaw(Array(head.utf8) + body)
            Contract.expectProblem(try http.readResponse(), status: 400, code: "bad-request")
        }
    }

    // MARK: Wrong types and unknown fields

    @Test("a field of the wrong type is 400 invalid-alert naming it", arguments: FieldCase.wrongTypes)
    func wrongType(field: FieldCase) throws {
        try BadInputFixture.expectHarmless { http, _ in
            let response = try http.post("/v1/clients/fixture/alerts", json: field.json)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == [field.field])
        }
    }

    @Test("an unknown field at any depth is 400 invalid-alert naming its path", arguments: FieldCase.unknownFields)
    func unknownField(field: FieldCase) throws {
        try BadInputFixture.expectHarmless { http, _ in
            let response = try http.post("/v1/clients/fixture/alerts", json: field.json)
            let problem = Contract.expectProblem(response, status: 400, code: "invalid-alert")
            #expect(Contract.errorFields(problem) == [field.field])
        }
    }

    @Test(
        "a choice with an unknown or misspelt member is 400 bad-request",
        arguments: [#"{"button":"Yes","comment":"sure"}"#, #"{"buttonIndex":0}"#, #"{"Button":"Yes"}"#, #"{"button_title":"Yes"}"#])
    func choiceUnknownField(json: String) throws {
        try BadInputFixture.expectHarmless { http, fixture in
            let response = try http.post("/v1/clients/fixture/alerts/\(fixture.displayed)/choice", json: json)
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    // MARK: Body size

    @Test("a body of 64 KiB + 1 with Content-Length is 413 payload-too-large")
    func oversizedWithContentLength() throws {
        try BadInputFixture.expectHarmless { http, _ in
            let response = try http.request(
                "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")],
                body: BadInputFixture.paddedAlert(size: 65_537))
            Contract.expectProblem(response, status: 413, code: "payload-too-large")
        }
    }

    @Test("a declared Content-Length over 64 KiB is 413 before any body is sent")
    func oversizedDeclaredOnly() throws {
        try BadInputFixture.expectHarmless { http, _ in
            let head =
                "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Expect: 100-continue\r\nContent-Length: 65537\r\n\r\n"
            try http.sendRaw(Array(head.utf8))
            Contract.expectProblem(try http.readResponse(), status: 413, code: "payload-too-large")
        }
    }

    @Test("a chunked body of 64 KiB + 1 is 413 payload-too-large", arguments: [4096, 65_537])
    func oversizedChunked(chunkSize: Int) throws {
        try BadInputFixture.expectHarmless { http, _ in
            try http.sendRaw(BadInputFixture.chunkedPost(BadInputFixture.paddedAlert(size: 65_537), chunkSize: chunkSize))
            Contract.expectProblem(try http.readResponse(), status: 413, code: "payload-too-large")
        }
    }

    @Test("a body of exactly 64 KiB is processed, with Content-Length or chunked", arguments: [false, true])
    func exactlyTheLimit(chunked: Bool) throws {
        let daemon = try SharedAlertd.daemon()
        let client = chunked ? "limit-chunked" : "limit-length"
        let before = try Contract.snapshot(daemon, clients: [client], includeClientList: false)
        let http = daemon.client(timeout: 10)
        let body = BadInputFixture.paddedAlert(size: 65_536, title: "at the limit")
        #expect(body.count == 65_536)
        let response: TestResponse
        if chunked {
            try http.sendRaw(BadInputFixture.chunkedPost(body, chunkSize: 4096, client: client))
            response = try http.readResponse()
        } else {
            response = try http.request(
                "POST", "/v1/clients/\(client)/alerts", headers: [("Content-Type", "application/json")], body: body)
        }
        #expect(response.status == 201, "\(response.status): \(response.text.prefix(300))")
        #expect(try response.jsonObject()["title"] as? String == "at the limit")
        let listed = try ContractClient(daemon).allAlerts(client)
        #expect(listed.map(Contract.id) == [Contract.id(try response.jsonObject())])
        #expect(before.alerts[client]?.contains(#""alerts":[]"#) == true)
    }

    // MARK: Paths

    @Test(
        "a client id that does not match the pattern is 400 bad-request on every endpoint", arguments: BadInputFixture.badClientIDs,
        RouteCase.all.filter { $0.path.contains("{c}") })
    func badClientID(clientID: String, route: RouteCase) throws {
        try BadInputFixture.expectHarmless { http, fixture in
            let target = fixture.fill(route.path)
                .replacingOccurrences(of: "{id}", with: fixture.displayed).replacingOccurrences(of: "{c}", with: clientID)
            let headers = route.body == nil ? [] : [("Content-Type", "application/json")]
            let response = try http.request(route.method, target, headers: headers, body: route.body.map { Array($0.utf8) })
            Contract.expectProblem(response, status: 400, code: "bad-request")
        }
    }

    @Test("an alert id that is unknown, malformed or another client's is 404 not-found", arguments: BadRequestCase.unknownAlerts)
    func unknownAlert(request: BadRequestCase) throws {
        try BadInputFixture.expectHarmless { http, fixture in
            Contract.expectProblem(try request.send(http, fixture), status: 404, code: "not-found")
        }
    }

    // MARK: Query values

    @Test("a query value that is not what it should be is 400 bad-request", arguments: BadRequestCase.badQueries)
    func badQuery(request: BadRequestCase) throws {
        try BadInputFixture.expectHarmless { http, fixture in
            Contract.expectProblem(try request.send(http, fixture), status: 400, code: "bad-request")
        }
    }

    // MARK: Garbage on the wire

    @Test("garbage request lines and headers are refused with their status and harm nothing", arguments: RawCase.all)
    func garbageRefused(raw: RawCase) throws {
        try BadInputFixture.expectHarmless { http, _ in
            if raw.layer == .closes {
                // Not HTTP: libmicrohttpd hangs up without a word, which is a refusal too.
                try? http.sendRaw(raw.bytes)
                #expect(http.awaitServerClose(timeout: 10), "the connection stayed open after \(raw.name)")
                return
            }
            guard let response = Self.answer(to: raw, on: http) else { return }
            #expect(response.status == raw.status, "\(response.status): \(response.text.prefix(200).debugDescription)")
        }
    }

    @Test(
        "the answers to garbage request lines and headers are problem+json with their code",
        arguments: RawCase.all.filter { $0.layer != .closes })
    func garbageAnsweredAsProblems(raw: RawCase) throws {
        try BadInputFixture.expectHarmless { http, _ in
            guard let response = Self.answer(to: raw, on: http) else { return }
            let check = {
                #expect(!response.text.hasPrefix("HTTP/1."), "the answer's body is another response head: it was sent twice")
                Contract.expectProblem(response, status: raw.status, code: raw.code)
            }
            if raw.layer == .libmicrohttpd {
                // libmicrohttpd 0.9.75 parses the request line, headers and framing
                // itself and answers errors there with its own HTML body (for a bad
                // Content-Length it even sends its head twice), before alertd's
                // handler is ever called; it has no hook to change those bodies.
                withKnownIssue("answered by libmicrohttpd's parser, not alertd", isIntermittent: true) { check() }
            } else {
                check()
            }
        }
    }

    /// Writes the case's bytes and reads the answer; nil (and an issue) when there is none.
    static func answer(to raw: RawCase, on http: TestHTTPClient, sourceLocation: SourceLocation = #_sourceLocation) -> TestResponse? {
        do {
            try http.sendRaw(raw.bytes)
        } catch {
            // The daemon may stop reading early; what it answered is still to be read.
        }
        do {
            return try http.readResponse()
        } catch {
            Issue.record("no answer to \(raw.name): \(error)", sourceLocation: sourceLocation)
            return nil
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

    func send(_ http: TestHTTPClient, _ fixture: BadInputFixture) throws -> TestResponse {
        let headers = body == nil ? [] : [("Content-Type", "application/json")]
        return try http.request(method, fixture.fill(path), headers: headers, body: body.map { Array($0.utf8) })
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

/// Bytes written as they are, and the answer they must get.
struct RawCase: Sendable, CustomTestStringConvertible {
    /// Who answers: bytes that are not parseable HTTP never reach alertd's handler.
    enum Layer: Sendable {
        /// alertd's handler: a problem+json answer.
        case alertd
        /// libmicrohttpd's parser answers on its own (status right, body its own HTML).
        case libmicrohttpd
        /// Not HTTP at all: libmicrohttpd closes the connection without an answer.
        case closes
    }

    let name: String
    let bytes: [UInt8]
    let status: Int
    /// nil: no code is spec'd for this status; any non-empty one will do.
    let code: String?
    let layer: Layer
    var testDescription: String { name }

    init(_ name: String, _ text: String, status: Int, code: String?, layer: Layer = .alertd) {
        self.init(name, bytes: Array(text.utf8), status: status, code: code, layer: layer)
    }

    init(_ name: String, bytes: [UInt8], status: Int, code: String?, layer: Layer = .alertd) {
        self.name = name
        self.bytes = bytes
        self.status = status
        self.code = code
        self.layer = layer
    }

    static let all: [RawCase] = {
        let alert = #"{"title":"smuggled","buttons":[{"title":"Yes"}]}"#
        let post = "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        return [
            RawCase("a request line of one word", "GARBAGE\r\n\r\n", status: 400, code: "bad-request", layer: .closes),
            RawCase("binary junk", bytes: Array(1...8) + Array("\r\n\r\n".utf8), status: 400, code: "bad-request", layer: .closes),
            RawCase("an HTTP/0.9 request line", "GET /healthz\r\n\r\n", status: 400, code: "bad-request", layer: .libmicrohttpd),
            RawCase(
                "a request line without a target", "GET  HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 400, code: "bad-request",
                layer: .libmicrohttpd),
            RawCase(
                "a control character in the path", "GET /v1/clients/fix\u{01}ture/alerts HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 400,
                code: "bad-request"),
            RawCase(
                "an unknown method", "BREW /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 405,
                code: "method-not-allowed"),
            RawCase(
                "an unknown HTTP version", "GET /healthz HTTP/9.9\r\nHost: localhost\r\n\r\n", status: 505, code: nil, layer: .libmicrohttpd
            ),
            RawCase(
                "a header line without a colon", "GET /healthz HTTP/1.1\r\nHost: localhost\r\nNoColonHere\r\n\r\n", status: 400,
                code: "bad-request", layer: .libmicrohttpd),
            RawCase(
                "a Content-Length that is not a number", post + "Content-Length: abc\r\n\r\n" + alert, status: 400, code: "bad-request",
                layer: .libmicrohttpd),
            RawCase(
                "a negative Content-Length", post + "Content-Length: -1\r\n\r\n" + alert, status: 400, code: "bad-request",
                layer: .libmicrohttpd),
            RawCase(
                "two different Content-Length values",
                post + "Content-Length: \(alert.utf8.count)\r\nContent-Length: \(alert.utf8.count + 1)\r\n\r\n" + alert + " ",
                status: 400, code: "bad-request"),
            RawCase(
                "a chunk size that is not hexadecimal", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + alert + "\r\n0\r\n\r\n",
                status: 400, code: "bad-request", layer: .libmicrohttpd),
            RawCase(
                "a Content-Length larger than any integer", post + "Content-Length: 99999999999999999999999\r\n\r\n" + alert,
                status: 413, code: "payload-too-large", layer: .libmicrohttpd),
            RawCase(
                "a header block larger than the daemon takes",
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: \(String(repeating: "p", count: 9000))\r\n\r\n", status: 431,
                code: nil,
                layer: .libmicrohttpd),
            RawCase(
                "a request target longer than the daemon takes",
                "GET /v1/clients/fixture/alerts?state=\(String(repeating: "q", count: 9000)) HTTP/1.1\r\nHost: localhost\r\n\r\n",
                status: 414, code: nil, layer: .libmicrohttpd),
        ]
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

    static func prepare(_ daemon: Daemon) throws {
        let api = ContractClient(daemon)
        let answered = try api.create("fixture", Contract.alert("answered"))
        try #require(try api.choose("fixture", Contract.id(answered), ["button": "Yes"]).status == 200)
        let withdrawn = try api.create("fixture", Contract.alert("withdrawn"))
        try #require(try api.withdraw("fixture", Contract.id(withdrawn)).status == 200)
        _ = try api.create("fixture", Contract.alert("displayed"))
        _ = try api.create("fixture", Contract.alert("queued"))
        _ = try api.create("bystander", Contract.alert("bystander"))
    }

    /// The fixture's ids, read back by title.
    static func load(_ daemon: Daemon) throws -> BadInputFixture {
        let api = ContractClient(daemon)
        var byTitle: [String: String] = [:]
        for alert in try api.allAlerts("fixture") + api.allAlerts("bystander") {
            if let title = alert["title"] as? String, byTitle[title] == nil { byTitle[title] = Contract.id(alert) }
        }
        func id(_ title: String) throws -> String { try #require(byTitle[title], "fixture alert \(title) is missing") }
        return BadInputFixture(
            displayed: try id("displayed"), queued: try id("queued"), answered: try id("answered"),
            withdrawn: try id("withdrawn"), bystander: try id("bystander"))
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

    /// Runs `send` on a new connection, then checks that the daemon still answers
    /// `GET /healthz` on a fresh connection and that the store is exactly as before.
    static func expectHarmless(
        sourceLocation: SourceLocation = #_sourceLocation, _ send: (TestHTTPClient, BadInputFixture) throws -> Void
    ) throws {
        let daemon = try SharedAlertd.daemon(sourceLocation: sourceLocation)
        let fixture = try load(daemon)
        let before = try Contract.snapshot(daemon, clients: ["fixture", "bystander"], includeClientList: true)
        let http = daemon.client(timeout: 10)
        do {
            try send(http, fixture)
        } catch {
            Issue.record(error, sourceLocation: sourceLocation)
        }
        http.close()

        #expect(daemon.isRunning, "alertd exited: \(daemon.stderrText.suffix(2000))", sourceLocation: sourceLocation)
        let health = try daemon.client(timeout: 10).get("/healthz")
        #expect(health.status == 200, "GET /healthz on a fresh connection answered \(health.status)", sourceLocation: sourceLocation)
        let after = try Contract.snapshot(daemon, clients: ["fixture", "bystander"], includeClientList: true)
        if let changes = after.changes(since: before) {
            Issue.record("the store changed:\n\(changes)", sourceLocation: sourceLocation)
        }
    }

    /// A valid alert (with a button, so it is never dismissed) padded with spaces to `size` bytes.
    static func paddedAlert(size: Int, title: String = "padded") -> [UInt8] {
        let json = Array(#"{"title":"\#(title)","buttons":[{"title":"Yes"}]}"#.utf8)
        return json + [UInt8](repeating: 0x20, count: size - json.count)
    }

    /// A whole `POST …/alerts` with a chunked body cut into `chunkSize` pieces.
    static func chunkedPost(_ body: [UInt8], chunkSize: Int, client: String = "fixture") -> [UInt8] {
        var wire = Array(
            "POST /v1/clients/\(client)/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                .utf8)
        var offset = 0
        while offset < body.count {
            let piece = body[offset..<min(offset + chunkSize, body.count)]
            wire += Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]
            offset += piece.count
        }
        return wire + Array("0\r\n\r\n".utf8)
    }
}
