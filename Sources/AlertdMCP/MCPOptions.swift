import AlertdWire

/// How `alertctl mcp` behaves; its flags.
public struct MCPOptions: Sendable {
    /// The client (queue) the tools post to unless a call names another.
    public var client: String
    /// The daemon's URL, for messages.
    public var daemon: String
    /// Cancelling an ask_human call (`notifications/cancelled`) also withdraws its question;
    /// so does the MCP client closing the server's stdin while one waits.
    public var withdrawOnCancel = false
    /// ask_human's `timeout_seconds` when the call gives none.
    public var defaultTimeout: Double = 600
    /// The longest pause between two progress notifications while a call waits (when the
    /// client asked for them); also the longest long-poll a call makes.
    public var progressInterval: Double = 15
    /// How long a waiting call keeps trying while alertd cannot be reached, before it fails.
    public var retryFor: Double = 60
    /// Clients a call may name besides ``client`` (`--allow-client`): ids, or globs with `*`
    /// (`*` alone: any the token may post to). Empty by default: every question goes to
    /// ``client`` (issue 44, item 4).
    public var allowedClients: [String] = []
    /// Whether check_answer and withdraw_question may act on any alert id (`--any-question`);
    /// by default only on the questions this session asked (its ledger).
    public var anyQuestion = false
    /// The highest `priority` a call may ask for (`--max-priority`); default 0, so that an
    /// agent's question never jumps ahead of others' unless the user allows it.
    public var maxPriority = 0
    /// How many different people must allow a `request_permission` (`--permission-quorum`): 1 by default.
    public var permissionQuorum = 1

    /// `daemon` is shown in messages without the credentials or query secrets it may hold.
    public init(client: String, daemon: String) {
        self.client = client
        self.daemon = URLRedaction.redacted(daemon, keepingPath: true)
    }

    /// Whether a call may name `client` (``client`` itself, or one of ``allowedClients``).
    public func allows(client other: String) -> Bool {
        other == client || allowedClients.contains { Self.matches(other, glob: $0) }
    }

    /// `*` stands for any run of characters.
    static func matches(_ text: String, glob: String) -> Bool {
        let parts = glob.split(separator: "*", omittingEmptySubsequences: false)
        guard parts.count > 1 else { return text == glob }
        var rest = Substring(text)
        guard rest.hasPrefix(parts[0]) else { return false }
        rest = rest.dropFirst(parts[0].count)
        for part in parts.dropFirst().dropLast() where !part.isEmpty {
            guard let found = rest.firstRange(of: part) else { return false }
            rest = rest[found.upperBound...]
        }
        return rest.hasSuffix(parts[parts.count - 1])
    }
}
