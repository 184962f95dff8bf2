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
