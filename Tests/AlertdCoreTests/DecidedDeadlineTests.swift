import AlertdCore
import AlertdWire
import Testing

/// Found in a review of the core daemon and fixed since; kept as a regression test.
@Suite("A decided alert leaves no deadline on the board")
struct DecidedDeadlineTests {
    /// Every post inserts an expiry into the board's deadline heap, and nothing
    /// removes it when the alert is decided: it stays until `expires_at` (up to
    /// `alerts.max_expires_in`, 7 days). Memory then grows with throughput ×
    /// expires_in rather than with the pending alerts, and the ticker wakes for
    /// deadlines of alerts that left memory long ago. `nextDeadline` shows it.
    @Test("an answered alert leaves no deadline behind")
    func decidedAlertsLeaveTheDeadlineHeap() throws {
        var board = AlertBoard()
        for index in 0..<1000 {
            let alert = try board.postCommitted(question("q\(index)"), now: at(Int64(index)))
            let (_, change) = try board.choose(.index(0), for: alert.id, on: "ops", by: nil, now: at(Int64(index)))
            board.settle(change)
        }
        #expect(board.pendingTotal == 0)
        #expect(
            board.nextDeadline == nil,
            "nothing is pending, yet the board still holds a deadline at \(board.nextDeadline.map { "\($0.milliseconds)" } ?? "")")
    }
}
