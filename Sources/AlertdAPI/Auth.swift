import AlertdCore
import AlertdWire
import Crypto
import Foundation

/// A role of §7: what a token may do.
public enum Role: String, Sendable, Hashable, CaseIterable {
    /// Every GET under `/v1` for its clients.
    case read
    /// `read`, plus posting and withdrawing alerts.
    case post
    /// `read`, plus choosing a button.
    case answer
    /// Everything, webhooks included.
    case admin
    /// `read`, plus Alertmanager's receiver (`POST /v1/integrations/alertmanager/{client}`):
    /// its alerts carry the labels a silence button acts on, so `post` alone may not send them.
    case alertmanager

    /// Whether this role grants what a route needs.
    func grants(_ permission: Permission) -> Bool {
        switch (self, permission) {
        case (_, .open), (_, .anyone), (.admin, _): true
        case (_, .read): true
        case (.post, .post), (.answer, .answer), (.alertmanager, .alertmanager): true
        default: false
        }
    }
}

/// A client-id pattern of a token: `*` stands for any run of characters
/// (none included), everything else for itself. `*` alone is every client.
public struct ClientPattern: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    private let parts: [Substring]

    /// nil unless `text` is made of client-id characters and `*`.
    public init?(_ text: String) {
        let allowed = text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "*"):
                true
            default: false
            }
        }
        guard !text.isEmpty, text.utf8.count <= 128, allowed else { return nil }
        self.text = text
        parts = text.split(separator: "*", omittingEmptySubsequences: false)
    }

    public func matches(_ client: String) -> Bool {
        guard parts.count > 1 else { return client == text }
        var rest = Substring(client)
        guard rest.hasPrefix(parts[0]) else { return false }
        rest = rest.dropFirst(parts[0].count)
        let last = parts[parts.count - 1]
        for middle in parts.dropFirst().dropLast() {
            guard let range = rest.range(of: middle) else { return false }
            rest = rest[range.upperBound...]
        }
        return rest.count >= last.count && rest.hasSuffix(last)
    }

    public var description: String { text }
}

/// A token of the config: its name, the SHA-256 of its secret, its roles and clients.
public struct Token: Sendable, Hashable {
    public var name: String
    /// SHA-256 of the secret; the secret itself is never stored.
    public var digest: [UInt8]
    public var roles: Set<Role>
    public var clients: [ClientPattern]

    public init(name: String, digest: [UInt8], roles: Set<Role>, clients: [ClientPattern]) {
        self.name = name
        self.digest = digest
        self.roles = roles
        self.clients = clients
    }

    /// A new random secret (`alertd_` + 43 base64url characters: 256 bits) and its digest.
    public static func generateSecret() -> (secret: String, digest: [UInt8]) {
        var generator = SystemRandom()  // not SystemRandomNumberGenerator: see SystemRandom
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let encoded = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let secret = "alertd_" + encoded
        return (secret, Array(SHA256.hash(data: Array(secret.utf8))))
    }

    /// Lowercase hex of a digest, as the config writes it.
    public static func hex(_ digest: [UInt8]) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}

/// Who made a request, once its token is checked.
public struct Principal: Sendable, Hashable {
    public let name: String
    public let roles: Set<Role>
    public let clients: [ClientPattern]

    /// Whether one of its roles grants `permission`.
    public func allows(_ permission: Permission) -> Bool { roles.contains { $0.grants(permission) } }

    /// Whether its client patterns cover `client` (they bind every role, `admin` too).
    public func mayTouch(_ client: String) -> Bool { clients.contains { $0.matches(client) } }
}

/// Checks `Authorization: Bearer …` against the configured tokens (§7).
///
/// The presented secret is hashed and its digest compared with every token's
/// in constant time, all of them every time, so neither the secret nor which
/// token it resembles leaks through timing.
///
/// ```swift
/// let auth = Authenticator(tokens: config.tokens)
/// switch auth.authenticate(request.header("authorization")) {
/// case .success(let principal): …   // nil when no tokens are configured: the API is open
/// case .failure(let problem): …      // 401 unauthorized
/// }
/// ```
public struct Authenticator: Sendable {
    public let tokens: [Token]

    public init(tokens: [Token]) { self.tokens = tokens }

    /// Whether requests need a token at all.
    public var isEnabled: Bool { !tokens.isEmpty }

    /// The principal of an `Authorization` header value; nil when auth is off.
    public func authenticate(_ header: String?) -> Result<Principal?, Problem> {
        guard isEnabled else { return .success(nil) }
        guard let header, !header.isEmpty else {
            return .failure(Self.unauthorized("this request needs Authorization: Bearer <token>"))
        }
        let scheme = header.prefix { $0 != " " }
        guard scheme.lowercased() == "bearer" else {
            return .failure(Self.unauthorized("only Bearer tokens are accepted"))
        }
        let secret = header.dropFirst(scheme.count).drop { $0 == " " }
        guard !secret.isEmpty else { return .failure(Self.unauthorized("the Bearer token is empty")) }
        let digest = Array(SHA256.hash(data: Array(secret.utf8)))
        var found: Token?
        for token in tokens where WebhookSignature.constantTimeEquals(token.digest, digest) && found == nil {
            found = token
        }
        guard let token = found else { return .failure(Self.unauthorized("the token is not valid")) }
        return .success(Principal(name: token.name, roles: token.roles, clients: token.clients))
    }

    static func unauthorized(_ detail: String) -> Problem {
        var problem = Problem(.unauthorized, detail)
        problem.headers = [("WWW-Authenticate", #"Bearer realm="alertd""#)]
        return problem
    }
}
