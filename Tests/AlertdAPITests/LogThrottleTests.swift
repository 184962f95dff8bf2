import Testing

@testable import AlertdHTTP

@Suite("libmicrohttpd's log lines are bounded")
struct LogThrottleTests {
    let start = ContinuousClock.now

    @Test("the first `limit` lines of a window are written, the rest dropped")
    func boundedWithinAWindow() {
        var throttle = LogThrottle(limit: 3, window: .seconds(60))
        let decisions = (0..<10).map { throttle.admit(at: start + .milliseconds($0)) }
        #expect(decisions.prefix(3).allSatisfy { $0 == .write(dropped: 0) })
        #expect(decisions.dropFirst(3).allSatisfy { $0 == .drop })
    }

    @Test("the first line of the next window says how many were left out, and the count starts again")
    func nextWindowReportsDropped() {
        var throttle = LogThrottle(limit: 2, window: .seconds(60))
        for i in 0..<7 { _ = throttle.admit(at: start + .seconds(i)) }
        #expect(throttle.admit(at: start + .seconds(60)) == .write(dropped: 5))
        #expect(throttle.admit(at: start + .seconds(61)) == .write(dropped: 0))
        #expect(throttle.admit(at: start + .seconds(62)) == .drop)
        #expect(throttle.admit(at: start + .seconds(125)) == .write(dropped: 1))
    }

    @Test("a quiet log is never throttled")
    func quietLogUntouched() {
        var throttle = LogThrottle(limit: 2, window: .seconds(60))
        for minute in 0..<10 {
            #expect(throttle.admit(at: start + .seconds(60 * minute)) == .write(dropped: 0))
        }
    }
}
