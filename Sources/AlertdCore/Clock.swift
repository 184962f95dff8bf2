public import AlertdWire
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where the domain reads the time. Injected, so deadlines are tested with a manual clock.
public protocol WallClock: Sendable {
    func now() -> Timestamp
}

/// The system's real-time clock.
public struct SystemClock: WallClock {
    public init() {}

    public func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }
}

/// A clock that moves only when told to.
///
/// An atomic, not a lock: Synchronization's `Mutex` hands a contended lock over in
/// the kernel (a priority-inheritance futex), which ThreadSanitizer cannot see, and
/// this module depends on nothing that has a lock it can.
public final class ManualClock: WallClock {
    private let current: Atomic<Int64>

    public init(_ start: Timestamp = Timestamp(milliseconds: 1_795_000_000_000)) {
        current = Atomic(start.milliseconds)
    }

    public func now() -> Timestamp { Timestamp(milliseconds: current.load(ordering: .sequentiallyConsistent)) }

    public func advance(seconds: Double) {
        var old = current.load(ordering: .sequentiallyConsistent)
        while true {
            let new = Timestamp(milliseconds: old).adding(seconds: seconds).milliseconds
            let (exchanged, found) = current.compareExchange(expected: old, desired: new, ordering: .sequentiallyConsistent)
            if exchanged { return }
            old = found
        }
    }

    public func set(_ time: Timestamp) {
        current.store(time.milliseconds, ordering: .sequentiallyConsistent)
    }
}
