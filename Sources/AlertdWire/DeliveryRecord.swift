/// Where a delivery stands: `pending` (attempted again at `next_attempt_at`), `delivered`,
/// `failed` (given up: a 410, or `callbacks.max_age` passed), or `cancelled` (its webhook
/// was removed before it was delivered: never attempted again).
public enum DeliveryState: String, Sendable, Hashable, Codable, CaseIterable {
    case pending, delivered, failed, cancelled
}

/// One attempt to deliver: its time and the status code or error.
public struct DeliveryAttempt: Sendable, Hashable, Codable {
    /// When the attempt was made.
    public var at: Timestamp
    /// The receiver's HTTP status; nil when there was no answer.
    public var statusCode: Int?
    /// Why there was no 2xx answer (a timeout, a refused connection, the deny list); nil on success.
    public var error: String?

    /// An attempt at `at` with its status code or error.
    public init(at: Timestamp, statusCode: Int?, error: String?) {
        self.at = at
        self.statusCode = statusCode
        self.error = error
    }

    enum CodingKeys: String, CodingKey {
        case at, error
        case statusCode = "status_code"
    }

    /// `{"at":…,"status_code":…,"error":…}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("at")
        json.timestamp(at)
        json.key("status_code")
        json.int(statusCode)
        json.key("error")
        json.string(error)
        json.endObject()
    }
}

/// A delivery of an alert's terminal event to one target, as the deliveries API shows it.
public struct DeliveryRecord: Sendable, Hashable, Codable {
    /// The delivery's id.
    public var id: String
    /// The event's `webhook-id`, shared by every target of one event.
    public var eventID: String
    /// The URL delivered to.
    public var target: String
    /// The registered webhook's id; nil for the alert's own `callback_url`.
    public var webhookID: String?
    /// `pending`, `delivered` or `failed`.
    public var state: DeliveryState
    /// Every attempt so far, oldest first.
    public var attempts: [DeliveryAttempt]
    /// When the next attempt is due; nil once delivered or failed.
    public var nextAttemptAt: Timestamp?
    /// The event's type: `alert.<state>` for callbacks, `alertmanager.silence` for a
    /// silence created in Alertmanager. nil from a daemon older than 0.1.0.
    public var type: String?
    /// For `alertmanager.silence`: the id Alertmanager gave the silence, once created.
    public var silenceID: String?

    /// A delivery record with every field given.
    public init(
        id: String, eventID: String, target: String, webhookID: String?, state: DeliveryState, attempts: [DeliveryAttempt],
        nextAttemptAt: Timestamp?, type: String? = nil, silenceID: String? = nil
    ) {
        self.id = id
        self.eventID = eventID
        self.target = target
        self.webhookID = webhookID
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.type = type
        self.silenceID = silenceID
    }

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case id
        case eventID = "event_id"
        case type, target
        case webhookID = "webhook_id"
        case state, attempts
        case nextAttemptAt = "next_attempt_at"
        case silenceID = "silence_id"
    }

    /// Writes the record as the deliveries API answers it: every member in order, `null`
    /// for what is absent, `next_attempt_at` only while pending.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        for key in CodingKeys.allCases {
            json.key(key.rawValue)
            switch key {
            case .id: json.string(id)
            case .eventID: json.string(eventID)
            case .type: json.string(type)
            case .target: json.string(target)
            case .webhookID: json.string(webhookID)
            case .state: json.string(state.rawValue)
            case .attempts:
                json.beginArray()
                for attempt in attempts { attempt.write(into: &json) }
                json.endArray()
            case .nextAttemptAt: json.timestamp(state == .pending ? nextAttemptAt : nil)
            case .silenceID: json.string(silenceID)
            }
        }
        json.endObject()
    }
}
