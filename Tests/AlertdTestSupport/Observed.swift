import NIOConcurrencyHelpers

/// A value that changes over time, and tasks that wait for it to satisfy a condition.
///
/// Waiting holds no thread: a waiter is a continuation, resumed by the `update` that makes
/// its condition true (checked under the same lock, so no change is missed), by its timeout,
/// or by the cancellation of its task.
///
/// ```swift
/// let output = Observed<[UInt8]>([])
/// output.update { $0 += Array("msg=listening\n".utf8) }  // on any thread
/// let seen = await output.wait(timeout: .seconds(5)) { $0.contains(0x0A) ? true : nil }
/// ```
public final class Observed<Value: Sendable>: Sendable {
    private struct Waiter {
        /// Resumes the waiter and returns true when the value satisfies its condition.
        let attempt: @Sendable (Value) -> Bool
        let cancel: @Sendable () -> Void
    }

    private struct State {
        var value: Value
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state: NIOLockedValueBox<State>

    public init(_ value: Value) {
        state = NIOLockedValueBox(State(value: value))
    }

    public var value: Value { state.withLockedValue { $0.value } }

    /// Changes the value and resumes every waiter whose condition now holds.
    @discardableResult
    public func update<R>(_ change: (inout Value) -> R) -> R {
        state.withLockedValue { state in
            let result = change(&state.value)
            let value = state.value
            state.waiters = state.waiters.filter { !$0.value.attempt(value) }
            return result
        }
    }

    /// The first non-nil result of `check`, evaluated now and after every change; nil when
    /// `timeout` passes first or the task is cancelled.
    public func wait<T: Sendable>(timeout: Duration, until check: @escaping @Sendable (Value) -> T?) async -> T? {
        let result = await withTaskGroup(of: T?.self) { group in
            group.addTask { try? await self.waitIndefinitely(check) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        return result ?? check(value)
    }

    private func waitIndefinitely<T: Sendable>(_ check: @escaping @Sendable (Value) -> T?) async throws -> T {
        let id = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                state.withLockedValue { state in
                    // Under the lock that `onCancel` takes too: a cancellation either came
                    // before (seen here) or finds the waiter registered.
                    if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                    if let hit = check(state.value) { return continuation.resume(returning: hit) }
                    state.waiters[id] = Waiter(
                        attempt: { value in
                            guard let hit = check(value) else { return false }
                            continuation.resume(returning: hit)
                            return true
                        },
                        cancel: { continuation.resume(throwing: CancellationError()) })
                }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.cancel()
        }
    }
}
