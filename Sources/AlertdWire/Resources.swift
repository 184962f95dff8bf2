// The request and response bodies of the HTTP API (SPEC §2, §4), as Codable values.
// The daemon writes these shapes with its own fast writer; a property test renders
// random valid alerts, decodes them into these types as the SDK does and writes
// them back (`write(into:)`) to the same bytes, so the SDK and the daemon cannot drift.

// Just over 400 lines: every resource of the API as the SDK decodes it, one
// Codable type each, kept together so the wire format reads as one document.

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

/// The body of a callback or webhook delivery (§5): `{"type":"alert.<state>",
/// "timestamp":…,"data":{"alert":…}}`, the alert as it became terminal. Decode a body
/// ``WebhookVerifier`` accepted (AlertdClient) with it.
///
/// ```swift
/// let event = try JSONDecoder().decode(AlertEvent.self, from: Data(body))
/// if event.data.alert.result?.button == "Deploy" { … }
/// ```
public struct AlertEvent: Sendable, Hashable, Codable {
    /// `alert.` + the terminal state (`alert.answered`, …).
    public var type: String
    /// When the alert became terminal.
    public var timestamp: Timestamp
    /// What the event is about.
    public var data: EventData

    /// `data`: the alert, and for `alert.escalated` (SPEC §12) the step it took; for a terminal
    /// event, the decision's signed receipt (SPEC §14).
    public struct EventData: Sendable, Hashable, Codable {
        public var alert: AlertResource
        /// `alert.escalated` only: the step taken; nil for a terminal event.
        public var escalation: EscalationEvent?
        /// A terminal event's receipt (SPEC §14), as `GET …/alerts/{id}/receipt` answers it
        /// (AlertdReceipts' `SignedReceipt(json:)` reads and verifies it); nil for `alert.escalated`.
        public var receipt: JSONObject?

        public init(alert: AlertResource, escalation: EscalationEvent? = nil, receipt: JSONObject? = nil) {
            self.alert = alert
            self.escalation = escalation
            self.receipt = receipt
        }
    }

    /// The type of the event of an escalation step (SPEC §12).
    public static let escalatedType = "alert.escalated"

    /// A value with every field given.
    public init(type: String, timestamp: Timestamp, alert: AlertResource) {
        self.type = type
        self.timestamp = timestamp
        self.data = EventData(alert: alert)
    }

    /// Writes the event: the one writer of its shape.
    public func write(into json: inout JSONWriter) {
        var body = JSONWriter(capacity: 2048)
        Self.write(type: type, timestamp: timestamp, escalation: data.escalation, into: &body) { data.alert.write(into: &$0) }
        guard let receipt = data.receipt else { return json.raw(body.bytes) }
        json.raw(Self.body(body.bytes, addingReceipt: JSONValue.object(receipt).compactBytes()) ?? body.bytes)
    }

    /// A terminal event's body with its receipt (SPEC §14) as `data.receipt`, after the
    /// alert: the body as ``write(type:timestamp:escalation:into:alert:)`` wrote it, which
    /// ends by closing `data` and the event, with `,"receipt":` and `receipt` (a JSON object)
    /// before those two braces. A store attaches it once the decision's receipt is signed,
    /// before the event is written: every attempt sends and signs these bytes. nil for a
    /// body that does not end as that writer ends one.
    public static func body(_ body: [UInt8], addingReceipt receipt: [UInt8]) -> [UInt8]? {
        guard body.count >= 2, body.suffix(2).elementsEqual("}}".utf8) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(body.count + receipt.count + 12)
        out.append(contentsOf: body.dropLast(2))
        out.append(contentsOf: #","receipt":"#.utf8)
        out.append(contentsOf: receipt)
        out.append(contentsOf: "}}".utf8)
        return out
    }

    /// The one writer of the event's shape; `alert` writes the alert resource (the
    /// daemon passes the bytes it rendered, which every attempt sends and signs);
    /// `escalation`, for `alert.escalated`, the step.
    public static func write(
        type: String, timestamp: Timestamp, escalation: EscalationEvent? = nil, into json: inout JSONWriter,
        alert: (inout JSONWriter) -> Void
    ) {
        json.beginObject()
        json.key("type")
        json.string(type)
        json.key("timestamp")
        json.timestamp(timestamp)
        json.key("data")
        json.beginObject()
        json.key("alert")
        alert(&json)
        if let escalation {
            json.key("escalation")
            escalation.write(into: &json)
        }
        json.endObject()
        json.endObject()
    }
}

/// The step of an `alert.escalated` event (SPEC §12): `{"index":0,"after":300,"to":"ops-lead","at":"…"}`.
public struct EscalationEvent: Sendable, Hashable, Codable {
    /// The step's index in the alert's `escalation`.
    public var index: Int
    /// Its `after`, in seconds.
    public var after: Double
    /// The client the alert was also queued on.
    public var to: String
    /// When it was.
    public var at: Timestamp

    public init(index: Int, after: Double, to: String, at: Timestamp) {
        self.index = index
        self.after = after
        self.to = to
        self.at = at
    }

    /// Writes the step as the daemon does.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("index")
        json.int(index)
        json.key("after")
        json.seconds(after)
        json.key("to")
        json.string(to)
        json.key("at")
        json.timestamp(at)
        json.endObject()
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

/// `GET /v1/clients/{client}/alerts`: one page and the cursor of the next (nil on the last page).
public struct AlertPage: Sendable, Hashable, Codable {
    /// The alerts of this page.
    public var alerts: [AlertResource]
    /// Pass as `cursor` for the next page; nil on the last one.
    public var nextCursor: String?

    /// A value with every field given.
    public init(alerts: [AlertResource], nextCursor: String?) {
        self.alerts = alerts
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey {
        case alerts
        case nextCursor = "next_cursor"
    }

    /// Writes the page: `{"alerts":[…],"next_cursor":…}`.
    public func write(into json: inout JSONWriter) {
        Self.write(nextCursor: nextCursor, into: &json) { json in
            for alert in alerts { alert.write(into: &json) }
        }
    }

    /// The one writer of a page: `alerts` writes each alert resource in turn (the daemon
    /// writes them from its domain alerts, the decoded page from its resources).
    public static func write(nextCursor: String?, into json: inout JSONWriter, alerts: (inout JSONWriter) -> Void) {
        json.beginObject()
        json.key(CodingKeys.alerts.rawValue)
        json.beginArray()
        alerts(&json)
        json.endArray()
        json.key(CodingKeys.nextCursor.rawValue)
        json.string(nextCursor)
        json.endObject()
    }
}

/// One client in `GET /v1/clients`.
public struct ClientSummary: Sendable, Hashable, Codable {
    /// The client (display target) it belongs to.
    public var client: String
    /// Displayed plus queued alerts.
    public var pending: Int
    /// The displayed alert's id, nil when nothing is displayed.
    public var displayed: String?

    /// A value with every field given.
    public init(client: String, pending: Int, displayed: String?) {
        self.client = client
        self.pending = pending
        self.displayed = displayed
    }

    /// `{"client":…,"pending":…,"displayed":…}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("client")
        json.string(client)
        json.key("pending")
        json.int(pending)
        json.key("displayed")
        json.string(displayed)
        json.endObject()
    }
}

/// `GET /v1/clients`: one page of the clients the token may see, by id, and the
/// cursor of the next page (nil on the last).
public struct ClientList: Sendable, Hashable, Codable {
    public var clients: [ClientSummary]
    /// Pass as `cursor` for the next page; nil on the last one.
    public var nextCursor: String?

    /// A value with every field given.
    public init(clients: [ClientSummary], nextCursor: String?) {
        self.clients = clients
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey {
        case clients
        case nextCursor = "next_cursor"
    }

    /// Writes the page as the daemon answers it: `{"clients":[…],"next_cursor":…}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key(CodingKeys.clients.rawValue)
        json.beginArray()
        for summary in clients { summary.write(into: &json) }
        json.endArray()
        json.key(CodingKeys.nextCursor.rawValue)
        json.string(nextCursor)
        json.endObject()
    }
}

/// `POST /v1/clients/{client}/webhooks`: a URL and, optionally, the secret to sign with.
public struct WebhookRegistration: Sendable, Hashable, Codable {
    /// The http(s) URL that receives terminal events.
    public var url: String
    /// Nil: the daemon generates `whsec_` + base64 of 32 random bytes.
    public var secret: String?

    /// A value with every field given.
    public init(url: String, secret: String? = nil) {
        self.url = url
        self.secret = secret
    }
}

/// A registered webhook: its secret only in the answer to its registration.
public struct WebhookResource: Sendable, Hashable, Codable {
    /// Its id.
    public var id: String
    /// The http(s) URL that receives terminal events.
    public var url: String
    /// Shown once, when the webhook is registered; nil afterwards.
    public var secret: String?
    /// `api` or `config`: where the webhook was registered. Nil in the registration's answer.
    public var source: String?

    /// A value with every field given.
    public init(id: String, url: String, secret: String? = nil, source: String? = nil) {
        self.id = id
        self.url = url
        self.secret = secret
        self.source = source
    }

    /// Writes the webhook as the daemon answers it: `id`, `url`, then `secret` and
    /// `source` where they are given (the registration's answer has the secret, a list
    /// the source).
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id")
        json.string(id)
        json.key("url")
        json.string(url)
        if let secret {
            json.key("secret")
            json.string(secret)
        }
        if let source {
            json.key("source")
            json.string(source)
        }
        json.endObject()
    }
}

/// `GET /v1/clients/{client}/webhooks`.
public struct WebhookList: Sendable, Hashable, Codable {
    /// The client's webhooks, without secrets.
    public var webhooks: [WebhookResource]

    /// A value with every field given.
    public init(webhooks: [WebhookResource]) { self.webhooks = webhooks }

    /// `{"webhooks":[…]}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("webhooks")
        json.beginArray()
        for webhook in webhooks { webhook.write(into: &json) }
        json.endArray()
        json.endObject()
    }
}

/// A push subscription as the API shows it (SPEC §11): never the device's keys.
public struct PushSubscriptionResource: Sendable, Hashable, Codable {
    /// `ps_…`.
    public var id: String
    /// The push service's URL for the device.
    public var endpoint: String
    /// The clients whose displayed alerts it is pushed.
    public var clients: [String]
    /// Whether its pushes carry an `answer_url`.
    public var answer: Bool
    /// The name of the token that made it (nil without tokens): who answers through it.
    public var decider: String?
    public var createdAt: Timestamp

    /// A value with every field given.
    public init(id: String, endpoint: String, clients: [String], answer: Bool, decider: String?, createdAt: Timestamp) {
        self.id = id
        self.endpoint = endpoint
        self.clients = clients
        self.answer = answer
        self.decider = decider
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, endpoint, clients, answer, decider
        case createdAt = "created_at"
    }

    /// `{id, endpoint, clients, answer, decider, created_at}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id")
        json.string(id)
        json.key("endpoint")
        json.string(endpoint)
        json.key("clients")
        json.beginArray()
        for client in clients { json.string(client) }
        json.endArray()
        json.key("answer")
        json.bool(answer)
        json.key("decider")
        json.string(decider)
        json.key("created_at")
        json.timestamp(createdAt)
        json.endObject()
    }
}

/// `GET /v1/push/subscriptions`.
public struct PushSubscriptionList: Sendable, Hashable, Codable {
    public var subscriptions: [PushSubscriptionResource]

    public init(subscriptions: [PushSubscriptionResource]) { self.subscriptions = subscriptions }

    /// `{"subscriptions":[…]}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("subscriptions")
        json.beginArray()
        for subscription in subscriptions { subscription.write(into: &json) }
        json.endArray()
        json.endObject()
    }
}

/// `GET /v1/clients/{client}/alerts/{id}/deliveries`.
public struct DeliveryList: Sendable, Hashable, Codable {
    /// One per target of the alert's terminal event.
    public var deliveries: [DeliveryRecord]

    /// A value with every field given.
    public init(deliveries: [DeliveryRecord]) { self.deliveries = deliveries }

    /// `{"deliveries":[…]}`, each as ``DeliveryRecord/write(into:)`` writes it.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("deliveries")
        json.beginArray()
        for record in deliveries { record.write(into: &json) }
        json.endArray()
        json.endObject()
    }
}

/// A problem+json error body (RFC 9457) as alertd writes it.
public struct ProblemDocument: Sendable, Hashable, Codable {
    /// A URI naming the problem type.
    public var type: String
    /// The title, 1–256 characters.
    public var title: String
    /// The HTTP status.
    public var status: Int
    /// What went wrong in this request, for people.
    public var detail: String
    /// The stable machine-readable code: one of ``ProblemCode``'s raw values.
    public var code: String
    /// `invalid-alert`, `invalid-answer`: one entry per violation.
    public var errors: [FieldError]?
    /// `already-decided`, `already-voted`: the alert as it is.
    public var alert: AlertResource?

    /// The base of every problem's `type` URI; the code follows it.
    public static let typeBase = "https://alertd.dev/problems/"

    /// Writes the document as the daemon answers it: `type`, `title`, `status`,
    /// `detail`, `code`, then `errors` when given and `alert` when `alert` writes one.
    public func write(into json: inout JSONWriter) {
        Self.write(
            code: ProblemCode(code, status, title), detail: detail, errors: errors, into: &json,
            alert: alert.map { alert in { alert.write(into: &$0) } })
    }

    /// The one writer of a problem document (RFC 9457, §4).
    public static func write(
        code: ProblemCode, detail: String, errors: [FieldError]?, into json: inout JSONWriter,
        alert: ((inout JSONWriter) -> Void)? = nil
    ) {
        json.beginObject()
        json.key("type")
        json.string(typeBase + code.rawValue)
        json.key("title")
        json.string(code.title)
        json.key("status")
        json.int(code.status)
        json.key("detail")
        json.string(detail)
        json.key("code")
        json.string(code.rawValue)
        if let errors {
            json.key("errors")
            json.beginArray()
            for error in errors { error.write(into: &json) }
            json.endArray()
        }
        if let alert {
            json.key("alert")
            alert(&json)
        }
        json.endObject()
    }
}

/// The stable problem codes of §4, with their status and title.
///
/// Equality is by ``rawValue``: a code from a newer daemon compares by its name.
public struct ProblemCode: Hashable, Sendable, CustomStringConvertible {
    /// The stable code, `not-found`.
    public let rawValue: String
    /// The HTTP status it comes with.
    public let status: Int
    /// The short title alertd gives it.
    public let title: String

    /// A value with every field given.
    public init(_ rawValue: String, _ status: Int, _ title: String) {
        self.rawValue = rawValue
        self.status = status
        self.title = title
    }

    public static func == (a: ProblemCode, b: ProblemCode) -> Bool { a.rawValue == b.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
    public var description: String { rawValue }

    /// 400: a malformed request, query value or client id.
    public static let badRequest = ProblemCode("bad-request", 400, "Bad request")
    /// 400: the posted alert breaks §2; the problem lists each field.
    public static let invalidAlert = ProblemCode("invalid-alert", 400, "Invalid alert")
    /// 400: a choice's comment or values do not fit the alert (SPEC §13); the problem lists each.
    public static let invalidAnswer = ProblemCode("invalid-answer", 400, "Invalid answer")
    /// 401: no token, or a wrong one.
    public static let unauthorized = ProblemCode("unauthorized", 401, "Unauthorized")
    /// 403: the token lacks the role or the client.
    public static let forbidden = ProblemCode("forbidden", 403, "Forbidden")
    /// 404: no such alert, webhook or route.
    public static let notFound = ProblemCode("not-found", 404, "Not found")
    /// 405: the route exists with other methods (see `Allow`).
    public static let methodNotAllowed = ProblemCode("method-not-allowed", 405, "Method not allowed")
    /// 409: a choice for an alert that is queued, not displayed.
    public static let notDisplayed = ProblemCode("not-displayed", 409, "Alert not displayed")
    /// 409: the alert is terminal; the problem holds it.
    public static let alreadyDecided = ProblemCode("already-decided", 409, "Alert already decided")
    /// 409: the decider voted for another button of this alert (SPEC §10); the problem holds it.
    public static let alreadyVoted = ProblemCode("already-voted", 409, "Already voted")
    /// 409: a destructive button chosen through an `answer_url` without `"confirm": true` (SPEC §11).
    public static let confirmationRequired = ProblemCode("confirmation-required", 409, "Confirmation required")
    /// 410: an `answer_url` used before, expired, or for an alert already decided (SPEC §11).
    public static let answerUsed = ProblemCode("answer-used", 410, "Answer link used")
    /// 409: the URL is already registered as a webhook of that client (its id is in the detail).
    public static let webhookExists = ProblemCode("webhook-exists", 409, "Webhook already registered")
    /// 413: the body is over the limit (64 KiB by default).
    public static let payloadTooLarge = ProblemCode("payload-too-large", 413, "Payload too large")
    /// 415: a body that is not `application/json`.
    public static let unsupportedMediaType = ProblemCode("unsupported-media-type", 415, "Unsupported media type")
    /// 422: the alert has no such button.
    public static let unknownButton = ProblemCode("unknown-button", 422, "Unknown button")
    /// 422: an `Idempotency-Key` reused with a different body.
    public static let idempotencyMismatch = ProblemCode("idempotency-mismatch", 422, "Idempotency key reused")
    /// 429: the client has its maximum of pending alerts.
    public static let queueFull = ProblemCode("queue-full", 429, "Queue full")
    /// 429: the token is over its rate; wait `Retry-After` seconds.
    public static let rateLimited = ProblemCode("rate-limited", 429, "Rate limited")
    /// 503: the daemon holds its maximum of long-polls.
    public static let tooManyWaiters = ProblemCode("too-many-waiters", 503, "Too many waiters")
    /// 503: the daemon is shutting down or its store is failing.
    public static let unavailable = ProblemCode("unavailable", 503, "Unavailable")
    /// 500: an error alertd did not expect (a bug); the detail names the request id to look for in its log.
    public static let `internal` = ProblemCode("internal", 500, "Internal error")

    /// Every code: those §4 lists, then alertd's own (`webhook-exists`, `internal`).
    public static let all: [ProblemCode] = [
        .badRequest, .invalidAlert, .invalidAnswer, .unauthorized, .forbidden, .notFound, .methodNotAllowed, .notDisplayed,
        .alreadyDecided, .alreadyVoted, .confirmationRequired, .webhookExists, .answerUsed, .payloadTooLarge, .unsupportedMediaType,
        .unknownButton, .idempotencyMismatch,
        .queueFull, .rateLimited, .tooManyWaiters, .unavailable, .internal,
    ]

    /// The code named `rawValue`: a known one, or an unknown one kept by name with the answer's status.
    public init(named rawValue: String, status: Int) {
        self = Self.all.first { $0.rawValue == rawValue } ?? ProblemCode(rawValue, status, rawValue)
    }
}
