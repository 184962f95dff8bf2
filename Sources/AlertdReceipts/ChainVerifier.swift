/// Checks receipts in `seq` order, one at a time, as `alertctl audit verify` reads an audit
/// export: each is well formed, signed by a key of the key set, one more than the previous
/// `seq`, and linked to the previous receipt's hash. It stops believing at the first
/// failure and names it.
///
/// A chain that starts at `seq` 1 must link to 64 zeros. One that starts later (an export
/// resumed with `--after N`) is taken from its first receipt on: that receipt's own link is
/// not checked, and ``ChainReport/firstLinkChecked`` says so.
///
/// ```swift
/// var verifier = ChainVerifier(keys: keys)
/// for line in lines { if let failure = verifier.check(line: line) { print(failure); break } }
/// print(verifier.report)   // 120 receipts, seq 1 to 120, head …
/// ```
public struct ChainVerifier: Sendable {
    public let keys: ReceiptKeySet
    /// Where the chain stands after the last receipt checked; nil before the first.
    public private(set) var head: ChainLink?
    /// Receipts checked so far (lines, with ``check(line:)``).
    public private(set) var count = 0
    /// The first receipt's `seq`.
    public private(set) var firstSeq: Int?
    /// The first failure; once set, nothing more is checked.
    public private(set) var failure: ChainFailure?
    /// The key ids that signed the receipts checked, in order of first use.
    public private(set) var keyIDs: [String] = []

    public init(keys: ReceiptKeySet) { self.keys = keys }

    /// Checks the next receipt of the chain; the failure, if it is the first.
    @discardableResult
    public mutating func check(_ signed: SignedReceipt) -> ChainFailure? {
        guard failure == nil else { return nil }
        count += 1
        let receipt = signed.receipt
        func fail(_ reason: ChainFailure.Reason) -> ChainFailure {
            let found = ChainFailure(position: count, seq: receipt.seq, alertID: receipt.alertID, reason: reason)
            failure = found
            return found
        }
        do {
            try signed.verify(with: keys)
        } catch let error where error == .unknownKey {
            return fail(.unknownKey(receipt.keyID))
        } catch let error where error == .badSignature {
            return fail(.badSignature(keyID: receipt.keyID))
        } catch {
            return fail(.malformed(error.detail))
        }
        let expectedSeq = (head?.seq ?? 0) + 1
        if let head {
            guard receipt.seq == expectedSeq else { return fail(.sequence(expected: expectedSeq, found: receipt.seq)) }
            guard receipt.prevSHA256 == head.sha256 else { return fail(.brokenLink(expected: head.sha256, found: receipt.prevSHA256)) }
        } else if receipt.seq == 1, receipt.prevSHA256 != Receipt.noPrevious {
            return fail(.brokenLink(expected: Receipt.noPrevious, found: receipt.prevSHA256))
        }
        do {
            head = try signed.link()
        } catch {
            return fail(.malformed(error.detail))
        }
        if firstSeq == nil { firstSeq = receipt.seq }
        if !keyIDs.contains(receipt.keyID) { keyIDs.append(receipt.keyID) }
        return nil
    }

    /// Checks the next line of an audit export (one receipt as JSON; blank lines are skipped
    /// and count for nothing but their place).
    @discardableResult
    public mutating func check(line: some StringProtocol) -> ChainFailure? {
        guard failure == nil else { return nil }
        if line.allSatisfy(\.isWhitespace) { return nil }
        do {
            return check(try SignedReceipt(text: line))
        } catch {
            count += 1
            let found = ChainFailure(position: count, seq: nil, alertID: nil, reason: .malformed(error.detail))
            failure = found
            return found
        }
    }

    /// What was checked, and the first failure if there was one.
    public var report: ChainReport {
        ChainReport(count: failure == nil ? count : count - 1, firstSeq: firstSeq, head: head, keyIDs: keyIDs, failure: failure)
    }

    /// Checks `receipts` in order.
    public static func verify(_ receipts: some Sequence<SignedReceipt>, keys: ReceiptKeySet) -> ChainReport {
        var verifier = ChainVerifier(keys: keys)
        for receipt in receipts where verifier.check(receipt) != nil { break }
        return verifier.report
    }

    /// Checks the lines of an audit export in order.
    public static func verify(lines: some Sequence<some StringProtocol>, keys: ReceiptKeySet) -> ChainReport {
        var verifier = ChainVerifier(keys: keys)
        for line in lines where verifier.check(line: line) != nil { break }
        return verifier.report
    }
}

/// The first receipt of a chain that fails, and why.
public struct ChainFailure: Sendable, Hashable, CustomStringConvertible {
    /// Its place among the receipts checked, from 1 (a line of an export, blank lines aside).
    public let position: Int
    /// Its `seq`, when it could be read.
    public let seq: Int?
    /// Its `alert_id`, when it could be read.
    public let alertID: String?
    public let reason: Reason

    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// Not a receipt: not JSON, a member missing or of the wrong type.
        case malformed(String)
        /// Signed with a key the key set does not list.
        case unknownKey(String)
        /// The signature is not the key's over these members: a member was changed.
        case badSignature(keyID: String)
        /// Not the `seq` after the previous receipt's: one missing, repeated or out of order.
        case sequence(expected: Int, found: Int)
        /// `prev_sha256` is not the hash of the previous receipt: the previous receipt, or this
        /// one's link, is not what was signed in the chain.
        case brokenLink(expected: String, found: String)

        public var description: String {
            switch self {
            case .malformed(let detail): "not a receipt: \(detail)"
            case .unknownKey(let keyID): "unknown key: key_id \(keyID) is not in the key set"
            case .badSignature(let keyID): "bad signature: it does not verify with key \(keyID) (a member was changed)"
            case .sequence(let expected, let found) where found > expected:
                "gap in seq: expected \(expected), found \(found) (\(found - expected) receipt\(found - expected == 1 ? "" : "s") missing)"
            case .sequence(let expected, let found):
                "seq out of order: expected \(expected), found \(found) (repeated or reordered)"
            case .brokenLink(let expected, let found):
                "broken chain: prev_sha256 is \(found), the previous receipt hashes to \(expected)"
            }
        }
    }

    /// `receipt 3 (seq 12, alert 01J…): bad signature: …`.
    public var description: String {
        var place = "receipt \(position)"
        var about: [String] = []
        if let seq { about.append("seq \(seq)") }
        if let alertID { about.append("alert \(alertID)") }
        if !about.isEmpty { place += " (\(about.joined(separator: ", ")))" }
        return "\(place): \(reason)"
    }
}

/// What a chain verification found.
public struct ChainReport: Sendable, Hashable, CustomStringConvertible {
    /// Receipts that passed every check.
    public let count: Int
    public let firstSeq: Int?
    /// Where the chain stands after the last receipt that passed.
    public let head: ChainLink?
    /// The keys that signed them, by id, in order of first use.
    public let keyIDs: [String]
    public let failure: ChainFailure?

    /// No failure.
    public var isValid: Bool { failure == nil }
    /// Whether the first receipt's link was checked: it was `seq` 1, linked to 64 zeros.
    public var firstLinkChecked: Bool { firstSeq == 1 }

    public var description: String {
        if let failure { return "FAILED at \(failure) (\(count) receipt\(count == 1 ? "" : "s") before it verified)" }
        guard let head, let firstSeq else { return "no receipts" }
        let start = firstSeq == 1 ? "" : "; the chain was taken from seq \(firstSeq) on: its link to seq \(firstSeq - 1) is not checked"
        return "ok: \(count) receipt\(count == 1 ? "" : "s"), seq \(firstSeq) to \(head.seq), every signature and link verified\(start); "
            + "head \(head.sha256); keys \(keyIDs.joined(separator: ", "))"
    }
}
