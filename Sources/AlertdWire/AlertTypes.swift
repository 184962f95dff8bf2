// The vocabulary of an alert, shared by the daemon (which stores and renders it)
// and the SDK (which decodes it), so the two cannot drift apart.

/// How an alert is presented: a centred dialog or a sheet of actions.
public enum AlertStyle: String, Sendable, Hashable, Codable, CaseIterable {
    case alert
    case actionSheet = "action_sheet"
}

/// A button's role, as in a UI alert: destructive ones are marked, the cancel one set apart.
public enum ButtonStyle: String, Sendable, Hashable, Codable, CaseIterable {
    case `default`
    case cancel
    case destructive
}

/// One button of an alert: its title (unique within the alert) and its style.
///
/// ```swift
/// let buttons: [Button] = [.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")]
/// ```
public struct Button: Sendable, Hashable, Codable {
    /// 1–64 characters, unique within the alert.
    public var title: String
    /// `default`, `cancel` or `destructive`.
    public var style: ButtonStyle

    /// A button; see also ``default(_:)``, ``cancel(_:)`` and ``destructive(_:)``.
    public init(title: String, style: ButtonStyle = .default) {
        self.title = title
        self.style = style
    }

    /// A button of style `default`.
    public static func `default`(_ title: String) -> Button { Button(title: title, style: .default) }
    /// The cancel button: at most one per alert, shown apart and last.
    public static func cancel(_ title: String) -> Button { Button(title: title, style: .cancel) }
    /// A button for an action that destroys something, shown in red.
    public static func destructive(_ title: String) -> Button { Button(title: title, style: .destructive) }

    /// Decodes a button; a missing `style` is `default`, as §2 says.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = try container.decode(String.self, forKey: .title)
        // §2: `style` defaults to "default" when a poster leaves it out.
        style = try container.decodeIfPresent(ButtonStyle.self, forKey: .style) ?? .default
    }

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case title, style
    }

    /// Every member name a button has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// Writes the button as the daemon writes it, members in ``memberNames`` order:
    /// `{"title":"Deploy","style":"default"}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("title")
        json.string(title)
        json.key("style")
        json.string(style.rawValue)
        json.endObject()
    }
}

/// The six states of §2. An alert never leaves a terminal state.
public enum AlertState: String, Sendable, Hashable, Codable, CaseIterable {
    case queued, displayed, answered, dismissed, expired, withdrawn

    /// `answered`, `dismissed`, `expired` or `withdrawn`.
    public var isTerminal: Bool {
        switch self {
        case .queued, .displayed: false
        case .answered, .dismissed, .expired, .withdrawn: true
        }
    }
}

/// How a terminal alert ended (the resource's `result`).
public struct AlertResult: Sendable, Hashable, Codable {
    /// Equal to the terminal state.
    public var outcome: AlertState
    /// The chosen button's title; nil unless answered.
    public var button: String?
    /// The chosen button's index in `buttons`; nil unless answered.
    public var buttonIndex: Int?
    /// True when the chosen button has style `cancel`.
    public var cancelled: Bool
    /// The token name that answered or withdrew it; nil without auth. For an alert of
    /// several deciders (`quorum` above 1), the decider whose vote completed it.
    public var decidedBy: String?
    /// The reason the person gave with the choice that decided it (SPEC §13): the deciding
    /// vote's comment; nil when none (and for an alert nobody chose).
    public var comment: String?
    /// The values of the alert's `fields` given with the deciding choice (SPEC §13), by field
    /// name; empty when none.
    public var values: [String: String]
    /// Every vote the alert had, in the order they were committed (SPEC §10): for an
    /// answered alert of `quorum` 1, its one choice; empty for an alert withdrawn,
    /// dismissed or expired before anyone chose.
    public var votes: [Vote]

    /// A result; `outcome` must be a terminal state.
    public init(
        outcome: AlertState, button: String? = nil, buttonIndex: Int? = nil, cancelled: Bool = false, decidedBy: String? = nil,
        votes: [Vote] = [], comment: String? = nil, values: [String: String] = [:]
    ) {
        self.outcome = outcome
        self.button = button
        self.buttonIndex = buttonIndex
        self.cancelled = cancelled
        self.decidedBy = decidedBy
        self.comment = comment
        self.values = values
        self.votes = votes
    }

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case outcome, button
        case buttonIndex = "button_index"
        case cancelled
        case decidedBy = "decided_by"
        case comment, values, votes
    }

    /// Every member name a result has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// Decodes a result; a daemon older than `quorum` (0.x without SPEC §10) sends no
    /// `votes`, one older than answers with words (SPEC §13) no `comment` or `values`:
    /// empty then.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        outcome = try container.decode(AlertState.self, forKey: .outcome)
        button = try container.decodeIfPresent(String.self, forKey: .button)
        buttonIndex = try container.decodeIfPresent(Int.self, forKey: .buttonIndex)
        cancelled = try container.decode(Bool.self, forKey: .cancelled)
        decidedBy = try container.decodeIfPresent(String.self, forKey: .decidedBy)
        comment = try container.decodeIfPresent(String.self, forKey: .comment)
        values = try container.decodeIfPresent([String: String].self, forKey: .values) ?? [:]
        votes = try container.decodeIfPresent([Vote].self, forKey: .votes) ?? []
    }

    /// Encodes every member, `null` included, as the daemon writes them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(button, forKey: .button)
        try container.encode(buttonIndex, forKey: .buttonIndex)
        try container.encode(cancelled, forKey: .cancelled)
        try container.encode(decidedBy, forKey: .decidedBy)
        try container.encode(comment, forKey: .comment)
        try container.encode(values, forKey: .values)
        try container.encode(votes, forKey: .votes)
    }

    /// Writes the result as the daemon writes it: members in ``memberNames`` order, `null` for what is absent.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("outcome")
        json.string(outcome.rawValue)
        json.key("button")
        json.string(button)
        json.key("button_index")
        json.int(buttonIndex)
        json.key("cancelled")
        json.bool(cancelled)
        json.key("decided_by")
        json.string(decidedBy)
        json.key("comment")
        json.string(comment)
        json.key("values")
        json.values(values)
        json.key("votes")
        json.votes(votes)
        json.endObject()
    }
}

/// One decider's choice on an alert that needs several (SPEC §10, `quorum` above 1), or
/// the one choice that answered an alert of `quorum` 1:
/// `{"decided_by":"alice","button":"Deploy","button_index":0,"at":"…"}`.
public struct Vote: Sendable, Hashable, Codable {
    /// The name of the token that chose; nil without tokens (then only an alert of
    /// `quorum` 1 can be answered).
    public var decidedBy: String?
    /// The chosen button's title.
    public var button: String
    /// The chosen button's index in `buttons`.
    public var buttonIndex: Int
    /// When the vote was made.
    public var at: Timestamp
    /// The reason the decider gave (SPEC §13); nil when none.
    public var comment: String?
    /// The values of the alert's `fields` the decider gave, by field name (SPEC §13); empty when none.
    public var values: [String: String]

    /// A vote with every field given.
    public init(
        decidedBy: String?, button: String, buttonIndex: Int, at: Timestamp, comment: String? = nil, values: [String: String] = [:]
    ) {
        self.decidedBy = decidedBy
        self.button = button
        self.buttonIndex = buttonIndex
        self.at = at
        self.comment = comment
        self.values = values
    }

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case decidedBy = "decided_by"
        case button
        case buttonIndex = "button_index"
        case at, comment, values
    }

    /// Every member name a vote has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// Decodes a vote; a daemon older than answers with words (SPEC §13) sends no `comment`
    /// or `values`: none then.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        decidedBy = try container.decodeIfPresent(String.self, forKey: .decidedBy)
        button = try container.decode(String.self, forKey: .button)
        buttonIndex = try container.decode(Int.self, forKey: .buttonIndex)
        at = try container.decode(Timestamp.self, forKey: .at)
        comment = try container.decodeIfPresent(String.self, forKey: .comment)
        values = try container.decodeIfPresent([String: String].self, forKey: .values) ?? [:]
    }

    /// Encodes every member, `null` included, as the daemon writes them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(decidedBy, forKey: .decidedBy)
        try container.encode(button, forKey: .button)
        try container.encode(buttonIndex, forKey: .buttonIndex)
        try container.encode(at, forKey: .at)
        try container.encode(comment, forKey: .comment)
        try container.encode(values, forKey: .values)
    }

    /// Writes the vote as the daemon writes it, members in ``memberNames`` order.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("decided_by")
        json.string(decidedBy)
        json.key("button")
        json.string(button)
        json.key("button_index")
        json.int(buttonIndex)
        json.key("at")
        json.timestamp(at)
        json.key("comment")
        json.string(comment)
        json.key("values")
        json.values(values)
        json.endObject()
    }

    /// Reads votes as ``JSONWriter/votes(_:)`` writes them (a store's column, a resource's
    /// member); nil when `value` is not such an array.
    public static func votes(from value: JSONValue) -> [Vote]? {
        guard case .array(let items) = value else { return nil }
        var votes: [Vote] = []
        votes.reserveCapacity(items.count)
        for item in items {
            guard case .object(let fields) = item, case .string(let button)? = fields["button"],
                case .number(let index)? = fields["button_index"], let buttonIndex = index.wholeInt,
                case .string(let time)? = fields["at"], let at = Timestamp(rfc3339: time)
            else { return nil }
            let decidedBy: String?
            switch fields["decided_by"] {
            case .string(let name)?: decidedBy = name
            case .null?, nil: decidedBy = nil
            default: return nil
            }
            // Absent from votes stored before answers with words (SPEC §13): none.
            let comment: String?
            switch fields["comment"] {
            case .string(let text)?: comment = text
            case .null?, nil: comment = nil
            default: return nil
            }
            guard let values = Self.values(from: fields["values"]) else { return nil }
            votes.append(Vote(decidedBy: decidedBy, button: button, buttonIndex: buttonIndex, at: at, comment: comment, values: values))
        }
        return votes
    }
}

extension Vote {
    /// The values of a field's answer as ``JSONWriter/values(_:)`` writes them: `{}` (or
    /// absent, or null) for none; nil when `value` is not an object of strings.
    public static func values(from value: JSONValue?) -> [String: String]? {
        switch value {
        case nil, .null?: return [:]
        case .object(let members)?:
            var values: [String: String] = [:]
            for (name, value) in members {
                guard case .string(let text) = value else { return nil }
                values[name] = text
            }
            return values
        default: return nil
        }
    }
}

extension JSONWriter {
    /// `[{"decided_by":…,"button":…,"button_index":…,"at":…,"comment":…,"values":{…}}, …]`:
    /// how votes look in the API and in the stores.
    public mutating func votes(_ votes: [Vote]) {
        beginArray()
        for vote in votes { vote.write(into: &self) }
        endArray()
    }

    /// `{"ticket":"OPS-123"}`: the values of an answer's fields (SPEC §13), names sorted so
    /// that the same values are always the same bytes.
    public mutating func values(_ values: [String: String]) {
        beginObject()
        for name in values.keys.sorted() {
            key(name)
            string(values[name]!)
        }
        endObject()
    }
}

/// One violation of §2: the field's path (`buttons[1].title`) and why.
public struct FieldError: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The path of the field, `buttons[1].title`.
    public var field: String
    /// Why it is refused, for people.
    public var reason: String

    /// A violation of `field` for `reason`.
    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    /// `{"field":…,"reason":…}`, as a problem's `errors` list it.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("field")
        json.string(field)
        json.key("reason")
        json.string(reason)
        json.endObject()
    }

    public var description: String { "\(field): \(reason)" }
}

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

extension Timestamp: Codable {
    /// Decodes RFC 3339 text (`2026-11-21T19:01:00.123Z`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 time: \(text)")
        }
        self = value
    }

    /// Encodes as RFC 3339 UTC with milliseconds.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }
}
