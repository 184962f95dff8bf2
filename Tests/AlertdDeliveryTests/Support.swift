import AlertdTestSupport
import AlertdWire

/// Jittered schedules repeat exactly from a seed.
typealias SeededGenerator = SplitMix64

/// 2026-11-21T21:05:58.131Z
let eventTime = Timestamp(milliseconds: 1_795_295_158_131)

extension Timestamp {
    func seconds(since other: Timestamp) -> Double { Double(milliseconds - other.milliseconds) / 1000 }
}
