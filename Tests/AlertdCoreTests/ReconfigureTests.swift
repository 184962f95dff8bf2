import AlertdWire
import Testing

@testable import AlertdCore

@Suite("Reconfiguring client settings (a config reload)")
struct ReconfigureTests {
    @Test("fifo to stack: the newest of the highest priority is displayed at once, and the change says so")
    func fifoToStack() throws {
        var board = AlertBoard()
        let older = try board.postCommitted(question("older"), now: at(0))
        let newer = try board.postCommitted(question("newer"), now: at(10))
        _ = try board.postCommitted(question("kiosk"), to: "kiosk", now: at(20))
        #expect(board.titles(on: "ops") == ["older", "newer"])

        let change = board.reconfigure(QueueSettings(clients: ["ops": ClientSettings(policy: .stack)]), now: at(1_000))

        #expect(board.titles(on: "ops") == ["newer", "older"])
        #expect(board.alert(newer.id)?.state == .displayed && board.alert(newer.id)?.displayedAt == at(1_000))
        #expect(board.alert(older.id)?.state == .queued && board.alert(older.id)?.displayedAt == nil)
        #expect(Set(change.saved.map(\.id)) == [older.id, newer.id])
        #expect(change.displayChanged == ["ops"] && change.decided.isEmpty)
        // The change says which versions it replaces (a store shows readers those until it commits).
        #expect(change.replaced(older.id) == .some(older))
        #expect(change.replaced(newer.id) == .some(newer))
        // From now on a newcomer covers the displayed one.
        let newest = try board.postCommitted(question("newest"), now: at(2_000))
        #expect(board.alert(newest.id)?.state == .displayed)
    }

    @Test("stack to fifo: the displayed alert stays; the queue is reordered oldest first")
    func stackToFifo() throws {
        var board = AlertBoard(settings: QueueSettings(standard: ClientSettings(policy: .stack)))
        _ = try board.postCommitted(question("a"), now: at(0))
        _ = try board.postCommitted(question("b"), now: at(10))
        _ = try board.postCommitted(question("c"), now: at(20))
        #expect(board.titles(on: "ops") == ["c", "b", "a"])

        let change = board.reconfigure(QueueSettings(), now: at(1_000))

        #expect(board.titles(on: "ops") == ["c", "a", "b"])
        #expect(change.saved.isEmpty && change.displayChanged.isEmpty)
    }

    @Test("a lower max_pending applies from the next post; a client whose policy did not change is left alone")
    func limits() throws {
        var board = AlertBoard()
        _ = try board.postCommitted(question("a"), now: at(0))
        _ = try board.postCommitted(question("b"), now: at(10))
        let change = board.reconfigure(QueueSettings(clients: ["ops": ClientSettings(maxPending: 2)]), now: at(100))
        #expect(change.saved.isEmpty)
        #expect(board.titles(on: "ops") == ["a", "b"])
        #expect(throws: BoardError.self) { try board.postCommitted(question("c"), now: at(200)) }
    }
}
