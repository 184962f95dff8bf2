import AlertdCore
import AlertdEngine
import AlertdTestSupport
import AlertdWire
import Synchronization
import Testing

/// An alert of "ops" that escalates to "lead" a minute after it was posted.
private func escalating(_ title: String = "Deploy?", after: Double = 60) -> NewAlert {
    NewAlert(
        title: title, buttons: [Button(title: "OK"), Button(title: "Cancel", style: .cancel)], expiresIn: 3600,
        escalation: [EscalationStep(after: after, to: "lead")])
}

/// Numbers events, from any thread.
private final class Counter: Sendable {
    private let value = Atomic(0)
    func next() -> Int { value.add(1, ordering: .relaxed).newValue }
}

/// One `alert.escalated` event per step a change took, one delivery each: what the engine writes.
private func stepEvents(_ change: BoardChange, counter: Counter) -> [OutboxEvent] {
    change.escalated.map { taken in
        let number = counter.next()
        return OutboxEvent(
            id: "msg_step\(number)", alertID: taken.id, client: "ops", type: "alert.escalated", createdAt: taken.at,
            body: Array(#"{"n":1}"#.utf8),
            deliveries: [OutboxDelivery(id: "dl_step\(number)", target: "http://receiver.invalid/hook", webhookID: nil, secret: "s")])
    }
}

@Suite("Store port: escalation (SPEC §12)")
struct EscalationPortTests {
    @Test(
        "a step is a stored deadline: fired, the alert reads on both clients, as each holds it; a decision through either decides it on both",
        arguments: StoreKind.allCases)
    func stepAndDecision(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            let blocker = try await store.post(draft("blocker"), to: "ops", now: start).get()
            let alert = try await store.post(escalating(), to: "ops", now: start).get()
            let leads = try await store.post(draft("lead's own"), to: "lead", now: start).get()
            #expect(store.nextDeadline == start.adding(seconds: 60), "the step is the store's next deadline")

            let later = start.adding(seconds: 61)
            subject.clock.set(later)
            let counter = Counter()
            let reports = await store.fireDeadlines(now: later) { stepEvents($0, counter: counter) }
            let steps = reports.flatMap { (try? $0.get())?.change.escalated ?? [] }
            #expect(steps == [EscalationTaken(id: alert.id, step: 0, client: "lead", at: start.adding(seconds: 60))], "\(reports)")

            // Its own client holds it queued behind the blocker; lead queued behind its own alert.
            let own = try #require(try await store.alert(alert.id, on: "ops"))
            #expect(own.alert.state == .queued && own.position == 1)
            #expect(own.alert.escalatedTo.map(\.client) == ["lead"])
            let there = try #require(try await store.alert(alert.id, on: "lead"))
            #expect(there.alert.state == .queued && there.position == 1 && there.alert.client == "ops")
            #expect(try await store.alert(alert.id, on: "elsewhere") == nil)
            #expect(try await store.readPending("lead").map(\.alert.id) == [leads.id, alert.id])
            #expect(try await store.readPending("ops").map(\.alert.id) == [blocker.id, alert.id])
            #expect(try await store.readClients().first { $0.client == "lead" }?.pending == 2)
            #expect(try await store.readDeliveries(of: alert.id).count == 1, "the step's event was not written with it")

            // The lead answers its own alert: the escalated one is displayed there, not on ops.
            _ = try await store.choose(0, of: leads.id, on: "lead", now: later.adding(seconds: 1)).get()
            #expect(try await store.readDisplays(["lead"]).first?.alert?.id == alert.id)
            #expect(try await store.readDisplays(["lead"]).first?.alert?.state == .displayed)
            #expect(try await store.readDisplays(["ops"]).first?.alert?.id == blocker.id)

            // Answered through lead, in a transaction that holds both of its clients.
            let decided = try await store.decide(alert.id, through: "lead", now: later.adding(seconds: 2))
            #expect(decided.state == .answered)
            #expect(try await store.read(alert.id)?.alert.state == .answered)
            #expect(try await store.readPending("lead").isEmpty)
            #expect(try await store.readPending("ops").map(\.alert.id) == [blocker.id])
            #expect(try await store.readDisplays(["lead"]).first?.alert == nil)
            #expect(try await store.readDecided("lead").map(\.id).contains(alert.id), "lead's list lost the alert it answered")
            #expect(try await store.readDecided("ops").map(\.id) == [alert.id])
        }
    }

    /// Two rounds at once, as in "a deadline fires once": on PostgreSQL one on each of two
    /// instances, made to find the step due together (its client's lock held elsewhere until
    /// both wait); on SQLite two rounds in a row. The step is taken once, with one event.
    @Test("a step fires once however many rounds run at once: one step, one event", arguments: StoreKind.allCases)
    func firesOnce(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            let alert = try await store.post(escalating(), to: "ops", now: start).get()
            let later = start.adding(seconds: 61)
            subject.clock.set(later)
            let counter = Counter()
            let rounds = Observed<[Result<Committed<Void>, EngineError>]>([])
            let fire: @Sendable (any AlertStore) async -> Void = { instance in
                let results = await instance.fireDeadlines(now: later, events: { stepEvents($0, counter: counter) })
                rounds.update { $0 += results }
            }
            let shared = try await subject.withPeer { peer in
                guard let held = try await subject.holdClient("ops") else { return }
                async let first: Void = fire(store)
                async let second: Void = fire(peer)
                let waiting = await DeadlineRoundTests.poll(timeout: .seconds(20)) { try await subject.sessionsWaitingForAClient() >= 2 }
                await held.release()
                #expect(waiting, "the two rounds did not both wait for the client")
                _ = await (first, second)
            }
            if !shared {
                await fire(store)
                await fire(store)
            }
            let steps = rounds.value.flatMap { (try? $0.get())?.change.escalated ?? [] }
            #expect(steps.count == 1, "\(rounds.value)")
            #expect(try await store.read(alert.id)?.alert.escalatedTo.map(\.client) == ["lead"])
            #expect(try await store.readDeliveries(of: alert.id).count == 1, "the step's event was written more than once")
            #expect(try await store.readPending("lead").map(\.alert.id) == [alert.id])
        }
    }

    @Test(
        "a step due while alertd was down fires when it comes back, at its own time; a step taken is still there after a restart",
        arguments: StoreKind.allCases)
    func restart(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let start = subject.clock.now()
            var policy = escalating(after: 60)
            policy.escalation!.append(EscalationStep(after: 120, to: "cto"))
            let alert = try await subject.store.post(policy, to: "ops", now: start).get()
            let counter = Counter()
            // The first step while up.
            subject.clock.set(start.adding(seconds: 61))
            _ = await subject.store.fireDeadlines(now: start.adding(seconds: 61)) { stepEvents($0, counter: counter) }
            // Down; back well after the second step was due.
            let back = start.adding(seconds: 600)
            subject.clock.set(back)
            try await subject.restarted { store in
                #expect(try await store.alert(alert.id, on: "lead")?.alert.state == .displayed, "the step taken was lost")
                #expect(store.nextDeadline.map { $0 <= back } == true, "the step due is not the next deadline")
                let reports = await store.fireDeadlines(now: back) { stepEvents($0, counter: counter) }
                let steps = reports.flatMap { (try? $0.get())?.change.escalated ?? [] }
                #expect(steps.map(\.client) == ["cto"])
                #expect(steps.map(\.at) == [start.adding(seconds: 120)], "the step fired late took the time it came back")
                let there = try #require(try await store.alert(alert.id, on: "cto"))
                #expect(there.alert.displayedAt == start.adding(seconds: 120))
                #expect(there.alert.escalatedTo.map(\.client) == ["lead", "cto"])
            }
        }
    }

    @Test(
        "a step still committing is not read: not on the step's client, not in its list or count; then it is", arguments: StoreKind.allCases
    )
    func stepInFlight(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            _ = try await store.post(draft("blocker"), to: "ops", now: start).get()
            let alert = try await store.post(escalating(), to: "ops", now: start).get()
            let leads = try await store.post(draft("lead's own"), to: "lead", now: start).get()
            let later = start.adding(seconds: 61)
            subject.clock.set(later)

            let held = try await subject.holdWrites()
            let bodyRan = Observed<Bool>(false)
            async let reports = store.fireDeadlines(
                now: later,
                events: { change in
                    if !change.escalated.isEmpty { bodyRan.update { $0 = true } }
                    return []
                })
            guard await bodyRan.wait(timeout: .seconds(20), until: { $0 ? true : nil }) == true else {
                await held.release()
                _ = await reports
                Issue.record("the step's body did not run")
                return
            }
            // Read while the step commits; the writes are released whatever the reads did (the
            // round waits for them).
            var reads: (there: PositionedAlert?, own: PositionedAlert?, listed: [PositionedAlert], counted: Int?, shown: AlertID?)?
            var failure: (any Error)?
            do {
                reads = (
                    try await store.alert(alert.id, on: "lead"), try await store.alert(alert.id, on: "ops"),
                    try await store.readPending("lead"),
                    try await store.readClients().first { $0.client == "lead" }?.pending,
                    try await store.readDisplays(["lead"]).first?.alert?.id
                )
            } catch {
                failure = error
            }
            await held.release()
            _ = await reports
            if let failure { throw failure }
            let (there, own, listed, counted, shown) = try #require(reads)

            #expect(there == nil, "the alert was read on lead while its step was committing")
            #expect(own?.alert.escalatedTo.isEmpty == true, "its own client read a step not committed")
            #expect(listed.map(\.alert.id) == [leads.id])
            #expect(counted == 1)
            #expect(shown == leads.id)
            #expect(try await store.alert(alert.id, on: "lead")?.position == 1, "once committed, the step is read")
            #expect(try await store.readPending("lead").map(\.alert.id) == [leads.id, alert.id])
        }
    }

    @Test("a purge takes an escalated alert with its steps, and forgets the client it escalated to", arguments: StoreKind.allCases)
    func purge(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            let alert = try await store.post(escalating(), to: "ops", now: start).get()
            subject.clock.set(start.adding(seconds: 61))
            _ = await store.fireDeadlines(now: start.adding(seconds: 61)) { _ in [] }
            _ = try await store.decide(alert.id, through: "ops", now: start.adding(seconds: 62))
            #expect(try await store.readClients().map(\.client).contains("lead"))
            let forgotten = try await store.purgeDecided(before: start.adding(seconds: 100), keysBefore: start)
            #expect(Set(forgotten) == ["ops", "lead"], "\(forgotten)")
            #expect(try await store.read(alert.id) == nil)
            #expect(try await store.readDecided("lead").isEmpty)
        }
    }
}

extension AlertStore {
    /// Answers `id` through `client`, in a transaction that holds every client it is pending on
    /// (widened as the engine does when the board says it does not hold them).
    fileprivate func decide(_ id: AlertID, through client: String, now: Timestamp) async throws -> Alert {
        var others: [String] = []
        for _ in 0..<3 {
            let committed = try await transact(client: client, others: others, now: now, idempotencyKey: nil) {
                board, _ throws(EngineError) -> Mutation<Alert?> in
                guard let alert = board.alert(id) else { throw EngineError(.notFound, "no alert \(id)") }
                guard board.holds(alert.clients) else { return Mutation(nil) }
                do throws(BoardError) {
                    let (decided, change) = try board.choose(.index(0), for: id, on: client, by: "tester", now: now)
                    return Mutation(decided, change: change)
                } catch {
                    throw EngineError(error)
                }
            }
            if let decided = committed.value { return decided }
            // Not held whole: again with every client it is on.
            others = try await alert(id)?.alert.clients.filter { $0 != client } ?? []
        }
        throw StorePortFailure("alert \(id) was never decided")
    }
}
