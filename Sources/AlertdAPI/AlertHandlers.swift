import AlertdAlertmanager
import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdWire
import Crypto

/// The alert endpoints of §4: decode, call the engine, encode.
extension API {
    /// `POST /v1/clients/{client}/alerts`: 201 with `Location` (200 for an idempotent replay).
    func postAlert(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        try Self.requireJSON(call.request)
        let key = try Self.idempotencyKey(call.request)
        let draft: NewAlert
        // Deciders have names when tokens are configured: then every request has a principal (§7, §10).
        switch NewAlert.validate(
            try Self.parseJSON(call.request.body), rules: engine.rules, namedDeciders: call.principal != nil, client: client)
        {
        case .success(let valid): draft = valid
        case .failure(let invalid):
            var problem = Problem(
                .invalidAlert, invalid.errors.count == 1 ? "1 field is invalid" : "\(invalid.errors.count) fields are invalid")
            problem.errors = invalid.errors
            throw problem
        }
        // An escalation step posts the alert to its client later (SPEC §12): the token must be
        // one that may post there now.
        if let principal = call.principal {
            for (index, step) in (draft.escalation ?? []).enumerated() where !principal.mayTouch(step.to) {
                throw Problem(
                    .forbidden,
                    "escalation[\(index)].to: token \(principal.name) may not touch client \(step.to), so it may not escalate to it")
            }
        }
        let idempotency = key.map { IdempotencyKey(key: $0, bodyDigest: Array(SHA256.hash(data: call.request.body))) }
        let poster = call.principal?.name
        call.answer(
            inline: false,
            { [engine] () async throws(EngineError) in try await engine.post(draft, to: client, idempotency: idempotency, by: poster) }
        ) {
            [self] result in
            switch result {
            case .success(let posted):
                var response = alert(posted.created ? 201 : 200, posted.alert)
                response.headers.append(("Location", "/v1/clients/\(client)/alerts/\(posted.alert.alert.id)"))
                return response
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }

    /// `GET /v1/clients/{client}/alerts/current?wait=N&after=ID&votes=V`: 200, or 204 when none.
    /// `votes` (§10): the number of votes of `after` the reader shows.
    func currentAlert(_ call: Call) throws {
        let client = try call.client()
        let query = try call.query(["wait", "after", "votes"])
        let wait = try query.wait()
        var after: AlertID?
        if let text = query["after"], !text.isEmpty {
            guard let id = AlertID(text) else { throw Problem(.badRequest, "after must be an alert id, not \(text)") }
            after = id
        }
        // Without `after` it counts the votes of "none displayed": 0.
        let votes = try query.votes()
        let whole = call.seesCallbackURLs
        @Sendable func answer(_ body: [UInt8]?) -> HTTPResponse {
            guard let body else { return HTTPResponse(status: 204, headers: [("Cache-Control", "no-store")]) }
            return json(200, whole ? body : Redaction.alertJSON(body))
        }
        // Answered from what is published, without a task, whenever it can be (most reads).
        if let published = engine.currentNow(client: client, wait: wait, after: after, votes: votes) {
            return call.respond(answer(published.body))
        }
        if wait > 0 { call.parking() }
        let owner = call.principal?.name
        call.answer(
            parking: { [engine, after] (later) async throws(EngineError) in
                try await engine.currentOrPark(client: client, wait: wait, after: after, votes: votes, owner: owner) {
                    later(Engine.Published(body: $0))
                }
            }
        ) { [self] result in
            switch result {
            case .success(let published): answer(published.body)
            case .failure(let error): render(Problem(error))
            }
        }
    }

    /// `GET /v1/clients/{client}/alerts/{id}?wait=N`: with `wait`, a long-poll whose answer
    /// carries the receipt (``pollAlert(_:client:id:wait:)``).
    func getAlert(_ call: Call) throws {
        let client = try call.client()
        let query = try call.query(["wait"])
        let wait = try query.wait()
        let id = try call.alertID(on: client)
        if wait > 0 { call.parking() }
        if query["wait"] != nil { return pollAlert(call, client: client, id: id, wait: wait) }
        let owner = call.principal?.name
        let render: @Sendable (Result<PositionedAlert, EngineError>) -> HTTPResponse = { [self] result in
            alertResponse(result, whole: call.seesCallbackURLs)
        }
        call.answer(
            parking: { [engine] (later) async throws(EngineError) in
                try await engine.alertOrPark(id, on: client, wait: wait, owner: owner) { decided, _ in
                    if let decided { return later(PositionedAlert(decided, position: nil)) }
                    // Woken undecided (its wait is over, or alertd is stopping): read as committed now.
                    call.answer({ () async throws(EngineError) in try await engine.settledAlert(id, on: client) }, render)
                }
            }, render)
    }

    /// `DELETE /v1/clients/{client}/alerts/{id}`.
    func withdrawAlert(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        let id = try call.alertID(on: client)
        let (decider, requestID) = (call.principal?.name, call.requestID)
        call.answer(
            inline: false,
            { [engine] () async throws(EngineError) in
                try await engine.withdraw(id, on: client, by: decider, requestID: requestID)
            }
        ) { [self] result in alertResponse(result, whole: call.seesCallbackURLs) }
    }

    /// `POST /v1/clients/{client}/alerts/{id}/choice` with `{"button": …}` or `{"button_index": …}`,
    /// and optionally `comment` and `values` (SPEC §13).
    func choose(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        try Self.requireJSON(call.request)
        let body = try Self.jsonObject(call.request.body)
        let selection = try Self.selection(body, also: ["comment", "values"])
        let words = try Self.words(body)
        let id = try call.alertID(on: client)
        let (decider, requestID) = (call.principal?.name, call.requestID)
        call.answer(
            inline: false,
            { [engine] () async throws(EngineError) in
                try await engine.choose(selection, words: words, alert: id, on: client, by: decider, requestID: requestID)
            }
        ) { [self] result in alertResponse(result, whole: call.seesCallbackURLs) }
    }

    /// `GET /v1/clients/{client}/alerts/{id}/deliveries`. Webhook URLs often carry
    /// secrets (user info, query): whole for `admin` only (§7), redacted for others.
    func deliveries(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        let id = try call.alertID(on: client)
        let whole = call.principal.map { $0.roles.contains(.admin) } ?? true
        call.answer({ [engine] () async throws(EngineError) in try await engine.deliveries(of: id, on: client) }) { [self] result in
            switch result {
            case .success(let records): json(200, Rendering.deliveries(records, wholeTargets: whole))
            case .failure(let error): render(Problem(error))
            }
        }
    }

    /// `GET /v1/clients/{client}/alerts?state=…&limit=…&cursor=…`: pending alerts in
    /// display order, then terminal ones newest first.
    func listAlerts(_ call: Call) throws {
        let client = try call.client()
        let query = try call.query(["state", "limit", "cursor"])
        var states = Engine.pendingStates
        if let text = query["state"] {
            states = []
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let state = AlertState(rawValue: String(name)) else {
                    throw Problem(
                        .badRequest, "unknown state \"\(name)\"; states are \(AlertState.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                states.insert(state)
            }
        }
        let limit = try query.limit()
        var cursor: Engine.ListCursor?
        if let text = query["cursor"] {
            guard let parsed = Engine.ListCursor(text) else {
                throw Problem(.badRequest, "cursor \"\(text)\" was not issued by this daemon")
            }
            cursor = parsed
        }
        call.answer({ [engine, states, cursor] () async throws(EngineError) in
            try await engine.alerts(on: client, states: states, limit: limit, after: cursor)
        }) { [self] result in
            switch result {
            case .success(let page):
                return json(200, Rendering.alerts(page.alerts, next: page.next?.text, wholeCallbackURLs: call.seesCallbackURLs))
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }

    /// The alert, or the problem (which may carry the alert: `already-decided`, `already-voted`);
    /// `whole`: the callback URL as posted (``Call/seesCallbackURLs``).
    func alertResponse(_ result: Result<PositionedAlert, EngineError>, whole: Bool) -> HTTPResponse {
        switch result {
        case .success(var found):
            if !whole { found.alert = Redaction.alert(found.alert) }
            return alert(200, found)
        case .failure(let error):
            var problem = Problem(error)
            if !whole, let decided = problem.alert { problem.alert = Redaction.alert(decided) }
            return render(problem)
        }
    }

    // MARK: - Decoding

    static func requireJSON(_ request: HTTPRequest) throws(Problem) {
        let type = request.header("content-type") ?? ""
        let media = type.utf8.prefix { $0 != UInt8(ascii: ";") }.filter { $0 != 32 && $0 != 9 }
        guard media.count == 16, String(decoding: media, as: UTF8.self).lowercased() == "application/json" else {
            throw Problem(
                .unsupportedMediaType,
                type.isEmpty ? "Content-Type must be application/json" : "Content-Type must be application/json, not \(type)")
        }
    }

    static func idempotencyKey(_ request: HTTPRequest) throws(Problem) -> String? {
        let values = request.headers.filter { $0.name == "idempotency-key" }
        guard let key = values.first?.value else { return nil }
        guard values.count == 1 else { throw Problem(.badRequest, "Idempotency-Key must be sent once") }
        // Bytes, not characters: 100 letters with 16 combining marks each are 100 characters
        // and 3,300 bytes, more than PostgreSQL's index takes. Printable ASCII, as the header's
        // draft standard (a structured-field string) has it.
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw Problem(.badRequest, "Idempotency-Key must be 1 to 255 printable ASCII characters")
        }
        guard !key.hasPrefix(AlertmanagerMapping.keyPrefix) else {
            throw Problem(
                .badRequest,
                "Idempotency-Key must not begin with \"\(AlertmanagerMapping.keyPrefix)\": those are the Alertmanager integration's")
        }
        return key
    }

    /// Any JSON body; malformed JSON (invalid UTF-8 included) is 400 with where it broke.
    static func parseJSON(_ body: [UInt8]) throws(Problem) -> JSONValue {
        do {
            return try JSONParser.parse(body)
        } catch {
            throw Problem(.badRequest, "the body is not valid JSON: \(error.reason) at byte \(error.offset)")
        }
    }

    /// A body that must be a JSON object.
    static func jsonObject(_ body: [UInt8]) throws(Problem) -> JSONObject {
        guard case .object(let object) = try parseJSON(body) else { throw Problem(.badRequest, "the body must be a JSON object") }
        return object
    }

    /// `{"button": "Deploy"}` or `{"button_index": 0}`, exactly one.
    static func selection(_ body: [UInt8]) throws(Problem) -> ButtonSelection {
        try selection(try jsonObject(body))
    }

    /// The choice in a body's members; `also` names the members it may have besides.
    static func selection(_ object: JSONObject, also: Set<String> = []) throws(Problem) -> ButtonSelection {
        if let unknown = object.keys.first(where: { $0 != "button" && $0 != "button_index" && !also.contains($0) }) {
            let more = also.contains("comment") ? ", with \"comment\" and \"values\" if you like" : ""
            throw Problem(.badRequest, "unknown field \(unknown); send {\"button\": title} or {\"button_index\": n}\(more)")
        }
        switch (object["button"], object["button_index"]) {
        case (let title?, nil):
            guard case .string(let text) = title else { throw Problem(.badRequest, "button must be a string") }
            return .title(text)
        case (nil, let index?):
            // A whole number however written (`1`, `1.0`): JSON has no integer type.
            guard case .number(let number) = index, let value = number.wholeInt else {
                throw Problem(.badRequest, "button_index must be an integer")
            }
            return .index(value)
        case (nil, nil):
            throw Problem(.badRequest, "send exactly one of button and button_index")
        case (_?, _?):
            throw Problem(.badRequest, "send exactly one of button and button_index, not both")
        }
    }

    /// A choice's `comment` (a string or null) and `values` (an object of strings, or null)
    /// (SPEC §13). A wrong type, and what no alert takes (``ChoiceWords/shapeProblems``), is
    /// 400 `invalid-answer` with each one at its path, before the alert is looked at; what
    /// the alert's fields make of them is the board's to check.
    static func words(_ object: JSONObject) throws(Problem) -> ChoiceWords {
        var errors: [FieldError] = []
        var words = ChoiceWords()
        switch object["comment"] {
        case nil, .null?: break
        case .string(let text)?: words.comment = text
        case let other?: errors.append(FieldError(field: "comment", reason: "must be a string, not \(other.typeName)"))
        }
        switch object["values"] {
        case nil, .null?: break
        case .object(let members)?:
            for (name, value) in members {
                guard case .string(let text) = value else {
                    errors.append(FieldError(field: "values.\(name)", reason: "must be a string, not \(value.typeName)"))
                    continue
                }
                words.values[name] = text
            }
        case let other?:
            errors.append(FieldError(field: "values", reason: "must be an object of field names and strings, not \(other.typeName)"))
        }
        errors += words.shapeProblems
        guard errors.isEmpty else {
            var problem = Problem(
                .invalidAnswer, errors.count == 1 ? "1 part of the answer is invalid" : "\(errors.count) parts of the answer are invalid")
            problem.errors = errors
            throw problem
        }
        return words
    }
}
