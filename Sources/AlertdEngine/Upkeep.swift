import AlertdCore
public import AlertdWire

import Logging
import NIOConcurrencyHelpers

extension Engine {
    /// Fires due dismissals and expiries; returns when the next one is due.
    /// Their commits are reported later (``published(_:)`` wakes whom they concern).
    @discardableResult
    public func fireDeadlines() -> Timestamp? {
        guard refusal() == nil else { return store.nextDeadline }
        store.fireDeadlines(now: clock.now(), events: { [self] in events(for: $0) }) { [self] result in
            switch result {
            case .success(let committed):
                published(committed)
                logger.debug("deadlines fired", metadata: ["alerts": "\(committed.change.decided.count)"])
            case .failure(let error):
                logger.warning("deadlines not committed; fired again later", metadata: ["error": "\(error)"])
            }
        }
        return store.nextDeadline
    }

    /// One round of the deadline loop: fires the waiter timeouts and the alert
    /// deadlines that are due, and returns the monotonic time to wake up next
    /// (at most a minute away, so a step of the wall clock is caught up with).
    func fireDue() -> UInt64 {
        let now = monotonicNow()
        let (due, nextTimeout) = timers.takeDue(now: now)
        for action in due { action() }
        var wake = now + 60_000_000_000
        if let nextTimeout { wake = min(wake, nextTimeout) }
        if let nextDeadline = fireDeadlines() {
            let milliseconds = max(0, nextDeadline.milliseconds - clock.now().milliseconds)
            wake = min(wake, now + UInt64(milliseconds) * 1_000_000)
        }
        return wake
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
