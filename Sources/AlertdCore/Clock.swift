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
public final class ManualClock: WallClock {
    private let current: Mutex<Timestamp>

    public init(_ start: Timestamp = Timestamp(milliseconds: 1_795_000_000_000)) {
        current = Mutex(start)
    }

    public func now() -> Timestamp { current.withLock { $0 } }

    public func advance(seconds: Double) {
        current.withLock { $0 = $0.adding(seconds: seconds) }
    }

    public func set(_ time: Timestamp) {
        current.withLock { $0 = time }
    }
}
