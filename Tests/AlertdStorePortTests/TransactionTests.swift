import AlertdCore
import AlertdEngine
import AlertdTestSupport
import AlertdWire
import Testing

// The store port's contract (Sources/AlertdEngine/AlertStore.swift), one suite for
// every store: SQLite in a scratch directory, PostgreSQL in a throwaway server. A
// store that breaks the contract fails here, whichever it is.

@Suite("Store port: transactions")
struct TransactionTests {
    @Test(
        "a committed transaction is read back as committed: alerts, positions, the list, the client, the display",
        arguments: StoreKind.allCases)
    func committedIsRead(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let a = try await store.post(draft("A"), to: "ops", now: now).get()
            let b = try await store.post(draft("B"), to: "ops", now: now).get()
            let c = try await store.post(draft("C", priority: 5), to: "ops", now: now).get()

            #expect(try await store.read(a.id)?.alert.state == .displayed)
            #expect(try await store.read(a.id)?.position == 0)
            #expect(try await store.read(c.id)?.position == 1, "C's priority puts it ahead of B")
            #expect(try await store.read(b.id)?.position == 2)
            let pending = try await store.readPending("ops")
            #expect(pending.map(\.alert.id) == [a.id, c.id, b.id])
            #expect(pending.map(\.position) == [0, 1, 2])
            #expect(try await store.readClients().map(\.client) == ["ops"])
            #expect(try await store.readClients().first?.pending == 3)
            #expect(try await store.readDisplays(["ops"]).first?.alert?.id == a.id)
        }
    }

    @Test("a body that throws, or changes nothing, commits nothing and completes at once with its outcome", arguments: StoreKind.allCases)
    func refusedBodyCommitsNothing(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let a = try await store.post(draft("A"), to: "ops", now: now).get()

            let refused = await store.commit("ops", now: now) { board, _ throws(EngineError) -> Mutation<Void> in
                // The engine's bodies check before they change anything; so does this one.
                throw EngineError(.notDisplayed, "refused by the body")
            }
            guard case .failure(let error) = refused else {
                Issue.record("a body that threw committed: \(refused)")
                return
            }
            #expect(error.code == .notDisplayed && error.detail == "refused by the body")

            let unchanged = await store.commit("fresh", now: now) { _, _ throws(EngineError) in Mutation(42) }
            #expect((try? unchanged.get())?.value == 42)
            #expect((try? unchanged.get())?.change.isEmpty == true)

            #expect(try await store.readPending("ops").map(\.alert.id) == [a.id])
            #expect(try await store.readClients().map(\.client) == ["ops"], "a transaction that changed nothing created its client")
        }
    }

    @Test("transactions on one client are one at a time: 24 posts at once take 24 places, one displayed", arguments: StoreKind.allCases)
    func concurrentPostsAreSerialised(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let posted = await withTaskGroup(of: Result<Alert, EngineError>.self) { group in
                for index in 0..<24 {
                    group.addTask { await store.post(draft("n\(index)"), to: index.isMultiple(of: 3) ? "other" : "ops", now: now) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let alerts = posted.compactMap { try? $0.get() }
            #expect(alerts.count == 24, "\(posted.filter { (try? $0.get()) == nil })")

            for (client, count) in [("ops", 16), ("other", 8)] {
                let pending = try await store.readPending(client)
                #expect(pending.count == count, "\(client)")
                #expect(Set(pending.map(\.alert.id)).count == count, "\(client): an alert listed twice")
                #expect(pending.filter { $0.alert.state == .displayed }.count == 1, "\(client): not exactly one displayed")
                #expect(pending.first?.alert.state == .displayed)
                #expect(pending.map(\.position) == Array(0..<count))
                for item in pending {
                    #expect(try await store.read(item.alert.id)?.position == item.position, "\(client): \(item.alert.title)")
                }
            }
        }
    }

    @Test(
        "an idempotency key recorded with a post is known to later transactions on its client, and only there",
        arguments: StoreKind.allCases)
    func keyIsKnownToLaterTransactions(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let first = try await store.post(draft("A"), to: "ops", now: now, key: "deploy-42").get()

            func lookUp(_ client: String) async throws -> IdempotencyRecord? {
                try await store.commit(client, now: now, key: "deploy-42") { _, context throws(EngineError) in
                    Mutation(try context.idempotencyRecord())
                }.get().value
            }
            let record = try await lookUp("ops")
            #expect(record?.alertID == first.id)
            #expect(record?.bodyDigest == [1])
            #expect(try await lookUp("dev") == nil, "a key of client ops was found on client dev")
        }
    }

    @Test("two posts with one key at once: one creates, the other finds its record", arguments: StoreKind.allCases)
    func oneKeyCreatesOnce(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            enum Outcome: Sendable, Equatable {
                case created(AlertID)
                case replay(AlertID)
            }
            // The engine's post, reduced to its rule: a key already recorded replays its alert.
            let attempt: @Sendable () async -> Result<Committed<Outcome>, EngineError> = {
                await store.commit("ops", now: now, key: "once") { board, context throws(EngineError) in
                    if let record = try context.idempotencyRecord() { return Mutation(.replay(record.alertID), afterEarlierCommits: true) }
                    do throws(BoardError) {
                        let (alert, change) = try board.post(draft("A"), to: "ops", now: now)
                        let record = IdempotencyRecord(client: "ops", key: "once", alertID: alert.id, bodyDigest: [1], createdAt: now)
                        return Mutation(.created(alert.id), change: change, idempotency: record)
                    } catch {
                        throw EngineError(error)
                    }
                }
            }
            async let x = attempt()
            async let y = attempt()
            let outcomes = [try await x.get().value, try await y.get().value]
            let created = outcomes.compactMap { if case .created(let id) = $0 { id } else { nil } }
            let replayed = outcomes.compactMap { if case .replay(let id) = $0 { id } else { nil } }
            #expect(created.count == 1, "\(outcomes)")
            #expect(replayed == created, "\(outcomes)")
            #expect(try await store.readPending("ops").count == 1)
        }
    }

    @Test(
        "each commit that changes a display numbers it above the last, and a display read is of the last committed number or none",
        arguments: StoreKind.allCases)
    func displaysAreNumberedInCommitOrder(kind: StoreKind) async throws {
        // Commits are published by the tasks they resume, in any order; the engine keeps
        // the display of the highest number, so a display two commits back never replaces
        // the last one's (a post, then a choice showing the next alert, in one group commit).
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let first = try await store.commit("ops", now: now) { board, _ throws(EngineError) in
                do throws(BoardError) {
                    let (alert, change) = try board.post(draft("A"), to: "ops", now: now)
                    return Mutation(alert, change: change)
                } catch {
                    throw EngineError(error)
                }
            }.get()
            _ = try await store.post(draft("B"), to: "ops", now: now).get()
            let chosen = try await store.choose(0, of: first.value.id, on: "ops", now: now).get()

            let before = try #require(first.versions["ops"]?.to, "the first post changed the display: it has a number")
            let after = try #require(chosen.versions["ops"]?.to, "the choice changed the display: it has a number")
            #expect(after > before)
            #expect(chosen.displays.first?.alert?.title == "B")
            // A read is of the last commit's number (the embedded store) or of none (a shared
            // store, whose reads of current check the database's version themselves).
            let read = try #require(try await store.displays(of: ["ops"]).first)
            #expect(read.alert?.title == "B")
            if kind == .sqlite { #expect(read.version == after) } else { #expect(read.version == nil) }
        }
    }
}
