public import AlertdCore
public import AlertdReceipts
public import AlertdWire

/// A receipt as a store keeps it (SPEC §14): its place in the chain, the alert it is about,
/// when that was decided, and the receipt resource itself: the JCS bytes of the signed
/// receipt, which `GET …/receipt` answers, an audit export writes as one line, and the next
/// receipt's `prev_sha256` hashes.
public struct ReceiptRecord: Sendable, Hashable {
    public var seq: Int
    public var alertID: AlertID
    /// The alert's own client (an escalated alert's receipt is its own client's, SPEC §12).
    public var client: String
    /// The alert's `decided_at`: what `receipts.retention` counts from.
    public var decidedAt: Timestamp
    /// The receipt resource, canonical (RFC 8785).
    public var json: [UInt8]

    public init(seq: Int, alertID: AlertID, client: String, decidedAt: Timestamp, json: [UInt8]) {
        self.seq = seq
        self.alertID = alertID
        self.client = client
        self.decidedAt = decidedAt
        self.json = json
    }

    /// The record of a receipt just appended to the chain for `alert`.
    public init(_ appended: ReceiptChain.Appended, of alert: Alert) {
        self.init(
            seq: appended.receipt.receipt.seq, alertID: alert.id, client: alert.client, decidedAt: alert.decidedAt ?? alert.createdAt,
            json: appended.bytes)
    }
}

/// What a store holds of receipts, for `/metrics`.
public struct ReceiptTotals: Sendable, Hashable {
    /// Receipts kept (those `receipts.retention` purged are not).
    public var count: Int
    /// Their bytes (the receipts' canonical JSON).
    public var bytes: Int
    /// The chain's head: the `seq` of the last receipt written (0: none yet).
    public var lastSeq: Int

    public init(count: Int, bytes: Int, lastSeq: Int) {
        self.count = count
        self.bytes = bytes
        self.lastSeq = lastSeq
    }
}

extension ReceiptDraft {
    /// The draft of a decided alert's receipt (SPEC §14), as a reader of `GET …/alerts/{id}`
    /// holds the alert: `content_sha256` over the asked-for members as the resource renders
    /// them (``ReceiptContent``), `votes` as the resource writes them, and the result's
    /// outcome, button, decider and words.
    ///
    /// The members are taken from the alert, each as the resource's own writer writes it (the
    /// buttons, fields, votes and metadata written by it and read back; the rest are plain
    /// strings and integers), not from the whole resource rendered and parsed again, which
    /// cost as much again (bench/RESULTS.md, issue 47). `ResourceCodecTests` holds the two
    /// ways to the same content and votes for random alerts.
    ///
    /// A store builds it in the transaction that decides the alert, off the request's thread
    /// (the embedded store's signer thread, beside its writer; the shared store's flush).
    ///
    /// An alert whose `metadata` holds a number beyond the double range has no JCS form: posts
    /// refuse such numbers (`invalid-alert`), so only an alert stored before that check could;
    /// its content is hashed with the number written as posted (``ReceiptContent/sha256(ofAlertWritingNumbersAsPosted:)``).
    ///
    /// An alert that is not terminal, or whose stored `metadata` does not parse, has no
    /// receipt: the draft throws (``Undraftable``) rather than sign one that misstates what was
    /// asked or what became of it, and the decision's commit fails with it.
    public init(decided alert: Alert) throws(Undraftable) {
        guard let outcome = Receipt.Outcome(rawValue: alert.state.rawValue) else {
            throw Undraftable(alert: alert.id, reason: "it is \(alert.state.rawValue), not decided")
        }
        let resource = try Self.asked(alert)
        let content = (try? ReceiptContent.sha256(ofAlert: resource)) ?? ReceiptContent.sha256(ofAlertWritingNumbersAsPosted: resource)
        var votes: [JSONValue] = []
        if case .array(let items) = Self.written({ $0.votes(alert.votes) }) { votes = items }
        let result = alert.result
        self.init(
            alertID: alert.id.description, client: alert.client, contentSHA256: content,
            outcome: outcome,
            button: result?.button, buttonIndex: result?.buttonIndex, decidedBy: result?.decidedBy, votes: votes,
            comment: result?.comment, values: result?.values ?? [:], decidedAt: (alert.decidedAt ?? alert.createdAt).rfc3339)
    }

    /// Why a decided alert has no receipt: a store's state no post or decision leaves.
    public struct Undraftable: Error, CustomStringConvertible {
        public let alert: AlertID
        public let reason: String
        public var description: String { "alert \(alert) has no receipt: \(reason)" }
    }

    /// The members of `alert`'s resource that ``ReceiptContent`` hashes, as the resource has them.
    static func asked(_ alert: Alert) throws(Undraftable) -> JSONObject {
        var members = JSONObject()
        members["client"] = .string(alert.client)
        members["title"] = .string(alert.title)
        members["message"] = alert.message.map(JSONValue.string) ?? .null
        members["style"] = .string(alert.style.rawValue)
        members["buttons"] = written { json in
            json.beginArray()
            for button in alert.buttons { button.write(into: &json) }
            json.endArray()
        }
        members["priority"] = .number(JSONNumber(alert.priority))
        members["quorum"] = .number(JSONNumber(alert.quorum))
        members["fields"] = written { $0.fields(alert.fields) }
        if let metadata = alert.metadata {
            guard let parsed = try? JSONParser.parse(metadata.bytes) else {
                throw Undraftable(alert: alert.id, reason: "its stored metadata is not JSON")
            }
            members["metadata"] = parsed
        } else {
            members["metadata"] = .null
        }
        members["posted_by"] = alert.postedBy.map(JSONValue.string) ?? .null
        members["created_at"] = .string(alert.createdAt.rfc3339)
        return members
    }

    /// What `write` writes, read back.
    private static func written(_ write: (inout JSONWriter) -> Void) -> JSONValue {
        var json = JSONWriter(capacity: 256)
        write(&json)
        return (try? JSONParser.parse(json.bytes)) ?? .null
    }
}

extension OutboxEvent {
    /// Whether it is an alert's terminal event (`alert.answered`, `alert.withdrawn`,
    /// `alert.expired`, `alert.dismissed`), which carries the decision's receipt (SPEC §14).
    public var takesReceipt: Bool { Self.terminalTypes.contains(type) }

    private static let terminalTypes = Set(AlertState.allCases.filter(\.isTerminal).map { "alert." + $0.rawValue })

    /// The event with its alert's receipt in its body (`data.receipt`) when it is a terminal
    /// event and `receipts` holds one for its alert; else as it is.
    public func attaching(receipts: [AlertID: ReceiptRecord]) -> OutboxEvent {
        guard takesReceipt, let receipt = receipts[alertID], let body = AlertEvent.body(body, addingReceipt: receipt.json) else {
            return self
        }
        var event = self
        event.body = body
        return event
    }
}

extension Engine {
    /// `GET …/alerts/{id}/receipt` (SPEC §14): the receipt of alert `id` read through `client`
    /// (its own, or one it escalated to). `notFound` while the alert is pending (its receipt is
    /// written with its decision), and when there is none. Receipts outlive their alerts
    /// (`receipts.retention` is apart from `alerts.retention`): once the alert is purged its
    /// receipt is still found through the alert's own client.
    public func receipt(of id: AlertID, on client: String) async throws(EngineError) -> ReceiptRecord {
        let found = try await lookup(id, on: client)
        if let found, found.alert.isPending {
            throw EngineError(.notFound, "alert \(id) is \(found.alert.state.rawValue): its receipt is written when it is decided")
        }
        guard let receipt = try await store.receipt(of: id), found != nil || receipt.client == client else {
            throw EngineError(
                .notFound,
                found == nil
                    ? "no alert \(id) on client \(client)"
                    : "alert \(id) has no receipt (it was decided before receipts were written, or receipts.retention removed it)")
        }
        return receipt
    }

    /// `GET /v1/audit` (SPEC §14): the receipts after `seq` `after`, in `seq` order, at most `limit`.
    public func audit(after: Int, limit: Int) async throws(EngineError) -> [ReceiptRecord] {
        try await store.receipts(after: after, limit: limit)
    }

    /// The receipts kept and the chain's head (for `/metrics`); nil: not known yet.
    public var receiptTotals: ReceiptTotals? { store.receiptTotals }
}

extension Committed {
    /// Takes the receipts the commit wrote: ``receipts`` by alert, and the deliveries of
    /// `events` (the transaction's, whose deliveries these are) again with each terminal
    /// event carrying its alert's receipt, as the store wrote it.
    public mutating func attach(_ written: [ReceiptRecord], events: [OutboxEvent]) {
        for record in written { receipts[record.alertID] = record }
        let receipts = self.receipts
        deliveries = events.flatMap { $0.attaching(receipts: receipts).pendingDeliveries }
    }
}

extension Engine {
    /// An alert as a long-poll answers it (SPEC §14): with its receipt once terminal.
    public struct PolledAlert: Sendable {
        public var alert: PositionedAlert
        /// nil while pending (or for an alert decided before receipts were written).
        public var receipt: ReceiptRecord?

        public init(alert: PositionedAlert, receipt: ReceiptRecord?) {
            self.alert = alert
            self.receipt = receipt
        }
    }

    /// `alert` with its receipt read from the store when it is terminal.
    public func polled(_ alert: PositionedAlert) async throws(EngineError) -> PolledAlert {
        guard alert.alert.state.isTerminal else { return PolledAlert(alert: alert, receipt: nil) }
        return PolledAlert(alert: alert, receipt: try await store.receipt(of: alert.alert.id))
    }
}
