import AlertdCore
import AlertdSQLite
import AlertdWire
import Testing

// The embedded store's write-behind view (WriteBehindBoard): readers see committed
// versions only while the writer thread commits behind the board.

/// 2026-11-18T11:06:40.000Z plus some milliseconds.
private func at(_ milliseconds: Int64) -> Timestamp { Timestamp(milliseconds: 1_795_000_000_000).adding(milliseconds: milliseconds) }

/// An alert with two buttons, "Yes" (default) and "No" (cancel).
private func question(_ title: String, priority: Int = 0) -> NewAlert {
    NewAlert(title: title, buttons: [Button(title: "Yes"), Button(title: "No", style: .cancel)], priority: priority)
}

private func board(_ policy: QueuePolicy = .fifo, maxClients: Int? = nil) -> WriteBehindBoard {
    var settings = QueueSettings(standard: ClientSettings(policy: policy))
    if let maxClients { settings.maxClients = maxClients }
    return WriteBehindBoard(AlertBoard(settings: settings))
}

extension WriteBehindBoard {
    mutating func post(_ draft: NewAlert, to client: String = "ops", now: Timestamp) throws(BoardError) -> (Alert, BoardChange) {
        try update({ board throws(BoardError) in try board.post(draft, to: client, now: now) }, change: \.1)
    }

    mutating func choose(_ selection: ButtonSelection, for id: AlertID, on client: String = "ops", now: Timestamp) throws(BoardError) -> (
        Alert, BoardChange
    ) {
        try update({ board throws(BoardError) in try board.choose(selection, for: id, on: client, by: nil, now: now) }, change: \.1)
    }

    mutating func withdraw(_ id: AlertID, on client: String = "ops", now: Timestamp) throws(BoardError) -> (Alert, BoardChange) {
        try update({ board throws(BoardError) in try board.withdraw(id, on: client, by: nil, now: now) }, change: \.1)
    }

    /// Posts and commits at once; the alert as posted.
    @discardableResult
    mutating func postCommitted(_ draft: NewAlert, to client: String = "ops", now: Timestamp) throws(BoardError) -> Alert {
        let (alert, change) = try post(draft, to: client, now: now)
        committed(change)
        return alert
    }
}

extension WriteBehindBoard.Visibility {
    var committedAlert: Alert? {
        if case .alert(let alert) = self { return alert }
        return nil
    }

    var isNotYetCommitted: Bool {
        if case .notYetCommitted = self { return true }
        return false
    }

    var isUnknown: Bool {
        if case .unknown = self { return true }
        return false
    }
}

@Suite("Readers see only committed versions")
struct CommittedViewTests {
    @Test("A posted alert does not exist for readers until its change is committed")
    func postNotYetCommitted() throws {
        var board = board()
        let (alert, change) = try board.post(question("q"), to: "ops", now: at(0))
        #expect(board.visible(alert.id).isNotYetCommitted)
        // The board itself already works with it.
        #expect(board.board.alert(alert.id) == alert)
        board.committed(change)
        #expect(board.visible(alert.id).committedAlert == alert)
    }

    @Test("After a choice, readers see the displayed version until the choice is committed")
    func choiceInFlight() throws {
        var board = board()
        let alert = try board.postCommitted(question("q"), now: at(0))
        let (answered, change) = try board.choose(.title("Yes"), for: alert.id, now: at(1))
        #expect(board.visible(alert.id).committedAlert == alert)
        #expect(board.visible(alert.id).committedAlert?.state == .displayed)
        // The latest version is held in memory while its write is in flight.
        #expect(board.board.alert(alert.id) == answered)

        board.committed(change)
        // Committed and terminal: it leaves memory, readers look in the store.
        #expect(board.visible(alert.id).isUnknown)
        #expect(board.board.alert(alert.id) == nil)
    }

    @Test("A decided alert stays in memory, answering repeats, until its change is committed")
    func decidedStaysUntilCommitted() throws {
        var board = board()
        let alert = try board.postCommitted(question("q"), now: at(0))
        let (withdrawn, change) = try board.withdraw(alert.id, now: at(1))
        let (again, repeatChange) = try board.withdraw(alert.id, now: at(2))
        #expect(again == withdrawn)
        #expect(repeatChange.isEmpty)
        board.committed(change)
        #expect(board.visible(alert.id).isUnknown)
        let gone = #expect(throws: BoardError.self) { try board.withdraw(alert.id, now: at(3)) }
        #expect(gone?.code == .notFound)
    }

    @Test("With two changes in flight, committing the first shows the first's version")
    func twoChangesInFlight() throws {
        var board = board()
        let (posted, postChange) = try board.post(question("q"), to: "ops", now: at(0))
        let (_, choiceChange) = try board.choose(.title("No"), for: posted.id, now: at(1))
        #expect(board.visible(posted.id).isNotYetCommitted)

        board.committed(postChange)
        #expect(board.visible(posted.id).committedAlert == posted)
        #expect(board.visible(posted.id).committedAlert?.state == .displayed)

        board.committed(choiceChange)
        #expect(board.visible(posted.id).isUnknown)
    }

    @Test("A covered alert keeps its displayed version for readers until the covering post is committed")
    func coveredInFlight() throws {
        var board = board(.stack)
        let older = try board.postCommitted(question("older"), now: at(0))
        let (newer, change) = try board.post(question("newer"), to: "ops", now: at(1))
        #expect(board.visible(older.id).committedAlert == older)
        #expect(board.visible(newer.id).isNotYetCommitted)
        board.committed(change)
        #expect(board.visible(older.id).committedAlert?.state == .queued)
        #expect(board.visible(newer.id).committedAlert == newer)
    }

    @Test("Three writes in flight for one alert become visible one by one")
    func threeWrites() throws {
        var board = board(.stack)
        let (older, first) = try board.post(question("older"), to: "ops", now: at(0))  // displayed
        let (_, second) = try board.post(question("newer"), to: "ops", now: at(1))  // covers older
        let (_, third) = try board.withdraw(older.id, now: at(2))  // older withdrawn
        #expect(board.visible(older.id).isNotYetCommitted)
        board.committed(first)
        #expect(board.visible(older.id).committedAlert?.state == .displayed)
        board.committed(second)
        #expect(board.visible(older.id).committedAlert?.state == .queued)
        board.committed(third)
        #expect(board.visible(older.id).isUnknown)
    }

    @Test("An id the board never saw is unknown")
    func neverSeen() {
        let board = board()
        var ids = AlertIDGenerator()
        #expect(board.visible(ids.next(at: at(0))).isUnknown)
    }
}

@Suite("Forgetting idle clients")
struct IdleClientTests {
    @Test("a client whose decision is still committing is no candidate; one touched during the sweep is kept")
    func committingAndTouched() throws {
        var board = board()
        let alpha = try board.postCommitted(question("a"), to: "alpha", now: at(0))
        let beta = try board.postCommitted(question("b"), to: "beta", now: at(0))
        let (_, choice) = try board.choose(.title("Yes"), for: alpha.id, on: "alpha", now: at(1))
        _ = try board.withdraw(beta.id, on: "beta", now: at(1))
        // alpha's answer is not committed: the store the caller reads next may not have it yet.
        #expect(board.beginIdleSweep().isEmpty, "beta's withdrawal is in flight too")
        board.committed(choice)
        let candidates = board.beginIdleSweep()
        #expect(candidates == ["alpha"])
        // Touched between the sweep's start and its end: kept.
        _ = try board.postCommitted(question("again"), to: "alpha", now: at(2))
        #expect(board.forget(idle: candidates).isEmpty)
        #expect(board.board.clients == ["alpha", "beta"])
    }

    @Test("an idle client is forgotten, its slot freed; posting to it creates it anew")
    func forgotten() throws {
        var board = board(maxClients: 1)
        let alert = try board.postCommitted(question("a"), to: "alpha", now: at(0))
        let (_, change) = try board.withdraw(alert.id, on: "alpha", now: at(1))
        board.committed(change)
        #expect(throws: BoardError.self) { try board.postCommitted(question("b"), to: "beta", now: at(2)) }
        #expect(board.forget(idle: board.beginIdleSweep()) == ["alpha"])
        #expect(board.board.clients.isEmpty)
        #expect(board.visiblePendingCount(on: "alpha") == 0)
        _ = try board.postCommitted(question("b"), to: "beta", now: at(3))
        #expect(board.board.clients == ["beta"])
        #expect(board.visiblePendingCount(on: "beta") == 1)
    }
}

@Suite("Positions and lists as readers see them")
struct VisiblePositionTests {
    @Test("a queued alert's position does not count a post still committing")
    func postInFlight() throws {
        var board = board()
        let a = try board.postCommitted(question("A"), now: at(0))
        let b = try board.postCommitted(question("B"), now: at(1))
        let (_, urgent) = try board.post(question("C", priority: 10), to: "ops", now: at(2))
        #expect(board.board.position(of: b) == 2, "the live queue already holds C ahead of B")
        #expect(board.visiblePosition(of: b) == 1)
        #expect(board.visiblePending(on: "ops").map(\.id) == [a.id, b.id])
        board.committed(urgent)
        #expect(board.visiblePosition(of: b) == 2)
        #expect(board.visiblePending(on: "ops").map(\.title) == ["A", "C", "B"])
    }

    @Test("while the displayed alert's withdrawal commits, readers still see it displayed and the next one queued")
    func displayedWithdrawalInFlight() throws {
        var board = board()
        let a = try board.postCommitted(question("A"), now: at(0))
        let b = try board.postCommitted(question("B"), now: at(1))
        let c = try board.postCommitted(question("C"), now: at(2))
        let (_, change) = try board.withdraw(a.id, now: at(3))
        let seenB = try #require(board.visible(b.id).committedAlert)
        #expect(seenB.state == .queued)
        #expect(board.visiblePosition(of: seenB) == 1)
        #expect(board.visiblePosition(of: c) == 2)
        let listed = board.visiblePending(on: "ops")
        #expect(listed.map(\.id) == [a.id, b.id, c.id])
        #expect(listed.map(\.state) == [.displayed, .queued, .queued])
        board.committed(change)
        #expect(board.visiblePending(on: "ops").map(\.id) == [b.id, c.id])
        #expect(board.visiblePosition(of: c) == 1)
    }

    @Test("a queued alert whose withdrawal is committing keeps its position, never null")
    func queuedWithdrawalInFlight() throws {
        var board = board()
        _ = try board.postCommitted(question("A"), now: at(0))
        let b = try board.postCommitted(question("B"), now: at(1))
        let c = try board.postCommitted(question("C"), now: at(2))
        _ = try board.withdraw(b.id, now: at(3))
        #expect(board.visiblePosition(of: b) == 1)
        #expect(board.visiblePosition(of: c) == 2, "B is still ahead of C for readers")
        #expect(board.visiblePending(on: "ops").map(\.title) == ["A", "B", "C"])
    }

    @Test(
        "random posts, choices and withdrawals with commits lagging: positions, lists and the display are those of the committed state",
        arguments: [QueuePolicy.fifo, .stack], 0..<2)
    func randomAgainstCommittedState(policy: QueuePolicy, seed: UInt64) throws {
        var random = XorShift(seed: seed &+ 1)
        var board = board(policy)
        var inFlight: [BoardChange] = []
        var known: [AlertID] = []
        var now: Int64 = 0
        for step in 0..<300 {
            now += 1
            let live = board.board.pending(on: "ops")
            switch random.next() % 8 {
            case 0, 1, 2:
                let priority = Int(random.next() % 3)
                let (alert, change) = try board.post(question("p\(step)", priority: priority), to: "ops", now: at(now))
                known.append(alert.id)
                inFlight.append(change)
            case 3:
                if let shown = board.board.displayed(on: "ops") {
                    inFlight.append(try board.choose(.title("Yes"), for: shown.id, now: at(now)).1)
                }
            case 4:
                if !live.isEmpty {
                    let target = live[Int(random.next() % UInt64(live.count))]
                    inFlight.append(try board.withdraw(target.id, now: at(now)).1)
                }
            default:
                if !inFlight.isEmpty { board.committed(inFlight.removeFirst()) }
            }
            // The oracle: every alert's version readers see, pending ones in the policy's display order.
            let seen = known.compactMap { board.visible($0).committedAlert }.filter(\.isPending)
            let expected =
                seen.filter { $0.state == .displayed }
                + seen.filter { $0.state == .queued }.sorted { x, y in
                    if x.priority != y.priority { return x.priority > y.priority }
                    return policy == .fifo ? x.id < y.id : x.id > y.id
                }
            // The first step that differs ends the test (the later ones would only repeat it).
            try #require(seen.filter { $0.state == .displayed }.count <= 1, "step \(step): two displayed alerts for readers")
            let listed = board.visiblePending(on: "ops")
            try #require(listed.map(\.id) == expected.map(\.id), "step \(step): the list")
            try #require(listed.map(\.state) == expected.map(\.state), "step \(step): the states")
            let shown = expected.first { $0.state == .displayed }
            try #require(board.visibleDisplayed(on: "ops")?.id == shown?.id, "step \(step): the display")
            for (index, alert) in expected.enumerated() {
                try #require(board.visiblePosition(of: alert) == index, "step \(step): \(alert.title) is at \(index)")
            }
        }
    }
}

/// A small deterministic generator (xorshift64*), so a failing case can be replayed.
struct XorShift {
    private var state: UInt64
    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
}
