/// `GET /v1/whoami`: who a token is, as the daemon sees it.
public struct Identity: Sendable, Hashable, Codable {
    /// The token's name (its `decided_by`); nil when the daemon has no tokens.
    public var name: String?
    /// Its roles: `read`, `post`, `answer`, `admin`. Every role when the daemon has no tokens.
    public var roles: [String]
    /// The client ids and globs it may touch (`*`: every client).
    public var clients: [String]
    /// Whether the daemon checks tokens at all.
    public var auth: Bool

    /// A value with every field given.
    public init(name: String?, roles: [String], clients: [String], auth: Bool) {
        self.name = name
        self.roles = roles
        self.clients = clients
        self.auth = auth
    }
}
