// What one client does must not hold the other clients of its flush: a client another
// instance holds is left for the next flush (try-locks), and
// one change the database refuses must not fail the changes of other clients that
// share its flush, nor take the instance out of its load balancer (issue 27 item 5,
// issue 33). The API refuses what PostgreSQL would (an Idempotency-Key over 255
// bytes), so the change here comes through the store's port directly, as a body
// that records a 3,300-byte key: its index row is too large (SQLSTATE 54000).

import AlertdCore
import AlertdEngine
import AlertdReceipts
import AlertdWire
import AlertdTestSupport
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import AlertdPostgres

@Suite("Flushes: a change the database refuses, a client held elsewhere")
struct FlushFaultTests {
    @Test("only that change fails (503 naming the refusal); the other clients' changes in its flush commit; the store stays healthy")
    func poisonInAFlush() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.borrowDatabase()
        let store = try PostgresAlertStore(
            url: try PostgresURL(url), poolSize: 4, settings: QueueSettings(), rules: AlertRules(), clock: SystemClock(),
            logger: Logger(label: "flush-fault") { _ in SwiftLogNoOpLogHandler() }, receiptKey: .generate())
        let running = Task { try await store.run() }
        defer { running.cancel() }
        try await store.migrate()

        /// Posts an alert through the port, now (in the order of the calls); with `key`,
        /// records it under that key. The stream yields its answer.
        func post(_ client: String, key: String? = nil) -> AsyncStream<Result<AlertID, EngineError>> {
            let (answer, continuation) = AsyncStream.makeStream(of: Result<AlertID, EngineError>.self)
            // Started at once, so the changes reach the store in the order of the calls.
            Task.immediate {
                do throws(EngineError) {
                    let committed = try await store.transact(client: client, now: SystemClock().now(), idempotencyKey: key) {
                        board, _ throws(EngineError) in
                        let posted: (Alert, BoardChange)
                        do throws(BoardError) {
                            posted = try board.post(
                                NewAlert(title: "t", buttons: [Button(title: "OK")]), to: client, now: SystemClock().now())
                        } catch {
                            throw EngineError(error)
                        }
                        let record = key.map {
                            IdempotencyRecord(
                                client: client, key: $0, alertID: posted.0.id, bodyDigest: [1], createdAt: SystemClock().now())
                        }
                        return Mutation(posted.0.id, change: posted.1, idempotency: record)
                    }
                    continuation.yield(.success(committed.value))
                } catch {
                    continuation.yield(.failure(error))
                }
                continuation.finish()
            }
            return answer
        }
        func answer(_ stream: AsyncStream<Result<AlertID, EngineError>>) async -> Result<AlertID, EngineError> {
            for await result in stream { return result }
            return .failure(EngineError(.unavailable, "no answer"))
        }

        // Two changes take both flights; the next five wait, then go together in one flush.
        // 200 letters with 16 random combining marks each: 6,600 bytes that do not compress
        // below the index's limit (~2,700 bytes).
        let poison = String(
            String.UnicodeScalarView(
                (0..<200).flatMap { _ in
                    [Unicode.Scalar(UInt8.random(in: 0x61...0x7A))]
                        + (0..<16).map { _ in Unicode.Scalar(UInt32.random(in: 0x300...0x36F))! }
                }))
        let submitted = [
            post("blocker-1"), post("blocker-2"), post("poisoned", key: poison), post("other-1"), post("other-2", key: "fine"),
            post("other-3"), post("poisoned"),
        ]
        var results: [Result<AlertID, EngineError>] = []
        for stream in submitted { results.append(await answer(stream)) }
        let blockers = results[0..<2]
        let refused = results[2]
        let fine = Array(results[3...])

        #expect(blockers.allSatisfy { (try? $0.get()) != nil })
        guard case .failure(let error) = refused else {
            Issue.record("the change with the oversized key (\(poison.utf8.count) bytes) committed: \(results)")
            return
        }
        #expect(error.code == .unavailable)
        #expect(error.detail.contains("refused this change") && error.detail.contains("54000"), "\(error.detail)")
        for (index, result) in fine.enumerated() {
            #expect((try? result.get()) != nil, "change \(index) of the flush failed with the poisoned one: \(result)")
        }
        // What was answered as committed is in the database (a flush whose write failed
        // unread once answered its changes and lost them in a silent ROLLBACK).
        for case .success(let id) in results {
            let stored: Result<PositionedAlert?, EngineError>
            do throws(EngineError) {
                stored = .success(try await store.alert(id))
            } catch {
                stored = .failure(error)
            }
            // Read and found (a failed read, or none, fails).
            let found = (try? stored.get()) ?? nil
            #expect(found != nil, "\(id) was answered as committed but is not stored: \(stored)")
        }
        #expect(store.isHealthy, "a refused change marked the store unhealthy (readiness 503)")
        running.cancel()
        _ = await running.result
        await server.giveBack(url)
    }

    @Test("a flush commits the clients it can lock and leaves a client held elsewhere for the next, which waits for it")
    func heldClientDoesNotHoldTheFlush() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.borrowDatabase()
        let store = try PostgresAlertStore(
            url: try PostgresURL(url), poolSize: 4, settings: QueueSettings(), rules: AlertRules(), clock: SystemClock(),
            logger: Logger(label: "flush-held") { _ in SwiftLogNoOpLogHandler() }, receiptKey: .generate())
        let running = Task { try await store.run() }
        defer { running.cancel() }
        try await store.migrate()

        // Another instance's transaction holds the client "held" (its advisory lock).
        let other = try await PostgresConnection.connect(
            configuration: try PostgresURL(url).connectionConfiguration(), id: 1, logger: Logger(label: "other"))
        try await other.query("BEGIN", logger: Logger(label: "other"))
        try await other.run("SELECT pg_advisory_xact_lock(hashtextextended('held', 0))", logger: Logger(label: "other"))

        func post(_ client: String) -> AsyncStream<Result<AlertID, EngineError>> {
            let (answer, continuation) = AsyncStream.makeStream(of: Result<AlertID, EngineError>.self)
            // Started at once, so the changes reach the store in the order of the calls.
            Task.immediate {
                do throws(EngineError) {
                    continuation.yield(.success(try await Self.post(to: client, on: store)))
                } catch {
                    continuation.yield(.failure(error))
                }
                continuation.finish()
            }
            return answer
        }
        /// The answer, or nil when none came within `seconds` (a bound for a hang).
        func answer(_ stream: AsyncStream<Result<AlertID, EngineError>>, within seconds: Int) async -> Result<AlertID, EngineError>? {
            await withTaskGroup(of: Result<AlertID, EngineError>?.self) { group in
                group.addTask {
                    for await result in stream { return result }; return nil
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(seconds)); return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }

        // Two changes take both flights; "held" and "free" then wait and go in one flush.
        let first = [post("a-1"), post("a-2")]
        let held = post("held")
        let free = post("free")
        for stream in first { #expect(await answer(stream, within: 10) != nil) }
        let freeAnswer = await answer(free, within: 10)
        #expect(freeAnswer.flatMap { try? $0.get() } != nil, "the free client waited for the held one: \(String(describing: freeAnswer))")

        // Released elsewhere, the held client's change commits (its next flush waited for it).
        try await other.query("COMMIT", logger: Logger(label: "other"))
        let heldAnswer = await answer(held, within: 10)
        #expect(heldAnswer.flatMap { try? $0.get() } != nil, "\(String(describing: heldAnswer))")
        try await other.close()
        running.cancel()
        _ = await running.result
        await server.giveBack(url)
    }

    @Test(
        "a flush of one client held elsewhere waits for its lock in one statement: BEGIN, the lock, the read, the write, COMMIT, the notification"
    )
    func oneHeldClientWaitsAtOnce() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.borrowDatabase()
        let costs = Mutex<[PostgresAlertStore.FlushCost]>([])
        let store = try PostgresAlertStore(
            url: try PostgresURL(url), poolSize: 4, settings: QueueSettings(), rules: AlertRules(), clock: SystemClock(),
            logger: Logger(label: "flush-one") { _ in SwiftLogNoOpLogHandler() }, receiptKey: .generate(),
            onFlush: { cost in costs.withLock { $0.append(cost) } })
        let running = Task { try await store.run() }
        defer { running.cancel() }
        try await store.migrate()

        let logger = Logger(label: "other")
        let other = try await PostgresConnection.connect(
            configuration: try PostgresURL(url).connectionConfiguration(), id: 1, logger: logger)
        try await other.query("BEGIN", logger: logger)
        try await other.run("SELECT pg_advisory_xact_lock(hashtextextended('solo', 0))", logger: logger)
        let posting = Task { try await Self.post(to: "solo", on: store) }
        // The flush waits once PostgreSQL shows an advisory lock asked for and not granted, in this
        // test's database (pg_locks shows the whole cluster, where other tests run).
        var waiting = false
        for _ in 0..<1_000 where !waiting {
            for try await count in try await other.query(
                """
                SELECT pg_catalog.count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND NOT granted
                AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
                """, logger: logger
            ).decode(Int.self) {
                waiting = count > 0
            }
            if !waiting { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(waiting, "no flush waited for the lock")
        try await other.query("COMMIT", logger: logger)
        _ = try await posting.value
        // Tried first, the lock took a second round trip: 7.
        #expect(costs.withLock { $0 }.map(\.roundTrips) == [6])
        try await other.close()
        running.cancel()
        _ = await running.result
        await server.giveBack(url)
    }

    /// One post to `client` through the store's port, as the engine makes it; its alert's id.
    /// `nonisolated(nonsending)`: it runs on its caller, so posts started in order reach the store in order.
    nonisolated(nonsending) static func post(to client: String, on store: PostgresAlertStore) async throws(EngineError) -> AlertID {
        try await store.transact(client: client, now: SystemClock().now(), idempotencyKey: nil) { board, _ throws(EngineError) in
            do throws(BoardError) {
                let (alert, change) = try board.post(NewAlert(title: "t"), to: client, now: SystemClock().now())
                return Mutation(alert.id, change: change)
            } catch {
                throw EngineError(error)
            }
        }.value
    }
}
