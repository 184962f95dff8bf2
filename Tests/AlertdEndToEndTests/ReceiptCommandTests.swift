import AlertdClient
import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

// Signed receipts (SPEC §14) from the command line and the SDK, against the real daemon:
// `alertctl get --receipt`, `alertctl audit export` then `audit verify`, and the SDK's
// `presentForDecision`, `receipt(on:id:)` and `SignedReceipt.verify(with:for:)`.
@Suite("Receipts from alertctl and the SDK")
struct ReceiptCommandTests {
    @Test("get --receipt prints the receipt, checked with the daemon's keys and against the alert; 3 while pending; --wait then --receipt")
    func getReceipt() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let alertd = try AlertdClient(url: daemon.baseURL)
        let posted = try await alertd.post(NewAlert(title: "Deploy?", buttons: [.default("Deploy"), .cancel("Cancel")]), to: "ops")

        let pending = try await ctl.run("get", "ops", posted.id, "--receipt")
        #expect(pending.status == 3 && pending.stderr.contains("is displayed: its receipt is written when it is decided"), "\(pending)")

        let waiting = try await ctl.start(["get", "ops", posted.id, "--wait", "30", "--receipt"])
        try await SDKTests.awaitWaiters(daemon, 1)
        _ = try await alertd.choose(on: "ops", id: posted.id, button: "Deploy")
        let shown = try await waiting.finish()
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stderr.contains("receipt seq 1 of alert \(posted.id) verified"), "\(shown)")
        let printed = try SignedReceipt(text: shown.stdout.trimmingCharacters(in: .newlines))
        #expect(shown.stdout == String(decoding: try printed.encoded(), as: UTF8.self) + "\n", "one line of canonical JSON")
        #expect(printed == (try await alertd.receipt(on: "ops", id: posted.id)))
        #expect(printed.receipt.outcome == .answered && printed.receipt.button == "Deploy")

        // The daemon's answer for another alert's receipt does not verify against this alert:
        // what --receipt refuses, the SDK's check names.
        let other = try await alertd.post(NewAlert(title: "Other", buttons: [.default("OK")]), to: "web")
        _ = try await alertd.withdraw(on: "web", id: other.id)
        let otherReceipt = try await alertd.receipt(on: "web", id: other.id)
        let alert = try await alertd.alert(on: "ops", id: posted.id)
        let keys = try await alertd.receiptKeys()
        try printed.verify(with: keys, for: alert)
        #expect(throws: ReceiptError.notThisAlert) { try otherReceipt.verify(with: keys, for: alert) }
        #expect(throws: ReceiptError.unknownKey) { try printed.verify(with: ReceiptKeySet([]), for: alert) }
    }

    @Test("audit export writes the log as JSON lines and resumes after a seq; audit verify checks the joined file")
    func exportAndVerify() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let alertd = try AlertdClient(url: daemon.baseURL)
        for index in 0..<5 {
            let alert = try await alertd.post(NewAlert(title: "Q\(index)", buttons: [.default("OK")]), to: "ops-\(index)")
            _ = try await alertd.choose(on: "ops-\(index)", id: alert.id, button: "OK")
        }
        let all = try await ctl.run("audit", "export")
        #expect(all.status == 0 && all.stderr.contains("exported 5 receipts, seq 1 to 5; resume with --after 5"), "\(all)")
        let lines = all.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        let first = try await ctl.run("audit", "export", "--after", "0")
        #expect(first.stdout == all.stdout)
        let rest = try await ctl.run("audit", "export", "--after", "3")
        #expect(rest.status == 0 && rest.stdout.split(separator: "\n").map(String.init) == Array(lines[3...]), "\(rest)")
        let none = try await ctl.run("audit", "export", "--after", "5")
        #expect(none.status == 0 && none.stdout.isEmpty && none.stderr.contains("no receipts after seq 5"), "\(none)")

        let scratch = try ScratchDirectory()
        let file = scratch.url.appendingPathComponent("audit.jsonl")
        try Data((lines[..<3].joined(separator: "\n") + "\n" + rest.stdout).utf8).write(to: file)
        let verified = try await ctl.run("audit", "verify", file.path)
        #expect(verified.status == 0 && verified.stdout.contains("ok: 5 receipts, seq 1 to 5"), "\(verified)")

        // The SDK's pages agree with the export.
        let page = try await alertd.audit(after: 1, limit: 2)
        #expect(try page.receipts.map { String(decoding: try $0.encoded(), as: UTF8.self) } == Array(lines[1..<3]))
        #expect(page.nextAfter == 3)
    }

    @Test("presentForDecision returns the decision with its receipt, which verifies with the daemon's keys against the alert")
    func presentWithReceipt() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alerts = try AlertdClient(url: daemon.baseURL)
        async let decided = alerts.presentForDecision(
            NewAlert(title: "Drop db-3?", buttons: [.destructive("Drop"), .cancel("Keep")], metadata: ["ticket": "OPS-9", "size": 1.5e3]),
            on: "ops")
        let id = try await SDKTests.awaitDisplayed(daemon, "ops")
        try await SDKTests.awaitWaiters(daemon, 1)
        #expect(try await daemon.client().choose("ops", id, #"{"button": "Keep", "comment": "not today"}"#).status == 200)
        let decision = try await decided
        let receipt = try #require(decision.receipt, "the decision came without its receipt")
        #expect(receipt.receipt.alertID == id && receipt.receipt.outcome == .answered && receipt.receipt.comment == "not today")
        try receipt.verify(with: try await alerts.receiptKeys(), for: try await alerts.alert(on: "ops", id: id))
    }

    @Test("a page of the audit log whose next_after does not move on is refused, so a reader of the whole log never loops")
    func auditPageThatStays() async throws {
        let server = try WebhookReceiver.start()
        defer { server.stop() }
        let receipt = SignedReceipt(
            receipt: Receipt(
                after: .start, alertID: "01JALERT", client: "ops", contentSHA256: String(repeating: "0", count: 64),
                outcome: .withdrawn, decidedAt: "2026-11-28T12:00:00.000Z", keyID: "k1"),
            signature: [UInt8](repeating: 7, count: 64))
        func page(nextAfter: Int) -> [UInt8] {
            JSONValue.object(["receipts": .array([.object(receipt.json)]), "next_after": .number(JSONNumber(nextAfter))]).compactBytes()
        }
        // A server that answers seq 1 with next_after 0, then seq 1 again after 1.
        server.script([.body(200, page(nextAfter: 0)), .body(200, page(nextAfter: 1))])
        let alertd = try AlertdClient(url: "http://127.0.0.1:\(server.port)")
        for after in [0, 1] {
            await #expect {
                try await alertd.audit(after: after)
            } throws: {
                ($0 as? AlertdError)?.kind == .invalidResponse && ($0 as? AlertdError)?.message.contains("does not move on") == true
            }
        }
    }
}
