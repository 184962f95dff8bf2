import AlertdCore
import AlertdHTTP
import AlertdWire
import Logging
import struct NIOConcurrencyHelpers.NIOLockedValueBox

/// alertd's HTTP API: routes a request, checks its query and body, runs it on
/// the service and renders the answer. Errors are problem+json.
final class APIHandler: HTTPHandler {
    let service: AlertService
    let router = Router.api
    /// Tokens and rate limits; replaced as a whole by a reload.
    struct Access: Sendable {
        var auth: Authenticator
        /// Per-token request rate; nil when `limits.rate_per_second` is not set.
        var rateLimiter: RateLimiter?
    }
    let access: NIOLockedValueBox<Access>
    let metrics: AlertdMetrics
    /// `metrics.require_token`: `/metrics` needs any valid token.
    let metricsNeedToken: Bool
    let logger: Logger
    let readiness: @Sendable () -> Bool

    init(
        service: AlertService, auth: Authenticator = Authenticator(tokens: []), rateLimiter: RateLimiter? = nil,
        metrics: AlertdMetrics = AlertdMetrics(), metricsNeedToken: Bool = false, logger: Logger,
        readiness: @escaping @Sendable () -> Bool
    ) {
        self.service = service
        self.metrics = metrics
        self.metricsNeedToken = metricsNeedToken
        self.access = NIOLockedValueBox(Access(auth: auth, rateLimiter: rateLimiter))
        self.logger = logger
        self.readiness = readiness
    }

    func reject(_ rejection: HTTPRejection) -> HTTPResponse {
        switch rejection {
        case .payloadTooLarge(let limit): render(Problem(.payloadTooLarge, "the body is larger than \(limit) bytes"))
        case .badFraming(let detail): render(Problem(.badRequest, detail))
        case .headersTooLarge(let limit): render(Problem(.badRequest, "the request line and headers take more than \(limit) bytes"))
        case .shuttingDown: render(Problem(.unavailable, "alertd is shutting down"))
        case .tooManyConnections(let limit):
            render(
                {
                    var problem = Problem(
                        .unavailable, "alertd holds its maximum of \(limit) connections (limits.max_connections); retry later")
                    problem.headers = [("Retry-After", "1")]
                    return problem
                }())
        }
    }

    func handle(_ request: HTTPRequest, responder: Responder) {
        // Every answer carries the request's id, and with log.level debug one
        // line per request names it (with the token's name, never its secret).
        let requestID = RequestID.of(request.header("x-request-id"))
        let (method, path, started) = (request.method, request.path, DeadlineTimer.now())
        let debug = logger.logLevel <= .debug
        let match = router.match(method: request.method, path: request.path)
        let routeName: String
        if case .found(let endpoint, _) = match { routeName = endpoint.routeName } else { routeName = "unmatched" }
        let finish: @Sendable (HTTPResponse) -> HTTPResponse = { [logger, metrics] response in
            var response = response
            response.headers.append(("X-Request-Id", requestID))
            metrics.request(route: routeName, status: response.status, nanoseconds: DeadlineTimer.now() - started)
            if debug {
                logger.debug(
                    "request",
                    metadata: [
                        "request_id": "\(requestID)", "method": "\(method)", "path": "\(path)", "status": "\(response.status)",
                        "ms": "\(Double((DeadlineTimer.now() - started) / 1000) / 1000)",
                    ])
            }
            return response
        }
        let answer = Answer(responder: responder, finish: finish)
        // Answers that come from a commit's completion are built lazily, on the
        // connection's thread, not on the store writer's.
        let respond: Reply = { make in responder.respond(building: { finish(make()) }) }
        // With tokens, every /v1 request shows one first: 401 comes before anything else.
        var principal: Principal?
        let (auth, rateLimiter) = access.withLockedValue { ($0.auth, $0.rateLimiter) }
        let metricsGuarded = metricsNeedToken && request.path == "/metrics"
        if auth.isEnabled, request.path == "/v1" || request.path.hasPrefix("/v1/") || metricsGuarded {
            switch auth.authenticate(request.header("authorization")) {
            case .success(let found): principal = found
            case .failure(let problem): return answer.now(render(problem))
            }
            if let principal, let limited = rateLimiter?.admit(principal.name) {
                return answer.now(render(limited))
            }
        }
        if metricsGuarded, principal == nil {
            // metrics.require_token with no tokens configured: no token can be valid.
            return answer.now(render(Authenticator.unauthorized("/metrics needs a token (metrics.require_token) and none is configured")))
        }
        switch match {
        case .notFound:
            answer.now(render(Problem(.notFound, "no such resource: \(request.path)")))
        case .methodNotAllowed(let allow):
            var problem = Problem(
                .methodNotAllowed, "\(request.method) is not allowed on \(request.path); allowed: \(allow.joined(separator: ", "))")
            problem.headers = [("Allow", allow.joined(separator: ", "))]
            answer.now(render(problem))
        case .found(let endpoint, let permission):
            do {
                if let principal { try Self.authorize(principal, permission, endpoint) }
                try dispatch(endpoint, request, principal, requestID, respond)
            } catch let problem as Problem {
                answer.now(render(problem))
            } catch {
                answer.now(render(Problem(.badRequest, "\(error)")))
            }
        }
    }

    typealias Reply = @Sendable (@escaping @Sendable () -> HTTPResponse) -> Void

    /// An immediate answer, with the request's id and log line.
    struct Answer {
        let responder: Responder
        let finish: @Sendable (HTTPResponse) -> HTTPResponse
        func now(_ response: HTTPResponse) { responder.respond(finish(response)) }
    }

    /// 403 unless the token has a role for the route and its clients cover the route's client.
    static func authorize(_ principal: Principal, _ permission: Permission, _ endpoint: Endpoint) throws {
        guard principal.allows(permission) else {
            let roles = principal.roles.map(\.rawValue).sorted().joined(separator: ", ")
            throw Problem(.forbidden, "token \(principal.name) (roles: \(roles)) may not do this: it needs \(permission.roleNeeded)")
        }
        if let client = endpoint.client, !principal.mayTouch(client) {
            throw Problem(.forbidden, "token \(principal.name) may not touch client \(client)")
        }
    }

    private func dispatch(
        _ endpoint: Endpoint, _ request: HTTPRequest, _ principal: Principal?, _ requestID: String, _ reply: @escaping Reply
    ) throws {
        func respond(now response: HTTPResponse) { reply { response } }
        switch endpoint {
        case .healthz:
            _ = try Query(request, allowed: [])
            respond(now: json(200, Array(#"{"status":"ok"}"#.utf8)))

        case .metrics:
            _ = try Query(request, allowed: [])
            metrics.pending.record(service.pendingTotal)
            metrics.waiters.record(service.waiterCount)
            respond(
                now: HTTPResponse(
                    status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8"), ("Cache-Control", "no-store")],
                    body: metrics.render()))

        case .readyz:
            _ = try Query(request, allowed: [])
            if readiness() {
                var out = JSONWriter(capacity: 64)
                out.beginObject()
                out.key("status")
                out.string("ready")
                out.key("pending")
                out.int(service.pendingTotal)
                out.key("waiters")
                out.int(service.waiterCount)
                out.endObject()
                respond(now: json(200, out.bytes))
            } else {
                respond(now: render(Problem(.unavailable, service.isDraining ? "alertd is shutting down" : "the store is not writable")))
            }

        case .dashboard:
            // A page, not the API: its query (a kiosk's bookmark, a cache buster) is ignored.
            respond(now: Dashboard.response(Dashboard.page, ifNoneMatch: request.header("if-none-match")))

        case .dashboardAsset(let name):
            guard let asset = Dashboard.asset(named: name) else { throw Problem(.notFound, "no such resource: \(request.path)") }
            respond(now: Dashboard.response(asset, ifNoneMatch: request.header("if-none-match")))

        case .whoAmI:
            _ = try Query(request, allowed: [])
            respond(now: json(200, Self.whoAmI(principal)))

        case .listClients:
            _ = try Query(request, allowed: [])
            var out = JSONWriter(capacity: 256)
            out.beginObject()
            out.key("clients")
            out.beginArray()
            for summary in service.clients() where principal?.mayTouch(summary.client) ?? true {
                out.beginObject()
                out.key("client")
                out.string(summary.client)
                out.key("pending")
                out.int(summary.pending)
                out.key("displayed")
                out.string(summary.displayed?.description)
                out.endObject()
            }
            out.endArray()
            out.endObject()
            respond(now: json(200, out.bytes))

        case .postAlert(let client):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            try Self.requireJSON(request)
            let key = try Self.idempotencyKey(request)
            service.post(client: client, body: request.body, idempotencyKey: key) { [self] result in
                switch result {
                case .success(let (alert, created)):
                    reply { [self] in
                        var response = json(created ? 201 : 200, service.render(alert))
                        response.headers.append(("Location", "/v1/clients/\(client)/alerts/\(alert.id)"))
                        return response
                    }
                case .failure(let problem):
                    reply { [self] in render(problem) }
                }
            }

        case .currentAlert(let client):
            try Self.check(client: client)
            let query = try Query(request, allowed: ["wait", "after"])
            let wait = try query.wait()
            var after: AlertID?
            if let text = query["after"], !text.isEmpty {
                guard let id = AlertID(text) else {
                    throw Problem(.badRequest, "after must be an alert id, not \(text)")
                }
                after = id
            }
            service.awaitCurrent(client: client, wait: wait, after: after) { [self] result in
                switch result {
                case .success(let body?): reply { [self] in json(200, body) }
                case .success(nil): reply { HTTPResponse(status: 204, headers: [("Cache-Control", "no-store")]) }
                case .failure(let problem): reply { [self] in render(problem) }
                }
            }

        case .getAlert(let client, let idText):
            try Self.check(client: client)
            let query = try Query(request, allowed: ["wait"])
            let wait = try query.wait()
            let id = try Self.alertID(idText, client: client)
            service.awaitAlert(id, client: client, wait: wait) { [self] result in
                reply { [self] in alertResponse(result) }
            }

        case .withdrawAlert(let client, let idText):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            let id = try Self.alertID(idText, client: client)
            service.decide(.withdraw, id: id, client: client, by: principal?.name, requestID: requestID) { [self] result in
                reply { [self] in alertResponse(result) }
            }

        case .choose(let client, let idText):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            try Self.requireJSON(request)
            let selection = try Self.selection(request.body)
            let id = try Self.alertID(idText, client: client)
            service.decide(.choose(selection), id: id, client: client, by: principal?.name, requestID: requestID) { [self] result in
                reply { [self] in alertResponse(result) }
            }

        case .deliveries(let client, let idText):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            let id = try Self.alertID(idText, client: client)
            guard case .success(_?) = service.lookup(id, client: client) else {
                throw Problem(.notFound, "no alert \(idText) on client \(client)")
            }
            let records: [DeliveryRecord]
            do {
                records = try service.store.deliveries(of: id)
            } catch {
                throw Problem(.unavailable, "the store cannot be read: \(error)")
            }
            respond(now: json(200, Rendering.deliveries(records)))

        case .createWebhook(let client):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            try Self.requireJSON(request)
            let (url, secret) = try Self.webhookBody(request.body)
            service.createWebhook(client: client, url: url, secret: secret) { result in
                reply { [self] in
                    switch result {
                    case .success(let webhook):
                        var response = json(201, Rendering.createdWebhook(webhook))
                        response.headers.append(("Location", "/v1/clients/\(client)/webhooks/\(webhook.id)"))
                        return response
                    case .failure(let problem):
                        return render(problem)
                    }
                }
            }

        case .listWebhooks(let client):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            var out = JSONWriter(capacity: 256)
            out.beginObject()
            out.key("webhooks")
            out.beginArray()
            for webhook in service.webhooks(of: client) { Rendering.write(webhook, into: &out) }
            out.endArray()
            out.endObject()
            respond(now: json(200, out.bytes))

        case .getWebhook(let client, let id):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            guard let webhook = service.webhooks(of: client).first(where: { $0.id == id }) else {
                throw Problem(.notFound, "no webhook \(id) on client \(client)")
            }
            var out = JSONWriter(capacity: 128)
            Rendering.write(webhook, into: &out)
            respond(now: json(200, out.bytes))

        case .deleteWebhook(let client, let id):
            try Self.check(client: client)
            _ = try Query(request, allowed: [])
            service.deleteWebhook(client: client, id: id) { result in
                reply { [self] in
                    switch result {
                    case .success: HTTPResponse(status: 204, headers: [("Cache-Control", "no-store")])
                    case .failure(let problem): render(problem)
                    }
                }
            }

        case .listAlerts(let client):
            try Self.check(client: client)
            let query = try Query(request, allowed: ["state", "limit", "cursor"])
            let page = try AlertListing(query: query)
            respond(now: json(200, try page.render(client: client, service: service)))
        }
    }

    /// `{"name", "roles", "clients", "auth"}` of a token; without tokens (no
    /// principal) everything is allowed to everyone: every role, every client.
    static func whoAmI(_ principal: Principal?) -> [UInt8] {
        var out = JSONWriter(capacity: 128)
        out.beginObject()
        out.key("name")
        out.string(principal?.name)
        out.key("roles")
        out.beginArray()
        for role in Role.allCases where principal?.roles.contains(role) ?? true { out.string(role.rawValue) }
        out.endArray()
        out.key("clients")
        out.beginArray()
        for pattern in principal?.clients.map(\.text) ?? ["*"] { out.string(pattern) }
        out.endArray()
        out.key("auth")
        out.bool(principal != nil)
        out.endObject()
        return out.bytes
    }

    // MARK: - Checks

    static func check(client: String) throws {
        guard ClientID.isValid(client) else {
            throw Problem(.badRequest, "client id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
        }
    }

    static func alertID(_ text: String, client: String) throws -> AlertID {
        guard let id = AlertID(text) else { throw Problem(.notFound, "no alert \(text) on client \(client)") }
        return id
    }

    static func requireJSON(_ request: HTTPRequest) throws {
        let type = request.header("content-type") ?? ""
        let media = type.utf8.prefix { $0 != UInt8(ascii: ";") }.filter { $0 != 32 && $0 != 9 }
        guard media.count == 16, String(decoding: media, as: UTF8.self).lowercased() == "application/json" else {
            throw Problem(
                .unsupportedMediaType,
                type.isEmpty ? "Content-Type must be application/json" : "Content-Type must be application/json, not \(type)")
        }
    }

    static func idempotencyKey(_ request: HTTPRequest) throws -> String? {
        let values = request.headers.filter { $0.name == "idempotency-key" }
        guard let key = values.first?.value else { return nil }
        guard values.count == 1 else { throw Problem(.badRequest, "Idempotency-Key must be sent once") }
        guard (1...255).contains(key.count) else { throw Problem(.badRequest, "Idempotency-Key must be 1 to 255 characters") }
        return key
    }

    /// A body that must be a JSON object.
    static func jsonObject(_ body: [UInt8]) throws -> JSONObject {
        guard case .object(let object) = try parseJSON(body) else { throw Problem(.badRequest, "the body must be a JSON object") }
        return object
    }

    /// Any JSON body; malformed JSON (invalid UTF-8 included) is 400 with where it broke.
    static func parseJSON(_ body: [UInt8]) throws(Problem) -> JSONValue {
        do {
            return try JSONParser.parse(body)
        } catch {
            throw Problem(.badRequest, "the body is not valid JSON: \(error.reason) at byte \(error.offset)")
        }
    }

    /// `{"button": "Deploy"}` or `{"button_index": 0}`, exactly one.
    static func selection(_ body: [UInt8]) throws -> ButtonSelection {
        let object = try jsonObject(body)
        if let unknown = object.keys.first(where: { $0 != "button" && $0 != "button_index" }) {
            throw Problem(.badRequest, "unknown field \(unknown); send {\"button\": title} or {\"button_index\": n}")
        }
        switch (object["button"], object["button_index"]) {
        case (let title?, nil):
            guard case .string(let text) = title else { throw Problem(.badRequest, "button must be a string") }
            return .title(text)
        case (nil, let index?):
            guard case .number(let number) = index, let value = number.int else {
                throw Problem(.badRequest, "button_index must be an integer")
            }
            return .index(value)
        case (nil, nil):
            throw Problem(.badRequest, "send exactly one of button and button_index")
        case (_?, _?):
            throw Problem(.badRequest, "send exactly one of button and button_index, not both")
        }
    }

    /// `{"url": "https://…", "secret": optional}`.
    static func webhookBody(_ body: [UInt8]) throws -> (url: String, secret: String?) {
        let object = try jsonObject(body)
        if let unknown = object.keys.first(where: { $0 != "url" && $0 != "secret" }) {
            throw Problem(.badRequest, "unknown field \(unknown); send {\"url\": …, \"secret\": optional}")
        }
        guard case .string(let url)? = object["url"] else { throw Problem(.badRequest, "url is required and must be a string") }
        switch object["secret"] {
        case nil, .null?: return (url, nil)
        case .string(let secret)?: return (url, secret)
        default: throw Problem(.badRequest, "secret must be a string")
        }
    }

    // MARK: - Rendering

    func alertResponse(_ result: Result<Alert, Problem>) -> HTTPResponse {
        switch result {
        case .success(let alert): json(200, service.render(alert))
        case .failure(let problem): render(problem)
        }
    }

    func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: body)
    }

    func render(_ problem: Problem) -> HTTPResponse {
        problem.response { json, alert in
            Rendering.write(alert, position: alert.isPending ? service.position(of: alert) : nil, into: &json)
        }
    }
}

/// A request's query arguments, checked against the names an endpoint takes.
struct Query {
    private var values: [String: String] = [:]

    init(_ request: HTTPRequest, allowed: [String]) throws {
        for (name, value) in request.query {
            guard allowed.contains(name) else {
                throw Problem(
                    .badRequest,
                    allowed.isEmpty
                        ? "this endpoint takes no query parameters, got \(name)"
                        : "unknown query parameter \(name); this endpoint takes \(allowed.sorted().joined(separator: ", "))")
            }
            guard values.updateValue(value, forKey: name) == nil else {
                throw Problem(.badRequest, "query parameter \(name) is given twice")
            }
        }
    }

    subscript(name: String) -> String? { values[name] }

    /// `wait`: a non-negative integer of seconds; 0 when absent.
    func wait() throws -> Int {
        guard let text = values["wait"] else { return 0 }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw Problem(.badRequest, "wait must be a non-negative integer number of seconds, not \"\(text)\"")
        }
        // Any larger value is clamped to max_wait_seconds anyway.
        return Int(text.suffix(18)).map { text.count > 9 ? Int.max : $0 } ?? Int.max
    }
}
