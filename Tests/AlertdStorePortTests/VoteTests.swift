import AlertdCore
import AlertdEngine
import AlertdTestSupport
import AlertdWire
import Testing

// Votes (SPEC §10) through the port: a vote is a change of the client's queue like any
// other, saved with the alert, told as a change of the client's display, never an event.

/// A deploy approval of `quorum` deciders: Deploy, Cancel (cancel).
private func approval(_ quorum: Int) -> NewAlert {
    NewAlert(title: "Deploy?", buttons: [Button(title: "Deploy"), Button(title: "Cancel", style: .cancel)], quorum: quorum)
}

extension AlertStore {
    /// `decider`'s vote for button `index` of the displayed alert `id`.
    fileprivate func vote(_ index: Int, of id: AlertID, on client: String, by decider: String, now: Timestamp) async
        -> Result<Committed<Alert>, EngineError>
    {
        await commit(client, now: now) { board, _ throws(EngineError) in
            do throws(BoardError) {
                let (alert, change) = try board.choose(.index(index), for: id, on: client, by: decider, now: now)
                return Mutation(alert, change: change)
            } catch {
                throw EngineError(error)
            }
        }
    }
}

/// `decider:button` of each vote.
private func ballot(_ votes: [Vote]?) -> [String] { (votes ?? []).map { "\($0.decidedBy ?? "-"):\($0.button)" } }

@Suite("Store port: votes")
struct VoteTests {
    @Test(
        "a vote is committed with its alert: read by id and as the display, in order; its commit names the display and delivers nothing",
        arguments: StoreKind.allCases)
    func voteCommitted(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let alert = try await store.post(approval(3), to: "ops", now: now).get()
            let first = try await store.vote(0, of: alert.id, on: "ops", by: "alice", now: now.adding(milliseconds: 10)).get()
            #expect(first.value.state == .displayed)
            #expect(first.displays.map(\.client) == ["ops"] && ballot(first.displays.first?.alert?.votes) == ["alice:Deploy"])
            #expect(first.deliveries.isEmpty && first.change.decided.isEmpty)
            _ = try await store.vote(0, of: alert.id, on: "ops", by: "bob", now: now.adding(milliseconds: 20)).get()

            let read = try #require(try await store.read(alert.id))
            #expect(read.position == 0 && read.alert.quorum == 3)
            #expect(ballot(read.alert.votes) == ["alice:Deploy", "bob:Deploy"])
            #expect(read.alert.votes.map(\.at) == [now.adding(milliseconds: 10), now.adding(milliseconds: 20)])
            #expect(ballot(try await store.readDisplays(["ops"]).first?.alert?.votes) == ["alice:Deploy", "bob:Deploy"])
            #expect(try await store.readPending("ops").map(\.alert) == [read.alert])

            let answered = try await store.vote(0, of: alert.id, on: "ops", by: "carol", now: now.adding(milliseconds: 30)).get()
            #expect(answered.value.state == .answered && answered.change.decided.map(\.id) == [alert.id])
            let decided = try #require(try await store.read(alert.id)).alert
            #expect(decided == answered.value)
            #expect(ballot(decided.result?.votes) == ["alice:Deploy", "bob:Deploy", "carol:Deploy"])
        }
    }

    @Test(
        "a display read again for a version known carries the alert with its votes and the new version; none displayed reads none",
        arguments: StoreKind.allCases)
    func refreshedDisplay(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let posted = try await store.commit("ops", now: now) { board, _ throws(EngineError) in
                do throws(BoardError) {
                    let (alert, change) = try board.post(approval(2), to: "ops", now: now)
                    return Mutation(alert, change: change)
                } catch {
                    throw EngineError(error)
                }
            }.get()
            let voted = try await store.vote(0, of: posted.value.id, on: "ops", by: "alice", now: now).get()
            let refreshed = try await store.refreshDisplays([(client: "ops", version: posted.versions["ops"]?.to)])
            guard kind == .postgres else {
                // One process: every commit is published as it commits, nothing to read again.
                #expect(refreshed.isEmpty)
                return
            }
            let display = try #require(refreshed.first)
            #expect(display.version == voted.versions["ops"]?.to && display.version != nil)
            #expect(display.alert?.id == posted.value.id && ballot(display.alert?.votes) == ["alice:Deploy"])
            #expect(try await store.refreshDisplays([(client: "ops", version: display.version)]).isEmpty)

            let cancelled = try await store.vote(1, of: posted.value.id, on: "ops", by: "bob", now: now).get()
            let none = try #require(try await store.refreshDisplays([(client: "ops", version: display.version)]).first)
            #expect(none.alert == nil && none.version == cancelled.versions["ops"]?.to)
        }
    }

    @Test("votes made through two instances of one database at once both count; the completing one answers the alert once")
    func votesOnTwoInstances() async throws {
        try await StoreUnderTest.with(.postgres) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let alert = try await store.post(approval(2), to: "ops", now: now).get()
            let ran = try await subject.withPeer { peer in
                // Held elsewhere, so that both votes wait for the client and meet on its lock.
                let held = try #require(try await subject.holdClient("ops"))
                async let mine = store.vote(0, of: alert.id, on: "ops", by: "alice", now: now)
                async let theirs = peer.vote(0, of: alert.id, on: "ops", by: "bob", now: now)
                try await waitUntil { try await subject.sessionsWaitingForAClient() >= 2 }
                await held.release()
                let outcomes = try await [mine.get().value, theirs.get().value]
                #expect(outcomes.map(\.state).sorted { $0.rawValue < $1.rawValue } == [.answered, .displayed])
                let answered = try #require(outcomes.first { $0.state == .answered })
                #expect(Set(ballot(answered.votes)) == ["alice:Deploy", "bob:Deploy"])
                #expect(answered.votes.last?.decidedBy == answered.result?.decidedBy)
                for instance in [store, peer] as [any AlertStore] {
                    #expect(try await instance.read(alert.id)?.alert == answered)
                }
            }
            #expect(ran)
        }
    }
}

/// Returns once `condition` holds; throws after 20 s.
private func waitUntil(_ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw StorePortFailure("the condition never held") }
        try await Task.sleep(for: .milliseconds(5))
    }
}
