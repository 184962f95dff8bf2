public import NIOConcurrencyHelpers

/// A value given once, from any thread, to one task that awaits it — before or after
/// it is given. Where an async call meets a callback it cannot pass a continuation to
/// in advance (a commit submitted under a lock, a waiter parked under one): the
/// callback resolves it, the call awaits it. A value resolved before it is awaited is
/// returned without suspending.
///
/// One allocation, the locked box (a struct around it, so no object of its own), and an
/// unchecked continuation (the states below resume it exactly once): every post makes
/// one (issue 28's figures). A `Synchronization.Mutex` would keep it in one object too,
/// but ThreadSanitizer cannot see its handover in the kernel (README, Development).
///
/// Inlinable, so a reply of a concrete type is specialized where it is used: the
/// embedded store's commit reply (`Reply<Bool>`) looks no generic metadata up.
public struct Reply<Value: Sendable>: Sendable {
    @usableFromInline
    enum State: Sendable {
        case empty
        case waiting(UnsafeContinuation<Value, Never>)
        case resolved(Value)
        case taken
    }

    @usableFromInline
    let state: NIOLockedValueBox<State>

    @inlinable
    public init() { state = NIOLockedValueBox(State.empty) }

    /// Gives the value; calls after the first are ignored.
    @inlinable
    public func resolve(_ value: Value) {
        let waiter = state.withLockedValue { state -> UnsafeContinuation<Value, Never>? in
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
    @inlinable
    public func value() async -> Value {
        if let ready = take() { return ready }
        return await withUnsafeContinuation { (continuation: UnsafeContinuation<Value, Never>) in
            let ready = state.withLockedValue { state -> Value? in
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

    @inlinable
    func take() -> Value? {
        state.withLockedValue { state -> Value? in
            guard case .resolved(let value) = state else { return nil }
            state = .taken
            return value
        }
    }
}
