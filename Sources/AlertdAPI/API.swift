import AlertdCore
public import AlertdEngine
public import AlertdHTTP
public import AlertdReceipts
import AlertdWire
import Dispatch
public import Logging
import struct NIOConcurrencyHelpers.NIOLockedValueBox

/// alertd's HTTP API: every endpoint is one entry of ``routes`` (method,
/// pattern, permission, name, handler) and one handler — decode, call the
/// ``Engine``, encode. Errors are problem+json.
///
/// Each request passes two phases. ``admit(_:)`` runs when its line and
/// headers are in, before any body is read: the route, then (without tokens)
/// `Host` and `Origin`, (with tokens) the token, its rate and the route's role
/// and client; a refusal costs the client's body nothing. ``handle(_:responder:)``
/// then runs the route's handler with the body.
public final class API: HTTPHandler {
    let engine: Engine
    let router: Router
    /// Tokens, rate limits and the anonymous `Host`/`Origin` policy; replaced as a whole by a reload.
    public struct Access: Sendable {
        public var auth: Authenticator
        /// Per-token request rate; nil when `limits.rate_per_second` is not set.
        public var rateLimiter: RateLimiter?
        /// `Host` and `Origin` checks while the API is anonymous.
        public var hosts: HostPolicy
        /// Requests one token may have in flight at once; nil: no bound.
        public var concurrency: TokenConcurrency?

        public init(
            auth: Authenticator = Authenticator(tokens: []), rateLimiter: RateLimiter? = nil, hosts: HostPolicy = HostPolicy(),
            concurrency: TokenConcurrency? = nil
        ) {
            self.auth = auth
            self.rateLimiter = rateLimiter
            self.hosts = hosts
            self.concurrency = concurrency
        }
    }
    private let access: NIOLockedValueBox<Access>

    /// What the API tells the metrics, and how `/metrics` is written.
    public struct Metrics: Sendable {
        /// One answered request: its route's name (`unmatched` for 404/405), status and duration.
        public var request: @Sendable (_ route: String, _ status: Int, _ nanoseconds: UInt64) -> Void
        /// The exposition `/metrics` answers, with gauges brought up to date.
        public var exposition: @Sendable () -> [UInt8]

        public init(
            request: @escaping @Sendable (String, Int, UInt64) -> Void = { _, _, _ in },
            exposition: @escaping @Sendable () -> [UInt8] = { [] }
        ) {
            self.request = request
            self.exposition = exposition
        }
    }
    let metrics: Metrics
    /// `metrics.require_token`: `/metrics` needs any valid token.
    let metricsNeedToken: Bool
    /// The public keys of signed receipts (SPEC §14) that `GET /v1/keys` lists: the signing
    /// key first, then `receipts.previous_keys`.
    let receiptKeys: ReceiptKeySet
    let logger: Logger

    public convenience init(
        engine: Engine, access: Access = Access(), metrics: Metrics = Metrics(), metricsNeedToken: Bool = false,
        receiptKeys: ReceiptKeySet = ReceiptKeySet(), logger: Logger
    ) {
        self.init(
            engine: engine, routes: API.routes, access: access, metrics: metrics, metricsNeedToken: metricsNeedToken,
            receiptKeys: receiptKeys, logger: logger)
    }

    /// With another route table (tests).
    init(
        engine: Engine, routes: [Route], access: Access, metrics: Metrics, metricsNeedToken: Bool,
        receiptKeys: ReceiptKeySet = ReceiptKeySet(), logger: Logger
    ) {
        self.engine = engine
        self.router = Router(routes)
        self.access = NIOLockedValueBox(access)
        self.metrics = metrics
        self.metricsNeedToken = metricsNeedToken
        self.receiptKeys = receiptKeys
        self.logger = logger
    }

    /// Replaces tokens, rate limits and the host policy (a reload); `update`
    /// sees the current ones, so a limiter can be kept with its buckets.
    public func updateAccess(_ update: (inout Access) -> Void) {
        access.withLockedValue { update(&$0) }
    }

    // MARK: - HTTPHandler

    public func reject(_ rejection: HTTPRejection) -> HTTPResponse {
        switch rejection {
        case .payloadTooLarge(let limit): render(Problem(.payloadTooLarge, "the body is larger than \(limit) bytes"))
        case .badFraming(let detail): render(Problem(.badRequest, detail))
        case .headersTooLarge(let limit): render(Problem(.badRequest, "the request line and headers take more than \(limit) bytes"))
        case .shuttingDown: render(Problem(.unavailable, "alertd is shutting down"))
        case .tooManyConnectionsFromAddress(let limit):
            render(
                Problem(
                    .rateLimited,
                    "your address holds its maximum of \(limit) connections to alertd (limits.max_connections_per_ip); reuse one or retry later",
                    retryAfter: 1))
        case .tooManyConnections(let limit):
            render(
                Problem(
                    .unavailable, "alertd holds its maximum of \(limit) connections (limits.max_connections); retry later", retryAfter: 1))
        case .responseBytesInFlight(let limit):
            render(
                Problem(
                    .unavailable,
                    "alertd holds its maximum of \(limit) bytes of answers not yet taken by their clients "
                        + "(limits.max_response_bytes_in_flight); retry later, or ask for a smaller page (limit=)",
                    retryAfter: 1))
        }
    }

    public func finished(_ admission: any AnyObject & Sendable) {
        (admission as? Admitted)?.slot?.release()
    }

    /// What ``admit(_:)`` found in a request's head, carried to ``handle(_:responder:)``.
    final class Admitted: Sendable {
        let requestID: String
        let started: UInt64
        let route: Route
        let captures: Captures
        let principal: Principal?
        /// The token's place among its requests in flight (``TokenConcurrency``).
        let slot: TokenConcurrency.Slot?

        init(
            requestID: String, started: UInt64, route: Route, captures: Captures, principal: Principal?,
            slot: TokenConcurrency.Slot? = nil
        ) {
            self.requestID = requestID
            self.started = started
            self.route = route
            self.captures = captures
            self.principal = principal
            self.slot = slot
        }
    }

    public func admit(_ head: HTTPRequestHead) -> HTTPAdmission {
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
        let started = Self.now()
        let match = router.match(method: head.method, path: head.path)
        var found: (route: Route, captures: Captures)?
        if case .found(let route, let captures) = match { found = (route, captures) }
        func refuse(_ problem: Problem) -> Result<Admitted, Refusal> {
            let finish = finisher(
                requestID: requestID, route: found?.route.name ?? "unmatched", method: head.method, path: head.path, started: started)
            return .failure(Refusal(response: finish(render(problem))))
        }
        let (auth, rateLimiter, hosts, concurrency) = access.withLockedValue { ($0.auth, $0.rateLimiter, $0.hosts, $0.concurrency) }
        let isAPI = head.path == "/v1" || head.path.hasPrefix("/v1/")
        let metricsGuarded = metricsNeedToken && head.path == "/metrics"
        var principal: Principal?
        if !auth.isEnabled {
            // Anonymous: only requests addressed to alertd itself, not through a rebound name or from a foreign page.
            if let problem = hosts.check(
                method: head.method, isDashboard: found?.route.isDashboard ?? false, host: head.header("host"),
                origin: head.header("origin"))
            {
                return refuse(problem)
            }
        } else if (isAPI && found?.route.permission != .anyone) || metricsGuarded {
            // With tokens, every /v1 request shows one first: 401 comes before anything else
            // (except the OpenAPI document, which asks for nothing).
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
        case .found(let route, let captures):
            var slot: TokenConcurrency.Slot?
            if let principal {
                do {
                    try Self.authorize(principal, route.permission, client: captures["client"])
                } catch {
                    return refuse(error)
                }
                if let concurrency {
                    switch concurrency.take(principal.name) {
                    case .success(let taken): slot = taken
                    case .failure(let problem): return refuse(problem)
                    }
                }
            }
            return .success(
                Admitted(requestID: requestID, started: started, route: route, captures: captures, principal: principal, slot: slot))
        }
    }

    public func handle(_ request: HTTPRequest, responder: Responder) {
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
            requestID: admitted.requestID, route: admitted.route.name, method: request.method, path: request.path,
            started: admitted.started)
        let call = Call(
            request: request, captures: admitted.captures, principal: admitted.principal, requestID: admitted.requestID,
            responder: responder, finish: finish, slot: admitted.slot)
        do {
            try admitted.route.handler(self)(call)
        } catch {
            let problem = error as? Problem
            if problem == nil {
                logger.error("unexpected error", metadata: ["request_id": "\(admitted.requestID)", "error": "\(error)"])
            }
            call.respond(render(problem ?? Problem.internal(requestID: admitted.requestID)))
        }
    }

    /// 403 unless the token has a role for the route and its clients cover the route's client.
    static func authorize(_ principal: Principal, _ permission: Permission, client: String?) throws(Problem) {
        guard principal.allows(permission) else {
            let roles = principal.roles.map(\.rawValue).sorted().joined(separator: ", ")
            throw Problem(.forbidden, "token \(principal.name) (roles: \(roles)) may not do this: it needs \(permission.roleNeeded)")
        }
        if let client, !principal.mayTouch(client) {
            throw Problem(.forbidden, "token \(principal.name) may not touch client \(client)")
        }
    }

    /// Adds the request id to an answer, counts it and (at debug) logs it.
    private func finisher(
        requestID: String, route: String, method: String, path: String, started: UInt64
    ) -> @Sendable (HTTPResponse) -> HTTPResponse {
        let debug = logger.logLevel <= .debug
        // An answer link's token is a capability: its requests are logged without it.
        let path = path.hasPrefix("/v1/answers/") ? "/v1/answers/…" : path
        return { [logger, metrics] response in
            var response = response
            response.headers.append(("X-Request-Id", requestID))
            let elapsed = API.now() - started
            metrics.request(route, response.status, elapsed)
            if debug {
                logger.debug(
                    "request",
                    metadata: [
                        "request_id": "\(requestID)", "method": "\(method)", "path": "\(path)", "status": "\(response.status)",
                        "ms": "\(Double(elapsed / 1000) / 1000)",
                    ])
            }
            return response
        }
    }

    /// Monotonic nanoseconds.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    // MARK: - Rendering

    func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: body)
    }

    /// An alert resource, with its position while pending.
    func alert(_ status: Int, _ alert: PositionedAlert) -> HTTPResponse {
        json(status, alert.alert.json(position: alert.position))
    }

    func render(_ problem: Problem) -> HTTPResponse {
        // The alert a problem carries is terminal (already-decided), without a position, or
        // displayed (already-voted), at 0.
        problem.response { json, alert in alert.write(position: alert.state == .displayed ? 0 : nil, into: &json) }
    }
}
