import AlertdWire
import Foundation
import struct NIOConcurrencyHelpers.NIOLockedValueBox

/// A token bucket: `rate` requests a second on average, `burst` at once.
///
/// Pure: time comes in as monotonic nanoseconds.
///
/// ```swift
/// var bucket = TokenBucket(rate: 10, burst: 20, now: t0)
/// switch bucket.take(now: t) {
/// case .allowed: …
/// case .limited(let retryAfter): …   // whole seconds until one request is allowed again
/// }
/// ```
public struct TokenBucket: Sendable, Hashable {
    public let rate: Double
    public let burst: Double
    private var level: Double
    private var last: UInt64

    public enum Outcome: Sendable, Hashable {
        case allowed
        /// Seconds (at least 1) until the next request would be allowed.
        case limited(retryAfter: Int)
    }

    /// A full bucket.
    public init(rate: Double, burst: Double, now: UInt64) {
        self.rate = rate
        self.burst = burst
        level = burst
        last = now
    }

    public mutating func take(now: UInt64) -> Outcome {
        if now > last {
            level = min(burst, level + Double(now - last) / 1e9 * rate)
            last = now
        }
        if level >= 1 {
            level -= 1
            return .allowed
        }
        return .limited(retryAfter: max(1, Int(((1 - level) / rate).rounded(.up))))
    }
}

/// `limits.rate_per_second` and `limits.rate_burst`, one bucket per token.
public final class RateLimiter: Sendable {
    private let rate: Double
    private let burst: Double
    private let buckets = NIOLockedValueBox<[String: TokenBucket]>([:])

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// The limiter `limits.rate_per_second` and `rate_burst` describe (the burst
    /// defaults to one second's worth); nil when no rate is set.
    public convenience init?(ratePerSecond: Double?, burst: Int?) {
        guard let rate = ratePerSecond else { return nil }
        self.init(rate: rate, burst: Double(burst ?? max(1, Int(rate.rounded(.up)))))
    }

    /// Takes one request of `token` now; a problem (429 with Retry-After) when over its rate.
    func admit(_ token: String) -> Problem? {
        let now = DispatchTime.now().uptimeNanoseconds
        let outcome = buckets.withLockedValue { buckets in
            buckets[token, default: TokenBucket(rate: rate, burst: burst, now: now)].take(now: now)
        }
        guard case .limited(let seconds) = outcome else { return nil }
        var problem = Problem(
            .rateLimited, "token \(token) is over its rate of \(rate.formatted()) requests a second; retry in \(seconds) s")
        problem.headers = [("Retry-After", String(seconds))]
        return problem
    }
}

extension Double {
    fileprivate func formatted() -> String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}

/// How many requests each token has in flight — admitted, and not yet answered
/// and taken by its client — bounded per token, so that one token (a leaked
/// one, a runaway script) cannot hold every connection and every byte of
/// answers the daemon keeps for slow readers. A long-poll leaves the count
/// while it is parked (``Call/parking()``): `limits.max_waiters_per_token`
/// bounds those.
public final class TokenConcurrency: Sendable {
    public let limit: Int
    private let inFlight = NIOLockedValueBox<[String: Int]>([:])

    public init(limit: Int) { self.limit = max(1, limit) }

    /// One request's place in its token's count; released once, whichever comes first
    /// (parked, or finished).
    public final class Slot: Sendable {
        private let owner: TokenConcurrency
        private let token: String
        private let released = NIOLockedValueBox(false)

        fileprivate init(owner: TokenConcurrency, token: String) {
            self.owner = owner
            self.token = token
        }

        public func release() {
            guard
                !released.withLockedValue({ released in
                    defer { released = true }; return released
                })
            else { return }
            owner.inFlight.withLockedValue { counts in
                let left = counts[token, default: 1] - 1
                counts[token] = left > 0 ? left : nil
            }
        }
    }

    /// A slot for one more request of `token`, or 429 rate-limited when it has `limit` in flight.
    func take(_ token: String) -> Result<Slot, Problem> {
        let taken = inFlight.withLockedValue { counts -> Bool in
            let now = counts[token, default: 0]
            guard now < limit else { return false }
            counts[token] = now + 1
            return true
        }
        guard taken else {
            return .failure(
                Problem(
                    .rateLimited,
                    "token \(token) has its maximum of \(limit) requests in flight (limits.max_requests_per_token); "
                        + "wait for an answer before sending more",
                    retryAfter: 1))
        }
        return .success(Slot(owner: self, token: token))
    }

    /// Requests in flight for `token` (tests).
    func count(_ token: String) -> Int { inFlight.withLockedValue { $0[token, default: 0] } }
}
