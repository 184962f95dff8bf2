public import AlertdCore
public import AlertdEngine
public import AlertdReceipts
public import AlertdWire

/// One durable change.
public enum StoreWrite: Sendable {
    case client(String, createdAt: Timestamp)
    /// Inserts or replaces the alert.
    case alert(Alert)
    case idempotency(IdempotencyRecord)
    /// Deletes these terminal alerts (a purge's, ``PersistentStore/purgeCandidates(decidedBefore:keepPerClient:limit:)``)
    /// with their events, deliveries and attempts; one with a delivery still pending stays.
    case deleteTerminal([String])
    /// Deletes idempotency keys created before this time.
    case deleteKeys(createdBefore: Timestamp)
    /// Registers an API webhook.
    case webhook(Webhook)
    /// Removes an API webhook, and cancels its deliveries still pending.
    case deleteWebhook(id: String)
    /// Forgets clients that hold no alert any more.
    case deleteClients([String])
    /// Records a terminal event and its pending deliveries (due at once).
    case event(OutboxEvent)
    /// Records a delivery attempt and the delivery's new state (ignored if the
    /// alert was purged meanwhile).
    case attempt(AttemptRecord)
    /// Stores a secret unless one of that name is stored (the first one stays).
    case secret(name: String, value: [UInt8], createdAt: Timestamp)
    /// Stores a push subscription, replacing one with its endpoint (SPEC §11).
    case pushSubscription(PushSubscription)
    /// Removes a push subscription and its answer tokens.
    case deletePushSubscription(id: String)
    /// Stores an answer token, replacing the one of its alert and subscription.
    case answerToken(AnswerToken)
    /// Marks an answer token used, if it was not.
    case useAnswerToken(hash: [UInt8], at: Timestamp)
    /// Deletes answer tokens that expired before this time.
    case deleteAnswerTokens(expiredBefore: Timestamp)
    /// The receipt of an alert this transaction decides (SPEC §14), to be signed: the
    /// ``GroupCommitter`` appends it to the chain, in commit order, and writes it as
    /// ``signedReceipt(_:)``, its alert's terminal event carrying it.
    case receipt(Alert)
    /// A receipt signed in its place in the chain.
    case signedReceipt(ReceiptRecord)
    /// The chain's head after the receipts of the transaction, and how many receipts (and
    /// bytes) it added.
    case receiptHead(ChainLink, added: Int, bytes: Int)
    /// Deletes the receipts below `seq` (`receipts.retention`): the chain's oldest.
    case deleteReceipts(below: Int)

    /// A write nothing a user was told depends on the fsync of: a delivery attempt's record
    /// (delivery is at least once), a purge's deletions (a power loss undoes them, and the
    /// next purge deletes them again).
    public var needsNoFsync: Bool {
        switch self {
        case .attempt, .deleteTerminal, .deleteKeys, .deleteAnswerTokens, .deleteReceipts: true
        default: false
        }
    }
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

/// The rows under the embedded store's in-memory board: what ``SQLiteAlertStore``
/// reads at start and commits through the ``GroupCommitter``. ``SQLiteStore``
/// implements it over SQLite; tests wrap it to make commits fail.
public protocol PersistentStore: Sendable {
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
    /// The secret `name`, if one is stored.
    func secret(named name: String) throws -> [UInt8]?
    /// Every push subscription.
    func pushSubscriptions() throws -> [PushSubscription]
    /// The answer token with this hash.
    func answerToken(hash: [UInt8]) throws -> AnswerToken?
    /// The deliveries of an alert's events, oldest first, with their attempts.
    func deliveries(of alertID: AlertID) throws -> [DeliveryRecord]
    /// Every delivery still pending, with its event's body and how many attempts it had.
    func pendingDeliveries() throws -> [PendingDelivery]
    /// The ids of the deliveries the commit that removed webhook `id` cancelled (taken: a
    /// second call answers `[]`).
    func cancelledDeliveries(ofWebhook id: String) throws -> [String]
    /// Terminal alerts past retention, at most `limit`, without a delivery still pending:
    /// decided before its time, beyond their client's newest `keepPerClient` (by id) or its
    /// newest `maxBytesPerClient` bytes, or the oldest decided beyond `maxBytes` of every
    /// client's. Read beside the writer: a purge then deletes them a few hundred a commit,
    /// between other commits (``StoreWrite/deleteTerminal(_:)``).
    func purgeCandidates(_ retention: Retention, limit: Int) throws -> [String]
    /// The bytes of every terminal alert (their `size`s), as ``Retention`` counts them.
    func retainedBytes() throws -> Int
    /// Those of `clients` that have no terminal alert stored.
    func clientsWithoutDecidedAlerts(among clients: [String]) throws -> [String]
    /// Whether a write can be made now (for readiness).
    func isWritable() -> Bool
    /// Whether a commit of about `bytes` goes through now: after a failed commit
    /// (a full disk), a probe that a small write passing says little about.
    func hasRoom(forBytes bytes: Int) -> Bool
    /// The bytes the store takes on disk; nil: not known.
    var sizeInBytes: Int? { get }

    // Receipts (SPEC §14).

    /// The chain's head as committed: the last receipt's `seq` and hash (``ChainLink/start``
    /// before the first). The writer continues the chain from it.
    func receiptHead() throws -> ChainLink
    /// The receipt of alert `id`.
    func receipt(of id: AlertID) throws -> ReceiptRecord?
    /// Receipts with `seq` above `after`, in `seq` order, at most `limit`.
    func receipts(after: Int, limit: Int) throws -> [ReceiptRecord]
    /// The receipts kept, their bytes and the chain's head.
    func receiptTotals() throws -> ReceiptTotals
    /// The `seq` of the first receipt to keep when receipts of alerts decided before
    /// `decidedBefore` go: every receipt below it goes (it is the first decided at or after
    /// that time, or one past the head when none is).
    func receiptsKept(decidedBefore: Timestamp) throws -> Int
}

extension PersistentStore {
    public func hasRoom(forBytes bytes: Int) -> Bool { isWritable() }
    public var sizeInBytes: Int? { nil }
}
