import AlertdCore
import AlertdDelivery
import AlertdTestSupport
import AlertdWire
import Testing

@Suite("The retry policy backs off exponentially with equal jitter")
struct RetryScheduleTests {
    let policy = RetryPolicy(initial: 1, maxInterval: 300, maxAge: 86_400)

    @Test(
        "The nominal wait doubles from initial and stops at the maximum interval",
        arguments: [(1, 1), (2, 2), (3, 4), (4, 8), (5, 16), (8, 128), (9, 256), (10, 300), (11, 300), (1000, 300), (Int.max, 300)]
            as [(Int, Double)]
    )
    func nominalWait(attempt: Int, seconds: Double) {
        #expect(policy.backoff(after: attempt) == seconds)
    }

    @Test("Other initial values double the same way")
    func otherInitial() {
        let policy = RetryPolicy(initial: 0.25, maxInterval: 10, maxAge: 60)
        #expect((1...8).map { policy.backoff(after: $0) } == [0.25, 0.5, 1, 2, 4, 8, 10, 10])
    }

    @Test("Each jittered wait lies in the upper half of the nominal wait")
    func jitterBounds() {
        var rng = SeededGenerator(seed: 42)
        for attempt in 1...14 {
            let nominal = policy.backoff(after: attempt)
            for _ in 0..<200 {
                let next = policy.nextAttempt(after: attempt, eventCreatedAt: eventTime, now: eventTime, using: &rng)!
                let wait = next.seconds(since: eventTime)
                // Milliseconds are rounded: allow half of one either side.
                #expect(wait >= nominal / 2 - 0.0005 && wait <= nominal + 0.0005, "attempt \(attempt): \(wait) s")
            }
        }
    }

    @Test(
        "The jitter range is the upper half of the nominal wait",
        arguments: [(1, 0.5...1), (5, 8...16), (10, 150...300)] as [(Int, ClosedRange<Double>)])
    func jitterRange(attempt: Int, range: ClosedRange<Double>) {
        #expect(policy.jitterRange(after: attempt) == range)
    }

    @Test("Draws cover the whole jitter range, not just its middle")
    func jitterCoversRange() {
        var rng = SeededGenerator(seed: 3)
        let waits = (0..<2000).map { _ in
            policy.nextAttempt(after: 5, eventCreatedAt: eventTime, now: eventTime, using: &rng)!.seconds(since: eventTime)
        }
        #expect(waits.min()! < 8.1)
        #expect(waits.max()! > 15.9)
    }

    @Test("Jitter spreads events that failed together")
    func jitterSpreads() {
        var rng = SeededGenerator(seed: 7)
        let times = (0..<100).map { _ in policy.nextAttempt(after: 6, eventCreatedAt: eventTime, now: eventTime, using: &rng)! }
        #expect(Set(times).count > 90)
    }

    @Test("The same seed gives the same schedule")
    func reproducible() {
        var a = SeededGenerator(seed: 1234)
        var b = SeededGenerator(seed: 1234)
        let first = (1...20).map { policy.nextAttempt(after: $0, eventCreatedAt: eventTime, now: eventTime, using: &a) }
        let second = (1...20).map { policy.nextAttempt(after: $0, eventCreatedAt: eventTime, now: eventTime, using: &b) }
        #expect(first == second)
    }

    @Test("Waits never shrink from one attempt to the next, and reach the cap", arguments: [UInt64(1), 2, 3, 99, 12345])
    func waitsGrow(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var now = eventTime
        var waits: [Double] = []
        for attempt in 1...12 {
            let next = policy.nextAttempt(after: attempt, eventCreatedAt: eventTime, now: now, using: &rng)!
            waits.append(next.seconds(since: now))
            now = next
        }
        // Until the cap (attempt 10 is the first at 300 s) each wait is at least the one before.
        for i in 1..<9 { #expect(waits[i] >= waits[i - 1], "\(waits)") }
        #expect(waits.suffix(3).allSatisfy { $0 >= 150 && $0 <= 300 })
    }
}

@Suite("The retry policy gives up at the maximum age")
struct RetryMaxAgeTests {
    let policy = RetryPolicy(initial: 1, maxInterval: 300, maxAge: 3600)

    @Test("No attempt is scheduled once the event is as old as the maximum age", arguments: [3600.0, 3600.001, 90_000])
    func givesUp(age: Double) {
        var rng = SeededGenerator(seed: 1)
        #expect(policy.nextAttempt(after: 30, eventCreatedAt: eventTime, now: eventTime.adding(seconds: age), using: &rng) == nil)
    }

    @Test("An attempt that would fall after the maximum age is made at the maximum age")
    func lastAttemptAtDeadline() {
        var rng = SeededGenerator(seed: 1)
        let next = policy.nextAttempt(after: 30, eventCreatedAt: eventTime, now: eventTime.adding(seconds: 3550), using: &rng)
        #expect(next == eventTime.adding(seconds: 3600))
    }

    @Test("A whole schedule of failures ends with an attempt at the maximum age, then stops")
    func wholeSchedule() {
        var rng = SeededGenerator(seed: 5)
        var now = eventTime
        var attempts = 1
        while case .retry(let next) = policy.decide(
            .response(status: 500), attempt: attempts, eventCreatedAt: eventTime, now: now, using: &rng)
        {
            #expect(next > now)
            now = next
            attempts += 1
        }
        #expect(now == eventTime.adding(seconds: 3600))
        // 1 + 2 + … + 256 ≈ 511 s, then 150–300 s apiece for the remaining ~3090 s.
        #expect((20...30).contains(attempts), "\(attempts) attempts")
        #expect(policy.decide(.timedOut, attempt: attempts, eventCreatedAt: eventTime, now: now, using: &rng) == .expired)
    }

    @Test("A maximum age of zero allows the first attempt only")
    func zeroMaxAge() {
        let policy = RetryPolicy(initial: 1, maxInterval: 1, maxAge: 0)
        var rng = SeededGenerator(seed: 1)
        #expect(policy.decide(.timedOut, attempt: 1, eventCreatedAt: eventTime, now: eventTime, using: &rng) == .expired)
    }
}

@Suite("The retry policy decides per response")
struct RetryDecisionTests {
    let policy = RetryPolicy(initial: 1, maxInterval: 300, maxAge: 3600)
    let now = eventTime.adding(seconds: 10)

    func decide(_ outcome: AttemptOutcome, attempt: Int = 1, at now: Timestamp? = nil) -> DeliveryDecision {
        var rng = SeededGenerator(seed: 9)
        return policy.decide(outcome, attempt: attempt, eventCreatedAt: eventTime, now: now ?? self.now, using: &rng)
    }

    @Test("Any 2xx is delivered", arguments: [200, 201, 202, 204, 299])
    func delivered(status: Int) {
        #expect(decide(.response(status: status)) == .delivered)
    }

    @Test("A 2xx after the maximum age still counts as delivered")
    func deliveredLate() {
        #expect(decide(.response(status: 200), at: eventTime.adding(seconds: 4000)) == .delivered)
    }

    @Test("410 Gone stops deliveries to the target")
    func gone() {
        #expect(decide(.response(status: 410)) == .stopped)
        #expect(decide(.response(status: 410, retryAfter: "5")) == .stopped)
    }

    @Test(
        "Every other status is retried",
        arguments: [100, 199, 300, 301, 302, 304, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 599])
    func retriedStatus(status: Int) {
        guard case .retry(let at) = decide(.response(status: status)) else {
            Issue.record("\(status) was not retried")
            return
        }
        #expect(at > now && at <= now.adding(seconds: 1))
    }

    @Test("Timeouts and connection failures are retried")
    func retriedFailures() {
        for outcome in [AttemptOutcome.timedOut, .failed(reason: "connection refused"), .failed(reason: "refused by callbacks.deny")] {
            guard case .retry(let at) = decide(outcome, attempt: 3) else {
                Issue.record("\(outcome) was not retried")
                continue
            }
            #expect(at.seconds(since: now) >= 2 && at.seconds(since: now) <= 4)
        }
    }

    @Test("Retry-After in seconds is honoured on 429 and 503", arguments: [429, 503])
    func retryAfterSeconds(status: Int) {
        #expect(decide(.response(status: status, retryAfter: "120")) == .retry(at: now.adding(seconds: 120)))
    }

    @Test("Retry-After as an HTTP date is honoured")
    func retryAfterDate() {
        // now is 2026-11-21T21:06:08.131Z; ask for 21:08:00 GMT.
        let decision = decide(.response(status: 503, retryAfter: "Sat, 21 Nov 2026 21:08:00 GMT"))
        #expect(decision == .retry(at: Timestamp(rfc3339: "2026-11-21T21:08:00Z")!))
    }

    @Test("Retry-After on other statuses is ignored", arguments: [500, 502, 404])
    func retryAfterIgnored(status: Int) {
        guard case .retry(let at) = decide(.response(status: status, retryAfter: "120")) else {
            Issue.record("not retried")
            return
        }
        #expect(at.seconds(since: now) <= 1)
    }

    @Test("A Retry-After shorter than the backoff does not make the retry sooner")
    func retryAfterIsALowerBound() {
        guard case .retry(let at) = decide(.response(status: 503, retryAfter: "1"), attempt: 8) else {
            Issue.record("not retried")
            return
        }
        #expect(at.seconds(since: now) >= 64)
    }

    @Test(
        "A Retry-After beyond the maximum age is capped at it",
        arguments: ["100000", "Fri, 31 Dec 9999 23:59:59 GMT", "99999999999999999999999"])
    func retryAfterCapped(value: String) {
        #expect(decide(.response(status: 429, retryAfter: value)) == .retry(at: eventTime.adding(seconds: 3600)))
    }

    @Test("An unreadable Retry-After falls back to the backoff", arguments: ["soon", "-5", "1.5", ""])
    func retryAfterUnreadable(value: String) {
        guard case .retry(let at) = decide(.response(status: 503, retryAfter: value)) else {
            Issue.record("not retried")
            return
        }
        #expect(at.seconds(since: now) <= 1)
    }
}

@Suite("A silence for Alertmanager is retried until it would have ended, and stopped when refused as malformed")
struct IntegrationRetryTests {
    let policy = RetryPolicy(initial: 1, maxInterval: 300, maxAge: 86_400)
    let delivery = PendingDelivery(
        id: "dl_1", eventID: "msg_1", target: "http://127.0.0.1:9093/api/v2/silences", secret: "", body: [], eventCreatedAt: eventTime,
        attemptsMade: 0, due: eventTime, kind: .alertmanagerSilence)

    @Test("giveUpAt sooner than max_age is the last attempt's time, and past it the delivery fails")
    func giveUpAt() {
        var rng = SeededGenerator(seed: 7)
        let ends = eventTime.adding(seconds: 3600)
        let late = eventTime.adding(seconds: 3599.5)
        #expect(policy.nextAttempt(after: 12, eventCreatedAt: eventTime, now: late, giveUpAt: ends, using: &rng) == ends)
        #expect(policy.nextAttempt(after: 12, eventCreatedAt: eventTime, now: ends, giveUpAt: ends, using: &rng) == nil)
        let (record, retry) = policy.settle(
            delivery, outcome: .failed(reason: "connection refused"), at: ends, giveUpAt: ends, using: &rng)
        #expect(record.state == .failed && retry == nil)
        // A later giveUpAt changes nothing: max_age stays the bound.
        #expect(
            policy.nextAttempt(
                after: 1, eventCreatedAt: eventTime, now: eventTime.adding(seconds: 86_399.9), giveUpAt: eventTime.adding(seconds: 1e7),
                using: &rng)
                == eventTime.adding(seconds: 86_400))
    }

    @Test("a status in stoppingStatuses fails at once; others are retried as before", arguments: [400, 422])
    func stopping(status: Int) {
        var rng = SeededGenerator(seed: 7)
        #expect(
            policy.decide(
                .response(status: status), attempt: 1, eventCreatedAt: eventTime, now: eventTime, stoppingStatuses: [400, 422], using: &rng)
                == .stopped)
        if case .retry = policy.decide(.response(status: status), attempt: 1, eventCreatedAt: eventTime, now: eventTime, using: &rng) {
        } else {
            Issue.record("a callback's \(status) must be retried")
        }
        if case .retry = policy.decide(
            .response(status: 500), attempt: 1, eventCreatedAt: eventTime, now: eventTime, stoppingStatuses: [400, 422], using: &rng)
        {
        } else {
            Issue.record("a 500 must be retried")
        }
    }

    @Test("what a delivered attempt produced is kept in its record; a failed attempt keeps nothing")
    func result() {
        var rng = SeededGenerator(seed: 7)
        let delivered = policy.settle(delivery, outcome: .response(status: 200), at: eventTime, result: "silence-1", using: &rng)
        #expect(delivered.record.state == .delivered && delivered.record.result == "silence-1")
        let failed = policy.settle(delivery, outcome: .response(status: 503), at: eventTime, result: "silence-1", using: &rng)
        #expect(failed.record.state == .pending && failed.record.result == nil)
    }
}
