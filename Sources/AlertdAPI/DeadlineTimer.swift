import AlertdCore
import Foundation
import Glibc
import Synchronization

/// Runs callbacks at monotonic deadlines from one thread: the deadlines of
/// parked waiters. Cancelling is O(1); a cancelled entry is skipped when due.
/// Waits are on the monotonic clock, so a step of the wall clock moves nothing.
final class DeadlineTimer: Sendable {
    typealias Token = UInt64

    private struct Entry: Comparable, Sendable {
        var at: UInt64  // monotonic nanoseconds
        var token: Token
        static func < (a: Entry, b: Entry) -> Bool { a.at != b.at ? a.at < b.at : a.token < b.token }
    }

    private struct State: Sendable {
        var heap = Heap<Entry>()
        var actions: [Token: @Sendable () -> Void] = [:]
        var nextToken: Token = 1
        var stopped = false
        /// When the thread will wake up by itself (nil: awake).
        var sleepingUntil: UInt64?
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.start()
    }

    /// Monotonic nanoseconds.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Calls `action` on the timer thread once `seconds` have passed, unless cancelled.
    func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Token {
        let at = Self.now() + UInt64(max(0, seconds) * 1e9)
        let (token, wakeUp) = state.withLock { state -> (Token, Bool) in
            let token = state.nextToken
            state.nextToken += 1
            state.actions[token] = action
            state.heap.insert(Entry(at: at, token: token))
            return (token, state.sleepingUntil.map { at < $0 } ?? false)
        }
        if wakeUp { wake.signal() }
        return token
    }

    /// Cancels a scheduled action; true when it had not run yet.
    @discardableResult
    func cancel(_ token: Token) -> Bool {
        state.withLock { $0.actions.removeValue(forKey: token) != nil }
    }

    func stop() {
        state.withLock { state in
            state.stopped = true
            state.actions.removeAll()
        }
        wake.signal()
    }

    private func run() {
        while true {
            let (due, next, stopped) = state.withLock { state -> ([@Sendable () -> Void], UInt64?, Bool) in
                var due: [@Sendable () -> Void] = []
                let now = Self.now()
                while let first = state.heap.min, first.at <= now {
                    state.heap.popMin()
                    if let action = state.actions.removeValue(forKey: first.token) { due.append(action) }
                }
                state.heap.shrink()
                let next = state.heap.min?.at
                state.sleepingUntil = due.isEmpty ? (next ?? .max) : nil
                return (due, next, state.stopped)
            }
            if stopped { return }
            if !due.isEmpty {
                for action in due { action() }
                continue
            }
            if let next {
                _ = wake.wait(timeout: DispatchTime(uptimeNanoseconds: next))
            } else {
                wake.wait()
            }
            state.withLock { $0.sleepingUntil = nil }
        }
    }
}
