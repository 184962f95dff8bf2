import Synchronization

/// A value given once, from any thread, to one task that awaits it — before or after
/// it is given. Where an async call meets a callback it cannot pass a continuation to
/// in advance (a commit submitted under a lock, a waiter parked under one): the
/// callback resolves it, the call awaits it. A value resolved before it is awaited is
/// returned without suspending.
///
/// One allocation: the lock is stored in the object, and the continuation is unchecked
/// (the states below resume it exactly once). Every post makes one (issue 28's figures).
public final class Reply<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(UnsafeContinuation<Value, Never>)
        case resolved(Value)
        case taken
    }

    private let state = Mutex(State.empty)

    public init() {}

    /// Gives the value; calls after the first are ignored.
    public func resolve(_ value: Value) {
        let waiter = state.withLock { state -> UnsafeContinuation<Value, Never>? in
            switch state {
            case .empty:
                state = .resolved(value)
                return nil
            case .waiting(let continuation):
                state = .taken
                return continuation
            case .resolved, .taken:
                return nil
            }
        }
        waiter?.resume(returning: value)
    }

    /// The value, once given. Await it once.
    public func value() async -> Value {
        if let ready = take() { return ready }
        return await withUnsafeContinuation { (continuation: UnsafeContinuation<Value, Never>) in
            let ready = state.withLock { state -> Value? in
                if case .resolved(let value) = state {
                    state = .taken
                    return value
                }
                state = .waiting(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func take() -> Value? {
        state.withLock { state -> Value? in
            guard case .resolved(let value) = state else { return nil }
            state = .taken
            return value
        }
    }
}
