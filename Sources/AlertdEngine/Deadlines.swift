import AlertdCore
import Dispatch
import NIOConcurrencyHelpers
public import ServiceLifecycle

/// The engine's clock-driven work on one loop: the dismissals and expiries of
/// alerts (wall-clock deadlines the store holds) and the timeouts of parked
/// waiters (monotonic, held in ``Timers``).
///
/// The loop fires what is due, then sleeps until the sooner of the two next
/// ones (at most a minute, so a step of the wall clock is caught up with). A
/// sooner deadline appearing meanwhile (a post, a parked waiter) rings the
/// ``Alarm`` and the loop goes round again.
public struct DeadlineService: Service {
    let engine: Engine

    public init(engine: Engine) { self.engine = engine }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let wake = engine.fireDue()
                await engine.alarm.sleep(until: wake)
            }
        }
    }
}

/// One round of deadlines at a time: the loop's, which never waits for one (``tryEnter()``),
/// or a caller's, which waits its turn (``enter()``, then its round sees what the one
/// before it published).
final class RoundGate: Sendable {
    private struct State {
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Takes the gate if it is free.
    func tryEnter() -> Bool {
        state.withLockedValue { state in
            guard !state.held else { return false }
            state.held = true
            return true
        }
    }

    /// Takes the gate, once the rounds before this one left it.
    func enter() async {
        await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state -> Bool in
                guard state.held else {
                    state.held = true
                    return true
                }
                state.waiting.append(turn)
                return false
            }
            if now { turn.resume() }
        }
    }

    /// Hands the gate to the first caller waiting, or frees it.
    func leave() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }

    var isHeld: Bool { state.withLockedValue { $0.held } }
}

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`, what `DispatchTime` counts).
func monotonicNow() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// The timeouts of parked waiters: actions at monotonic deadlines. Cancelling is
/// O(1); a cancelled entry is skipped when it comes due.
final class Timers: Sendable {
    typealias Token = UInt64

    private struct Entry: Comparable, Sendable {
        var at: UInt64
        var token: Token
        static func < (a: Entry, b: Entry) -> Bool { a.at != b.at ? a.at < b.at : a.token < b.token }
    }

    private struct State: Sendable {
        var heap = Heap<Entry>()
        var actions: [Token: @Sendable () -> Void] = [:]
        var nextToken: Token = 1
    }

    // Taken for every parked waiter: NIO's plain pthread mutex (see `Engine`).
    private let state = NIOLockedValueBox(State())
    private let alarm: Alarm

    init(alarm: Alarm) { self.alarm = alarm }

    /// Runs `action` on the deadline loop once `seconds` have passed, unless cancelled.
    func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Token {
        let at = monotonicNow() + UInt64(max(0, seconds) * 1e9)
        let token = state.withLockedValue { state -> Token in
            let token = state.nextToken
            state.nextToken += 1
            state.actions[token] = action
            state.heap.insert(Entry(at: at, token: token))
            return token
        }
        alarm.ring(ifBefore: at)
        return token
    }

    /// Cancels a scheduled action; true when it had not run yet.
    @discardableResult
    func cancel(_ token: Token) -> Bool {
        state.withLockedValue { $0.actions.removeValue(forKey: token) != nil }
    }

    /// Drops every action (at shutdown).
    func cancelAll() {
        state.withLockedValue { $0.actions.removeAll() }
    }

    /// Takes the actions due by `now` and says when the next one is.
    func takeDue(now: UInt64) -> (due: [@Sendable () -> Void], next: UInt64?) {
        state.withLockedValue { state in
            var due: [@Sendable () -> Void] = []
            while let first = state.heap.min, first.at <= now {
                state.heap.popMin()
                if let action = state.actions.removeValue(forKey: first.token) { due.append(action) }
            }
            state.heap.shrink()
            return (due, state.heap.min?.at)
        }
    }
}

/// Lets one loop sleep until a monotonic time, or less when rung.
///
/// `ring(ifBefore:)` is cheap when it changes nothing (a lock and a compare):
/// it wakes the loop only for a time sooner than the one it sleeps until. A
/// ring while the loop is awake is remembered, and its next sleep returns at
/// once if it would sleep past the rung time — so a deadline added while the
/// loop works is never slept past.
public final class Alarm: Sendable {
    private struct State: Sendable {
        var sleeper: CheckedContinuation<Void, Never>?
        /// When the sleeper wakes by itself; nil while the loop is awake.
        var wakeAt: UInt64?
        /// The soonest time rung while the loop was awake (0: cancelled before it slept).
        var rung: UInt64?
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// Wakes the loop if it sleeps past `time` (monotonic nanoseconds).
    public func ring(ifBefore time: UInt64) {
        let sleeper = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard let wakeAt = state.wakeAt, let sleeper = state.sleeper else {
                state.rung = min(state.rung ?? .max, time)
                return nil
            }
            guard time < wakeAt else { return nil }
            state.wakeAt = nil
            state.sleeper = nil
            return sleeper
        }
        sleeper?.resume()
    }

    /// Sleeps until `time` (monotonic nanoseconds) or a ring for a sooner time,
    /// whichever is first; returns at once when cancelled.
    public func sleep(until time: UInt64) async {
        let now = monotonicNow()
        let early = state.withLockedValue { state -> Bool in
            defer { state.rung = nil }
            return time <= now || (state.rung.map { $0 < time } ?? false)
        }
        if early { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(nanoseconds: time - now) }
            group.addTask { await self.waitForRing(until: time) }
            _ = await group.next()
            group.cancelAll()
        }
        state.withLockedValue { state in
            state.wakeAt = nil
            state.sleeper = nil
            state.rung = nil
        }
    }

    private func waitForRing(until time: UInt64) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { state -> Bool in
                    // Rung (or cancelled) since the sleep began: do not sleep.
                    if let rung = state.rung, rung < time { return true }
                    state.sleeper = continuation
                    state.wakeAt = time
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                guard let sleeper = state.sleeper else {
                    // Cancelled before it slept: it must not sleep then.
                    state.rung = 0
                    return nil
                }
                state.sleeper = nil
                state.wakeAt = nil
                return sleeper
            }
            sleeper?.resume()
        }
    }
}
