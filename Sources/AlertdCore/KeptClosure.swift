/// A closure kept in generic storage (`NIOLockedValueBox`, `Mutex`) and read back to be
/// called, again and again.
///
/// A bare function value in such storage, read through `inout` (`box.withLockedValue { $0 }`),
/// is reabstracted on the way out and again on the write-back that ends the access: every
/// read left it wrapped in two more thunks. Calls grew slower and deeper with each read, and
/// the chain never shrank. Found in issue 46's profile of two instances on PostgreSQL: the
/// engine's change handler was 6 000 thunks deep after a minute of notifications, a fifth of
/// the instance's CPU; given time, a call would overflow its thread's stack. A struct is never
/// reabstracted, so the closure inside keeps the one representation it was stored with.
public struct KeptClosure<Function: Sendable>: Sendable {
    public let call: Function

    public init(_ call: Function) { self.call = call }
}
