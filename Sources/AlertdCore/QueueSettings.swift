public import AlertdWire

/// Per-client settings (§8 `clients:`).
public struct ClientSettings: Sendable, Hashable {
    public var policy: QueuePolicy
    public var maxPending: Int
    /// Who its alerts are also queued on when nobody answers (SPEC §12, `clients.<id>.escalation`);
    /// an alert's own `escalation` replaces it. Empty: none.
    public var escalation: [EscalationStep]

    public init(policy: QueuePolicy = .fifo, maxPending: Int = 10_000, escalation: [EscalationStep] = []) {
        self.policy = policy
        self.maxPending = maxPending
        self.escalation = escalation
    }
}

/// The settings of every client: a default and overrides by client id, and the
/// bounds on what posters can grow across clients.
public struct QueueSettings: Sendable, Hashable {
    public var standard: ClientSettings
    public var clients: [String: ClientSettings]
    /// Clients known at once (`limits.max_clients`): a post to a new one beyond it is refused.
    public var maxClients: Int
    /// Pending alerts across every client (`limits.max_pending_total`).
    public var maxPendingTotal: Int
    /// The memory pending alerts across every client may take, by ``Alert/footprint``
    /// (`limits.max_pending_bytes`): a count alone lets large alerts grow without bound.
    public var maxPendingBytes: Int

    /// The default of `limits.max_pending_bytes`: 256 MiB.
    public static let defaultMaxPendingBytes = 256 << 20

    public init(
        standard: ClientSettings = ClientSettings(), clients: [String: ClientSettings] = [:], maxClients: Int = 10_000,
        maxPendingTotal: Int = 200_000, maxPendingBytes: Int = QueueSettings.defaultMaxPendingBytes
    ) {
        self.standard = standard
        self.clients = clients
        self.maxClients = maxClients
        self.maxPendingTotal = maxPendingTotal
        self.maxPendingBytes = maxPendingBytes
    }

    public subscript(client: String) -> ClientSettings { clients[client] ?? standard }
}
