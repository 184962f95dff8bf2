import AlertdCore
import AlertdWire
import Testing

private let stackOps = QueueSettings(clients: ["ops": ClientSettings(policy: .stack)])

@Suite("fifo: the displayed alert stays until it is terminal")
struct FIFOPolicyTests {
    @Test("The first alert posted is displayed and stays when a higher-priority one arrives")
    func firstStaysDisplayed() throws {
        var board = AlertBoard()
        let first = try board.postCommitted(question("first"), now: at(0))
        #expect(first.state == .displayed)
        #expect(first.displayedAt == at(0))

        let urgent = try board.postCommitted(question("urgent", priority: 100), now: at(10))
        #expect(urgent.state == .queued)
        #expect(urgent.displayedAt == nil)
        #expect(board.displayed(on: "ops")?.id == first.id)
        #expect(board.state(of: first) == .displayed)
        #expect(board.currentPosition(of: urgent) == 1)
    }

    @Test("When the displayed one is answered, the highest priority is next, oldest first among equals")
    func nextIsHighestPriorityOldestFirst() throws {
        var board = AlertBoard()
        try board.postCommitted(question("a", priority: 0), now: at(0))
        try board.postCommitted(question("b", priority: 1), now: at(1))
        try board.postCommitted(question("c", priority: 5), now: at(2))
        try board.postCommitted(question("d", priority: 5), now: at(3))
        try board.postCommitted(question("e", priority: 0), now: at(4))
        try board.postCommitted(question("f", priority: -3), now: at(5))
        #expect(board.titles() == ["a", "c", "d", "b", "e", "f"])

        var shown: [String] = []
        var now: Int64 = 100
        while let displayed = board.displayed(on: "ops") {
            shown.append(displayed.title)
            let (_, change) = try board.choose(.title("Yes"), for: displayed.id, on: "ops", by: nil, now: at(now))
            board.settle(change)
            if let next = board.displayed(on: "ops") {
                #expect(next.state == .displayed)
                #expect(next.displayedAt == at(now))
            }
            now += 100
        }
        #expect(shown == ["a", "c", "d", "b", "e", "f"])
        #expect(board.pendingCount(on: "ops") == 0)
    }

    @Test("Positions count the alerts ahead: 0 displayed, then 1, 2, …")
    func positions() throws {
        var board = AlertBoard()
        let a = try board.postCommitted(question("a", priority: 0), now: at(0))
        let b = try board.postCommitted(question("b", priority: 0), now: at(1))
        let c = try board.postCommitted(question("c", priority: 9), now: at(2))
        let d = try board.postCommitted(question("d", priority: -9), now: at(3))
        let e = try board.postCommitted(question("e", priority: 0), now: at(4))
        #expect([a, c, b, e, d].map { board.currentPosition(of: $0) } == [0, 1, 2, 3, 4])
        #expect(board.pending(on: "ops").map(\.id) == [a.id, c.id, b.id, e.id, d.id])
        #expect(board.pending(on: "ops").map(\.state) == [.displayed, .queued, .queued, .queued, .queued])

        // Withdrawing one in the middle moves the ones behind it up.
        let (_, change) = try board.withdraw(b.id, on: "ops", by: nil, now: at(10))
        board.settle(change)
        #expect([a, c, e, d].map { board.currentPosition(of: $0) } == [0, 1, 2, 3])
        #expect(board.currentPosition(of: b) == nil)
    }

    @Test("Clients have separate queues")
    func separateQueues() throws {
        var board = AlertBoard()
        let ops = try board.postCommitted(question("ops-1"), to: "ops", now: at(0))
        let kiosk = try board.postCommitted(question("kiosk-1"), to: "kiosk", now: at(1))
        try board.postCommitted(question("ops-2"), to: "ops", now: at(2))
        #expect(kiosk.state == .displayed)
        #expect(board.displayed(on: "ops")?.id == ops.id)
        #expect(board.titles(on: "ops") == ["ops-1", "ops-2"])
        #expect(board.titles(on: "kiosk") == ["kiosk-1"])
        #expect(board.clients == ["kiosk", "ops"])
        #expect(board.pendingTotal == 3)
        #expect(board.pending(on: "nobody").isEmpty)
        #expect(board.displayed(on: "nobody") == nil)
        #expect(!board.knows(client: "nobody"))
    }
}

@Suite("stack: highest priority, newest first, is always displayed")
struct StackPolicyTests {
    @Test("A newer alert of the same priority is displayed at once and the covered one goes back to queued")
    func newerCovers() throws {
        var board = AlertBoard(settings: stackOps)
        let older = try board.postCommitted(question("older"), now: at(0))
        let (newer, change) = try board.post(question("newer"), to: "ops", now: at(50))
        board.settle(change)

        #expect(newer.state == .displayed)
        #expect(newer.displayedAt == at(50))
        let covered = try #require(board.alert(older.id))
        #expect(covered.state == .queued)
        #expect(covered.displayedAt == nil)
        #expect(board.currentPosition(of: older) == 1)
        #expect(board.displayed(on: "ops")?.id == newer.id)

        // The change saves both versions and reports the display change.
        #expect(Set(change.saved.map(\.id)) == [older.id, newer.id])
        #expect(change.saved.first { $0.id == older.id }?.state == .queued)
        #expect(change.saved.first { $0.id == newer.id }?.state == .displayed)
        #expect(change.displayChanged == ["ops"])
    }

    @Test("A newer alert of higher priority covers the displayed one")
    func higherPriorityCovers() throws {
        var board = AlertBoard(settings: stackOps)
        let low = try board.postCommitted(question("low", priority: 3), now: at(0))
        let high = try board.postCommitted(question("high", priority: 4), now: at(1))
        #expect(high.state == .displayed)
        #expect(board.state(of: low) == .queued)
    }

    @Test("A newcomer of lower priority waits below the displayed one")
    func lowerPriorityWaits() throws {
        var board = AlertBoard(settings: stackOps)
        let high = try board.postCommitted(question("high", priority: 5), now: at(0))
        let (low, change) = try board.post(question("low", priority: 4), to: "ops", now: at(1))
        board.settle(change)
        #expect(low.state == .queued)
        #expect(low.displayedAt == nil)
        #expect(board.displayed(on: "ops")?.id == high.id)
        #expect(board.currentPosition(of: low) == 1)
        #expect(change.displayChanged.isEmpty)
        #expect(change.saved.map(\.id) == [low.id])
    }

    @Test("The covered alert is displayed again when the newer one is terminal")
    func coveredReturns() throws {
        var board = AlertBoard(settings: stackOps)
        let older = try board.postCommitted(question("older"), now: at(0))
        let newer = try board.postCommitted(question("newer"), now: at(10))
        let (answered, change) = try board.choose(.title("Yes"), for: newer.id, on: "ops", by: nil, now: at(20))
        board.settle(change)
        #expect(answered.state == .answered)
        let again = try #require(board.displayed(on: "ops"))
        #expect(again.id == older.id)
        #expect(again.state == .displayed)
        #expect(again.displayedAt == at(20))
        #expect(change.displayChanged == ["ops"])
    }

    @Test("Display order and positions follow priority, then newest first")
    func order() throws {
        var board = AlertBoard(settings: stackOps)
        let a = try board.postCommitted(question("a", priority: 0), now: at(0))
        let b = try board.postCommitted(question("b", priority: 0), now: at(1))
        let c = try board.postCommitted(question("c", priority: 5), now: at(2))
        let d = try board.postCommitted(question("d", priority: 0), now: at(3))
        let e = try board.postCommitted(question("e", priority: -3), now: at(4))
        let f = try board.postCommitted(question("f", priority: 5), now: at(5))
        #expect(board.titles() == ["f", "c", "d", "b", "a", "e"])
        #expect([f, c, d, b, a, e].map { board.currentPosition(of: $0) } == [0, 1, 2, 3, 4, 5])
        #expect(board.pending(on: "ops").map(\.state) == [.displayed, .queued, .queued, .queued, .queued, .queued])
        #expect(board.pending(on: "ops").dropFirst().allSatisfy { $0.displayedAt == nil })

        // Taking the displayed ones away walks down the same order.
        var shown: [String] = []
        var now: Int64 = 100
        while let displayed = board.displayed(on: "ops") {
            shown.append(displayed.title)
            let (_, change) = try board.withdraw(displayed.id, on: "ops", by: nil, now: at(now))
            board.settle(change)
            now += 1
        }
        #expect(shown == ["f", "c", "d", "b", "a", "e"])
    }

    @Test("Each client uses its own policy")
    func perClientPolicy() throws {
        var board = AlertBoard(settings: stackOps)
        try board.postCommitted(question("ops-old"), to: "ops", now: at(0))
        try board.postCommitted(question("ops-new"), to: "ops", now: at(1))
        try board.postCommitted(question("kiosk-old"), to: "kiosk", now: at(0))
        try board.postCommitted(question("kiosk-new"), to: "kiosk", now: at(1))
        #expect(board.titles(on: "ops") == ["ops-new", "ops-old"])
        #expect(board.titles(on: "kiosk") == ["kiosk-old", "kiosk-new"])
    }
}
