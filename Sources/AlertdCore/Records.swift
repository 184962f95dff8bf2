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

/// What a delivery is, by its event's type: how it is sent and settled.
public enum DeliveryKind: Sendable, Hashable {
    /// A terminal event (`alert.<state>`) to a `callback_url` or webhook: signed, checked against `callbacks.deny`.
    case callback
    /// A silence for Alertmanager (`alertmanager.silence`, docs/alertmanager.md): its API's
    /// request, to the configured Alertmanager, with its auth; the silence id recorded.
    case alertmanagerSilence
    /// A Web Push message (`push.alert.displayed`, `push.alert.decided`, SPEC §11) to a
    /// subscription's push service: its body the payload in clear, encrypted for the
    /// subscription (the delivery's `secret` holds its id) at each attempt.
    case push

    /// The event type of a silence delivery.
    public static let alertmanagerSilenceType = "alertmanager.silence"
    /// What the event types of pushes start with.
    public static let pushTypePrefix = "push."

    /// The kind of a delivery of an event of `type`.
    public init(eventType type: String) {
        if type == Self.alertmanagerSilenceType {
            self = .alertmanagerSilence
        } else if type.hasPrefix(Self.pushTypePrefix) {
            self = .push
        } else {
            self = .callback
        }
    }

    /// The label of the kind on `/metrics`.
    public var label: String {
        switch self {
        case .callback: "callback"
        case .alertmanagerSilence: "alertmanager_silence"
        case .push: "push"
        }
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
    /// A callback, or a request to an integration (by its event's type).
    public var kind: DeliveryKind
    /// The client of the event's alert: deliveries pending are bounded per client.
    public var client: String

    public init(
        id: String, eventID: String, target: String, secret: String, body: [UInt8], eventCreatedAt: Timestamp, attemptsMade: Int,
        due: Timestamp, kind: DeliveryKind = .callback, client: String = ""
    ) {
        self.client = client
        self.id = id
        self.eventID = eventID
        self.target = target
        self.secret = secret
        self.body = body
        self.eventCreatedAt = eventCreatedAt
        self.attemptsMade = attemptsMade
        self.due = due
        self.kind = kind
    }
}

extension OutboxEvent {
    /// The event's deliveries as the worker takes them: none attempted, all due at once.
    public var pendingDeliveries: [PendingDelivery] {
        deliveries.map {
            PendingDelivery(
                id: $0.id, eventID: id, target: $0.target, secret: $0.secret, body: body, eventCreatedAt: createdAt, attemptsMade: 0,
                due: createdAt, kind: DeliveryKind(eventType: type), client: client)
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
    /// What the delivery produced, kept with it: the id of the silence Alertmanager
    /// created (``DeliveryKind/alertmanagerSilence``); nil for callbacks.
    public var result: String?

    public init(
        deliveryID: String, number: Int, attempt: DeliveryAttempt, state: DeliveryState, nextAttemptAt: Timestamp?, result: String? = nil
    ) {
        self.deliveryID = deliveryID
        self.number = number
        self.attempt = attempt
        self.state = state
        self.nextAttemptAt = nextAttemptAt
        self.result = result
    }
}
