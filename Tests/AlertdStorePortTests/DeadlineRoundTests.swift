import AlertdCore
import AlertdEngine
import AlertdTestSupport
import AlertdWire
import Synchronization
import Testing

@Suite("Store port: deadlines")
struct DeadlineRoundTests {
    /// Two rounds at once: on a shared store, one on each of two instances, both made to
    /// find the deadline due (the client's lock is held elsewhere until both wait for it);
    /// on SQLite, which one process owns, two rounds in a row. Either way the alert
    /// expires once: one decision, one terminal event in the outbox.
    @Test("a deadline fires once however many rounds run at once: one decision, one terminal event", arguments: StoreKind.allCases)
    func firesOnce(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            let doomed = try await store.post(draft("expires", expiresIn: 60), to: "ops", now: start).get()
            let kept = try await store.post(draft("stays"), to: "ops", now: start).get()
            #expect(store.nextDeadline == doomed.expiresAt, "the store's next deadline is not the earliest expiry")

            let later = start.adding(seconds: 61)
            subject.clock.set(later)
            let rounds = Observed<[Result<Committed<Void>, EngineError>]>([])
            let deliveries = Atomic(0)
            let events: @Sendable (BoardChange) -> [OutboxEvent] = { change in
                change.decided.map { event(for: $0, delivery: "dl_\(deliveries.add(1, ordering: .relaxed).newValue)") }
            }
            let fire: @Sendable (any AlertStore) async -> Void = { instance in
                let results = await instance.fireDeadlines(now: later, events: events)
                rounds.update { $0 += results }
            }

            let expected: Int
            let shared = try await subject.withPeer { peer in
                guard let held = try await subject.holdClient("ops") else { return }
                async let first: Void = fire(store)
                async let second: Void = fire(peer)
                let waiting = await Self.poll(timeout: .seconds(20)) { try await subject.sessionsWaitingForAClient() >= 2 }
                await held.release()
                #expect(waiting, "the two rounds did not both wait for the client")
                _ = await (first, second)
            }
            if shared {
                // Each instance's round ran a transaction on the client: the second found it already expired.
                expected = 2
            } else {
                // The second round finds nothing due: it commits nothing and returns no commit.
                await fire(store)
                await fire(store)
                expected = 1
            }

            let results = rounds.value
            #expect(results.count == expected, "\(results)")
            let decisions = results.flatMap { (try? $0.get())?.change.decided ?? [] }
            #expect(decisions.map(\.id) == [doomed.id], "decided: \(decisions.map { "\($0.title) \($0.state)" })")
            #expect(try await store.read(doomed.id)?.alert.state == .expired)
            #expect(try await store.readDeliveries(of: doomed.id).count == 1, "the terminal event was written more than once")
            #expect(try await store.read(kept.id)?.alert.state == .displayed, "the next alert is displayed once the first expired")
            #expect(try await store.read(kept.id)?.position == 0)
        }
    }

    /// Waits for `condition`, checking it every 50 ms, at most `timeout`: for a state another
    /// process reaches, which sends no signal (a session waiting for a lock).
    static func poll(timeout: Duration, _ condition: () async throws -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
