import AlertdCore
import AlertdHTTP
import AlertdWire

/// An API error: one stable problem+json `code` (RFC 9457), its status and title.
///
/// Every code alertd answers with is a static member here; tests assert the table.
public struct Problem: Error, Sendable {
    public struct Code: Hashable, Sendable {
        public let rawValue: String
        public let status: Int
        public let title: String

        init(_ rawValue: String, _ status: Int, _ title: String) {
            self.rawValue = rawValue
            self.status = status
            self.title = title
        }

        public static let badRequest = Code("bad-request", 400, "Bad request")
        public static let invalidAlert = Code("invalid-alert", 400, "Invalid alert")
        public static let unauthorized = Code("unauthorized", 401, "Unauthorized")
        public static let forbidden = Code("forbidden", 403, "Forbidden")
        public static let notFound = Code("not-found", 404, "Not found")
        public static let methodNotAllowed = Code("method-not-allowed", 405, "Method not allowed")
        public static let notDisplayed = Code("not-displayed", 409, "Alert not displayed")
        public static let alreadyDecided = Code("already-decided", 409, "Alert already decided")
        public static let payloadTooLarge = Code("payload-too-large", 413, "Payload too large")
        public static let unsupportedMediaType = Code("unsupported-media-type", 415, "Unsupported media type")
        public static let unknownButton = Code("unknown-button", 422, "Unknown button")
        public static let idempotencyMismatch = Code("idempotency-mismatch", 422, "Idempotency key reused")
        public static let queueFull = Code("queue-full", 429, "Queue full")
        public static let rateLimited = Code("rate-limited", 429, "Rate limited")
        public static let tooManyWaiters = Code("too-many-waiters", 503, "Too many waiters")
        public static let unavailable = Code("unavailable", 503, "Unavailable")

        /// Every code, as §4 lists them.
        public static let all: [Code] = [
            .badRequest, .invalidAlert, .unauthorized, .forbidden, .notFound, .methodNotAllowed, .notDisplayed,
            .alreadyDecided, .payloadTooLarge, .unsupportedMediaType, .unknownButton, .idempotencyMismatch,
            .queueFull, .rateLimited, .tooManyWaiters, .unavailable,
        ]
    }

    public var code: Code
    public var detail: String
    /// `invalid-alert`: one entry per violation.
    public var errors: [FieldError] = []
    /// `already-decided`: the alert as it is.
    public var alert: Alert?
    /// Extra response headers (`Allow`, `Retry-After`).
    public var headers: [(name: String, value: String)] = []

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    static let typeBase = "https://alertd.dev/problems/"

    /// The problem+json response. `render` writes an embedded alert.
    func response(render: (inout JSONWriter, Alert) -> Void) -> HTTPResponse {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        json.key("type")
        json.string(Self.typeBase + code.rawValue)
        json.key("title")
        json.string(code.title)
        json.key("status")
        json.int(code.status)
        json.key("detail")
        json.string(detail)
        json.key("code")
        json.string(code.rawValue)
        if code == .invalidAlert {
            json.key("errors")
            json.beginArray()
            for error in errors {
                json.beginObject()
                json.key("field")
                json.string(error.field)
                json.key("reason")
                json.string(error.reason)
                json.endObject()
            }
            json.endArray()
        }
        if let alert {
            json.key("alert")
            render(&json, alert)
        }
        json.endObject()
        return HTTPResponse(
            status: code.status,
            headers: [("Content-Type", "application/problem+json")] + headers,
            body: json.bytes
        )
    }
}

extension Problem {
    /// The problem for a domain refusal.
    init(_ error: BoardError) {
        let code: Code =
            switch error.code {
            case .notFound: .notFound
            case .notDisplayed: .notDisplayed
            case .alreadyDecided: .alreadyDecided
            case .unknownButton: .unknownButton
            case .queueFull: .queueFull
            default: .badRequest
            }
        self.init(code, error.detail)
        self.alert = error.alert
    }
}
