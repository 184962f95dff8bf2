// The chain verifier (what `alertctl audit verify` runs): a chain alertd could have made
// verifies, and each way of tampering with one (SPEC §14, issue 47's tests: a changed field,
// a removed line, a reordered pair, an unknown key) is named at the first receipt it breaks.

import AlertdWire
import Foundation
import Testing

@testable import AlertdReceipts

/// `count` receipts signed in a chain from `start`, with `keyFor(seq)` signing each.
func chain(_ count: Int, from start: ChainLink = .start, keyFor: (Int) -> ReceiptSigningKey = { _ in testKey }) throws -> [SignedReceipt] {
    var head = start
    var receipts: [SignedReceipt] = []
    for index in 0..<count {
        let outcomes = Receipt.Outcome.allCases
        let answered = outcomes[index % outcomes.count] == .answered
        let receipt = Receipt(
            after: head, alertID: "01JALERT\(head.seq + 1)", client: index.isMultiple(of: 2) ? "ops" : "deploys",
            contentSHA256: String(repeating: "ab", count: 32), outcome: outcomes[index % outcomes.count], button: answered ? "Deploy" : nil,
            buttonIndex: answered ? 0 : nil, decidedBy: answered ? "alice" : nil,
            votes: answered ? [["decided_by": "alice", "button": "Deploy", "button_index": 0, "at": "2026-11-21T19:01:00.123Z"]] : [],
            decidedAt: "2026-11-21T19:0\(index % 10):00.000Z")
        let signed = try keyFor(head.seq + 1).sign(receipt)
        receipts.append(signed)
        head = try signed.link()
    }
    return receipts
}

private func lines(_ receipts: [SignedReceipt]) throws -> [String] {
    try receipts.map { String(decoding: try $0.encoded(), as: UTF8.self) }
}

private let keys = ReceiptKeySet([testKey.publicKey])

@Suite("The chain verifier")
struct ChainVerifierTests {
    @Test("a chain from seq 1 verifies: every signature, seq and link, and its head is the last receipt's hash")
    func valid() throws {
        let receipts = try chain(6)
        let report = ChainVerifier.verify(lines: try lines(receipts) + [""], keys: keys)
        #expect(report.isValid, "\(report)")
        #expect(report.count == 6)
        #expect(report.firstLinkChecked)
        #expect(report.head == (try receipts.last!.link()))
        #expect(report.keyIDs == [testKey.keyID])
        #expect(ChainVerifier.verify(receipts, keys: keys) == report)
        #expect(report.description.hasPrefix("ok: 6 receipts, seq 1 to 6"))
    }

    @Test("no receipts: nothing verified, nothing failed")
    func empty() {
        let report = ChainVerifier.verify(lines: [String](), keys: keys)
        #expect(report.isValid && report.count == 0 && report.head == nil)
        #expect(report.description == "no receipts")
    }

    @Test("a changed field is a bad signature at that receipt")
    func changedField() throws {
        var text = try lines(try chain(5))
        text[2] = text[2].replacingOccurrences(
            of: #""decided_at":"2026-11-21T19:02:00.000Z""#, with: #""decided_at":"2026-11-21T19:02:00.001Z""#)
        let report = ChainVerifier.verify(lines: text, keys: keys)
        #expect(report.failure?.position == 3)
        #expect(report.failure?.seq == 3)
        #expect(report.failure?.reason == .badSignature(keyID: testKey.keyID))
        #expect(report.count == 2)
        #expect(report.description.hasPrefix("FAILED at receipt 3 (seq 3, alert 01JALERT3): bad signature"))
    }

    @Test("a removed line is a gap in seq at the receipt after it")
    func removedLine() throws {
        var text = try lines(try chain(5))
        text.remove(at: 1)
        let report = ChainVerifier.verify(lines: text, keys: keys)
        #expect(report.failure?.position == 2)
        #expect(report.failure?.reason == .sequence(expected: 2, found: 3))
        #expect(report.failure?.reason.description == "gap in seq: expected 2, found 3 (1 receipt missing)")
    }

    @Test("a reordered pair is named at the first of them")
    func reorderedPair() throws {
        var text = try lines(try chain(5))
        text.swapAt(2, 3)
        let report = ChainVerifier.verify(lines: text, keys: keys)
        #expect(report.failure?.position == 3)
        #expect(report.failure?.seq == 4)
        #expect(report.failure?.reason == .sequence(expected: 3, found: 4))
    }

    @Test("a repeated receipt is out of order")
    func repeated() throws {
        var text = try lines(try chain(3))
        text.insert(text[1], at: 2)
        let report = ChainVerifier.verify(lines: text, keys: keys)
        #expect(report.failure?.position == 3)
        #expect(report.failure?.reason.description == "seq out of order: expected 3, found 2 (repeated or reordered)")
    }

    @Test("a receipt under a key the set does not list is an unknown key")
    func unknownKey() throws {
        let stranger = ReceiptSigningKey.generate()
        let receipts = try chain(4) { $0 == 3 ? stranger : testKey }
        let report = ChainVerifier.verify(receipts, keys: keys)
        #expect(report.failure?.position == 3)
        #expect(report.failure?.reason == .unknownKey(stranger.keyID))
    }

    @Test("a receipt changed and signed again with the deployment's key breaks the next receipt's link")
    func resignedReceipt() throws {
        var receipts = try chain(4)
        var forged = receipts[1].receipt
        forged.decidedBy = "mallory"
        receipts[1] = try testKey.sign(forged)
        let report = ChainVerifier.verify(receipts, keys: keys)
        #expect(report.failure?.position == 3)
        guard case .brokenLink(let expected, let found)? = report.failure?.reason else {
            Issue.record("expected a broken link, got \(report)")
            return
        }
        #expect(expected == (try receipts[1].sha256()))
        #expect(found == receipts[2].receipt.prevSHA256)
    }

    @Test("the first receipt of a chain links to 64 zeros")
    func firstLink() throws {
        let receipts = try chain(2, from: ChainLink(seq: 0, sha256: String(repeating: "f", count: 64)))
        let report = ChainVerifier.verify(receipts, keys: keys)
        #expect(report.failure?.position == 1)
        #expect(report.failure?.reason == .brokenLink(expected: Receipt.noPrevious, found: String(repeating: "f", count: 64)))
    }

    @Test("an export resumed after seq N verifies from N+1 on, and says the link before it was not checked")
    func resumed() throws {
        let whole = try chain(6)
        let report = ChainVerifier.verify(Array(whole[3...]), keys: keys)
        #expect(report.isValid)
        #expect(report.firstSeq == 4)
        #expect(!report.firstLinkChecked)
        #expect(report.description.contains("its link to seq 3 is not checked"))
    }

    @Test("receipts across a key rotation verify while both keys are listed")
    func rotation() throws {
        let next = ReceiptSigningKey.generate()
        let receipts = try chain(4) { $0 <= 2 ? testKey : next }
        let both = ChainVerifier.verify(receipts, keys: ReceiptKeySet([next.publicKey, testKey.publicKey]))
        #expect(both.isValid, "\(both)")
        #expect(both.keyIDs == [testKey.keyID, next.keyID])
        let currentOnly = ChainVerifier.verify(receipts, keys: ReceiptKeySet([next.publicKey]))
        #expect(currentOnly.failure?.position == 1)
        #expect(currentOnly.failure?.reason == .unknownKey(testKey.keyID))
    }

    @Test("a line that is not a receipt is named by its place, and nothing after it is checked")
    func malformedLine() throws {
        var text = try lines(try chain(3))
        text.insert("", at: 1)
        text.insert(#"{"v":1}"#, at: 2)
        var verifier = ChainVerifier(keys: keys)
        var failures: [ChainFailure] = []
        for line in text { if let failure = verifier.check(line: line) { failures.append(failure) } }
        #expect(failures.count == 1)
        #expect(failures.first?.position == 2)
        guard case .malformed(let detail)? = failures.first?.reason else {
            Issue.record("expected malformed, got \(failures)")
            return
        }
        #expect(detail.contains("signature"))
        #expect(verifier.report.count == 1)
    }
}
