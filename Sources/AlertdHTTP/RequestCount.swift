import Dispatch
import NIOConcurrencyHelpers
import Synchronization

/// Requests in flight, and whoever waits for there to be none (a drain, a stop): told
/// when the count falls to zero, never by polling it.
final class RequestCount: Sendable {
    private let count = Atomic<Int>(0)
    /// Whether anyone waits: the request path takes the lock only then.
    private let watched = Atomic<Int>(0)
    private let watchers = NIOLockedValueBox<(next: UInt64, waiting: [UInt64: @Sendable () -> Void])>((0, [:]))

    var value: Int { count.load(ordering: .relaxed) }

    func begin() { count.add(1, ordering: .sequentiallyConsistent) }

    func end() {
        guard count.subtract(1, ordering: .sequentiallyConsistent).newValue == 0,
            watched.load(ordering: .sequentiallyConsistent) > 0
        else { return }
        wake()
    }

    /// Waits until no request is in flight, for `seconds` at most, blocking the calling
    /// thread; whether none is.
    func waitIdle(seconds: Double) -> Bool {
        let idle = DispatchSemaphore(value: 0)
        let token = whenIdle { idle.signal() }
        let done = idle.wait(timeout: .now() + max(0, seconds)) == .success
        forget(token)
        return done
    }

    /// Waits until no request is in flight, for `seconds` at most; whether none is.
    func idle(seconds: Double) async -> Bool {
        let once = NIOLockedValueBox<CheckedContinuation<Bool, Never>?>(nil)
        let token = NIOLockedValueBox<UInt64?>(nil)
        let idle = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            once.withLockedValue { $0 = continuation }
            let finish: @Sendable (Bool) -> Void = { idle in once.withLockedValue { $0.take() }?.resume(returning: idle) }
            let registered = whenIdle { finish(true) }
            token.withLockedValue { $0 = registered }
            // The deadline: a timer, which finds nothing to do once the count fell to zero.
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { finish(false) }
        }
        if let registered = token.withLockedValue({ $0 }) { forget(registered) }
        return idle
    }

    /// Calls `idle` once, as soon as no request is in flight (at once when none is); the
    /// token ``forget(_:)`` takes.
    private func whenIdle(_ idle: @escaping @Sendable () -> Void) -> UInt64 {
        let token = watchers.withLockedValue { watchers -> UInt64 in
            defer { watchers.next += 1 }
            watchers.waiting[watchers.next] = idle
            return watchers.next
        }
        watched.add(1, ordering: .sequentiallyConsistent)
        // Registered first, then looked: a count that fell to zero in between woke it, or is seen here.
        if count.load(ordering: .sequentiallyConsistent) == 0 { wake() }
        return token
    }

    private func forget(_ token: UInt64) {
        if watchers.withLockedValue({ $0.waiting.removeValue(forKey: token) }) != nil {
            watched.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    private func wake() {
        let woken = watchers.withLockedValue { watchers in
            defer { watchers.waiting = [:] }
            return Array(watchers.waiting.values)
        }
        if !woken.isEmpty { watched.subtract(woken.count, ordering: .sequentiallyConsistent) }
        for idle in woken { idle() }
    }
}
