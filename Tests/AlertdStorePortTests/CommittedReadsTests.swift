import AlertdCore
import AlertdEngine
import AlertdTestSupport
import AlertdWire
import Testing

// Reads show committed state only (SPEC §9, README "Reads show committed state only").
// A change is held in flight by the database itself: another connection holds its write
// lock, as a backup or a migration would, after the transaction's body ran. Every read
// taken meanwhile must show the state before the change; once the lock is let go the
// change commits and reads show it.

@Suite("Store port: reads show committed state only")
struct CommittedReadsTests {
    @Test(
        "a post still committing is not read: not by id, not listed, not counted ahead of a queued alert, not in its client's count",
        arguments: StoreKind.allCases)
    func postInFlight(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let a = try await store.post(draft("A"), to: "ops", now: now).get()
            let b = try await store.post(draft("B"), to: "ops", now: now).get()
            #expect(try await store.read(b.id)?.position == 1)

            let held = try await subject.holdWrites()
            let bodyRan = Observed<AlertID?>(nil)
            let urgent = Task {
                await store.post(draft("C", priority: 10), to: "ops", now: now) { alert in bodyRan.update { $0 = alert.id } }
            }
            guard let c = await bodyRan.wait(timeout: .seconds(20), until: { $0 }) else {
                await held.release()
                Issue.record("the transaction's body did not run")
                return
            }
            let seenB = try await store.read(b.id)
            let seenC = try await store.read(c)
            let listed = try await store.readPending("ops")
            let counted = try await store.readClients().first { $0.client == "ops" }?.pending
            await held.release()
            let committed = try await urgent.value.get()

            #expect(seenC == nil, "C was read while its post was committing")
            #expect(seenB?.position == 1, "B reads position \(String(describing: seenB?.position)) behind an alert no reader can see")
            #expect(listed.map(\.alert.id) == [a.id, b.id], "C is not committed: readers do not see it")
            #expect(counted == 2, "the client's count includes an alert no reader can see")
            #expect(committed.id == c)
            #expect(try await store.read(b.id)?.position == 2, "once C is committed, readers see it ahead of B")
            #expect(try await store.read(c)?.position == 1)
        }
    }

    @Test(
        "a decision still committing: the alert reads displayed, the next one queued; then answered, and the next displayed",
        arguments: StoreKind.allCases)
    func decisionInFlight(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let a = try await store.post(draft("A"), to: "ops", now: now).get()
            let b = try await store.post(draft("B"), to: "ops", now: now).get()

            let held = try await subject.holdWrites()
            let bodyRan = Observed(false)
            let choice = Task { await store.choose(0, of: a.id, on: "ops", now: now) { bodyRan.update { $0 = true } } }
            guard await bodyRan.wait(timeout: .seconds(20), until: { $0 ? true : nil }) == true else {
                await held.release()
                Issue.record("the transaction's body did not run")
                return
            }
            let seenA = try await store.read(a.id)
            let seenB = try await store.read(b.id)
            let listed = try await store.readPending("ops")
            let display = try await store.readDisplays(["ops"]).first?.alert
            await held.release()
            let decided = try await choice.value.get()

            #expect(
                seenA?.alert.state == .displayed && seenA?.position == 0,
                "A as read while its answer committed: \(String(describing: seenA))")
            #expect(seenB?.alert.state == .queued && seenB?.position == 1, "B as read: \(String(describing: seenB))")
            #expect(listed.map(\.alert.id) == [a.id, b.id])
            #expect(display?.id == a.id, "the display moved on before the answer committed")
            #expect(decided.value.state == .answered)
            #expect(decided.displays.first { $0.client == "ops" }?.alert?.id == b.id, "the commit reports B displayed")
            #expect(try await store.read(a.id)?.alert.state == .answered)
            #expect(try await store.read(b.id)?.alert.state == .displayed)
            #expect(try await store.read(b.id)?.position == 0)
        }
    }
}
