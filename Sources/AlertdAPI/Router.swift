/// What a route needs to be allowed: checked against the token's roles (§7).
public enum Permission: Sendable, Hashable {
    /// No role: at the root nothing is asked; under `/v1`, with tokens, any valid token.
    case open
    /// Nothing asked even under `/v1` with tokens: a document about the API that holds no data.
    case anyone
    case read
    case post
    case answer
    case admin
    /// Alertmanager's receiver: the `alertmanager` role (or `admin`).
    case alertmanager

    /// The roles that grant it, for error details.
    var roleNeeded: String {
        switch self {
        case .open, .anyone: "nothing"
        case .read: "any role"
        case .post: "the post or admin role"
        case .answer: "the answer or admin role"
        case .admin: "the admin role"
        case .alertmanager: "the alertmanager or admin role"
        }
    }
}

/// One endpoint, declared once: method, path pattern, the permission it
/// needs, its name (a bounded metrics label) and its handler.
///
/// Patterns are `/`-separated segments; `{name}` captures a segment (at most
/// two per route). A capture named `client` is the client the route touches:
/// tokens are checked against it before the body is read.
struct Route: Sendable {
    let method: String
    let name: String
    let permission: Permission
    let handler: Handler
    let segments: [Segment]

    /// An instance method of ``API`` (`API.postAlert`): decode, engine, encode.
    typealias Handler = @Sendable (API) -> (Call) throws -> Void

    enum Segment: Sendable, Equatable {
        case literal([UInt8])
        case capture(String)

        var isCapture: Bool {
            if case .capture = self { return true }
            return false
        }
    }

    init(_ method: String, _ pattern: String, _ permission: Permission, _ name: String, _ handler: @escaping Handler) {
        self.method = method
        self.name = name
        self.permission = permission
        self.handler = handler
        segments = pattern.split(separator: "/").map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .capture(String(part.dropFirst().dropLast())) : .literal(Array(part.utf8))
        }
        precondition(segments.count(where: \.isCapture) <= 2, "\(pattern) captures more than two segments")
    }

    /// Whether its page or files load from any origin (the dashboard's).
    var isDashboard: Bool { name.hasPrefix("dashboard") }
}

/// The captured segments of a matched route, by name (at most two).
struct Captures: Sendable {
    private var names: (String, String) = ("", "")
    private var values: (String, String) = ("", "")
    private var count = 0

    subscript(name: String) -> String? {
        if count > 0, names.0 == name { return values.0 }
        if count > 1, names.1 == name { return values.1 }
        return nil
    }

    mutating func append(_ name: String, _ value: String) {
        precondition(count < 2, "a route captures at most two segments")
        if count == 0 { (names.0, values.0) = (name, value) } else { (names.1, values.1) = (name, value) }
        count += 1
    }
}

/// Finds the route of a request in a table of routes; literal segments win
/// over captures (`…/alerts/current` over `…/alerts/{id}`).
///
/// Matching runs on every request, so it works on the path's UTF-8 bytes in
/// place: no segment array, no string comparison, and strings only for the
/// (at most two) captured segments of the route that matched.
struct Router: Sendable {
    let routes: [Route]
    /// The most segments any route has: longer paths match nothing.
    private let maxSegments: Int

    init(_ routes: [Route]) {
        self.routes = routes
        maxSegments = routes.map(\.segments.count).max() ?? 0
    }

    enum Match: Sendable {
        case found(Route, Captures)
        /// The path exists with other methods.
        case methodNotAllowed(allow: [String])
        case notFound
    }

    /// Finds the route of a request. HEAD is served as GET.
    func match(method: String, path: String) -> Match {
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
        // The path's resource is the most literal pattern it matches, whatever the method:
        // `…/alerts/current` is never the alert `{id}` "current", so DELETE on it is 405
        // with `Allow: GET, HEAD`, not a withdrawal of an alert that cannot exist.
        var most = -1
        for route in routes {
            if let literals = literals(route), literals > most { most = literals }
        }
        if most < 0 { return .notFound }
        let wanted = method == "HEAD" ? "GET" : method
        for route in routes where route.method == wanted && literals(route) == most {
            var captures = Captures()
            for (index, segment) in route.segments.enumerated() {
                guard case .capture(let name) = segment else { continue }
                captures.append(name, String(decoding: UnsafeBufferPointer(rebasing: path[parts[index]]), as: UTF8.self))
            }
            return .found(route, captures)
        }
        var allowed: [String] = []
        for route in routes where !allowed.contains(route.method) && literals(route) == most {
            allowed.append(route.method)
        }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .methodNotAllowed(allow: allowed)
    }
}
