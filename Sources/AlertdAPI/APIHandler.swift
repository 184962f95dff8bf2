import AlertdCore
import AlertdHTTP
import AlertdWire
import CoreMetrics
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
        /// `Host` and `Origin` checks while the API is anonymous.
        var hosts = HostPolicy()
    }
    let access: NIOLockedValueBox<Access>
    let metrics: AlertdMetrics
    /// `metrics.require_token`: `/metrics` needs any valid token.
    let metricsNeedToken: Bool
    let logger: Logger
    let readiness: @Sendable () -> Bool

    init(
        service: AlertService, auth: Authenticator = Authenticator(tokens: []), rateLimiter: RateLimiter? = nil,
        hosts: HostPolicy = HostPolicy(), metrics: AlertdMetrics = AlertdMetrics(), metricsNeedToken: Bool = false, logger: Logger,
        readiness: @escaping @Sendable () -> Bool
    ) {
        self.service = service
        self.metrics = metrics
        self.metricsNeedToken = metricsNeedToken
        self.access = NIOLockedValueBox(Access(auth: auth, rateLimiter: rateLimiter, hosts: hosts))
        self.logger = logger
        self.readiness = readiness
    }

    func reject(_ rejection: HTTPRejection) -> HTTPResponse {
        switch rejection {
        case .payloadTooLarge(let limit): render(Problem(.payloadTooLarge, "the body is larger than \(limit) bytes"))
        case .badFraming(let detail): render(Problem(.badRequest, detail))
        case .headersTooLarge(let limit): render(Problem(.badRequest, "the request line and headers take more than \(limit) bytes"))
        case .shuttingDown: render(Problem(.unavailable, "alertd is shutting down"))
        case .tooManyConnectionsFromAddress(let limit):
            render(
                {
                    var problem = Problem(
                        .rateLimited,
                        "your address holds its maximum of \(limit) connections to alertd (limits.max_connections_per_ip); reuse one or retry later"
                    )
                    problem.headers = [("Retry-After", "1")]
                    return problem
                }())
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

    /// What ``admit(_:)`` found in a request's head, carried to ``handle(_:responder:)``.
    final class Admitted: Sendable {
        let requestID: String
        let started: UInt64
        let endpoint: Endpoint
        let principal: Principal?

        init(requestID: String, started: UInt64, endpoint: Endpoint, principal: Principal?) {
            self.requestID = requestID
            self.started = started
            self.endpoint = endpoint
            self.principal = principal
        }
    }

    /// Decides from the head alone, before any body is read: the route, then
    /// (without tokens) `Host` and `Origin`, (with tokens) the token, its rate and
    /// its role. A refusal here costs the client's body nothing.
    func admit(_ head: HTTPRequestHead) -> HTTPAdmission {
        switch admission(head) {
        case .success(let admitted): .proceed(admitted)
        case .failure(let refusal): .refuse(refusal.response)
        }
    }

    private struct Refusal: Error {
        let response: HTTPResponse
    }

    private func admission(_ head: HTTPRequestHead) -> Result<Admitted, Refusal> {
        // Every answer carries the request's id, and with log.level debug one
        // line per request names it (with the token's name, never its secret).
        let requestID = RequestID.of(head.header("x-request-id"))
        let started = DeadlineTimer.now()
        let match = router.match(method: head.method, path: head.path)
        var routeName = "unmatched"
        var endpoint: Endpoint?
        if case .found(let found, _) = match { (endpoint, routeName) = (found, found.routeName) }
        func refuse(_ problem: Problem) -> Result<Admitted, Refusal> {
            let finish = finisher(requestID: requestID, route: routeName, method: head.method, path: head.path, started: started)
            return .failure(Refusal(response: finish(render(problem))))
        }
        let (auth, rateLimiter, hosts) = access.withLockedValue { ($0.auth, $0.rateLimiter, $0.hosts) }
        let isAPI = head.path == "/v1" || head.path.hasPrefix("/v1/")
        let metricsGuarded = metricsNeedToken && head.path == "/metrics"
        var principal: Principal?
        if !auth.isEnabled {
            // Anonymous: only requests addressed to alertd itself, not through a rebound name or from a foreign page.
            if let problem = hosts.check(
                method: head.method, isDashboard: endpoint?.isDashboard ?? false, host: head.header("host"),
                origin: head.header("origin"))
            {
                return refuse(problem)
            }
        } else if isAPI || metricsGuarded {
            // With tokens, every /v1 request shows one first: 401 comes before anything else.
            switch auth.authenticate(head.header("authorization")) {
            case .success(let found): principal = found
            case .failure(let problem): return refuse(problem)
            }
            if let principal, let limited = rateLimiter?.admit(principal.name) {
                return refuse(limited)
            }
        }
        if metricsGuarded, principal == nil {
            // metrics.require_token with no tokens configured: no token can be valid.
            return refuse(Authenticator.unauthorized("/metrics needs a token (metrics.require_token) and none is configured"))
        }
        switch match {
        case .notFound:
            return refuse(Problem(.notFound, "no such resource: \(head.path)"))
        case .methodNotAllowed(let allow):
            var problem = Problem(
                .methodNotAllowed, "\(head.method) is not allowed on \(head.path); allowed: \(allow.joined(separator: ", "))")
            problem.headers = [("Allow", allow.joined(separator: ", "))]
            return refuse(problem)
        case .found(let endpoint, let permission):
            if let principal {
                do {
                    try Self.authorize(principal, permission, endpoint)
                } catch {
                    return refuse(error)
                }
            }
            return .success(Admitted(requestID: requestID, started: started, endpoint: endpoint, principal: principal))
        }
    }

    /// Adds the request id to an answer, counts it and (at debug) logs it.
    private func finisher(
        requestID: String, route: String, method: String, path: String, started: UInt64
    ) -> @Sendable (HTTPResponse) -> HTTPResponse {
        let debug = logger.logLevel <= .debug
        return { [logger, metrics] response in
            var response = response
            response.headers.append(("X-Request-Id", requestID))
            metrics.request(route: route, status: response.status, nanoseconds: DeadlineTimer.now() - started)
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
    }

    func handle(_ request: HTTPRequest, responder: Responder) {
        // Through a server, the head was admitted before the body was read; called
        // directly (in-process tests), admit it now.
        let admitted: Admitted
        if let given = request.admission as? Admitted {
            admitted = given
        } else {
            switch admission(request.head) {
            case .success(let found): admitted = found
            case .failure(let refusal): return responder.respond(refusal.response)
            }
        }
        let finish = finisher(
            requestID: admitted.requestID, route: admitted.endpoint.routeName, method: request.method, path: request.path,
            started: admitted.started)
        let answer = Answer(responder: responder, finish: finish)
        // Answers that come from a commit's completion are built lazily, on the
        // connection's thread, not on the store writer's.
        let respond: Reply = { make in responder.respond(building: { finish(make()) }) }
        do {
            try dispatch(admitted.endpoint, request, admitted.principal, admitted.requestID, respond)
        } catch {
            if !(error is Problem) {
                logger.error("unexpected error", metadata: ["request_id": "\(admitted.requestID)", "error": "\(error)"])
            }
            answer.now(render(Problem.of(error, requestID: admitted.requestID)))
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
    static func authorize(_ principal: Principal, _ permission: Permission, _ endpoint: Endpoint) throws(Problem) {
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
            // Paged like the alert list: by client id, `limit` (default 100, at most
            // 1000) and the `cursor` of the previous page (`c.<last client id>`).
            let query = try Query(request, allowed: ["limit", "cursor"])
            let limit = try query.limit()
            var after: String?
            if let text = query["cursor"] {
                guard text.hasPrefix("c."), ClientID.isValid(String(text.dropFirst(2))) else {
                    throw Problem(.badRequest, "cursor \"\(text)\" was not issued by this daemon")
                }
                after = String(text.dropFirst(2))
            }
            let (page, more) = service.clients(after: after, limit: limit) { principal?.mayTouch($0) ?? true }
            var out = JSONWriter(capacity: 64 + page.count * 64)
            out.beginObject()
            out.key("clients")
            out.beginArray()
            for summary in page {
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
            out.key("next_cursor")
            out.string(more ? page.last.map { "c." + $0.client } : nil)
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
            service.awaitCurrent(client: client, wait: wait, after: after, owner: principal?.name) { [self] result in
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
            service.awaitAlert(id, client: client, wait: wait, owner: principal?.name) { [self] result in
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
            // Webhook URLs often carry secrets (user info, query): whole for admin only (§7).
            let whole = principal.map { $0.roles.contains(.admin) } ?? true
            respond(now: json(200, Rendering.deliveries(records, wholeTargets: whole)))

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

    /// `limit`: 1–1000, for the paged lists; `standard` when absent.
    func limit(standard: Int = 100) throws -> Int {
        guard let text = values["limit"] else { return standard }
        guard text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let limit = Int(text), (1...1000).contains(limit) else {
            throw Problem(.badRequest, "limit must be an integer from 1 to 1000, not \"\(text)\"")
        }
        return limit
    }

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
