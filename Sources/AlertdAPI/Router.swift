/// The endpoints of §4 this daemon serves, plus alertd's own: `whoami` and the dashboard.
public enum Endpoint: Sendable, Hashable {
    case healthz
    case readyz
    case metrics
    /// `GET /`: the dashboard's page.
    case dashboard
    /// `GET /ui/{asset}`: one of the dashboard's embedded files.
    case dashboardAsset(name: String)
    /// `GET /v1/whoami`: the token's name, roles and clients.
    case whoAmI
    case listClients
    case postAlert(client: String)
    case listAlerts(client: String)
    case currentAlert(client: String)
    case getAlert(client: String, id: String)
    case withdrawAlert(client: String, id: String)
    case choose(client: String, id: String)
    case deliveries(client: String, id: String)
    case createWebhook(client: String)
    case listWebhooks(client: String)
    case getWebhook(client: String, id: String)
    case deleteWebhook(client: String, id: String)
}

extension Endpoint {
    /// The route's name, a bounded label for metrics.
    public var routeName: String {
        switch self {
        case .healthz: "healthz"
        case .readyz: "readyz"
        case .metrics: "metrics"
        case .dashboard: "dashboard"
        case .dashboardAsset: "dashboard_asset"
        case .whoAmI: "whoami"
        case .listClients: "list_clients"
        case .postAlert: "post_alert"
        case .listAlerts: "list_alerts"
        case .currentAlert: "current_alert"
        case .getAlert: "get_alert"
        case .withdrawAlert: "withdraw_alert"
        case .choose: "choose"
        case .deliveries: "deliveries"
        case .createWebhook: "create_webhook"
        case .listWebhooks: "list_webhooks"
        case .getWebhook: "get_webhook"
        case .deleteWebhook: "delete_webhook"
        }
    }

    /// The dashboard's page or one of its files: loadable from any origin.
    public var isDashboard: Bool {
        switch self {
        case .dashboard, .dashboardAsset: true
        default: false
        }
    }

    /// The client the request touches; nil for those that name none.
    public var client: String? {
        switch self {
        case .healthz, .readyz, .metrics, .dashboard, .dashboardAsset, .whoAmI, .listClients: nil
        case .postAlert(let client), .listAlerts(let client), .currentAlert(let client), .createWebhook(let client),
            .listWebhooks(let client):
            client
        case .getAlert(let client, _), .withdrawAlert(let client, _), .choose(let client, _), .deliveries(let client, _),
            .getWebhook(let client, _), .deleteWebhook(let client, _):
            client
        }
    }
}

/// What a route needs to be allowed: checked against the token's roles (§7).
public enum Permission: Sendable, Hashable {
    case open
    case read
    case post
    case answer
    case admin

    /// The roles that grant it, for error details.
    var roleNeeded: String {
        switch self {
        case .open: "nothing"
        case .read: "any role"
        case .post: "the post or admin role"
        case .answer: "the answer or admin role"
        case .admin: "the admin role"
        }
    }
}

/// A table of routes: method, path pattern, endpoint. Patterns are `/`-separated
/// segments; `{name}` captures a segment; literal segments win over captures.
///
/// Matching runs on every request, so it works on the path's UTF-8 bytes in
/// place: no segment array, no string comparison, and strings only for the
/// (at most two) captured segments of the route that matched.
public struct Router: Sendable {
    public struct Route: Sendable {
        let method: String
        let segments: [Segment]
        let permission: Permission
        /// Builds the endpoint from the captured segments, in path order.
        let make: @Sendable (Captures) -> Endpoint

        enum Segment: Sendable, Equatable {
            case literal([UInt8])
            case capture

            var isCapture: Bool { self == .capture }
        }
    }

    /// The captured segments of a matched route, in path order (at most two).
    public struct Captures: Sendable {
        private var first = ""
        private var second = ""
        private(set) var count = 0

        public subscript(index: Int) -> String {
            precondition(index < count, "capture \(index) of \(count)")
            return index == 0 ? first : second
        }

        mutating func append(_ value: String) {
            precondition(count < 2, "a route captures at most two segments")
            if count == 0 { first = value } else { second = value }
            count += 1
        }
    }

    let routes: [Route]
    /// The most segments any route has: longer paths match nothing.
    private let maxSegments: Int

    init(routes: [Route]) {
        self.routes = routes
        self.maxSegments = routes.map(\.segments.count).max() ?? 0
    }

    public enum Match: Sendable {
        case found(Endpoint, Permission)
        /// The path exists with other methods.
        case methodNotAllowed(allow: [String])
        case notFound
    }

    public static let api = Router(routes: [
        route("GET", "/healthz", .open) { _ in .healthz },
        route("GET", "/readyz", .open) { _ in .readyz },
        route("GET", "/metrics", .open) { _ in .metrics },
        // The dashboard loads without a token: it asks for one itself.
        route("GET", "/", .open) { _ in .dashboard },
        route("GET", "/ui/{asset}", .open) { .dashboardAsset(name: $0[0]) },
        // Any valid token (with tokens, every /v1 request shows one before routing).
        route("GET", "/v1/whoami", .open) { _ in .whoAmI },
        route("GET", "/v1/clients", .read) { _ in .listClients },
        route("POST", "/v1/clients/{client}/alerts", .post) { .postAlert(client: $0[0]) },
        route("GET", "/v1/clients/{client}/alerts", .read) { .listAlerts(client: $0[0]) },
        route("GET", "/v1/clients/{client}/alerts/current", .read) { .currentAlert(client: $0[0]) },
        route("GET", "/v1/clients/{client}/alerts/{id}", .read) { .getAlert(client: $0[0], id: $0[1]) },
        route("DELETE", "/v1/clients/{client}/alerts/{id}", .post) { .withdrawAlert(client: $0[0], id: $0[1]) },
        route("POST", "/v1/clients/{client}/alerts/{id}/choice", .answer) { .choose(client: $0[0], id: $0[1]) },
        route("GET", "/v1/clients/{client}/alerts/{id}/deliveries", .read) { .deliveries(client: $0[0], id: $0[1]) },
        route("POST", "/v1/clients/{client}/webhooks", .admin) { .createWebhook(client: $0[0]) },
        route("GET", "/v1/clients/{client}/webhooks", .admin) { .listWebhooks(client: $0[0]) },
        route("GET", "/v1/clients/{client}/webhooks/{id}", .admin) { .getWebhook(client: $0[0], id: $0[1]) },
        route("DELETE", "/v1/clients/{client}/webhooks/{id}", .admin) { .deleteWebhook(client: $0[0], id: $0[1]) },
    ])

    static func route(
        _ method: String, _ pattern: String, _ permission: Permission,
        _ make: @escaping @Sendable (Captures) -> Endpoint
    ) -> Route {
        let segments = pattern.split(separator: "/").map { part -> Route.Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .capture : .literal(Array(part.utf8))
        }
        precondition(segments.count(where: \.isCapture) <= 2, "\(pattern) captures more than two segments")
        return Route(method: method, segments: segments, permission: permission, make: make)
    }

    /// Finds the route of a request. HEAD is served as GET.
    public func match(method: String, path: String) -> Match {
        var path = path
        return path.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: maxSegments + 1) { parts in
                match(method: method, path: bytes, parts: parts)
            }
        }
    }

    private func match(method: String, path: UnsafeBufferPointer<UInt8>, parts: UnsafeMutableBufferPointer<Range<Int>>) -> Match {
        let slash = UInt8(ascii: "/")
        guard path.first == slash else { return .notFound }
        // `/` has no segments; any other empty segment (`//`, a trailing `/`) matches nothing.
        var count = 0
        if path.count > 1 {
            var start = 1
            for index in 1...path.count where index == path.count || path[index] == slash {
                guard index > start, count < maxSegments else { return .notFound }
                parts[count] = start..<index
                count += 1
                start = index + 1
            }
        }
        /// How many literal segments `route` matched by; nil if it does not match the path.
        func literals(_ route: Route) -> Int? {
            guard route.segments.count == count else { return nil }
            var literals = 0
            for (index, segment) in route.segments.enumerated() {
                guard case .literal(let text) = segment else { continue }
                guard UnsafeBufferPointer(rebasing: path[parts[index]]).elementsEqual(text) else { return nil }
                literals += 1
            }
            return literals
        }
        let wanted = method == "HEAD" ? "GET" : method
        var best: (route: Route, literals: Int)?
        // A literal match (`current`) hides a capture match (`{id}`) for the same method.
        for route in routes where route.method == wanted {
            if let literals = literals(route), literals > best?.literals ?? -1 { best = (route, literals) }
        }
        if let best {
            var captures = Captures()
            for (index, segment) in best.route.segments.enumerated() where segment.isCapture {
                captures.append(String(decoding: UnsafeBufferPointer(rebasing: path[parts[index]]), as: UTF8.self))
            }
            return .found(best.route.make(captures), best.route.permission)
        }
        var allowed: [String] = []
        for route in routes where !allowed.contains(route.method) && literals(route) != nil {
            allowed.append(route.method)
        }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .methodNotAllowed(allow: allowed)
    }
}
