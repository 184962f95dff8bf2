public import AlertdWire
import Crypto

/// A receipt before it has a place in the chain: everything §14 says of the decision, which a
/// store builds from the decided alert in the transaction that decides it, then appends to its
/// ``ReceiptChain`` (`seq`, `prev_sha256`, `key_id` and the signature come from the chain).
public struct ReceiptDraft: Sendable, Hashable {
    public var alertID: String
    public var client: String
    /// SHA-256 (hex) of the JCS of what was asked (``ReceiptContent``).
    public var contentSHA256: String
    public var outcome: Receipt.Outcome
    public var button: String?
    public var buttonIndex: Int?
    public var decidedBy: String?
    /// Every vote, as the alert resource writes them.
    public var votes: [JSONValue]
    public var comment: String?
    public var values: [String: String]
    /// RFC 3339 UTC with milliseconds, as the alert's `decided_at`.
    public var decidedAt: String

    public init(
        alertID: String, client: String, contentSHA256: String, outcome: Receipt.Outcome, button: String? = nil, buttonIndex: Int? = nil,
        decidedBy: String? = nil, votes: [JSONValue] = [], comment: String? = nil, values: [String: String] = [:], decidedAt: String
    ) {
        self.alertID = alertID
        self.client = client
        self.contentSHA256 = contentSHA256
        self.outcome = outcome
        self.button = button
        self.buttonIndex = buttonIndex
        self.decidedBy = decidedBy
        self.votes = votes
        self.comment = comment
        self.values = values
        self.decidedAt = decidedAt
    }

    /// The draft as the receipt after `previous`, not yet signed.
    public func receipt(after previous: ChainLink) -> Receipt {
        Receipt(
            after: previous, alertID: alertID, client: client, contentSHA256: contentSHA256, outcome: outcome, button: button,
            buttonIndex: buttonIndex, decidedBy: decidedBy, votes: votes, comment: comment, values: values, decidedAt: decidedAt)
    }
}

/// The deployment's chain of receipts as its one writer of the moment appends to it: the head
/// (``ChainLink``) and the key that signs. Each append signs the next receipt, whose
/// `prev_sha256` is the hash of the receipt before it, signature included, so receipts are
/// signed one after the other, in commit order.
///
/// The embedded store's writer keeps one for as long as it runs (its head is the last
/// receipt committed, and goes back there when a commit fails); a store shared by several
/// instances takes the head from the database in each transaction that decides, under a lock
/// every instance takes, and keeps the chain only for that transaction.
///
/// ```swift
/// var chain = ReceiptChain(key: key, head: storedHead)
/// let signed = try chain.append(draft)   // seq storedHead.seq + 1
/// ```
public struct ReceiptChain: Sendable {
    public let key: ReceiptSigningKey
    /// Where the chain stands: the last receipt appended.
    public private(set) var head: ChainLink

    public init(key: ReceiptSigningKey, head: ChainLink = .start) {
        self.key = key
        self.head = head
    }

    /// The next receipt: `draft` at `head.seq + 1`, linked to the head and signed; the head
    /// moves to it.
    public mutating func append(_ draft: ReceiptDraft) throws(ReceiptError) -> Appended {
        var receipt = draft.receipt(after: head)
        receipt.keyID = key.keyID
        // One canonical pass: what is signed, and with the signature spliced in, the receipt's bytes.
        let (unsigned, at) = try receipt.canonicalWithoutSignature()
        let signature = key.signature(for: unsigned)
        let bytes = Receipt.splice(Base64URL.encode(signature), into: unsigned, at: at)
        head = ChainLink(seq: receipt.seq, sha256: hex(SHA256.hash(data: bytes)))
        return Appended(receipt: SignedReceipt(receipt: receipt, signature: signature), bytes: bytes)
    }

    /// Moves the head back (to the last receipt committed, after a failed commit).
    public mutating func reset(to head: ChainLink) { self.head = head }

    /// A receipt appended: signed, and its JCS bytes (the resource, the audit line, what the
    /// next receipt's `prev_sha256` hashes).
    public struct Appended: Sendable, Hashable {
        public let receipt: SignedReceipt
        public let bytes: [UInt8]
    }
}

extension SignedReceipt {
    /// Checks that this is `alert`'s receipt and that the deployment signed it: the signature
    /// with the key its `key_id` names in `keys`, then that it is about this alert (its id
    /// and client), that `content_sha256` is the hash of what the alert asked
    /// (``ReceiptContent``, computed again from `alert`), and that it says what the alert's
    /// result says (outcome, button, decider, words, `decided_at`). The error says the first
    /// thing that does not hold.
    ///
    /// ```swift
    /// let decision = try await alerts.present(alert, on: "ops")
    /// try decision.receipt?.verify(with: try await alerts.receiptKeys(), for: decision.alert)
    /// ```
    public func verify(with keys: ReceiptKeySet, for alert: AlertResource) throws(ReceiptError) {
        try verify(with: keys)
        try verifyDecision(of: alert)
    }

    /// The checks of ``verify(with:for:)`` but the signature's: that the receipt is `alert`'s
    /// and says what its result says (what an SDK can check of a receipt before it has keys).
    public func verifyDecision(of alert: AlertResource) throws(ReceiptError) {
        func differs(_ member: String, _ receipt: String, _ alert: String) -> ReceiptError {
            ReceiptError(.notThisAlert, "\(member) is \(receipt) in the receipt and \(alert) in the alert")
        }
        func text(_ value: String?) -> String { value.map { "\"\($0)\"" } ?? "null" }
        guard receipt.alertID == alert.id else { throw differs("alert_id", receipt.alertID, alert.id) }
        guard receipt.client == alert.client else { throw differs("client", receipt.client, alert.client) }
        var json = JSONWriter(capacity: 2048)
        alert.write(into: &json)
        let content: String
        do {
            guard case .object(let object) = try JSONParser.parse(json.bytes) else { throw ReceiptError(.malformed, "") }
            content = try ReceiptContent.sha256(ofAlert: object)
        } catch {
            throw ReceiptError(.notThisAlert, "what the alert asked has no canonical form: \(error)")
        }
        guard receipt.contentSHA256 == content else {
            throw ReceiptError(
                .notThisAlert, "content_sha256 is not the hash of what the alert asked (\(content)): it was asked something else")
        }
        guard let result = alert.result else { throw ReceiptError(.notThisAlert, "the alert is \(alert.state.rawValue): not decided") }
        guard receipt.outcome.rawValue == result.outcome.rawValue else {
            throw differs("outcome", receipt.outcome.rawValue, result.outcome.rawValue)
        }
        guard receipt.button == result.button else { throw differs("button", text(receipt.button), text(result.button)) }
        guard receipt.buttonIndex == result.buttonIndex else {
            throw differs("button_index", receipt.buttonIndex.map(String.init) ?? "null", result.buttonIndex.map(String.init) ?? "null")
        }
        guard receipt.decidedBy == result.decidedBy else {
            throw differs("decided_by", text(receipt.decidedBy), text(result.decidedBy))
        }
        guard receipt.comment == result.comment else { throw differs("comment", text(receipt.comment), text(result.comment)) }
        guard receipt.values == result.values else { throw differs("values", "\(receipt.values)", "\(result.values)") }
        guard receipt.votes.count == result.votes.count else {
            throw differs("votes", "\(receipt.votes.count) votes", "\(result.votes.count) votes")
        }
        guard let decidedAt = alert.decidedAt?.rfc3339, receipt.decidedAt == decidedAt else {
            throw differs("decided_at", receipt.decidedAt, alert.decidedAt?.rfc3339 ?? "null")
        }
    }
}
