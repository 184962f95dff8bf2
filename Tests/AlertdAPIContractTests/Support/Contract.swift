import AlertdTestSupport
import Foundation
import Testing

/// Checks and builders shared by the contract suites.
enum Contract {
    /// Fast commits (these tests are not about durability) and a signing secret for callback_url.
    static let baseConfig = "durability: normal\nlog:\n  level: info\ncallbacks:\n  signing_secret: e2e-signing-secret\n"

    /// Every state, for listings that must show everything.
    static let allStates = "queued,displayed,answered,dismissed,expired,withdrawn"

    /// A client id no other test uses.
    static func uniqueClient(_ prefix: String) -> String {
        let suffix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        return prefix.isEmpty ? "c" + suffix : "\(prefix)-\(suffix)"
    }

    /// An alert body with buttons (so it is never dismissed); Yes and No unless told.
    static func alert(
        _ title: String, priority: Int? = nil, buttons: [(String, String)] = [("Yes", "default"), ("No", "default")]
    ) -> [String: Any] {
        var fields: [String: Any] = ["title": title, "buttons": buttons.map { ["title": $0.0, "style": $0.1] }]
        if let priority { fields["priority"] = priority }
        return fields
    }

    static func id(_ alert: [String: Any]) -> String { alert["id"] as? String ?? "<no id>" }

    /// `"title/style"` of each button.
    static func buttons(_ alert: [String: Any]) -> [String] {
        (alert["buttons"] as? [[String: Any]] ?? []).map { "\($0["title"] as? String ?? "?")/\($0["style"] as? String ?? "?")" }
    }

    /// `field` of each entry of an invalid-alert problem's `errors`, in order.
    static func errorFields(_ problem: [String: Any]) -> [String] {
        (problem["errors"] as? [[String: Any]] ?? []).map { $0["field"] as? String ?? "<no field>" }
    }

    static func isAlertID(_ text: String) -> Bool {
        text.utf8.count == 26 && text.first.map { "01234567".contains($0) } == true
            && text.allSatisfy { "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains($0) }
    }

    /// Milliseconds since 1970 of an RFC 3339 UTC timestamp with milliseconds, else nil.
    static func milliseconds(_ value: Any?) -> Int64? {
        guard let text = value as? String, text.count == 24, text.hasSuffix("Z"), text.dropFirst(19).first == "." else {
            return nil
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }

    /// JSON equality of two decoded values.
    static func same(_ a: Any?, _ b: Any?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): NSArray(array: [a]).isEqual(to: [b])
        default: false
        }
    }

    /// Checks an RFC 9457 problem: status, content type, the five members, the code
    /// (any non-empty one when `code` is nil). Returns the problem object.
    @discardableResult
    static func expectProblem(
        _ response: TestResponse, status: Int, code: String?, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [String: Any] {
        #expect(
            response.status == status, "status \(response.status), wanted \(status): \(response.text.prefix(300))",
            sourceLocation: sourceLocation)
        let contentType = response.header("Content-Type") ?? "<none>"
        #expect(
            contentType.hasPrefix("application/problem+json"), "Content-Type \(contentType): \(response.text.prefix(200).debugDescription)",
            sourceLocation: sourceLocation)
        guard let problem = try? response.jsonObject() else {
            Issue.record("the body is not a JSON object: \(response.text.prefix(300).debugDescription)", sourceLocation: sourceLocation)
            return [:]
        }
        #expect((problem["type"] as? String)?.isEmpty == false, "type: \(problem["type"] ?? "missing")", sourceLocation: sourceLocation)
        #expect((problem["title"] as? String)?.isEmpty == false, "title: \(problem["title"] ?? "missing")", sourceLocation: sourceLocation)
        #expect(
            problem["status"] as? Int == response.status, "status member: \(problem["status"] ?? "missing")", sourceLocation: sourceLocation
        )
        #expect(problem["detail"] is String, "detail: \(problem["detail"] ?? "missing")", sourceLocation: sourceLocation)
        if let code {
            #expect(
                problem["code"] as? String == code, "code \(problem["code"] ?? "missing"), wanted \(code)", sourceLocation: sourceLocation)
        } else {
            #expect((problem["code"] as? String)?.isEmpty == false, "code: \(problem["code"] ?? "missing")", sourceLocation: sourceLocation)
        }
        return problem
    }
}

/// `object` serialised as compact JSON with sorted keys, for request bodies.
/// Records a test issue (and returns `null`) when `object` is not JSON-serialisable.
func jsonBody(_ object: Any, sourceLocation: SourceLocation = #_sourceLocation) -> String {
    // Wrapping in an array lets top-level fragments ("text", 3) through the validity check.
    guard JSONSerialization.isValidJSONObject([object]),
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
    else {
        Issue.record("jsonBody: not JSON-serialisable: \(object)", sourceLocation: sourceLocation)
        return "null"
    }
    return String(decoding: data, as: UTF8.self)
}

/// Everything a client's alerts and the client list say, to show a request changed nothing.
struct StoreSnapshot: Equatable, CustomStringConvertible {
    /// `GET /v1/clients`, when the snapshot covers every client.
    var clients: String?
    /// `"<status> <body>"` of `GET /v1/clients/{c}/alerts?state=<all six>&limit=1000` by client.
    var alerts: [String: String]

    /// One line per client: its alerts as `id:state@position`.
    var description: String {
        var lines = clients.map { ["clients: \($0)"] } ?? []
        for name in alerts.keys.sorted() {
            let text = alerts[name] ?? ""
            let body = text.drop { $0 != " " }.dropFirst()
            let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            let summary = (object?["alerts"] as? [[String: Any]])?.map { alert in
                "\(Contract.id(alert)):\(alert["state"] as? String ?? "?")@\(alert["position"] as? Int ?? -1)"
            }
            lines.append("\(name): " + (summary.map { $0.joined(separator: ", ") } ?? String(text.prefix(200))))
        }
        return lines.joined(separator: "\n")
    }

    /// What differs from `before`, in full, or nil when nothing does.
    func changes(since before: StoreSnapshot) -> String? {
        var lines: [String] = []
        if clients != before.clients {
            lines.append("GET /v1/clients was \(before.clients ?? "-")\n  and is now \(clients ?? "-")")
        }
        for name in Set(alerts.keys).union(before.alerts.keys).sorted() where alerts[name] != before.alerts[name] {
            lines.append("the alerts of \(name) were \(before.alerts[name] ?? "-")\n  and are now \(alerts[name] ?? "-")")
        }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }
}

/// The requests the contract tests repeat.
extension TestClient {
    func post(_ client: String, _ fields: [String: Any], headers: [(String, String)] = []) async throws -> TestResponse {
        try await post("/v1/clients/\(client)/alerts", json: jsonBody(fields), headers: headers)
    }

    /// Posts an alert (two buttons, Yes and No, unless told) and returns it; requires 201.
    func create(
        _ client: String, _ fields: [String: Any] = Contract.alert("question"), sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String: Any] {
        let response = try await post(client, fields)
        try #require(
            response.status == 201, "POST answered \(response.status): \(response.text.prefix(500))", sourceLocation: sourceLocation)
        return try response.jsonObject()
    }

    func choose(_ client: String, _ id: String, _ choice: [String: Any]) async throws -> TestResponse {
        try await post("/v1/clients/\(client)/alerts/\(id)/choice", json: jsonBody(choice))
    }

    func withdraw(_ client: String, _ id: String) async throws -> TestResponse {
        try await delete("/v1/clients/\(client)/alerts/\(id)")
    }

    /// `GET` one alert; requires 200.
    func alert(_ client: String, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let response = try await get("/v1/clients/\(client)/alerts/\(id)")
        try #require(response.status == 200, "GET alert answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        return try response.jsonObject()
    }

    /// Long-polls an alert until it is terminal (alertd's own deadlines decide it).
    func awaitTerminal(_ client: String, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let response = try await get("/v1/clients/\(client)/alerts/\(id)?wait=15")
        try #require(response.status == 200, "wait answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        let alert = try response.jsonObject()
        let state = alert["state"] as? String ?? "?"
        try #require(!["queued", "displayed"].contains(state), "alert \(id) still \(state) after 15 s", sourceLocation: sourceLocation)
        return alert
    }

    /// One page of `GET …/alerts`; requires 200.
    func list(
        _ client: String, _ query: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (alerts: [[String: Any]], nextCursor: String?) {
        let response = try await get("/v1/clients/\(client)/alerts" + (query.isEmpty ? "" : "?\(query)"))
        try #require(response.status == 200, "list answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        let object = try response.jsonObject()
        let alerts = try #require(object["alerts"] as? [[String: Any]], "no alerts array: \(response.text)", sourceLocation: sourceLocation)
        try #require(object.keys.contains("next_cursor"), "no next_cursor member", sourceLocation: sourceLocation)
        return (alerts, object["next_cursor"] as? String)
    }

    func pendingIDs(_ client: String) async throws -> [String] {
        try await list(client).alerts.map(Contract.id)
    }

    /// Every alert of a client, in every state.
    func allAlerts(_ client: String) async throws -> [[String: Any]] {
        try await list(client, "state=\(Contract.allStates)&limit=1000").alerts
    }

    /// The listing of `clients` in every state, and `GET /v1/clients` plus the listing of
    /// every client it names when `includeClientList`.
    func snapshot(_ clients: [String], includeClientList: Bool = false) async throws -> StoreSnapshot {
        var snapshot = StoreSnapshot(clients: nil, alerts: [:])
        var names = Set(clients)
        if includeClientList {
            let listed = try await get("/v1/clients")
            try #require(listed.status == 200, "GET /v1/clients answered \(listed.status)")
            snapshot.clients = listed.text
            for entry in try listed.jsonObject()["clients"] as? [[String: Any]] ?? [] {
                if let name = entry["client"] as? String { names.insert(name) }
            }
        }
        for name in names.sorted() {
            let page = try await get("/v1/clients/\(name)/alerts?state=\(Contract.allStates)&limit=1000")
            snapshot.alerts[name] = "\(page.status) \(page.text)"
        }
        return snapshot
    }

    func snapshot(_ clients: String...) async throws -> StoreSnapshot {
        try await snapshot(clients)
    }
}
