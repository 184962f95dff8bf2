public import AlertdCore
public import AlertdWire

/// Why the engine refused or could not do something, in domain terms.
///
/// The API maps each ``Code`` to one problem+json code in one exhaustive
/// `switch`: the enum is closed on purpose, so a new case does not compile
/// until it is mapped (and never silently becomes a 400).
public struct EngineError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// No such alert on that client, or no such webhook.
        case notFound
        /// A choice for an alert that is queued, not displayed.
        case notDisplayed
        /// A choice or withdrawal for a terminal alert (``EngineError/alert`` has it).
        case alreadyDecided
        /// A vote for another button by a decider who voted on the alert (§10; ``EngineError/alert`` has it).
        case alreadyVoted
        /// A button the alert does not have.
        case unknownButton
        /// A choice whose comment or values do not fit the alert (SPEC §13; ``EngineError/fieldErrors`` say where).
        case invalidAnswer
        /// A bound on what posters can grow (pending per client, in all, clients).
        case queueFull
        /// A choice this decider may not make (the poster approving its own alert of several deciders, §10).
        case forbidden
        /// An alert that breaks the rules of §2 (``EngineError/fieldErrors`` say where).
        case invalidAlert
        /// An idempotency key used before for another body.
        case idempotencyMismatch
        /// A webhook URL or secret the registry cannot take.
        case invalidWebhook
        /// A webhook of the config file: it is removed there, not through the API.
        case configWebhook
        /// The URL is already a webhook of that client: each event would be delivered twice.
        case webhookExists
        /// A push subscription the engine cannot take (``EngineError/fieldErrors`` say where).
        case invalidSubscription
        /// A destructive button chosen through an `answer_url` without confirming it.
        case confirmationRequired
        /// An `answer_url` used before, expired, or whose alert is decided.
        case answerUsed
        /// Every waiter slot, or the token's share, is taken.
        case tooManyWaiters
        /// Shutting down, or the store takes no writes now (``EngineError/retryAfter`` says when to retry).
        case unavailable
    }

    public let code: Code
    /// The rest, out of line. An engine error is returned through every async call of a
    /// request (typed throws, `Result<_, EngineError>`), and each async frame reserves
    /// room for one, taken from the task's allocator: with the alert inline it was 330
    /// bytes, now 16. Frames over the allocator's ~1-KiB slab cost a malloc and a free
    /// each (issue 28, bench/RESULTS.md).
    private let details: Details

    private final class Details: Sendable {
        let detail: String
        let alert: Alert?
        let fieldErrors: [FieldError]
        let retryAfter: Int?

        init(detail: String, alert: Alert?, fieldErrors: [FieldError], retryAfter: Int?) {
            self.detail = detail
            self.alert = alert
            self.fieldErrors = fieldErrors
            self.retryAfter = retryAfter
        }
    }

    public var detail: String { details.detail }
    /// `alreadyDecided`, `alreadyVoted`: the alert as it is.
    public var alert: Alert? { details.alert }
    /// `invalidAlert`, `invalidAnswer`: one per violation.
    public var fieldErrors: [FieldError] { details.fieldErrors }
    /// Seconds a client should wait before trying again.
    public var retryAfter: Int? { details.retryAfter }

    public init(_ code: Code, _ detail: String, alert: Alert? = nil, fieldErrors: [FieldError] = [], retryAfter: Int? = nil) {
        self.code = code
        self.details = Details(detail: detail, alert: alert, fieldErrors: fieldErrors, retryAfter: retryAfter)
    }

    public var description: String { "\(code.rawValue): \(detail)" }

    /// The engine's error for a domain refusal.
    public init(_ error: BoardError) {
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
            }
        self.init(code, error.detail, alert: error.alert, fieldErrors: error.errors)
    }

    /// Seconds a client is told to wait after a failed commit.
    public static let storeRetrySeconds = 2

    /// A change the store could not commit: it was not made. The store's own
    /// error goes to the log, not to the client (it may name files or SQL).
    public static let notCommitted = EngineError(
        .unavailable, "the change could not be committed and was not made (alertd's log says why); retry later",
        retryAfter: storeRetrySeconds)

    /// A call that comes once alertd (or its store) is shutting down: not served.
    public static let stopping = EngineError(.unavailable, "alertd is shutting down")

    /// A read the store could not serve (its error goes to the log).
    public static let unreadable = EngineError(
        .unavailable, "the store cannot be read now (alertd's log says why); retry later", retryAfter: storeRetrySeconds)
}
