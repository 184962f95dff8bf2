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

    /// What the largest alert is budgeted at pending: itself and its rendered copy.
    static func budgeted(_ alert: Alert) -> Int { alert.footprint + alert.renderedFootprint }

    @Test("A post beyond the budget is queue-full, however few alerts are pending; deciding one makes room")
    func budget() throws {
        var empty = AlertBoard()
        let probe = try empty.post(Self.largest, to: "c0", now: at(0)).0
        let each = Self.budgeted(probe)
        #expect(probe.footprint == 22_806)
        var board = AlertBoard(settings: QueueSettings(maxPendingBytes: 3 * each + 4000))
        var posted: [Alert] = []
        // Three of the largest fit, the fourth does not; the count limits are far away.
        for n in 0..<3 { posted.append(try board.postCommitted(Self.largest, to: "c\(n)", now: at(Int64(n)))) }
        #expect(board.pendingBytes == posted.map { Self.budgeted(board.alert($0.id)!) }.reduce(0, +))
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

    @Test(
        "Every pending alert is budgeted with its rendered copy, queued or displayed: a queue behind a small alert cannot outgrow the budget when the small one goes"
    )
    func renderedCopiesCounted() throws {
        var board = AlertBoard()
        let small = try board.postCommitted(question("small"), now: at(0))
        let large = try board.postCommitted(Self.largest, now: at(1))
        #expect(board.state(of: large) == .queued)
        #expect(board.pendingBytes == Self.budgeted(small) + Self.budgeted(large), "the queued one counts its copy to be")
        let (_, change) = try board.withdraw(small.id, on: "ops", by: nil, now: at(2))
        board.settle(change)
        #expect(board.state(of: large) == .displayed)
        #expect(board.pendingBytes == Self.budgeted(board.alert(large.id)!))
        #expect(board.pendingBytes > 2 * large.footprint - 2_000, "the rendered copy is about as large as the alert's text")
    }

    @Test("A vote grows the rendered copy and the budget with it; the decision frees both")
    func votesCounted() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(
            NewAlert(title: "Deploy?", buttons: [Button(title: "Deploy"), Button(title: "Cancel", style: .cancel)], quorum: 3),
            by: "ci", now: at(0))
        let before = board.pendingBytes
        let (voted, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(1))
        #expect(board.pendingBytes == before + voted.renderedFootprint - alert.renderedFootprint)
        #expect(board.pendingBytes > before)
        let (decided, change) = try board.choose(.title("Cancel"), for: alert.id, on: "ops", by: "bob", now: at(2))
        board.settle(change)
        #expect(decided.state == .answered)
        #expect(board.pendingBytes == 0)
    }

    @Test("A restored or merged board counts the bytes of what it holds, and a shared store's other clients'")
    func restoredAndElsewhere() throws {
        var first = AlertBoard(settings: QueueSettings(maxPendingBytes: 100_000))
        let a = try first.postCommitted(Self.largest, to: "a", now: at(0))
        let b = try first.postCommitted(Self.largest, to: "b", now: at(1))
        var restored = AlertBoard(settings: QueueSettings(maxPendingBytes: 100_000))
        restored.settle(restored.restore(clients: ["a", "b"], pending: [first.alert(a.id)!, first.alert(b.id)!], now: at(2)))
        #expect(restored.pendingBytes == first.pendingBytes)
        #expect(restored.pendingBytes == Self.budgeted(first.alert(a.id)!) + Self.budgeted(first.alert(b.id)!))

        var shared = AlertBoard(settings: QueueSettings(maxPendingBytes: 100_000))
        shared.hold(outside: AlertBoard.Outside(bytes: 80_000), sequences: [])
        #expect(throws: BoardError.self) { try shared.post(Self.largest, to: "c", now: at(3)) }
        shared.hold(outside: AlertBoard.Outside(), sequences: [])
        #expect(throws: Never.self) { try shared.post(Self.largest, to: "c", now: at(3)) }
    }
}

@Suite("The rendered copy's budget")
struct RenderedFootprintTests {
    /// Alerts whose rendering the bound must cover: escapes, every optional member, fields, votes
    /// and results with their words.
    static let alerts: [Alert] = {
        let control = String(decoding: (0..<32).map { UInt8($0) }, as: UTF8.self)
        let nasty = String(repeating: control + "\"\\é🚨", count: 40)
        let buttons = (0..<16).map {
            Button(title: "\($0)" + String(repeating: "\u{1}", count: 60), style: $0 == 0 ? .cancel : .destructive)
        }
        var votes: [Vote] = []
        for n in 0..<10 {
            votes.append(
                Vote(
                    decidedBy: String(repeating: "\u{7}", count: 40) + "\(n)", button: buttons[n + 1].title, buttonIndex: n + 1, at: at(9),
                    comment: n.isMultiple(of: 2) ? nasty : nil, values: n.isMultiple(of: 3) ? ["f\(n)": nasty, "g": "\u{1}"] : [:]))
        }
        var full = Alert(
            id: AlertID(high: .max, low: .max), client: String(repeating: "c", count: 64), title: nasty, message: nasty,
            style: .actionSheet, buttons: buttons, priority: -100, callbackURL: "https://x.example/" + nasty,
            metadata: CompactJSON(["k": .string(nasty)]), state: .displayed, createdAt: start, displayedAt: at(1),
            expiresAt: at(604_800_123),
            dismissAfterMilliseconds: 86_400_123, quorum: 10, votes: votes, postedBy: String(repeating: "\u{2}", count: 64),
            // SPEC §13: five fields, each with its escapes and the buttons it belongs to.
            fields: (0..<5).map {
                AlertField(
                    name: "f\($0)", label: nasty, placeholder: $0 == 0 ? nil : nasty, required: $0 == 1, maxLength: 1000,
                    buttons: buttons.dropFirst().map(\.title))
            })
        var answered = full
        answered.state = .withdrawn
        answered.decidedAt = at(2)
        answered.result = AlertResult(
            outcome: .withdrawn, button: buttons[15].title, buttonIndex: 15, cancelled: false, decidedBy: votes[9].decidedBy, votes: votes,
            comment: nasty, values: ["f2": nasty])
        full.votes = votes
        let plain = Alert(id: AlertID(high: 1, low: 2), client: "ops", title: "Deploy?", createdAt: start, expiresAt: at(1))
        return [full, answered, plain]
    }()

    @Test("It is never below what the resource takes rendered, at any position, and never far above")
    func bound() {
        for alert in Self.alerts {
            for position in [nil, 0, 9_999_999] as [Int?] {
                let rendered = alert.json(position: position).count
                #expect(alert.renderedFootprint >= rendered, "\(alert.id): \(alert.renderedFootprint) < \(rendered)")
                #expect(alert.renderedFootprint - rendered < 700, "\(alert.id): \(alert.renderedFootprint) for \(rendered)")
            }
        }
    }
}
