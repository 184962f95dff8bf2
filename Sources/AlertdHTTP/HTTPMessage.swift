/// An HTTP request as the handlers see it: already routed by method and path,
/// with its body fully read (and bounded) by the server.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The decoded path, without the query string.
    public var path: String
    /// Decoded query arguments in the order they came.
    public var query: [(name: String, value: String)]
    /// Header fields with lower-cased names, in the order they came.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(
        method: String,
        path: String,
        query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers.map { (name: $0.name.lowercased(), value: $0.value) }
        self.body = body
    }

    /// The first value of a header field, by case-insensitive name.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }
}

/// A complete response. Bodies are small JSON documents, so they are built in full.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }
}

/// What a server calls for each request. It must answer every request exactly once
/// through `responder`, now or later from any thread; answering later is what
/// parks a long-poll waiter without holding a thread.
public protocol HTTPHandler: Sendable {
    func handle(_ request: HTTPRequest, responder: Responder)
    /// The answer for a request the server refuses before routing it.
    func reject(_ rejection: HTTPRejection) -> HTTPResponse
}

/// Why the server refused a request before it reached the handler.
public enum HTTPRejection: Sendable, Equatable {
    /// The body is (or would be) larger than the limit.
    case payloadTooLarge(limit: Int)
    /// The message framing is ambiguous (conflicting lengths), a request-smuggling risk.
    case badFraming(String)
    /// The request line and headers take more than the limit.
    case headersTooLarge(limit: Int)
    /// Shutting down: the request was still waiting when the drain ran out of time.
    case shuttingDown
    /// More connections are open than the limit allows.
    case tooManyConnections(limit: Int)
}
