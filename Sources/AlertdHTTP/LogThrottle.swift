/// At most ``limit`` lines per ``window``, then one line saying how many were left
/// out. libmicrohttpd logs each request it refuses as malformed; without a bound, a
/// stranger sending garbage would grow the log at the rate they can send.
struct LogThrottle {
    let limit: Int
    let window: Duration
    private var windowStart: ContinuousClock.Instant?
    private var written = 0
    private var dropped = 0

    enum Decision: Equatable {
        /// Write the line; `dropped` lines were left out since the last one written.
        case write(dropped: Int)
        case drop
    }

    init(limit: Int = 20, window: Duration = .seconds(60)) {
        self.limit = limit
        self.window = window
    }

    mutating func admit(at now: ContinuousClock.Instant) -> Decision {
        if let start = windowStart, now - start < window {
            guard written < limit else {
                dropped += 1
                return .drop
            }
            written += 1
            return .write(dropped: 0)
        }
        windowStart = now
        written = 1
        defer { dropped = 0 }
        return .write(dropped: dropped)
    }
}
