// The request and response bodies of the HTTP API (SPEC §2, §4), as Codable values.
// The daemon writes these shapes with its own fast writer; a property test renders
// random valid alerts, decodes them into these types as the SDK does and writes
// them back (`write(into:)`) to the same bytes, so the SDK and the daemon cannot drift.

// Here, an alert's own: the post, the resource and a choice. The others are next to it:
// AlertEvent.swift (callback and webhook bodies), ClientResources.swift (pages of alerts
// and clients), DeliveryResources.swift (webhooks, push subscriptions, deliveries) and
// ProblemDocument.swift (errors).

/// An alert to post (`POST /v1/clients/{client}/alerts`): what §2 lets a poster set.
///
/// ```swift
/// let alert = NewAlert(title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")])
/// ```
public struct NewAlert: Sendable, Hashable, Codable {
    /// 1–256 characters.
    public var title: String
    /// At most 4096 characters.
    public var message: String?
    /// `alert` (default) or `action_sheet`.
    public var style: AlertStyle?
    /// 0–16 buttons, titles unique, at most one `cancel`. No buttons: a notice dismissed after `dismissAfter`.
    public var buttons: [Button]?
    /// −100…100; higher is displayed earlier. Default 0.
    public var priority: Int?
    /// Seconds until a still-pending alert expires; default and maximum from the daemon's config.
    public var expiresIn: Double?
    /// Only without buttons: seconds the alert stays displayed before it is dismissed.
    public var dismissAfter: Double?
    /// An absolute http(s) URL that receives the terminal event.
    public var callbackURL: String?
    /// Any JSON object up to 4 KiB, echoed back everywhere the alert appears.
    public var metadata: JSONObject?
    /// How many different deciders must choose the same button before it is answered
    /// (SPEC §10): 1–10, default 1. Above 1 needs buttons and a daemon with tokens.
    public var quorum: Int?
    /// Values the person answering is asked for (SPEC §13): at most 5, names unique. Needs buttons.
    public var fields: [AlertField]?
    /// Who is asked next when nobody answers (SPEC §12): at most 5 steps, `after` increasing
    /// and below the alert's expiry. Replaces the client's policy from the config; `[]`
    /// turns escalation off for this alert; nil: the client's policy.
    public var escalation: [EscalationStep]?

    /// A value with every field given.
    public init(
        title: String, message: String? = nil, style: AlertStyle? = nil, buttons: [Button]? = nil, priority: Int? = nil,
        expiresIn: Double? = nil, dismissAfter: Double? = nil, callbackURL: String? = nil, metadata: JSONObject? = nil,
        quorum: Int? = nil, fields: [AlertField]? = nil, escalation: [EscalationStep]? = nil
    ) {
        self.escalation = escalation
        self.title = title
        self.message = message
        self.style = style
        self.buttons = buttons
        self.priority = priority
        self.expiresIn = expiresIn
        self.dismissAfter = dismissAfter
        self.callbackURL = callbackURL
        self.metadata = metadata
        self.quorum = quorum
        self.fields = fields
    }

    enum CodingKeys: String, CodingKey {
        case title, message, style, buttons, priority, metadata, quorum, fields, escalation
        case expiresIn = "expires_in"
        case dismissAfter = "dismiss_after"
        case callbackURL = "callback_url"
    }
}

/// The alert resource the daemon returns (§2): what was posted plus its id, state and times.
public struct AlertResource: Sendable, Hashable, Codable {
    /// Opaque, URL-safe, unique, sortable by creation.
    public var id: String
    /// The client (display target) it belongs to.
    public var client: String
    /// Where it stands: `queued`, `displayed` or one of the terminal states.
    public var state: AlertState
    /// 0 when displayed, n when n alerts are ahead of it; nil once terminal.
    public var position: Int?
    /// The title, 1–256 characters.
    public var title: String
    /// The longer text, if any.
    public var message: String?
    /// `alert` or `action_sheet`.
    public var style: AlertStyle
    /// The buttons in the order posted; none for a notice.
    public var buttons: [Button]
    /// The values the person answering is asked for (SPEC §13), each with the buttons it
    /// belongs to; empty when none.
    public var fields: [AlertField]
    /// −100…100; higher is displayed earlier.
    public var priority: Int
    /// How many different deciders must choose the same button (SPEC §10); 1 for most alerts.
    public var quorum: Int
    /// Seconds from creation to `expiresAt`.
    public var expiresIn: Double
    /// Buttonless alerts only: seconds displayed before dismissal.
    public var dismissAfter: Double?
    /// The URL that receives the terminal event, if any.
    public var callbackURL: String?
    /// The poster's JSON object, as posted.
    public var metadata: JSONObject?
    /// When it was posted.
    public var createdAt: Timestamp
    /// When it was (last) displayed; nil while it never was.
    public var displayedAt: Timestamp?
    /// When it became terminal; nil while pending.
    public var decidedAt: Timestamp?
    /// When it expires if still pending.
    public var expiresAt: Timestamp
    /// The name of the token that posted it (SPEC §10); nil without tokens. With a `quorum`
    /// above 1 that token may not approve it (it may still cancel or withdraw it).
    public var postedBy: String?
    /// The votes so far, in the order they were committed (SPEC §10); empty when none.
    /// An answered alert of `quorum` 1 has one: the choice that answered it.
    public var votes: [Vote]
    /// Its escalation policy (SPEC §12): its own, or its client's as it was when posted
    /// (steps at or past its expiry left out); empty when none.
    public var escalation: [EscalationStep]
    /// The steps taken so far, in step order (SPEC §12): the clients it was also queued on,
    /// and when; empty when none. An alert read through one of these clients' paths came
    /// by escalation from ``client``.
    public var escalatedTo: [EscalatedTo]
    /// How it ended; nil while pending.
    public var result: AlertResult?

    /// A value with every field given.
    public init(
        id: String, client: String, state: AlertState, position: Int?, title: String, message: String?, style: AlertStyle,
        buttons: [Button], priority: Int, expiresIn: Double, dismissAfter: Double?, callbackURL: String?,
        metadata: JSONObject?, createdAt: Timestamp, displayedAt: Timestamp?, decidedAt: Timestamp?, expiresAt: Timestamp,
        result: AlertResult?, quorum: Int = 1, votes: [Vote] = [], postedBy: String? = nil,
        fields: [AlertField] = [], escalation: [EscalationStep] = [], escalatedTo: [EscalatedTo] = []
    ) {
        self.escalation = escalation
        self.escalatedTo = escalatedTo
        self.id = id
        self.client = client
        self.state = state
        self.position = position
        self.title = title
        self.message = message
        self.style = style
        self.buttons = buttons
        self.priority = priority
        self.expiresIn = expiresIn
        self.dismissAfter = dismissAfter
        self.callbackURL = callbackURL
        self.metadata = metadata
        self.createdAt = createdAt
        self.displayedAt = displayedAt
        self.decidedAt = decidedAt
        self.expiresAt = expiresAt
        self.result = result
        self.quorum = quorum
        self.votes = votes
        self.postedBy = postedBy
        self.fields = fields
    }

    /// True once answered, dismissed, expired or withdrawn.
    public var isTerminal: Bool { state.isTerminal }

    /// The member names, in the order the daemon writes them: ``write(into:)`` and
    /// ``memberNames`` follow this list, and a property test holds the daemon's
    /// renderer to it byte for byte.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, client, state, position, title, message, style, buttons, fields, priority, quorum
        case expiresIn = "expires_in"
        case dismissAfter = "dismiss_after"
        case callbackURL = "callback_url"
        case metadata
        case createdAt = "created_at"
        case displayedAt = "displayed_at"
        case decidedAt = "decided_at"
        case expiresAt = "expires_at"
        case postedBy = "posted_by"
        case votes, escalation
        case escalatedTo = "escalated_to"
        case result
    }

    /// Every member name the resource has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// Decodes a resource as the daemon writes it. A daemon older than `quorum` (SPEC §10)
    /// sends neither `quorum` nor `votes`: 1 and none then; one older than `posted_by`, nil;
    /// one older than answers with words (SPEC §13) no `fields`: none then; one older than
    /// escalation (SPEC §12) neither `escalation` nor `escalated_to`: none then.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        client = try container.decode(String.self, forKey: .client)
        state = try container.decode(AlertState.self, forKey: .state)
        position = try container.decodeIfPresent(Int.self, forKey: .position)
        title = try container.decode(String.self, forKey: .title)
        message = try container.decodeIfPresent(String.self, forKey: .message)
        style = try container.decode(AlertStyle.self, forKey: .style)
        buttons = try container.decode([Button].self, forKey: .buttons)
        fields = try container.decodeIfPresent([AlertField].self, forKey: .fields) ?? []
        priority = try container.decode(Int.self, forKey: .priority)
        quorum = try container.decodeIfPresent(Int.self, forKey: .quorum) ?? 1
        expiresIn = try container.decode(Double.self, forKey: .expiresIn)
        dismissAfter = try container.decodeIfPresent(Double.self, forKey: .dismissAfter)
        callbackURL = try container.decodeIfPresent(String.self, forKey: .callbackURL)
        metadata = try container.decodeIfPresent(JSONObject.self, forKey: .metadata)
        createdAt = try container.decode(Timestamp.self, forKey: .createdAt)
        displayedAt = try container.decodeIfPresent(Timestamp.self, forKey: .displayedAt)
        decidedAt = try container.decodeIfPresent(Timestamp.self, forKey: .decidedAt)
        expiresAt = try container.decode(Timestamp.self, forKey: .expiresAt)
        postedBy = try container.decodeIfPresent(String.self, forKey: .postedBy)
        votes = try container.decodeIfPresent([Vote].self, forKey: .votes) ?? []
        escalation = try container.decodeIfPresent([EscalationStep].self, forKey: .escalation) ?? []
        escalatedTo = try container.decodeIfPresent([EscalatedTo].self, forKey: .escalatedTo) ?? []
        result = try container.decodeIfPresent(AlertResult.self, forKey: .result)
    }

    /// Writes the resource as the daemon writes it: every member in ``memberNames``
    /// order, `null` for what is absent, whole seconds as integers (`3600`, otherwise
    /// `1.5`), times as RFC 3339 with milliseconds, metadata member for member.
    ///
    /// Decoding the daemon's bytes with ``JSONValueDecoder`` and writing them back
    /// gives the same bytes:
    ///
    /// ```swift
    /// let alert = try JSONValueDecoder().decode(AlertResource.self, from: body)
    /// var json = JSONWriter()
    /// alert.write(into: &json)
    /// // json.bytes == body
    /// ```
    public func write(into json: inout JSONWriter) {
        Self.write(
            id: id, client: client, state: state, position: position, title: title, message: message, style: style, buttons: buttons,
            fields: fields, priority: priority, quorum: quorum, expiresIn: .seconds(expiresIn),
            dismissAfter: dismissAfter.map(Interval.seconds),
            callbackURL: callbackURL, metadata: metadata.map(CompactJSON.init), createdAt: createdAt, displayedAt: displayedAt,
            decidedAt: decidedAt, expiresAt: expiresAt, postedBy: postedBy, votes: votes, escalation: escalation,
            escalatedTo: escalatedTo, result: result, into: &json)
    }

    /// A duration of the resource (`expires_in`, `dismiss_after`): the daemon keeps
    /// milliseconds, a decoded resource seconds.
    public enum Interval: Sendable {
        case milliseconds(Int64)
        case seconds(Double)

        func write(into json: inout JSONWriter) {
            switch self {
            case .seconds(let seconds):
                json.seconds(seconds)
            case .milliseconds(let milliseconds):
                // Whole seconds as an integer, otherwise seconds with milliseconds.
                if milliseconds % 1000 == 0 { json.int64(milliseconds / 1000) } else { json.double(Double(milliseconds) / 1000) }
            }
        }
    }

    /// The one writer of the alert resource (§2): the daemon's answers, `current`, the
    /// callback events and the MCP server write it here, and so does ``write(into:)``.
    /// Every member in ``memberNames`` order, `null` for what is absent; `position` only
    /// while pending; times as RFC 3339 with milliseconds; metadata as posted (compacted).
    public static func write(
        id: String, client: String, state: AlertState, position: Int?, title: String, message: String?, style: AlertStyle,
        buttons: [Button], fields: [AlertField], priority: Int, quorum: Int, expiresIn: Interval, dismissAfter: Interval?,
        callbackURL: String?,
        metadata: CompactJSON?, createdAt: Timestamp, displayedAt: Timestamp?, decidedAt: Timestamp?, expiresAt: Timestamp,
        postedBy: String?, votes: [Vote], escalation: [EscalationStep] = [], escalatedTo: [EscalatedTo] = [], result: AlertResult?,
        into json: inout JSONWriter
    ) {
        // Member by member in ``memberNames`` order (a loop over `CodingKeys.allCases` would
        // build that array on every alert written); a test holds the two to one order.
        json.beginObject()
        json.key("id")
        json.string(id)
        json.key("client")
        json.string(client)
        json.key("state")
        json.string(state.rawValue)
        json.key("position")
        json.int(state.isTerminal ? nil : position)
        json.key("title")
        json.string(title)
        json.key("message")
        json.string(message)
        json.key("style")
        json.string(style.rawValue)
        json.key("buttons")
        json.beginArray()
        for button in buttons { button.write(into: &json) }
        json.endArray()
        json.key("fields")
        json.fields(fields)
        json.key("priority")
        json.int(priority)
        json.key("quorum")
        json.int(quorum)
        json.key("expires_in")
        expiresIn.write(into: &json)
        json.key("dismiss_after")
        if let dismissAfter { dismissAfter.write(into: &json) } else { json.null() }
        json.key("callback_url")
        json.string(callbackURL)
        json.key("metadata")
        if let metadata { json.raw(metadata.bytes) } else { json.null() }
        json.key("created_at")
        json.timestamp(createdAt)
        json.key("displayed_at")
        json.timestamp(displayedAt)
        json.key("decided_at")
        json.timestamp(decidedAt)
        json.key("expires_at")
        json.timestamp(expiresAt)
        json.key("posted_by")
        json.string(postedBy)
        json.key("votes")
        json.votes(votes)
        json.key("escalation")
        json.escalation(escalation)
        json.key("escalated_to")
        json.escalatedTo(escalatedTo)
        json.key("result")
        if let result { result.write(into: &json) } else { json.null() }
        json.endObject()
    }
}

extension JSONWriter {
    /// Seconds as the API writes them: a whole number as an integer, otherwise the
    /// shortest decimal that reads back as `seconds`; `null` when nil.
    mutating func seconds(_ seconds: Double?) {
        guard let seconds else { return null() }
        // Below 2^53 every whole Double is an exact Int64.
        if seconds == seconds.rounded(.towardZero), abs(seconds) < 9_007_199_254_740_992 {
            int64(Int64(seconds))
        } else {
            double(seconds)
        }
    }
}

/// `POST .../alerts/{id}/choice`: exactly one of the button's title or its index, and
/// optionally a comment and the values of the alert's fields (SPEC §13).
///
/// ```swift
/// try await alerts.choose(on: "ops", id: id, .title("Deploy").with(comment: "window agreed", values: ["ticket": "OPS-123"]))
/// ```
public struct ButtonChoice: Sendable, Hashable, Codable {
    /// The button's title.
    public var button: String?
    /// The button's index into `buttons`.
    public var buttonIndex: Int?
    /// Why: at most 1 000 characters. Nil sends none.
    public var comment: String?
    /// The values of the alert's fields, by name. Nil (or empty) sends none.
    public var values: [String: String]?

    /// A choice with every member given.
    public init(button: String?, buttonIndex: Int?, comment: String? = nil, values: [String: String]? = nil) {
        self.button = button
        self.buttonIndex = buttonIndex
        self.comment = comment
        self.values = values
    }

    /// Chooses by title.
    public static func title(_ title: String) -> ButtonChoice { ButtonChoice(button: title, buttonIndex: nil) }
    /// Chooses by index into `buttons`.
    public static func index(_ index: Int) -> ButtonChoice { ButtonChoice(button: nil, buttonIndex: index) }

    /// The same choice with a comment and values.
    public func with(comment: String? = nil, values: [String: String]? = nil) -> ButtonChoice {
        ButtonChoice(button: button, buttonIndex: buttonIndex, comment: comment ?? self.comment, values: values ?? self.values)
    }

    enum CodingKeys: String, CodingKey {
        case button
        case buttonIndex = "button_index"
        case comment, values
    }
}
