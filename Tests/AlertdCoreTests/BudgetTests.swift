import AlertdCore
import AlertdWire
import Testing

@Suite("limits.max_pending_bytes: pending alerts are budgeted by their size, not only counted")
struct PendingBytesTests {
    /// An alert as large as §2 allows, in 4-byte characters: about 26 KiB of text.
    static let largest = NewAlert(
        title: String(repeating: "🚨", count: 256), message: String(repeating: "📟", count: 4096),
        buttons: (0..<16).map { Button(title: "\($0)" + String(repeating: "🔘", count: 60)) })

    @Test("A footprint counts the text in UTF-8 bytes, plus a fixed part per alert and per button")
    func footprint() {
        let alert = Alert(
            id: AlertID(high: 0, low: 1), client: "ops", title: "héllo", message: "🚨",
            buttons: [Button(title: "OK")], callbackURL: "https://x.example/h", metadata: CompactJSON(["k": "v"]),
            createdAt: start, expiresAt: at(1000))
        let text = 6 + 4 + 2 + 19 + #"{"k":"v"}"#.utf8.count
        #expect(alert.footprint == Alert.fixedFootprint + Alert.buttonFootprint + text)
        #expect(Alert.fixedFootprint == 1024)
    }

    @Test("A post beyond the budget is queue-full, however few alerts are pending; deciding one makes room")
    func budget() throws {
        var board = AlertBoard(settings: QueueSettings(maxPendingBytes: 70_000))
        var posted: [Alert] = []
        // Three of the largest (22 806 bytes each) fit in 70 000 bytes, the fourth does not; the count limits are far away.
        for n in 0..<3 { posted.append(try board.postCommitted(Self.largest, to: "c\(n)", now: at(Int64(n)))) }
        #expect(board.pendingBytes == posted.map(\.footprint).reduce(0, +))
        #expect(posted[0].footprint == 22_806)
        let error = #expect(throws: BoardError.self) { try board.post(Self.largest, to: "c3", now: at(5)) }
        #expect(error?.code == .queueFull)
        #expect(error?.detail.contains("limits.max_pending_bytes") == true)
        #expect(!board.knows(client: "c3"), "a refused post creates no client")
        #expect(board.pendingTotal == 3)
        // A small one still fits.
        try board.postCommitted(question("small"), to: "c3", now: at(6))

        let (_, change) = try board.withdraw(posted[1].id, on: "c1", by: nil, now: at(7))
        board.settle(change)
        #expect(throws: Never.self) { try board.post(Self.largest, to: "c4", now: at(8)) }
    }

    @Test("A restored or merged board counts the bytes of what it holds, and a shared store's other clients'")
    func restoredAndElsewhere() throws {
        var first = AlertBoard(settings: QueueSettings(maxPendingBytes: 100_000))
        let a = try first.postCommitted(Self.largest, to: "a", now: at(0))
        let b = try first.postCommitted(Self.largest, to: "b", now: at(1))
        var restored = AlertBoard(settings: QueueSettings(maxPendingBytes: 100_000))
        restored.settle(restored.restore(clients: ["a", "b"], pending: [a, b], now: at(2)))
        #expect(restored.pendingBytes == a.footprint + b.footprint)

        var shared = AlertBoard(settings: QueueSettings(maxPendingBytes: 100_000))
        shared.hold(outside: AlertBoard.Outside(bytes: 80_000), sequences: [])
        #expect(throws: BoardError.self) { try shared.post(Self.largest, to: "c", now: at(3)) }
        shared.hold(outside: AlertBoard.Outside(), sequences: [])
        #expect(throws: Never.self) { try shared.post(Self.largest, to: "c", now: at(3)) }
    }
}
