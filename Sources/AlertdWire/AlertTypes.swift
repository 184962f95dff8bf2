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
