import AlertdCore
import AlertdWire
import Testing

@Suite("Readers see only committed versions")
struct CommittedViewTests {
    @Test("A posted alert does not exist for readers until its change is committed")
    func postNotYetCommitted() throws {
        var board = AlertBoard()
        let (alert, change) = try board.post(question("q"), to: "ops", now: at(0))
        #expect(board.visible(alert.id).isNotYetCommitted)
        // The board itself already works with it.
        #expect(board.alert(alert.id) == alert)
        board.committed(change)
        #expect(board.visible(alert.id).committedAlert == alert)
    }

    @Test("After a choice, readers see the displayed version until the choice is committed")
    func choiceInFlight() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(question("q"), now: at(0))
        let (answered, change) = try board.choose(.title("Yes"), for: alert.id, on: "ops", by: nil, now: at(1))
        #expect(board.visible(alert.id).committedAlert == alert)
        #expect(board.visible(alert.id).committedAlert?.state == .displayed)
        // The latest version is held in memory while its write is in flight.
        #expect(board.alert(alert.id) == answered)

        board.committed(change)
        // Committed and terminal: it leaves memory, readers look in the store.
        #expect(board.visible(alert.id).isUnknown)
        #expect(board.alert(alert.id) == nil)
    }

    @Test("A decided alert stays in memory, answering repeats, until its change is committed")
    func decidedStaysUntilCommitted() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(question("q"), now: at(0))
        let (withdrawn, change) = try board.withdraw(alert.id, on: "ops", by: nil, now: at(1))
        let (again, repeatChange) = try board.withdraw(alert.id, on: "ops", by: nil, now: at(2))
        #expect(again == withdrawn)
        #expect(repeatChange.isEmpty)
        board.committed(change)
        #expect(board.visible(alert.id).isUnknown)
        let gone = #expect(throws: BoardError.self) { try board.withdraw(alert.id, on: "ops", by: nil, now: at(3)) }
        #expect(gone?.code == .notFound)
    }

    @Test("With two changes in flight, committing the first shows the first's version")
    func twoChangesInFlight() throws {
        var board = AlertBoard()
        let (posted, postChange) = try board.post(question("q"), to: "ops", now: at(0))
        let (_, choiceChange) = try board.choose(.title("No"), for: posted.id, on: "ops", by: nil, now: at(1))
        #expect(board.visible(posted.id).isNotYetCommitted)

        board.committed(postChange)
        #expect(board.visible(posted.id).committedAlert == posted)
        #expect(board.visible(posted.id).committedAlert?.state == .displayed)

        board.committed(choiceChange)
        #expect(board.visible(posted.id).isUnknown)
    }

    @Test("A covered alert keeps its displayed version for readers until the covering post is committed")
    func coveredInFlight() throws {
        var board = AlertBoard(settings: QueueSettings(standard: ClientSettings(policy: .stack)))
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
        var board = AlertBoard(settings: QueueSettings(standard: ClientSettings(policy: .stack)))
        let (older, first) = try board.post(question("older"), to: "ops", now: at(0))  // displayed
        let (_, second) = try board.post(question("newer"), to: "ops", now: at(1))  // covers older
        let (_, third) = try board.withdraw(older.id, on: "ops", by: nil, now: at(2))  // older withdrawn
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
        let board = AlertBoard()
        #expect(board.visible(freshID(at: start)).isUnknown)
    }
}

@Suite("Forgetting idle clients")
struct IdleClientTests {
    @Test("a client whose decision is still committing is no candidate; one touched during the sweep is kept")
    func committingAndTouched() throws {
        var board = AlertBoard()
        let alpha = try board.postCommitted(question("a"), to: "alpha", now: at(0))
        let beta = try board.postCommitted(question("b"), to: "beta", now: at(0))
        let (_, choice) = try board.choose(.title("Yes"), for: alpha.id, on: "alpha", by: nil, now: at(1))
        _ = try board.withdraw(beta.id, on: "beta", by: nil, now: at(1))
        // alpha's answer is not committed: the store the caller reads next may not have it yet.
        #expect(board.beginIdleSweep().isEmpty, "beta's withdrawal is in flight too")
        board.committed(choice)
        let candidates = board.beginIdleSweep()
        #expect(candidates == ["alpha"])
        // Touched between the sweep's start and its end: kept.
        _ = try board.postCommitted(question("again"), to: "alpha", now: at(2))
        #expect(board.forget(idle: candidates).isEmpty)
        #expect(board.clients == ["alpha", "beta"])
    }

    @Test("an idle client is forgotten, its slot freed; posting to it creates it anew")
    func forgotten() throws {
        var board = AlertBoard(settings: QueueSettings(maxClients: 1))
        let alert = try board.postCommitted(question("a"), to: "alpha", now: at(0))
        let (_, change) = try board.withdraw(alert.id, on: "alpha", by: nil, now: at(1))
        board.committed(change)
        #expect(throws: BoardError.self) { try board.postCommitted(question("b"), to: "beta", now: at(2)) }
        #expect(board.forget(idle: board.beginIdleSweep()) == ["alpha"])
        #expect(board.clients.isEmpty)
        #expect(board.visiblePendingCount(on: "alpha") == 0)
        _ = try board.postCommitted(question("b"), to: "beta", now: at(3))
        #expect(board.clients == ["beta"])
        #expect(board.visiblePendingCount(on: "beta") == 1)
    }
}
