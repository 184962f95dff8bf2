public import AlertdWire
import Crypto

/// What a decision leaves behind (SPEC §14): which alert, what was asked (as a hash), how it
/// ended and who decided, chained to the receipt before it. ``SignedReceipt`` is the receipt
/// with its Ed25519 signature: the receipt resource.
///
/// A plain value with no knowledge of stores or of the alert types: a store builds it from
/// its own row in the same transaction as the decision, after ``ChainLink`` of the previous
/// receipt.
///
/// ```swift
/// let receipt = Receipt(
///     after: head, alertID: "01J…", client: "ops", contentSHA256: ReceiptContent.sha256(ofAlert: alert),
///     outcome: .answered, button: "Deploy", buttonIndex: 0, decidedBy: "alice", decidedAt: "2026-11-21T19:01:00.123Z")
/// let signed = key.sign(receipt)
/// head = signed.link
/// ```
public struct Receipt: Sendable, Hashable {
    /// The format's version: 1.
    public var version = 1
    /// The receipt's place in the deployment's chain: 1, 2, 3… without gaps.
    public var seq: Int
    public var alertID: String
    public var client: String
    /// SHA-256 (hex) of the JCS of what was asked (``ReceiptContent``).
    public var contentSHA256: String
    public var outcome: Outcome
    /// The chosen button's title; nil unless answered.
    public var button: String?
    /// The chosen button's index; nil unless answered.
    public var buttonIndex: Int?
    /// The token that answered or withdrew it (for a quorum, the vote that completed it); nil
    /// without auth and for an alert that expired or was dismissed.
    public var decidedBy: String?
    /// Every vote, as the alert resource writes them (`{"decided_by", "button", "button_index",
    /// "at", "comment", "values"}`), in the order they were committed.
    public var votes: [JSONValue]
    /// The deciding choice's comment (SPEC §13); nil when none.
    public var comment: String?
    /// The deciding choice's values (SPEC §13), by field name.
    public var values: [String: String]
    /// When it became terminal: RFC 3339 UTC with milliseconds, as the alert's `decided_at`.
    public var decidedAt: String
    /// SHA-256 (hex) of the previous receipt's JCS bytes, signature included; 64 zeros for seq 1.
    public var prevSHA256: String
    /// The signing key's id (``ReceiptPublicKey/keyID``); ``ReceiptSigningKey/sign(_:)`` sets it.
    public var keyID: String

    /// How the alert ended: its terminal state.
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        case answered, withdrawn, expired, dismissed
    }

    /// A receipt in the chain after `previous` (``ChainLink/start`` for the first).
    public init(
        after previous: ChainLink, alertID: String, client: String, contentSHA256: String, outcome: Outcome, button: String? = nil,
        buttonIndex: Int? = nil, decidedBy: String? = nil, votes: [JSONValue] = [], comment: String? = nil, values: [String: String] = [:],
        decidedAt: String, keyID: String = ""
    ) {
        self.seq = previous.seq + 1
        self.prevSHA256 = previous.sha256
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
        self.keyID = keyID
    }

    /// The member names of a receipt, `signature` aside.
    public static let memberNames = [
        "v", "seq", "alert_id", "client", "content_sha256", "outcome", "button", "button_index", "decided_by", "votes", "comment",
        "values", "decided_at", "prev_sha256", "key_id",
    ]

    /// The receipt as JSON, every member present (`null` where nothing applies).
    public var json: JSONObject {
        var object = JSONObject()
        object["v"] = .number(JSONNumber(version))
        object["seq"] = .number(JSONNumber(seq))
        object["alert_id"] = .string(alertID)
        object["client"] = .string(client)
        object["content_sha256"] = .string(contentSHA256)
        object["outcome"] = .string(outcome.rawValue)
        object["button"] = button.map(JSONValue.string) ?? .null
        object["button_index"] = buttonIndex.map { .number(JSONNumber($0)) } ?? .null
        object["decided_by"] = decidedBy.map(JSONValue.string) ?? .null
        object["votes"] = .array(votes)
        object["comment"] = comment.map(JSONValue.string) ?? .null
        object["values"] = .object(JSONObject(values.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) }))
        object["decided_at"] = .string(decidedAt)
        object["prev_sha256"] = .string(prevSHA256)
        object["key_id"] = .string(keyID)
        return object
    }

    /// What is signed: the JCS bytes of ``json``.
    public func signingInput() throws(ReceiptError) -> [UInt8] { try canonical(signature: nil) }

    /// The JCS bytes of ``json``, with `signature` (base64url) when given: written member by
    /// member in JCS's order, without building and sorting an object (a store signs every
    /// decision's receipt; `ReceiptTests` holds these bytes to ``JCS/canonicalize(_:)``'s).
    /// Every member name is ASCII, so their UTF-16 order (RFC 8785 §3.2.3) is this one.
    func canonical(signature: String?) throws(ReceiptError) -> [UInt8] {
        let (unsigned, at) = try canonicalWithoutSignature()
        guard let signature else { return unsigned }
        return Self.splice(signature, into: unsigned, at: at)
    }

    /// The JCS bytes without `signature`, and where `signature` goes in them (after `seq`):
    /// one pass gives what is signed and, spliced, the signed receipt's bytes.
    func canonicalWithoutSignature() throws(ReceiptError) -> (bytes: [UInt8], signatureAt: Int) {
        var out: [UInt8] = []
        out.reserveCapacity(740 + 160 * votes.count)
        func member(_ name: StaticString, _ first: Bool = false) {
            out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            out.append(UInt8(ascii: "\""))
            name.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(contentsOf: "\":".utf8)
        }
        func string(_ text: String?) {
            if let text { JCS.writeString(text, into: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        func integer(_ value: Int?) {
            if let value { out.append(contentsOf: JCS.serialize(Double(value)).utf8) } else { out.append(contentsOf: "null".utf8) }
        }
        member("alert_id", true)
        string(alertID)
        member("button")
        string(button)
        member("button_index")
        integer(buttonIndex)
        member("client")
        string(client)
        member("comment")
        string(comment)
        member("content_sha256")
        string(contentSHA256)
        member("decided_at")
        string(decidedAt)
        member("decided_by")
        string(decidedBy)
        member("key_id")
        string(keyID)
        member("outcome")
        string(outcome.rawValue)
        member("prev_sha256")
        string(prevSHA256)
        member("seq")
        integer(seq)
        let signatureAt = out.count
        member("v")
        integer(version)
        member("values")
        out.append(UInt8(ascii: "{"))
        // By their names' UTF-16 code units, as JCS sorts members.
        for (index, name) in values.keys.sorted(by: { $0.utf16.lexicographicallyPrecedes($1.utf16) }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JCS.writeString(name, into: &out)
            out.append(UInt8(ascii: ":"))
            JCS.writeString(values[name] ?? "", into: &out)
        }
        out.append(UInt8(ascii: "}"))
        member("votes")
        do {
            try JCS.write(.array(votes), into: &out)
        } catch {
            // Only a vote could hold a number JCS refuses; votes come from alertd's own resource.
            throw ReceiptError(.malformed, "votes: \(error)")
        }
        out.append(UInt8(ascii: "}"))
        return (out, signatureAt)
    }

    /// `bytes` (a receipt's JCS without its signature) with `"signature":…` inserted at `at`.
    static func splice(_ signature: String, into bytes: [UInt8], at: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + signature.utf8.count + 16)
        out.append(contentsOf: bytes[..<at])
        out.append(contentsOf: #","signature":"#.utf8)
        JCS.writeString(signature, into: &out)
        out.append(contentsOf: bytes[at...])
        return out
    }

    /// The receipt of a JSON object (a receipt resource or an audit line without its
    /// `signature`): every member of ``memberNames``, of its type, and no other.
    public init(json object: JSONObject) throws(ReceiptError) {
        func fail(_ member: String, _ why: String) -> ReceiptError { ReceiptError(.malformed, "\(member) \(why)") }
        for key in object.keys where !Self.memberNames.contains(key) {
            throw ReceiptError(.malformed, "unknown member \(key)")
        }
        func string(_ member: String) throws(ReceiptError) -> String {
            guard case .string(let text)? = object[member] else { throw fail(member, "must be a string") }
            return text
        }
        func optionalString(_ member: String) throws(ReceiptError) -> String? {
            switch object[member] {
            case .null?: return nil
            case .string(let text)?: return text
            default: throw fail(member, "must be a string or null")
            }
        }
        func integer(_ member: String, _ range: ClosedRange<Int>) throws(ReceiptError) -> Int? {
            switch object[member] {
            case .null?: return nil
            case .number(let number)?:
                guard let value = number.wholeInt, range.contains(value) else {
                    throw fail(member, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
                }
                return value
            default: throw fail(member, "must be an integer")
            }
        }
        func hex(_ member: String) throws(ReceiptError) -> String {
            let text = try string(member)
            guard Self.isHexDigest(text) else { throw fail(member, "must be 64 lowercase hex digits") }
            return text
        }
        guard let version = try integer("v", 1...1) else { throw fail("v", "must be 1") }
        guard let seq = try integer("seq", 1...Self.maxSeq) else { throw fail("seq", "must be an integer from 1") }
        guard let outcome = Outcome(rawValue: try string("outcome")) else {
            throw fail("outcome", "must be answered, withdrawn, expired or dismissed")
        }
        guard case .array(let votes)? = object["votes"] else { throw fail("votes", "must be an array") }
        guard case .object(let valueObject)? = object["values"] else { throw fail("values", "must be an object") }
        var values: [String: String] = [:]
        for (name, value) in valueObject {
            guard case .string(let text) = value else { throw fail("values.\(name)", "must be a string") }
            values[name] = text
        }
        let decidedAt = try string("decided_at")
        guard Timestamp(rfc3339: decidedAt) != nil else { throw fail("decided_at", "must be an RFC 3339 time") }
        self.version = version
        self.seq = seq
        self.alertID = try string("alert_id")
        self.client = try string("client")
        self.contentSHA256 = try hex("content_sha256")
        self.outcome = outcome
        self.button = try optionalString("button")
        self.buttonIndex = try integer("button_index", 0...Int(Int32.max))
        self.decidedBy = try optionalString("decided_by")
        self.votes = votes
        self.comment = try optionalString("comment")
        self.values = values
        self.decidedAt = decidedAt
        self.prevSHA256 = try hex("prev_sha256")
        self.keyID = try string("key_id")
        if keyID.isEmpty { throw fail("key_id", "must not be empty") }
    }

    /// The largest `seq`: the largest integer a double (and so JCS) holds exactly, 2^53 − 1.
    public static let maxSeq = 9_007_199_254_740_991

    /// 64 zeros: the `prev_sha256` of the first receipt.
    public static let noPrevious = String(repeating: "0", count: 64)

    static func isHexDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

/// Where the chain stands after a receipt: its `seq` and the SHA-256 of its JCS bytes, what
/// the next receipt carries as `prev_sha256`.
public struct ChainLink: Sendable, Hashable, CustomStringConvertible {
    public var seq: Int
    /// Hex, lowercase.
    public var sha256: String

    public init(seq: Int, sha256: String) {
        self.seq = seq
        self.sha256 = sha256
    }

    /// Before the first receipt: seq 0, 64 zeros.
    public static let start = ChainLink(seq: 0, sha256: Receipt.noPrevious)

    public var description: String { "seq \(seq) sha256 \(sha256)" }
}

/// What a receipt's `content_sha256` hashes (SPEC §14): the JCS of the alert's
/// `{"client", "title", "message", "style", "buttons", "priority", "quorum", "fields",
/// "metadata", "posted_by", "created_at"}` as the alert resource carries them (every member
/// present, `null` when the resource has it `null` or leaves it out). Anyone holding the
/// alert resource can compute it again; the rest of the resource (its state, its position,
/// its result, its deliveries) is not what was asked.
public enum ReceiptContent {
    /// The members hashed, in the SPEC's order.
    public static let memberNames = [
        "client", "title", "message", "style", "buttons", "priority", "quorum", "fields", "metadata", "posted_by", "created_at",
    ]

    /// The object hashed: ``memberNames`` of `alert`, each present.
    public static func content(ofAlert alert: JSONObject) -> JSONObject {
        JSONObject(memberNames.map { (key: $0, value: alert[$0] ?? .null) })
    }

    /// SHA-256 (hex) of the JCS of ``content(ofAlert:)``.
    public static func sha256(ofAlert alert: JSONObject) throws(JCSError) -> String {
        hex(SHA256.hash(data: try JCS.canonicalize(.object(content(ofAlert: alert)))))
    }

    /// The same hash for content JCS refuses: a number beyond the double range (`1e400`),
    /// which alertd refuses at post, written as posted (its literal) and everything else as
    /// JCS writes it. Only an alert stored before posts refused such numbers needs it; for
    /// any other content it is ``sha256(ofAlert:)``.
    public static func sha256(ofAlertWritingNumbersAsPosted alert: JSONObject) -> String {
        var out: [UInt8] = []
        // Nothing else is refused when out-of-range numbers are written.
        try? JCS.write(.object(content(ofAlert: alert)), into: &out, outOfRange: { $0.literal })
        return hex(SHA256.hash(data: out))
    }
}

/// Why a receipt was refused.
public struct ReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable { case malformed, unknownKey, badSignature, notThisAlert }
    let code: Code
    /// One line: what was wrong.
    public let detail: String

    init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public static func == (a: ReceiptError, b: ReceiptError) -> Bool { a.code == b.code }

    /// Not a receipt of format 1: a member missing, of the wrong type, or unknown.
    public static let malformed = ReceiptError(.malformed, "")
    /// Signed with a key the key set does not hold.
    public static let unknownKey = ReceiptError(.unknownKey, "")
    /// The signature is not the named key's over these members.
    public static let badSignature = ReceiptError(.badSignature, "")
    /// A valid receipt, but not of the alert it was checked against, or not of its decision.
    public static let notThisAlert = ReceiptError(.notThisAlert, "")

    public var description: String { detail }
}

func hex(_ digest: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in digest {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
}
