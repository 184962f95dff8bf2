public import AlertdWire

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

/// The terminal event of an alert and its deliveries, one per target (§5):
/// written in the same transaction as the alert's terminal state.
public struct OutboxEvent: Sendable, Hashable {
    /// `msg_…`: the `webhook-id` every target receives.
    public var id: String
    public var alertID: AlertID
    public var client: String
    /// `alert.<terminal state>`.
    public var type: String
    public var createdAt: Timestamp
    /// The exact bytes every attempt sends and signs.
    public var body: [UInt8]
    public var deliveries: [OutboxDelivery]

    public init(
        id: String, alertID: AlertID, client: String, type: String, createdAt: Timestamp, body: [UInt8], deliveries: [OutboxDelivery]
    ) {
        self.id = id
        self.alertID = alertID
        self.client = client
        self.type = type
        self.createdAt = createdAt
        self.body = body
        self.deliveries = deliveries
    }
}

/// One target of an event.
public struct OutboxDelivery: Sendable, Hashable {
    /// `dl_…`.
    public var id: String
    public var target: String
    /// The webhook it goes to; nil for the alert's `callback_url`.
    public var webhookID: String?
    /// The secret that signs it, fixed when the event is written.
    public var secret: String

    public init(id: String, target: String, webhookID: String?, secret: String) {
        self.id = id
        self.target = target
        self.webhookID = webhookID
        self.secret = secret
    }
}

/// A delivery still to be made: what its next attempt sends, where, and when.
public struct PendingDelivery: Sendable, Hashable {
    /// `dl_…`.
    public var id: String
    /// `msg_…`: the `webhook-id`.
    public var eventID: String
    public var target: String
    public var secret: String
    /// The event body, sent and signed byte for byte.
    public var body: [UInt8]
    /// When the event was written: ``RetryPolicy`` gives up `max_age` after it.
    public var eventCreatedAt: Timestamp
    /// Attempts already made (and recorded).
    public var attemptsMade: Int
    /// When the next attempt is due.
    public var due: Timestamp

    public init(
        id: String, eventID: String, target: String, secret: String, body: [UInt8], eventCreatedAt: Timestamp, attemptsMade: Int,
        due: Timestamp
    ) {
        self.id = id
        self.eventID = eventID
        self.target = target
        self.secret = secret
        self.body = body
        self.eventCreatedAt = eventCreatedAt
        self.attemptsMade = attemptsMade
        self.due = due
    }
}

extension OutboxEvent {
    /// The event's deliveries as the worker takes them: none attempted, all due at once.
    public var pendingDeliveries: [PendingDelivery] {
        deliveries.map {
            PendingDelivery(
                id: $0.id, eventID: id, target: $0.target, secret: $0.secret, body: body, eventCreatedAt: createdAt, attemptsMade: 0,
                due: createdAt)
        }
    }
}

/// One attempt to record, and where its delivery stands after it.
public struct AttemptRecord: Sendable, Hashable {
    public var deliveryID: String
    /// 1 for the first attempt.
    public var number: Int
    public var attempt: DeliveryAttempt
    public var state: DeliveryState
    /// nil unless `state` is pending.
    public var nextAttemptAt: Timestamp?

    public init(deliveryID: String, number: Int, attempt: DeliveryAttempt, state: DeliveryState, nextAttemptAt: Timestamp?) {
        self.deliveryID = deliveryID
        self.number = number
        self.attempt = attempt
        self.state = state
        self.nextAttemptAt = nextAttemptAt
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
    /// Forgets clients that hold no alert any more.
    case deleteClients([String])
    /// Records a terminal event and its pending deliveries (due at once).
    case event(OutboxEvent)
    /// Records a delivery attempt and the delivery's new state (ignored if the
    /// alert was purged meanwhile).
    case attempt(AttemptRecord)

    /// A delivery attempt's record: nothing a user was told depends on its fsync.
    public var isAttempt: Bool {
        if case .attempt = self { return true }
        return false
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
    /// The deliveries of an alert's events, oldest first, with their attempts.
    func deliveries(of alertID: AlertID) throws -> [DeliveryRecord]
    /// Every delivery still pending, with its event's body and how many attempts it had.
    func pendingDeliveries() throws -> [PendingDelivery]
    /// Those of `clients` that have no terminal alert stored.
    func clientsWithoutDecidedAlerts(among clients: [String]) throws -> [String]
    /// Whether a write can be made now (for readiness).
    func isWritable() -> Bool
    /// Whether a commit of about `bytes` goes through now: after a failed commit
    /// (a full disk), a probe that a small write passing says little about.
    func hasRoom(forBytes bytes: Int) -> Bool
}

extension AlertStore {
    public func hasRoom(forBytes bytes: Int) -> Bool { isWritable() }
}
