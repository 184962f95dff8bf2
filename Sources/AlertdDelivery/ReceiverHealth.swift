public import AlertdWire

/// Which callback receivers keep failing: a receiver (the host of its URL, as
/// ``DeliveryQueue/host(of:)`` names it) whose attempts have all failed for
/// ``minimumSeconds`` and at least ``minimumFailures`` times in a row is reported once
/// (``Report/failing(host:since:failures:)``: the worker logs a warning), and its first
/// answer after that once (``Report/recovered(host:failures:)``, at info). Its retries
/// go on as before, and are not logged again: a receiver down for a day is one line.
///
/// An answer is any status but a failure: a 2xx, and a 410, which stops deliveries on
/// the receiver's own word. A refusal by the deny list is not an attempt on the receiver
/// (it is warned about by itself, ``RefusalLog``). Bounded: past ``capacity`` failing
/// receivers it starts over.
///
/// Pure; the delivery worker keeps it under its lock.
///
/// ```swift
/// var health = ReceiverHealth()
/// health.record(host: "hooks.example.com", answered: false, at: t)              // nil
/// health.record(host: "hooks.example.com", answered: false, at: t + 61 s)       // nil (2 failures)
/// health.record(host: "hooks.example.com", answered: false, at: t + 90 s)       // .failing(…, since: t, failures: 3)
/// health.record(host: "hooks.example.com", answered: false, at: t + 200 s)      // nil: said once
/// health.record(host: "hooks.example.com", answered: true, at: t + 300 s)       // .recovered(…, failures: 4)
/// ```
public struct ReceiverHealth: Sendable {
    /// How long a receiver must have failed, in seconds, before it is reported (default 60).
    public let minimumSeconds: Double
    /// How many attempts in a row must have failed before it is reported (default 3).
    public let minimumFailures: Int
    public let capacity: Int

    private struct Streak: Sendable {
        var since: Timestamp
        var failures: Int
        var reported: Bool
    }

    private var streaks: [String: Streak] = [:]

    public init(minimumSeconds: Double = 60, minimumFailures: Int = 3, capacity: Int = 4096) {
        self.minimumSeconds = minimumSeconds
        self.minimumFailures = minimumFailures
        self.capacity = capacity
    }

    /// What is worth a log line.
    public enum Report: Sendable, Hashable {
        /// Every attempt since `since` failed, `failures` of them: said once.
        case failing(host: String, since: Timestamp, failures: Int)
        /// It answered after being reported failing.
        case recovered(host: String, failures: Int)
    }

    /// Whether an attempt got an answer from the receiver (a 2xx, or a 410).
    public static func answered(_ attempt: DeliveryAttempt) -> Bool {
        guard let status = attempt.statusCode else { return false }
        return (200...299).contains(status) || status == 410
    }

    /// Records an attempt on `host` at `now`; what to log, if anything.
    public mutating func record(host: String, answered: Bool, at now: Timestamp) -> Report? {
        if answered {
            guard let streak = streaks.removeValue(forKey: host), streak.reported else { return nil }
            return .recovered(host: host, failures: streak.failures)
        }
        if streaks[host] == nil, streaks.count >= capacity { streaks.removeAll(keepingCapacity: true) }
        var streak = streaks[host] ?? Streak(since: now, failures: 0, reported: false)
        streak.failures += 1
        defer { streaks[host] = streak }
        guard !streak.reported, streak.failures >= minimumFailures,
            Double(now.milliseconds - streak.since.milliseconds) >= minimumSeconds * 1000
        else { return nil }
        streak.reported = true
        return .failing(host: host, since: streak.since, failures: streak.failures)
    }
}
