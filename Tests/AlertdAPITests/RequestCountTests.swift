import Testing

@testable import AlertdHTTP

/// What a drain and a stop wait on: told when the last request ends, never by polling.
@Suite("Requests in flight: waiting for none")
struct RequestCountTests {
    @Test("with none in flight, waiting returns at once, true", .timeLimit(.minutes(1)))
    func idleAtOnce() async {
        let count = RequestCount()
        #expect(await count.idle(seconds: 3600))
        #expect(count.waitIdle(seconds: 3600))
    }

    @Test("a waiter is woken when the last request ends, not before", .timeLimit(.minutes(1)))
    func wokenAtZero() async {
        let count = RequestCount()
        count.begin()
        count.begin()
        let waiting = Task { await count.idle(seconds: 3600) }
        count.end()
        #expect(count.value == 1)
        count.end()
        // A waiter not woken would wait an hour: the time limit fails it.
        #expect(await waiting.value)
        #expect(count.value == 0)
    }

    @Test("a request still in flight at the deadline: false", .timeLimit(.minutes(1)))
    func deadline() async {
        let count = RequestCount()
        count.begin()
        #expect(await count.idle(seconds: 0.05) == false)
        #expect(count.waitIdle(seconds: 0.05) == false)
        count.end()
        #expect(await count.idle(seconds: 3600))
    }
}
