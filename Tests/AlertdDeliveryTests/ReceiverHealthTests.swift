import AlertdDelivery
import AlertdWire
import Testing

@Suite("A receiver that keeps failing is reported once, and its recovery once (issue 45, item 8)")
struct ReceiverHealthTests {
    @Test("reported once it failed for the minimum time and the minimum attempts in a row, then not again until it answers")
    func failingOnce() {
        var health = ReceiverHealth()
        let host = "hooks.example.com"
        #expect(health.record(host: host, answered: false, at: eventTime) == nil)
        #expect(health.record(host: host, answered: false, at: eventTime.adding(seconds: 70)) == nil, "two attempts are not enough")
        #expect(
            health.record(host: host, answered: false, at: eventTime.adding(seconds: 80))
                == .failing(host: host, since: eventTime, failures: 3))
        for second in 81...200 { #expect(health.record(host: host, answered: false, at: eventTime.adding(seconds: Double(second))) == nil) }
        #expect(health.record(host: host, answered: true, at: eventTime.adding(seconds: 300)) == .recovered(host: host, failures: 123))
        #expect(health.record(host: host, answered: true, at: eventTime.adding(seconds: 301)) == nil)
        // A new run of failures is a new report.
        #expect(health.record(host: host, answered: false, at: eventTime.adding(seconds: 400)) == nil)
        #expect(health.record(host: host, answered: false, at: eventTime.adding(seconds: 430)) == nil)
        #expect(
            health.record(host: host, answered: false, at: eventTime.adding(seconds: 460))
                == .failing(host: host, since: eventTime.adding(seconds: 400), failures: 3))
    }

    @Test("many quick failures are not reported before the minimum time; an answer before it ends the run quietly")
    func quickFailures() {
        var health = ReceiverHealth()
        for tenth in 0..<50 { #expect(health.record(host: "a", answered: false, at: eventTime.adding(seconds: Double(tenth) / 10)) == nil) }
        #expect(health.record(host: "a", answered: true, at: eventTime.adding(seconds: 30)) == nil)
        #expect(health.record(host: "a", answered: false, at: eventTime.adding(seconds: 61)) == nil, "a new run starts over")
    }

    @Test("receivers are counted apart")
    func apart() {
        var health = ReceiverHealth(minimumSeconds: 0, minimumFailures: 2)
        #expect(health.record(host: "a", answered: false, at: eventTime) == nil)
        #expect(health.record(host: "b", answered: false, at: eventTime) == nil)
        #expect(health.record(host: "a", answered: false, at: eventTime) == .failing(host: "a", since: eventTime, failures: 2))
        #expect(health.record(host: "b", answered: true, at: eventTime) == nil)
    }

    @Test(
        "an answer is a 2xx or a 410 (the receiver's own word to stop); another status, or none, is a failure",
        arguments: [(200, true), (204, true), (410, true), (404, false), (500, false), (503, false), (nil, false)] as [(Int?, Bool)])
    func answered(status: Int?, answered: Bool) {
        #expect(
            ReceiverHealth.answered(DeliveryAttempt(at: eventTime, statusCode: status, error: status == nil ? "timed out" : nil))
                == answered)
    }
}
