import AlertdCore
import AlertdStore
import AlertdTestSupport
import AlertdWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import Synchronization
import Testing

/// Wraps a real store; its first commit waits until the test opens the gate,
/// so the test can queue many submissions behind it deterministically. Only the
/// committer's writer thread ever blocks here; the test awaits ``entered``.
final class GatedStore: PersistentStore, @unchecked Sendable {
    let inner: SQLiteStore
    /// Becomes true once the writer is inside its first commit.
    let entered = Observed(false)
    let gate = DispatchSemaphore(value: 0)
    let commits = NIOLockedValueBox<[Int]>([])
    /// The size of each `deleteTerminal` write committed.
    let deletions = NIOLockedValueBox<[Int]>([])
    let failing = Atomic<Bool>(false)
    private let first = Atomic<Bool>(true)

    init(_ inner: SQLiteStore) { self.inner = inner }

    /// Returns once the writer is inside its first commit (at most 20 s).
    func awaitEntered() async throws {
        try #require(await entered.wait(timeout: .seconds(20)) { $0 ? true : nil } == true, "the writer never began a commit")
    }

    func commit(_ writes: [StoreWrite]) throws {
        if first.exchange(false, ordering: .relaxed) {
            entered.update { $0 = true }
            gate.wait()
        }
        if failing.load(ordering: .relaxed) { throw Failure() }
        commits.withLockedValue { $0.append(writes.count) }
        for case .deleteTerminal(let ids) in writes { deletions.withLockedValue { $0.append(ids.count) } }
        try inner.commit(writes)
    }

    struct Failure: Error {}

    func load() throws -> StoredState { try inner.load() }
    func alert(_ id: AlertID) throws -> Alert? { try inner.alert(id) }
    func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) throws -> [Alert] {
        try inner.decided(on: client, states: states, before: before, limit: limit)
    }
    func idempotency(client: String, key: String) throws -> IdempotencyRecord? { try inner.idempotency(client: client, key: key) }
    func webhooks() throws -> [Webhook] { try inner.webhooks() }
    func deliveries(of alertID: AlertID) throws -> [DeliveryRecord] { try inner.deliveries(of: alertID) }
    func pendingDeliveries() throws -> [PendingDelivery] { try inner.pendingDeliveries() }
    func clientsWithoutDecidedAlerts(among clients: [String]) throws -> [String] {
        try inner.clientsWithoutDecidedAlerts(among: clients)
    }
    func purgeCandidates(decidedBefore: Timestamp, keepPerClient: Int, limit: Int) throws -> [String] {
        try inner.purgeCandidates(decidedBefore: decidedBefore, keepPerClient: keepPerClient, limit: limit)
    }
    func isWritable() -> Bool { inner.isWritable() }
}

/// Completions counted as they come (on the writer thread), awaited by the test.
final class Completions: Sendable {
    private let count = Observed(0)

    func done() { count.update { $0 += 1 } }

    /// Returns once `expected` completions came (at most 20 s).
    func awaitCount(_ expected: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let reached = await count.wait(timeout: .seconds(20)) { $0 >= expected ? true : nil }
        try #require(reached == true, "\(count.value) of \(expected) completions came", sourceLocation: sourceLocation)
    }
}

@Suite("Group commit")
struct GroupCommitterTests {
    @Test("writes queued during a commit go to disk together in one transaction, answered in order")
    func batches() async throws {
        let dir = TempDir()
        let store = GatedStore(try SQLiteStore(directory: dir.path, durability: .full))
        let committer = GroupCommitter(store: store, logger: Logger(label: "test"))
        committer.start()
        var ids = AlertIDGenerator()
        let order = NIOLockedValueBox<[Int]>([])
        let done = Completions()
        committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { _ in
            order.withLockedValue { $0.append(-1) }
            done.done()
        }
        try await store.awaitEntered()  // the writer is inside its first commit now
        for index in 0..<200 {
            committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { result in
                if case .success = result { order.withLockedValue { $0.append(index) } }
                done.done()
            }
        }
        store.gate.signal()
        try await done.awaitCount(201)
        #expect(order.withLockedValue { $0 } == [-1] + Array(0..<200))
        #expect(store.commits.withLockedValue { $0 } == [1, 200], "the 200 queued writes share one transaction")
        #expect(try store.load().pending.count == 201)
        await onOwnThread { committer.shutdown() }
    }

    @Test("an empty write set completes only after everything submitted before it is committed")
    func barrier() async throws {
        let dir = TempDir()
        let store = GatedStore(try SQLiteStore(directory: dir.path, durability: .normal))
        let committer = GroupCommitter(store: store, logger: Logger(label: "test"))
        committer.start()
        var ids = AlertIDGenerator()
        let id = ids.next(at: Timestamp(milliseconds: 1))
        let seen = NIOLockedValueBox<Alert?>(nil)
        let done = Completions()
        committer.submit([.alert(makeAlert(id))]) { _ in }
        try await store.awaitEntered()
        committer.submit([]) { _ in
            seen.withLockedValue { $0 = try? store.alert(id) }
            done.done()
        }
        store.gate.signal()
        try await done.awaitCount(1)
        #expect(seen.withLockedValue { $0 }?.id == id)
        await onOwnThread { committer.shutdown() }
    }

    @Test("a failed commit fails every request of its batch and reports the failure")
    func failure() async throws {
        let dir = TempDir()
        let store = GatedStore(try SQLiteStore(directory: dir.path, durability: .normal))
        let reported = NIOLockedValueBox<Int>(0)
        let committer = GroupCommitter(store: store, logger: Logger(label: "test")) { _ in reported.withLockedValue { $0 += 1 } }
        committer.start()
        store.failing.store(true, ordering: .relaxed)
        var ids = AlertIDGenerator()
        let results = NIOLockedValueBox<[Bool]>([])
        let done = Completions()
        for _ in 0..<3 {
            committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { result in
                results.withLockedValue { if case .success = result { $0.append(true) } else { $0.append(false) } }
                done.done()
            }
        }
        try await store.awaitEntered()
        store.gate.signal()
        try await done.awaitCount(3)
        #expect(results.withLockedValue { $0 } == [false, false, false])
        #expect(reported.withLockedValue { $0 } >= 1)
        #expect(try store.load().pending.isEmpty)
        await onOwnThread { committer.shutdown() }
    }

    @Test("after a failure, submissions fail until resume(); then they commit again")
    func resumeAfterFailure() async throws {
        let dir = TempDir()
        let store = GatedStore(try SQLiteStore(directory: dir.path, durability: .normal))
        let committer = GroupCommitter(store: store, logger: Logger(label: "test"))
        committer.start()
        var ids = AlertIDGenerator()
        func submit() async throws -> Bool {
            let outcome = NIOLockedValueBox<Bool?>(nil)
            let done = Completions()
            committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { result in
                outcome.withLockedValue { if case .success = result { $0 = true } else { $0 = false } }
                done.done()
            }
            store.gate.signal()
            try await done.awaitCount(1)
            guard let result = outcome.withLockedValue({ $0 }) else { throw NoOutcome() }
            return result
        }
        store.failing.store(true, ordering: .relaxed)
        #expect(try await submit() == false)
        #expect(committer.isFailing)
        // The store works again, but what was computed before resume() still fails.
        store.failing.store(false, ordering: .relaxed)
        #expect(try await submit() == false)
        #expect(try store.load().pending.isEmpty, "nothing of a doomed submission reaches the store")
        committer.resume()
        #expect(!committer.isFailing)
        #expect(try await submit())
        #expect(try store.load().pending.count == 1)
        await onOwnThread { committer.shutdown() }
    }

    @Test("SQLite's max_page_count makes commits fail like a full disk; lifting it lets them through")
    func pageLimit() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        try store.limitPages(try store.pageCount())
        #expect(!store.hasRoom(forBytes: 1 << 20))
        var big = makeAlert(ids.next(at: Timestamp(milliseconds: 1)))
        big.message = String(repeating: "m", count: 64 * 1024)
        #expect(throws: (any Error).self) { try store.commit([.alert(big)]) }
        #expect(try store.load().pending.isEmpty)
        try store.limitPages(nil)
        #expect(store.hasRoom(forBytes: 1 << 20))
        try store.commit([.alert(big)])
        #expect(try store.load().pending.count == 1)
    }

    @Test("shutdown commits what is queued before the thread stops")
    func shutdownDrains() async throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .full)
        let committer = GroupCommitter(store: store, logger: Logger(label: "test"))
        committer.start()
        var ids = AlertIDGenerator()
        let completed = NIOLockedValueBox(0)
        for _ in 0..<50 {
            committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { _ in completed.withLockedValue { $0 += 1 } }
        }
        await onOwnThread { committer.shutdown() }
        #expect(completed.withLockedValue { $0 } == 50)
        #expect(try store.load().pending.count == 50)
    }
}

/// A submission completed without reporting an outcome.
private struct NoOutcome: Error {}
