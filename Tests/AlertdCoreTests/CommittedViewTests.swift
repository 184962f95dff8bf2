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
