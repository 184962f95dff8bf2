/// A problem+json error body (RFC 9457) as alertd writes it.
public struct ProblemDocument: Sendable, Hashable, Codable {
    /// A URI naming the problem type.
    public var type: String
    /// The title, 1–256 characters.
    public var title: String
    /// The HTTP status.
    public var status: Int
    /// What went wrong in this request, for people.
    public var detail: String
    /// The stable machine-readable code: one of ``ProblemCode``'s raw values.
    public var code: String
    /// `invalid-alert`, `invalid-answer`: one entry per violation.
    public var errors: [FieldError]?
    /// `already-decided`, `already-voted`: the alert as it is.
    public var alert: AlertResource?

    /// The base of every problem's `type` URI; the code follows it.
    public static let typeBase = "https://alertd.dev/problems/"

    /// Writes the document as the daemon answers it: `type`, `title`, `status`,
    /// `detail`, `code`, then `errors` when given and `alert` when `alert` writes one.
    public func write(into json: inout JSONWriter) {
        Self.write(
            code: ProblemCode(code, status, title), detail: detail, errors: errors, into: &json,
            alert: alert.map { alert in { alert.write(into: &$0) } })
    }

    /// The one writer of a problem document (RFC 9457, §4).
    public static func write(
        code: ProblemCode, detail: String, errors: [FieldError]?, into json: inout JSONWriter,
        alert: ((inout JSONWriter) -> Void)? = nil
    ) {
        json.beginObject()
        json.key("type")
        json.string(typeBase + code.rawValue)
        json.key("title")
        json.string(code.title)
        json.key("status")
        json.int(code.status)
        json.key("detail")
        json.string(detail)
        json.key("code")
        json.string(code.rawValue)
        if let errors {
            json.key("errors")
            json.beginArray()
            for error in errors { error.write(into: &json) }
            json.endArray()
        }
        if let alert {
            json.key("alert")
            alert(&json)
        }
        json.endObject()
    }
}

/// The stable problem codes of §4, with their status and title.
///
/// Equality is by ``rawValue``: a code from a newer daemon compares by its name.
public struct ProblemCode: Hashable, Sendable, CustomStringConvertible {
    /// The stable code, `not-found`.
    public let rawValue: String
    /// The HTTP status it comes with.
    public let status: Int
    /// The short title alertd gives it.
    public let title: String

    /// A value with every field given.
    public init(_ rawValue: String, _ status: Int, _ title: String) {
        self.rawValue = rawValue
        self.status = status
        self.title = title
    }

    public static func == (a: ProblemCode, b: ProblemCode) -> Bool { a.rawValue == b.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
    public var description: String { rawValue }

    /// 400: a malformed request, query value or client id.
    public static let badRequest = ProblemCode("bad-request", 400, "Bad request")
    /// 400: the posted alert breaks §2; the problem lists each field.
    public static let invalidAlert = ProblemCode("invalid-alert", 400, "Invalid alert")
    /// 400: a choice's comment or values do not fit the alert (SPEC §13); the problem lists each.
    public static let invalidAnswer = ProblemCode("invalid-answer", 400, "Invalid answer")
    /// 401: no token, or a wrong one.
    public static let unauthorized = ProblemCode("unauthorized", 401, "Unauthorized")
    /// 403: the token lacks the role or the client.
    public static let forbidden = ProblemCode("forbidden", 403, "Forbidden")
    /// 404: no such alert, webhook or route.
    public static let notFound = ProblemCode("not-found", 404, "Not found")
    /// 405: the route exists with other methods (see `Allow`).
    public static let methodNotAllowed = ProblemCode("method-not-allowed", 405, "Method not allowed")
    /// 409: a choice for an alert that is queued, not displayed.
    public static let notDisplayed = ProblemCode("not-displayed", 409, "Alert not displayed")
    /// 409: the alert is terminal; the problem holds it.
    public static let alreadyDecided = ProblemCode("already-decided", 409, "Alert already decided")
    /// 409: the decider voted for another button of this alert (SPEC §10); the problem holds it.
    public static let alreadyVoted = ProblemCode("already-voted", 409, "Already voted")
    /// 409: a destructive button chosen through an `answer_url` without `"confirm": true` (SPEC §11).
    public static let confirmationRequired = ProblemCode("confirmation-required", 409, "Confirmation required")
    /// 410: an `answer_url` used before, expired, or for an alert already decided (SPEC §11).
    public static let answerUsed = ProblemCode("answer-used", 410, "Answer link used")
    /// 409: the URL is already registered as a webhook of that client (its id is in the detail).
    public static let webhookExists = ProblemCode("webhook-exists", 409, "Webhook already registered")
    /// 413: the body is over the limit (64 KiB by default).
    public static let payloadTooLarge = ProblemCode("payload-too-large", 413, "Payload too large")
    /// 415: a body that is not `application/json`.
    public static let unsupportedMediaType = ProblemCode("unsupported-media-type", 415, "Unsupported media type")
    /// 422: the alert has no such button.
    public static let unknownButton = ProblemCode("unknown-button", 422, "Unknown button")
    /// 422: an `Idempotency-Key` reused with a different body.
    public static let idempotencyMismatch = ProblemCode("idempotency-mismatch", 422, "Idempotency key reused")
    /// 429: the client has its maximum of pending alerts.
    public static let queueFull = ProblemCode("queue-full", 429, "Queue full")
    /// 429: the token is over its rate; wait `Retry-After` seconds.
    public static let rateLimited = ProblemCode("rate-limited", 429, "Rate limited")
    /// 503: the daemon holds its maximum of long-polls.
    public static let tooManyWaiters = ProblemCode("too-many-waiters", 503, "Too many waiters")
    /// 503: the daemon is shutting down or its store is failing.
    public static let unavailable = ProblemCode("unavailable", 503, "Unavailable")
    /// 500: an error alertd did not expect (a bug); the detail names the request id to look for in its log.
    public static let `internal` = ProblemCode("internal", 500, "Internal error")

    /// Every code: those §4 lists, then alertd's own (`webhook-exists`, `internal`).
    public static let all: [ProblemCode] = [
        .badRequest, .invalidAlert, .invalidAnswer, .unauthorized, .forbidden, .notFound, .methodNotAllowed, .notDisplayed,
        .alreadyDecided, .alreadyVoted, .confirmationRequired, .webhookExists, .answerUsed, .payloadTooLarge, .unsupportedMediaType,
        .unknownButton, .idempotencyMismatch,
        .queueFull, .rateLimited, .tooManyWaiters, .unavailable, .internal,
    ]

    /// The code named `rawValue`: a known one, or an unknown one kept by name with the answer's status.
    public init(named rawValue: String, status: Int) {
        self = Self.all.first { $0.rawValue == rawValue } ?? ProblemCode(rawValue, status, rawValue)
    }
}
