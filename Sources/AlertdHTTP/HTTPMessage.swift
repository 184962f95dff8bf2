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
    /// What the handler's ``HTTPHandler/admit(_:)`` returned for this request's
    /// head; nil when the request did not come through a server (tests).
    public var admission: (any AnyObject & Sendable)?

    public init(
        method: String,
        path: String,
        query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = [],
        admission: (any AnyObject & Sendable)? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers.map { (name: $0.name.lowercased(), value: $0.value) }
        self.body = body
        self.admission = admission
    }

    /// For the server: names already lower-case.
    init(
        method: String, path: String, query: [(name: String, value: String)], lowercasedHeaders: [(name: String, value: String)],
        body: [UInt8], admission: (any AnyObject & Sendable)?
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = lowercasedHeaders
        self.body = body
        self.admission = admission
    }

    /// The request line and the head's header fields, as ``HTTPHandler/admit(_:)`` sees them.
    public var head: HTTPRequestHead {
        HTTPRequestHead(
            method: method, path: path,
            headers: headers.filter { HTTPRequestHead.fields.contains($0.name) },
            hasBody: !body.isEmpty)
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

/// A request as it stands when its line and header block are in and none of
/// its body has been read: enough to decide who may send a body at all.
public struct HTTPRequestHead: Sendable {
    /// The header fields a head carries (lower-cased), the first value of each;
    /// the others come with the whole request.
    public static let fields: Set<String> = Set(HTTPServer.headFields.map(\.text))

    public var method: String
    /// The decoded path, without the query string.
    public var path: String
    /// The fields of ``fields`` that came, lower-cased names, in order (a repeated one repeated).
    public var headers: [(name: String, value: String)]
    /// Whether a body follows (a non-zero `Content-Length` or chunked framing).
    public var hasBody: Bool

    public init(method: String, path: String, headers: [(name: String, value: String)] = [], hasBody: Bool = false) {
        self.method = method
        self.path = path
        self.headers = headers.map { (name: $0.name.lowercased(), value: $0.value) }
        self.hasBody = hasBody
    }

    /// For the server: names already lower-case.
    init(method: String, path: String, lowercasedHeaders: [(name: String, value: String)], hasBody: Bool) {
        self.method = method
        self.path = path
        self.headers = lowercasedHeaders
        self.hasBody = hasBody
    }

    /// The first value of a header field, by lower-case name.
    public func header(_ lowercasedName: String) -> String? {
        headers.first { $0.name == lowercasedName }?.value
    }
}

/// What a handler decides from a request's head.
public enum HTTPAdmission: Sendable {
    /// Read the body, then call ``HTTPHandler/handle(_:responder:)``; the object
    /// travels to it as ``HTTPRequest/admission`` (a class: no box, a cheap cast).
    case proceed(any AnyObject & Sendable)
    /// Answer this without reading a byte of the body (a body that follows is
    /// not read: the connection is closed after the answer).
    case refuse(HTTPResponse)
}

/// What a server calls for each request. It must answer every request exactly once
/// through `responder`, now or later from any thread; answering later is what
/// parks a long-poll waiter without holding a thread.
public protocol HTTPHandler: Sendable {
    /// Called once the request line and headers are in, before any body is read:
    /// refusing here (a missing token, a forbidden route) costs no body buffer.
    func admit(_ head: HTTPRequestHead) -> HTTPAdmission
    func handle(_ request: HTTPRequest, responder: Responder)
    /// The answer for a request the server refuses before routing it.
    func reject(_ rejection: HTTPRejection) -> HTTPResponse
    /// The request admitted with `admission` is over: its answer was taken, or
    /// its connection closed. Called once per admitted request, on an MHD thread.
    func finished(_ admission: any AnyObject & Sendable)
}

extension HTTPHandler {
    public func finished(_ admission: any AnyObject & Sendable) {}
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
    /// More connections are open from the client's address than the per-address limit allows.
    case tooManyConnectionsFromAddress(limit: Int)
    /// The answer would take the bytes of answers not yet taken by their clients beyond the limit.
    case responseBytesInFlight(limit: Int)
}
