public import AlertdCore
public import AlertdWire

/// When to try a callback again: exponential backoff with jitter, for at most
/// ``maxAge`` seconds after the event was created.
///
/// The nominal wait after attempt *n* fails is `initial × 2^(n−1)` seconds, at
/// most ``maxInterval``. The actual wait is drawn with **equal jitter**:
/// uniformly from the upper half of the nominal wait, `[w/2, w]`.
///
/// Why equal jitter and not full jitter (`[0, w]`): full jitter spreads load
/// best when many clients compete for one server, but it may retry almost at
/// once after a failure, and a later wait can be shorter than an earlier one.
/// A callback receiver that is down gets no relief from a 20 ms retry. Equal
/// jitter still scatters the events that failed together (so a receiver that
/// comes back is not hit by all of them in the same instant), while every wait
/// is at least half the nominal one, and waits never shrink from one attempt
/// to the next until the cap: attempt *n+1* waits at least `w(n+1)/2 = w(n)`.
///
/// ```swift
/// let policy = RetryPolicy(initial: 1, maxInterval: 300, maxAge: 86_400)
/// var rng = SystemRandomNumberGenerator()
/// switch policy.decide(.response(status: 503, retryAfter: "30"), attempt: 1,
///                      eventCreatedAt: event.timestamp, now: clock.now(), using: &rng) {
/// case .delivered, .stopped, .expired: // done with this target
/// case .retry(let at): // schedule the next attempt at `at`
/// }
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// The nominal wait after the first failed attempt, in seconds.
    public var initial: Double
    /// The longest nominal wait, in seconds.
    public var maxInterval: Double
    /// Seconds after the event's creation when its last attempt is made.
    public var maxAge: Double

    /// The defaults are those of the config: `callbacks.retry_initial_seconds`,
    /// `callbacks.retry_max_interval_seconds` and `callbacks.max_age`.
    ///
    /// - Precondition: `initial > 0`, `maxInterval >= initial`, `maxAge >= 0`,
    ///   all finite. The config loader checks this and names the key.
    public init(initial: Double = 1, maxInterval: Double = 300, maxAge: Double = 86_400) {
        precondition(initial.isFinite && initial > 0, "initial must be a positive number of seconds")
        precondition(maxInterval.isFinite && maxInterval >= initial, "maxInterval must be at least initial")
        precondition(maxAge.isFinite && maxAge >= 0, "maxAge must be a non-negative number of seconds")
        self.initial = initial
        self.maxInterval = maxInterval
        self.maxAge = maxAge
    }

    /// The nominal wait, in seconds, after `attempt` attempts (counting from 1)
    /// have failed: `initial × 2^(attempt−1)`, at most ``maxInterval``.
    public func backoff(after attempt: Int) -> Double {
        let doublings = min(max(attempt, 1) - 1, 62)
        return min(maxInterval, initial * Double(Int64(1) << Int64(doublings)))
    }

    /// The range the jittered wait after `attempt` failed attempts is drawn from.
    public func jitterRange(after attempt: Int) -> ClosedRange<Double> {
        let nominal = backoff(after: attempt)
        return (nominal / 2)...nominal
    }

    /// When to make the next attempt after attempt number `attempt` (counting
    /// from 1) failed at `now`; nil to give up because ``maxAge`` has passed.
    ///
    /// The wait is the jittered backoff, or `retryAfter` seconds when the
    /// receiver asked for longer — a `Retry-After` is a lower bound, never a
    /// way to retry sooner than the backoff. An attempt that would fall after
    /// `eventCreatedAt + maxAge` is moved to that instant, the last attempt.
    ///
    /// `giveUpAt`, when sooner than `eventCreatedAt + maxAge`, is the deadline
    /// instead (a silence for Alertmanager is pointless once it would have ended).
    public func nextAttempt(
        after attempt: Int,
        eventCreatedAt: Timestamp,
        now: Timestamp,
        retryAfter: Double? = nil,
        giveUpAt: Timestamp? = nil,
        using rng: inout some RandomNumberGenerator
    ) -> Timestamp? {
        let deadline = min(eventCreatedAt.adding(seconds: maxAge), giveUpAt ?? .init(milliseconds: .max))
        guard now < deadline else { return nil }
        var wait = Double.random(in: jitterRange(after: attempt), using: &rng)
        if let retryAfter, retryAfter.isFinite, retryAfter > wait { wait = min(retryAfter, maxAge) }
        return min(now.adding(seconds: wait), deadline)
    }

    /// What to do after an attempt: done, stop, or retry and when.
    ///
    /// 2xx is delivered; 410 Gone (and any status of `stoppingStatuses`) stops
    /// deliveries of this event to this target; any other status, a timeout and
    /// a failure to connect (refused, unreachable, refused by the deny list) are
    /// retried until ``maxAge`` (or `giveUpAt`, when sooner). A `Retry-After`
    /// (seconds or an HTTP date) is honoured on 429 and 503.
    public func decide(
        _ outcome: AttemptOutcome,
        attempt: Int,
        eventCreatedAt: Timestamp,
        now: Timestamp,
        giveUpAt: Timestamp? = nil,
        stoppingStatuses: Set<Int> = [],
        using rng: inout some RandomNumberGenerator
    ) -> DeliveryDecision {
        var retryAfter: Double?
        if case .response(let status, let header) = outcome {
            switch status {
            case 200...299: return .delivered
            case 410: return .stopped
            case _ where stoppingStatuses.contains(status): return .stopped
            case 429, 503: retryAfter = header.flatMap { RetryAfter.parse($0, now: now) }
            default: break
            }
        }
        guard
            let next = nextAttempt(
                after: attempt, eventCreatedAt: eventCreatedAt, now: now, retryAfter: retryAfter, giveUpAt: giveUpAt, using: &rng)
        else { return .expired }
        return .retry(at: next)
    }
}

/// How one delivery attempt ended.
public enum AttemptOutcome: Sendable, Hashable {
    /// The receiver answered with `status`; `retryAfter` is its `Retry-After` header, if any.
    case response(status: Int, retryAfter: String? = nil)
    /// No answer within the attempt's timeout.
    case timedOut
    /// No request was made or completed: connection refused, name not found,
    /// TLS failure, target refused by the deny list. `reason` is recorded.
    case failed(reason: String)
}

/// What ``RetryPolicy/decide(_:attempt:eventCreatedAt:now:using:)`` says to do next.
public enum DeliveryDecision: Sendable, Hashable {
    /// A 2xx: the target has the event.
    case delivered
    /// A 410 Gone: the target wants no more of this event; no more attempts.
    case stopped
    /// Try again at this time.
    case retry(at: Timestamp)
    /// The event is older than `maxAge`: give up on this target.
    case expired
}

extension RetryPolicy {
    /// Settles an attempt of `delivery` that started at `at` and ended at
    /// `now`: the record to store and, if it is to be tried again, the
    /// delivery with its next due time (the backoff counts from the end).
    ///
    /// A 2xx leaves it `delivered`; a 410, or a failure past `maxAge`, leaves it
    /// `failed`; anything else keeps it `pending` with the next attempt's time.
    ///
    /// `giveUpAt` and `stoppingStatuses` are as for ``decide(_:attempt:eventCreatedAt:now:giveUpAt:stoppingStatuses:using:)``;
    /// `result` (what a delivered attempt produced: a silence id) goes into the record.
    public func settle(
        _ delivery: PendingDelivery, outcome: AttemptOutcome, at: Timestamp, now: Timestamp? = nil, giveUpAt: Timestamp? = nil,
        stoppingStatuses: Set<Int> = [], result: String? = nil, using rng: inout some RandomNumberGenerator
    ) -> (record: AttemptRecord, retry: PendingDelivery?) {
        let number = delivery.attemptsMade + 1
        let attempt: DeliveryAttempt
        switch outcome {
        case .response(let status, _): attempt = DeliveryAttempt(at: at, statusCode: status, error: nil)
        case .timedOut: attempt = DeliveryAttempt(at: at, statusCode: nil, error: "timed out")
        case .failed(let reason): attempt = DeliveryAttempt(at: at, statusCode: nil, error: reason)
        }
        let decision = decide(
            outcome, attempt: number, eventCreatedAt: delivery.eventCreatedAt, now: max(now ?? at, at), giveUpAt: giveUpAt,
            stoppingStatuses: stoppingStatuses, using: &rng)
        switch decision {
        case .delivered:
            return (
                AttemptRecord(
                    deliveryID: delivery.id, number: number, attempt: attempt, state: .delivered, nextAttemptAt: nil, result: result),
                nil
            )
        case .stopped, .expired:
            return (AttemptRecord(deliveryID: delivery.id, number: number, attempt: attempt, state: .failed, nextAttemptAt: nil), nil)
        case .retry(let next):
            var retry = delivery
            retry.attemptsMade = number
            retry.due = next
            return (AttemptRecord(deliveryID: delivery.id, number: number, attempt: attempt, state: .pending, nextAttemptAt: next), retry)
        }
    }
}
