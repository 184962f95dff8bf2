import AlertdWire

/// An `Idempotency-Key` seen on a post: which alert it created and a digest of the body.
public struct IdempotencyRecord: Sendable, Hashable {
    public var client: String
    public var key: String
    public var alertID: AlertID
    public var bodyDigest: [UInt8]
    public var createdAt: Timestamp

    public init(client: String, key: String, alertID: AlertID, bodyDigest: [UInt8], createdAt: Timestamp) {
        self.client = client
        self.key = key
        self.alertID = alertID
        self.bodyDigest = bodyDigest
        self.createdAt = createdAt
    }
}

/// One durable change.
public enum StoreWrite: Sendable {
    case client(String, createdAt: Timestamp)
    /// Inserts or replaces the alert.
    case alert(Alert)
    case idempotency(IdempotencyRecord)
    /// Deletes terminal alerts decided before the first time and keys created before the second.
    case purge(decidedBefore: Timestamp, keysBefore: Timestamp)
    /// Registers an API webhook.
    case webhook(Webhook)
    /// Removes an API webhook.
    case deleteWebhook(id: String)
}

/// What the daemon restores on start.
public struct StoredState: Sendable {
    public var clients: [String]
    public var pending: [Alert]
    /// The greatest id ever issued, so new ids keep increasing.
    public var lastID: AlertID?

    public init(clients: [String], pending: [Alert], lastID: AlertID?) {
        self.clients = clients
        self.pending = pending
        self.lastID = lastID
    }
}

/// The storage the domain needs. `AlertdStore` implements it over SQLite.
public protocol AlertStore: Sendable {
    /// Every client and every pending alert.
    func load() throws -> StoredState
    /// Applies the writes in one transaction; returns once it is durable.
    func commit(_ writes: [StoreWrite]) throws
    func alert(_ id: AlertID) throws -> Alert?
    /// Terminal alerts of a client in the given states, newest first, with ids below `before`.
    func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) throws -> [Alert]
    func idempotency(client: String, key: String) throws -> IdempotencyRecord?
    /// Every webhook registered through the API.
    func webhooks() throws -> [Webhook]
    /// Whether a write can be made now (for readiness).
    func isWritable() -> Bool
}
