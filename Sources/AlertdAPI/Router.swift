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
public struct Router: Sendable {
    public struct Route: Sendable {
        let method: String
        let segments: [Segment]
        let permission: Permission
        /// Builds the endpoint from the captured segments, in path order.
        let make: @Sendable ([String]) -> Endpoint

        enum Segment: Sendable, Equatable {
            case literal(String)
            case capture(String)

            var isCapture: Bool {
                if case .capture = self { return true }
                return false
            }
        }
    }

    let routes: [Route]

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
        _ make: @escaping @Sendable ([String]) -> Endpoint
    ) -> Route {
        let segments = pattern.split(separator: "/").map { part -> Route.Segment in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .capture(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        return Route(method: method, segments: segments, permission: permission, make: make)
    }

    /// Finds the route of a request. HEAD is served as GET.
    public func match(method: String, path: String) -> Match {
        guard path.hasPrefix("/") else { return .notFound }
        // `/` has no segments; any other empty segment (`//`, a trailing `/`) matches nothing.
        let parts = path == "/" ? [] : path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        if parts.contains(where: \.isEmpty) { return .notFound }
        let wanted = method == "HEAD" ? "GET" : method
        var best: (route: Route, literals: Int)?
        var allowed: [String] = []
        for route in routes where route.segments.count == parts.count {
            var literals = 0
            var matches = true
            for (segment, part) in zip(route.segments, parts) {
                if case .literal(let text) = segment {
                    guard part == text else {
                        matches = false
                        break
                    }
                    literals += 1
                }
            }
            guard matches else { continue }
            // A literal match (`current`) hides a capture match (`{id}`) for the same method.
            if route.method == wanted, best == nil || literals > best!.literals { best = (route, literals) }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if let best {
            var captures: [String] = []
            for (segment, part) in zip(best.route.segments, parts) where segment.isCapture {
                captures.append(String(part))
            }
            return .found(best.route.make(captures), best.route.permission)
        }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .methodNotAllowed(allow: allowed)
    }
}
