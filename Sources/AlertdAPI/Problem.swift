public import AlertdCore
import AlertdEngine
import AlertdHTTP
public import AlertdWire

/// An API error: one stable problem+json `code` (RFC 9457), its status and title.
///
/// Every code alertd answers with is a static member here; tests assert the table.
public struct Problem: Error, Sendable {
    /// The stable codes live in AlertdWire, shared with the SDK.
    public typealias Code = ProblemCode

    public var code: Code
    public var detail: String
    /// `invalid-alert`, `invalid-answer`: one entry per violation.
    public var errors: [FieldError] = []
    /// `already-decided`, `already-voted`: the alert as it is.
    public var alert: Alert?
    /// Extra response headers (`Allow`, `Retry-After`).
    public var headers: [(name: String, value: String)] = []

    public init(_ code: Code, _ detail: String, retryAfter: Int? = nil) {
        self.code = code
        self.detail = detail
        if let retryAfter { headers = [("Retry-After", String(retryAfter))] }
    }

    /// The problem+json response. `render` writes an embedded alert.
    func response(render: (inout JSONWriter, Alert) -> Void) -> HTTPResponse {
        var json = JSONWriter(capacity: 256)
        let alert = self.alert
        withoutActuallyEscaping(render) { render in
            ProblemDocument.write(
                code: code, detail: detail, errors: code == .invalidAlert || code == .invalidAnswer || !errors.isEmpty ? errors : nil,
                into: &json,
                alert: alert.map { alert in { render(&$0, alert) } })
        }
        return HTTPResponse(
            status: code.status,
            headers: [("Content-Type", "application/problem+json")] + headers,
            body: json.bytes
        )
    }
}

extension Problem {
    /// The problem for an engine's refusal: one exhaustive `switch`, no
    /// `default:`, so a new domain error cannot compile until it has its code.
    init(_ error: EngineError) {
        let code: Code =
            switch error.code {
            case .notFound: .notFound
            case .notDisplayed: .notDisplayed
            case .alreadyDecided: .alreadyDecided
            case .alreadyVoted: .alreadyVoted
            case .unknownButton: .unknownButton
            case .invalidAnswer: .invalidAnswer
            case .queueFull: .queueFull
            case .forbidden: .forbidden
            case .invalidAlert: .invalidAlert
            case .idempotencyMismatch: .idempotencyMismatch
            case .invalidWebhook: .badRequest
            case .configWebhook: .forbidden
            case .webhookExists: .webhookExists
            case .invalidSubscription: .badRequest
            case .confirmationRequired: .confirmationRequired
            case .answerUsed: .answerUsed
            case .tooManyWaiters: .tooManyWaiters
            case .unavailable: .unavailable
            }
        self.init(code, error.detail, retryAfter: error.retryAfter)
        alert = error.alert
        errors = error.fieldErrors
    }

    /// Any error a handler throws that is not a ``Problem`` is a bug: 500
    /// `internal`, whose detail names the request id (the log line with the
    /// error carries the same id), never the error's own text, which may name
    /// files, addresses or SQL.
    static func `internal`(requestID: String) -> Problem {
        Problem(.internal, "alertd met an unexpected error; its log has it under request id \(requestID)")
    }
}
