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
