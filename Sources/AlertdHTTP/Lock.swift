import Glibc

/// A value behind a plain pthread mutex, for state that every request touches.
///
/// Synchronization's `Mutex` on Linux is a priority-inheritance futex: on release
/// it hands ownership straight to a sleeping waiter, so when more threads are busy
/// than there are CPUs (a CPU quota, a shared host) the lock passes to threads that
/// are not running and requests queue behind one another. Measured on 2 vCPUs with
/// 8 HTTP threads: GET fell to a third of what 2 threads served, with most samples
/// in the lock's slow path. A plain mutex lets whichever thread is running take it.
public final class Lock<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
