import AlertdCore
import AlertdWire
import Testing

// Review of the core daemon: each test demonstrates one defect found in the
// review and fails until it is fixed. Defects fixed while the review ran
// (2da5e63, b66596a) keep their test as a regression test. None is marked as a
// known issue on purpose.

@Suite("Review: the board's deadlines")
struct ReviewBoardTests {
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
            board.committed(change)
        }
        #expect(board.pendingTotal == 0)
        #expect(
            board.nextDeadline == nil,
            "nothing is pending, yet the board still holds a deadline at \(board.nextDeadline.map { "\($0.milliseconds)" } ?? "")")
    }
}
