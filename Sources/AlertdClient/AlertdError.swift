public import AlertdWire

/// Why a call to alertd failed: the daemon answered with a problem, could not
/// be reached, or answered with something that is not alertd's API.
///
/// ```swift
/// do {
///     try await alertd.choose(on: "ops", id: id, button: "Deploy")
/// } catch let error as AlertdError where error.code == .alreadyDecided {
///     print("someone was faster:", error.problem?.alert?.result?.button ?? "-")
/// }
/// ```
public struct AlertdError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New kinds may be added; switch with a default.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case problem, connection, invalidResponse, invalidURL, invalidCertificates
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The daemon answered with a problem+json error; see ``AlertdError/problem``.
        public static let problem = Kind(.problem)
        /// No answer: the connection was refused, dropped or timed out.
        public static let connection = Kind(.connection)
        /// An answer that is not what alertd's API sends.
        public static let invalidResponse = Kind(.invalidResponse)
        /// The daemon URL given to the client is not an absolute http(s) URL.
        public static let invalidURL = Kind(.invalidURL)
        /// A CA file given to the client (``CertificateTrust/pemFile(_:)``) cannot be read or holds no certificate.
        public static let invalidCertificates = Kind(.invalidCertificates)

        public var description: String {
            switch base {
            case .problem: "problem"
            case .connection: "connection"
            case .invalidResponse: "invalid response"
            case .invalidURL: "invalid URL"
            case .invalidCertificates: "invalid certificates"
            }
        }
    }

    /// Whether the daemon answered with a problem, could not be reached, or answered nonsense.
    public var kind: Kind
    /// The HTTP status, when the daemon answered.
    public var status: Int?
    /// The problem document, for ``Kind/problem``.
    public var problem: ProblemDocument?
    /// Seconds to wait before trying again, from a `Retry-After` header.
    public var retryAfter: Double?
    /// A one-line explanation, a sentence: `cannot reach alertd: connection refused (127.0.0.1:8080)`.
    public var message: String
    /// For ``Kind/connection``: the request never left this process — the connection was
    /// refused, the name did not resolve, the TLS handshake failed or connecting timed out —
    /// so the daemon did nothing it asked for. False when it may have been sent.
    public var neverSent: Bool = false
    /// The alert that ``AlertdClient/present(_:on:)`` or
    /// ``AlertdClient/presentUntilTerminal(_:on:idempotencyKey:progress:)`` had posted when it
    /// stopped with this error; nil if the daemon never answered the post. The alert stays
    /// pending: look it up with ``AlertdClient/alert(on:id:wait:)``.
    public var alertID: String?
    /// Why the daemon's TLS certificate was refused, if it was: alertctl adds what to do.
    package var certificateProblem: CertificateProblem?

    package enum CertificateProblem: Sendable {
        /// Not signed by a trusted CA (or expired, or self-signed).
        case untrusted
        /// Valid, but not for the URL's host.
        case wrongHost
    }

    /// The problem's stable code (`not-found`, `already-decided`, …); nil when the daemon did not answer with one.
    public var code: ProblemCode? {
        guard let problem else { return nil }
        return ProblemCode(named: problem.code, status: problem.status)
    }

    public var description: String {
        if let problem { return "\(problem.title): \(problem.detail)" }
        return message
    }

    init(
        kind: Kind, status: Int? = nil, problem: ProblemDocument? = nil, retryAfter: Double? = nil, message: String,
        neverSent: Bool = false
    ) {
        self.kind = kind
        self.status = status
        self.problem = problem
        self.retryAfter = retryAfter
        self.message = message
        self.neverSent = neverSent
    }

    /// Worth trying again unchanged: the daemon was unreachable, shutting down, busy or rate-limiting.
    public var isTransient: Bool {
        if kind == .connection { return true }
        guard let code else { return status.map { $0 == 502 || $0 == 503 || $0 == 504 } ?? false }
        return code == .unavailable || code == .tooManyWaiters || code == .rateLimited
    }
}
