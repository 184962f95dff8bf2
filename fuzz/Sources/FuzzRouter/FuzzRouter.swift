// A request's head as AlertdAPI sees it once libmicrohttpd has split and decoded
// it: method, path, query arguments, Host and Origin. The input is lines:
//
//     METHOD\nPATH\nname=value&name=value\nHOST\nORIGIN
//
// (missing lines are absent values). It runs the route table's matcher, the
// checks each handler makes of its captures and query (client id, alert id,
// wait, limit, after, state, cursor) and the anonymous Host/Origin policy.
// AlertdAPI keeps these internal; `@testable import` reaches them (the harnesses
// are debug builds, which SwiftPM makes testable).
import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdWire

@testable import AlertdAPI

private let router = Router(API.routes)
private let hostPolicy = HostPolicy(allowedHosts: ["alertd.example", "*.internal"])

/// The query arguments each route's handler accepts (`call.query([...])` in its handler).
private let queryNames: [String: [String]] = [
    "current_alert": ["wait", "after"], "get_alert": ["wait"], "list_alerts": ["state", "limit", "cursor"],
    "list_clients": ["limit", "cursor"],
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRouter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let lines = UnsafeBufferPointer(start: data, count: size).split(separator: 10, maxSplits: 4, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    guard lines.count >= 2 else { return 0 }
    let method = lines[0]
    let path = lines[1]
    let query: [(name: String, value: String)] =
        lines.count > 2 && !lines[2].isEmpty
        ? lines[2].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        } : []
    let host = lines.count > 3 ? lines[3] : nil
    let origin = lines.count > 4 ? lines[4] : nil

    switch router.match(method: method, path: path) {
    case .notFound:
        return 0
    case .methodNotAllowed(let allow):
        precondition(!allow.isEmpty && !allow.contains(method == "HEAD" ? "GET" : method), "405 allowing the method used")
        return 0
    case .found(let route, let captures):
        precondition(route.method == (method == "HEAD" ? "GET" : method), "a route of another method")
        _ = hostPolicy.check(method: method, isDashboard: route.isDashboard, host: host, origin: origin)
        for segment in route.segments {
            guard case .capture(let name) = segment else { continue }
            guard let value = captures[name] else { fatalError("capture \(name) missing") }
            precondition(!value.isEmpty && !value.utf8.contains(UInt8(ascii: "/")), "a capture spans segments: \(value)")
            switch name {
            case "client": _ = ClientID.isValid(value)
            case "id": roundTrip(AlertID(value))
            default: break
            }
        }
        let request = HTTPRequest(method: method, path: path, query: query)
        guard let arguments = try? Query(request, allowed: queryNames[route.name] ?? []) else { return 0 }
        _ = try? arguments.wait()
        _ = try? arguments.limit()
        if let after = arguments["after"] { roundTrip(AlertID(after)) }
        if let states = arguments["state"] {
            for name in states.split(separator: ",", omittingEmptySubsequences: false) { _ = AlertState(rawValue: String(name)) }
        }
        if let text = arguments["cursor"], let cursor = Engine.ListCursor(text) {
            precondition(Engine.ListCursor(cursor.text) == cursor, "a cursor does not survive its own text: \(text)")
        }
        return 0
    }
}

private func roundTrip(_ id: AlertID?) {
    guard let id else { return }
    precondition(AlertID(id.description) == id, "an alert id does not survive its own text")
}
