// One change the database refuses must not fail the changes of other clients that
// share its flush, nor take the instance out of its load balancer (issue 27 item 5,
// issue 33). The API refuses what PostgreSQL would (an Idempotency-Key over 255
// bytes), so the change here comes through the store's port directly, as a body
// that records a 3,300-byte key: its index row is too large (SQLSTATE 54000).

import AlertdCore
import AlertdEngine
import AlertdWire
import AlertdTestSupport
import Logging
import Synchronization
import Testing

@testable import AlertdPostgres

@Suite("A flush with a change the database refuses")
struct FlushFaultTests {
    @Test("only that change fails (503 naming the refusal); the other clients' changes in its flush commit; the store stays healthy")
    func poisonInAFlush() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.borrowDatabase()
        let store = try PostgresAlertStore(
            url: try PostgresURL(url), poolSize: 4, settings: QueueSettings(), rules: AlertRules(), clock: SystemClock(),
            logger: Logger(label: "flush-fault") { _ in SwiftLogNoOpLogHandler() })
        let running = Task { try await store.run() }
        defer { running.cancel() }
        try await store.migrate()

        /// Posts an alert through the port, now (in the order of the calls); with `key`,
        /// records it under that key. The stream yields its answer.
        func post(_ client: String, key: String? = nil) -> AsyncStream<Result<AlertID, EngineError>> {
            let (answer, continuation) = AsyncStream.makeStream(of: Result<AlertID, EngineError>.self)
            store.transact(client: client, now: SystemClock().now(), idempotencyKey: key) { board, _ throws(EngineError) in
                let posted: (Alert, BoardChange)
                do throws(BoardError) {
                    posted = try board.post(AlertDraft(title: "t", buttons: [Button(title: "OK")]), to: client, now: SystemClock().now())
                } catch {
                    throw EngineError(error)
                }
                let record = key.map {
                    IdempotencyRecord(client: client, key: $0, alertID: posted.0.id, bodyDigest: [1], createdAt: SystemClock().now())
                }
                return Mutation(posted.0.id, change: posted.1, idempotency: record)
            } completion: { result in
                continuation.yield(result.map(\.value))
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
            let stored = await withCheckedContinuation { done in store.alert(id) { done.resume(returning: $0) } }
            #expect((try? stored.get()) != nil, "\(id) was answered as committed but is not stored: \(stored)")
        }
        #expect(store.isHealthy, "a refused change marked the store unhealthy (readiness 503)")
        running.cancel()
        _ = await running.result
        await server.giveBack(url)
    }
}
