public import AlertdWire

/// Why the board refused an operation. Each code is one problem+json `code`.
public struct BoardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Closed on purpose: the API maps each case to its problem code in one
    /// exhaustive `switch`, so a new case cannot compile until it is mapped.
    public enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        case notFound = "not-found"
        case notDisplayed = "not-displayed"
        case alreadyDecided = "already-decided"
        /// The decider voted for another button of an alert of several deciders (SPEC §10).
        case alreadyVoted = "already-voted"
        case unknownButton = "unknown-button"
        /// The choice's comment or values do not fit the alert (SPEC §13); ``BoardError/errors`` say where.
        case invalidAnswer = "invalid-answer"
        case queueFull = "queue-full"
        /// The decider may not make this choice: the poster of an alert of several
        /// deciders voting for one of its non-cancel buttons (SPEC §10).
        case forbidden = "forbidden"

        public var description: String { rawValue }
    }

    public let code: Code
    public let detail: String
    /// The alert concerned, where the problem carries it (`already-decided`, `already-voted`).
    public let alert: Alert?
    /// `invalid-answer`: one per violation.
    public let errors: [FieldError]

    public init(_ code: Code, _ detail: String, alert: Alert? = nil, errors: [FieldError] = []) {
        self.code = code
        self.detail = detail
        self.alert = alert
        self.errors = errors
    }

    public var description: String { "\(code): \(detail)" }
}
