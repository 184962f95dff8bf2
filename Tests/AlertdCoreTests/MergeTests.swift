import AlertdCore
import AlertdWire
import Testing

/// A small seeded generator: the same seed, the same run.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One instance's board of a client shared with another (PostgreSQL): its writes, and the
/// alerts they saved, which the other instance merges.
private struct Instance {
    var board: AlertBoard

    /// A few random operations, each committed; every alert they saved, latest version last.
    mutating func act(_ random: inout SplitMix64, now: inout Timestamp) -> [Alert] {
        var saved: [Alert] = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            now = now.adding(milliseconds: Int64.random(in: 0...400, using: &random))
            let change: BoardChange
            let pending = board.pending(on: "ops")
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let draft =
                    Bool.random(using: &random)
                    ? question("q", priority: Int.random(in: -1...1, using: &random), expiresIn: 5)
                    : notice("n", priority: Int.random(in: -1...1, using: &random), dismissAfter: 0.3, expiresIn: 5)
                guard let (_, posted) = try? board.post(draft, to: "ops", now: now) else { continue }
                change = posted
            case 5..<7:
                guard let shown = board.displayed(on: "ops"), !shown.buttons.isEmpty,
                    let (_, chosen) = try? board.choose(.index(0), for: shown.id, on: "ops", by: "a", now: now)
                else { continue }
                change = chosen
            case 7..<9:
                guard let victim = pending.randomElement(using: &random),
                    let (_, withdrawn) = try? board.withdraw(victim.id, on: "ops", by: "a", now: now)
                else { continue }
                change = withdrawn
            default:
                change = board.fireDeadlines(now: now)
            }
            board.settle(change)
            saved += change.saved
        }
        return saved
    }
}

@Suite("Changes committed by another instance are merged into a board in place")
struct MergeTests {
    @Test(
        "two boards taking turns on one client, each merging the other's saved alerts, hold the same queue as a board restored whole",
        arguments: [QueuePolicy.fifo, .stack], [1, 2, 3])
    func takingTurns(policy: QueuePolicy, seed: UInt64) {
        let settings = QueueSettings(standard: ClientSettings(policy: policy))
        var random = SplitMix64(state: seed)
        var instances = [Instance(board: AlertBoard(settings: settings)), Instance(board: AlertBoard(settings: settings))]
        var now = at(0)
        for step in 0..<300 {
            let writer = Int.random(in: 0...1, using: &random)
            let saved = instances[writer].act(&random, now: &now)
            // The database's rows: the latest version of each alert the writes touched.
            var latest: [AlertID: Alert] = [:]
            for alert in saved { latest[alert.id] = alert }
            let reader = 1 - writer
            let change = instances[reader].board.merge(committedElsewhere: Array(latest.values), on: "ops", now: now)
            instances[reader].board.settle(change)
            let (a, b) = (instances[writer].board, instances[reader].board)
            // What the writer committed is consistent: merging it moves nothing.
            #expect(change.isEmpty, "step \(step): the merge changed \(change.saved.map(\.id))")
            #expect(b.pending(on: "ops") == a.pending(on: "ops"), "step \(step): the queues differ")
            #expect(b.pendingTotal == a.pendingTotal && b.pendingCount(on: "ops") == a.pendingCount(on: "ops"), "step \(step)")
            #expect(b.nextDeadline == a.nextDeadline, "step \(step): deadlines")
            var restored = AlertBoard(settings: settings)
            _ = restored.restore(clients: ["ops"], pending: a.pending(on: "ops"), now: now)
            #expect(restored.pending(on: "ops") == b.pending(on: "ops"), "step \(step): a whole restore differs")
            if b.pending(on: "ops") != a.pending(on: "ops") { return }
        }
    }

    @Test("a merge that leaves the displayed alert's place empty shows the next in the policy's order, as a change to commit")
    func displayLeftEmpty() throws {
        var writer = AlertBoard()
        var reader = AlertBoard()
        let first = try writer.postCommitted(question("first"), now: at(0))
        let second = try writer.postCommitted(question("second"), now: at(1))
        _ = reader.merge(committedElsewhere: [first, second], on: "ops", now: at(2))
        #expect(reader.titles() == ["first", "second"])
        // Only the answer reached the reader, not the display of the next one: it shows
        // the next one itself, and says so.
        var answered = first
        answered.state = .answered
        answered.decidedAt = at(3)
        let change = reader.merge(committedElsewhere: [answered], on: "ops", now: at(4))
        #expect(reader.displayed(on: "ops")?.id == second.id)
        #expect(change.displayChanged == ["ops"] && change.saved.map(\.id) == [second.id])
    }
}
