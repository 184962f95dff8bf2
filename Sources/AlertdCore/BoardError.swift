/// Why the board refused an operation. Each code is one problem+json `code`.
public struct BoardError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let notFound = Code("not-found")
        public static let notDisplayed = Code("not-displayed")
        public static let alreadyDecided = Code("already-decided")
        public static let unknownButton = Code("unknown-button")
        public static let queueFull = Code("queue-full")
    }

    public let code: Code
    public let detail: String
    /// The alert concerned, where the problem carries it (`already-decided`).
    public let alert: Alert?

    public init(_ code: Code, _ detail: String, alert: Alert? = nil) {
        self.code = code
        self.detail = detail
        self.alert = alert
    }

    public var description: String { "\(code): \(detail)" }
}
