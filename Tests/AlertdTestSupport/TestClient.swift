// One client protocol for the tests, in the style of HummingbirdTesting's
// `TestClientProtocol`: a test body written against `TestClient` runs in process (alertd's
// HTTP handler without sockets, `InProcessAlertd` in Tests/AlertdInProcess) or live
// (`LiveClient`, AsyncHTTPClient against the real binary).

import Foundation

/// Sends HTTP requests to an alertd, one way or another.
public protocol TestClient: Sendable {
    /// Sends one request and returns its final response. `path` is the request target
    /// (path and query, percent-encoded as on the wire); `headers` are sent as given, plus
    /// `Host` and `Content-Length` when missing. A response that never comes throws.
    func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) async throws -> TestResponse

    /// The number of requests parked in alertd. One alertd's `/readyz` says it (the
    /// default); several instances behind one address each count their own.
    func waiters() async throws -> Int
}

/// One HTTP response.
public struct TestResponse: Sendable {
    public let status: Int
    /// In wire order, names as sent.
    public let headers: [(String, String)]
    public let body: [UInt8]

    public init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header with this name, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    /// Every header with this name, in wire order.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.caseInsensitiveCompare(name) == .orderedSame }.map(\.1)
    }

    /// The body decoded as UTF-8; invalid sequences become U+FFFD.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body through `JSONSerialization` (fragments allowed).
    public func json() throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        } catch {
            throw TestFailure("status \(status), body is not JSON: \(text.prefix(500))")
        }
    }

    /// The body as a JSON object; throws when it is anything else.
    public func jsonObject() throws -> [String: Any] {
        guard let object = try json() as? [String: Any] else {
            throw TestFailure("status \(status), body is not a JSON object: \(text.prefix(500))")
        }
        return object
    }
}

/// A test's expectation that did not hold, thrown where `#require` is not at hand.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension TestClient {
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) async throws
        -> TestResponse
    {
        try await execute(method, path, headers: headers, body: body)
    }

    public func get(_ path: String, headers: [(String, String)] = []) async throws -> TestResponse {
        try await execute("GET", path, headers: headers, body: nil)
    }

    /// POSTs `json` (as UTF-8) with `Content-Type: application/json` unless `headers` sets one.
    public func post(_ path: String, json: String, headers: [(String, String)] = []) async throws -> TestResponse {
        var all = headers
        if !all.contains(where: { $0.0.caseInsensitiveCompare("Content-Type") == .orderedSame }) {
            all.append(("Content-Type", "application/json"))
        }
        return try await execute("POST", path, headers: all, body: Array(json.utf8))
    }

    public func delete(_ path: String, headers: [(String, String)] = []) async throws -> TestResponse {
        try await execute("DELETE", path, headers: headers, body: nil)
    }

    /// Sends `json`, if any, as an `application/json` body.
    public func send(_ method: String, _ path: String, json: String? = nil, headers: [(String, String)] = []) async throws -> TestResponse {
        guard let json else { return try await execute(method, path, headers: headers, body: nil) }
        return try await execute(method, path, headers: headers + [("Content-Type", "application/json")], body: Array(json.utf8))
    }

    /// Posts an alert and returns its resource; throws unless it is 201.
    public func postAlert(_ client: String, _ json: String, headers: [(String, String)] = []) async throws -> [String: Any] {
        let response = try await post("/v1/clients/\(client)/alerts", json: json, headers: headers)
        guard response.status == 201 else { throw TestFailure("post answered \(response.status): \(response.text)") }
        return try response.jsonObject()
    }

    public func choose(_ client: String, _ id: String, _ json: String) async throws -> TestResponse {
        try await post("/v1/clients/\(client)/alerts/\(id)/choice", json: json)
    }

    /// The number of parked waiters, from `/readyz`.
    public func waiters() async throws -> Int {
        try await get("/readyz").jsonObject()["waiters"] as? Int ?? -1
    }

    /// Returns once exactly `count` requests are parked (from `/readyz`, the only way to
    /// see from outside that the daemon has parked them); throws after `timeout`.
    public func awaitWaiters(_ count: Int, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        var parked = try await waiters()
        while parked != count {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("\(parked) waiters parked after \(timeout), wanted \(count)")
            }
            try await Task.sleep(for: .milliseconds(2))
            parked = try await waiters()
        }
    }
}

/// The `id` of an alert resource.
public func id(_ alert: [String: Any]) -> String { alert["id"] as? String ?? "<no id>" }
