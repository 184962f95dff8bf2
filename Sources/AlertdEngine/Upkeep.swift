import AlertdCore
import AlertdWire

import Logging
import NIOConcurrencyHelpers

extension Engine {
    /// Fires the deadlines due now in one round of the store's and publishes what it
    /// committed (``published(_:)`` wakes whom it concerns); returns once it has. A round
    /// the deadline loop started is waited for first: one round at a time, so what that
    /// round fired is published when this returns. A commit that failed is left due.
    public func fireDeadlines() async {
        await deadlineRounds.enter()
        await fireRound()
        deadlineRounds.leave()
    }

    /// Fires and publishes one round; the caller holds ``deadlineRounds``.
    /// False when a commit of the round failed, or the engine refuses changes (draining).
    @discardableResult
    private func fireRound() async -> Bool {
        guard refusal() == nil else { return false }
        var failed = false
        for result in await store.fireDeadlines(now: clock.now(), events: { [self] in events(for: $0) }) {
            switch result {
            case .success(let committed):
                published(committed)
                logger.debug("deadlines fired", metadata: ["alerts": "\(committed.change.decided.count)"])
            case .failure(let error):
                failed = true
                logger.warning("deadlines not committed; fired again later", metadata: ["error": "\(error)"])
            }
        }
        return !failed
    }

    /// How soon the deadline loop looks again at a deadline that reads as due: what a round
    /// fires reads as due until it is committed (or after a round that failed, or while the
    /// store refuses writes).
    static let roundRecheckNanoseconds: UInt64 = 250_000_000

    /// One round of the deadline loop: fires the waiter timeouts that are due, starts a
    /// round of the store's deadlines as a job when one reads as due (unless a round runs:
    /// the loop never waits for a commit or the database), and returns the monotonic time
    /// to wake up next (at most a minute away, so a step of the wall clock is caught up with).
    func fireDue() -> UInt64 {
        let now = monotonicNow()
        let (due, nextTimeout) = timers.takeDue(now: now)
        for action in due { action() }
        let look = Self.nextLook(
            now: now, timeout: nextTimeout, deadlineIn: store.nextDeadline.map { $0.milliseconds - clock.now().milliseconds })
        if look.round, deadlineRounds.tryEnter() {
            jobs.start(
                { [self] in
                    let done = await fireRound()
                    deadlineRounds.leave()
                    // A sooner deadline rings the loop. One that still reads as due (a round
                    // that failed, a store refusing writes, more due than a round fires) waits
                    // for the loop's next look: never a busy loop.
                    if done, let next = store.nextDeadline, next > clock.now() { deadlineAdded() }
                }, refused: { [self] in deadlineRounds.leave() })
        }
        return look.wake
    }

    /// When the deadline loop wakes next, `now` and `timeout` in monotonic nanoseconds, the
    /// store's next deadline `deadlineIn` milliseconds away (≤ 0: due; nil: none); and whether
    /// a round is due. A due deadline is looked at again ``roundRecheckNanoseconds`` later,
    /// never at once.
    static func nextLook(now: UInt64, timeout: UInt64?, deadlineIn milliseconds: Int64?) -> (wake: UInt64, round: Bool) {
        var wake = min(now + 60_000_000_000, timeout ?? .max)
        guard let milliseconds else { return (wake, false) }
        if milliseconds > 0 {
            wake = min(wake, now + UInt64(milliseconds) * 1_000_000)
            return (wake, false)
        }
        return (min(wake, now + roundRecheckNanoseconds), true)
    }

    /// A new deadline was stored (a post, a display): wakes the loop if it is sooner.
    func deadlineAdded() {
        guard let next = store.nextDeadline else { return }
        let milliseconds = max(0, next.milliseconds - clock.now().milliseconds)
        alarm.ring(ifBefore: monotonicNow() + UInt64(milliseconds) * 1_000_000)
    }

    /// Deletes terminal alerts past retention (older than `alerts.retention`, beyond the
    /// newest `alerts.retention_max` of their client or its newest
    /// `retention_max_bytes_per_client` bytes, or the oldest decided beyond
    /// `retention_max_bytes` of every client's), receipts past `receipts.retention` (oldest
    /// first, so what stays is a chain), and idempotency keys past a day;
    /// the clients left with nothing are forgotten (`GET /v1/clients` no longer
    /// lists them, they no longer count against `limits.max_clients`; a later
    /// post creates them again).
    public func purge() async {
        guard refusal() == nil else { return }
        let now = clock.now()
        let forgotten: [String]
        do {
            let settings = self.settings
            forgotten = try await store.purge(
                Retention(
                    decidedBefore: now.adding(seconds: -settings.retentionSeconds), keepPerClient: settings.retentionMax,
                    maxBytesPerClient: settings.retentionMaxBytesPerClient, maxBytes: settings.retentionMaxBytes,
                    receiptsDecidedBefore: now.adding(seconds: -settings.receiptRetentionSeconds)),
                keysBefore: now.adding(seconds: -86_400))
        } catch {
            logger.warning("the purge did not finish; the next one goes on", metadata: ["error": "\(error)"])
            return
        }
        guard !forgotten.isEmpty else { return }
        waiters.withLockedValue { $0.forget(forgotten) }
        logger.debug("idle clients forgotten", metadata: ["clients": "\(forgotten.count)"])
    }
}
