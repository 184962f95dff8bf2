import AlertdCore
import AlertdEngine
import AlertdInProcess
import AlertdReceipts
import AlertdSQLite
import AlertdTestSupport
import AlertdWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import Synchronization
import Testing

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
        let store = ControlledStore(try SQLiteStore(directory: dir.path, durability: .full))
        store.hold()  // its first commit waits until the test releases it
        let committer = GroupCommitter(store: store, logger: Logger(label: "test"))
        committer.start()
        var ids = AlertIDGenerator()
        let order = NIOLockedValueBox<[Int]>([])
        let done = Completions()
        committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { _ in
            order.withLockedValue { $0.append(-1) }
            done.done()
        }
        try await store.awaitBegun(1)  // the writer is inside its first commit now
        for index in 0..<200 {
            committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { result in
                if case .success = result { order.withLockedValue { $0.append(index) } }
                done.done()
            }
        }
        store.release()
        try await done.awaitCount(201)
        #expect(order.withLockedValue { $0 } == [-1] + Array(0..<200))
        #expect(store.committed.map(\.count) == [1, 200], "the 200 queued writes share one transaction")
        #expect(try store.load().pending.count == 201)
        await onOwnThread { committer.shutdown() }
    }

    @Test("an empty write set completes only after everything submitted before it is committed")
    func barrier() async throws {
        let dir = TempDir()
        let store = ControlledStore(try SQLiteStore(directory: dir.path, durability: .normal))
        store.hold()  // its first commit waits until the test releases it
        let committer = GroupCommitter(store: store, logger: Logger(label: "test"))
        committer.start()
        var ids = AlertIDGenerator()
        let id = ids.next(at: Timestamp(milliseconds: 1))
        let seen = NIOLockedValueBox<Alert?>(nil)
        let done = Completions()
        committer.submit([.alert(makeAlert(id))]) { _ in }
        try await store.awaitBegun(1)
        committer.submit([]) { _ in
            seen.withLockedValue { $0 = try? store.alert(id) }
            done.done()
        }
        store.release()
        try await done.awaitCount(1)
        #expect(seen.withLockedValue { $0 }?.id == id)
        await onOwnThread { committer.shutdown() }
    }

    @Test("a failed commit fails every request of its batch and reports the failure")
    func failure() async throws {
        let dir = TempDir()
        let store = ControlledStore(try SQLiteStore(directory: dir.path, durability: .normal))
        store.hold()  // its first commit waits until the test releases it
        let reported = NIOLockedValueBox<Int>(0)
        let committer = GroupCommitter(store: store, logger: Logger(label: "test")) { _ in reported.withLockedValue { $0 += 1 } }
        committer.start()
        store.failing = true
        var ids = AlertIDGenerator()
        let results = NIOLockedValueBox<[Bool]>([])
        let done = Completions()
        for _ in 0..<3 {
            committer.submit([.alert(makeAlert(ids.next(at: Timestamp(milliseconds: 1))))]) { result in
                results.withLockedValue { if case .success = result { $0.append(true) } else { $0.append(false) } }
                done.done()
            }
        }
        try await store.awaitBegun(1)
        store.release()
        try await done.awaitCount(3)
        #expect(results.withLockedValue { $0 } == [false, false, false])
        #expect(reported.withLockedValue { $0 } >= 1)
        #expect(try store.load().pending.isEmpty)
        await onOwnThread { committer.shutdown() }
    }

    @Test("after a failure, submissions fail until resume(); then they commit again")
    func resumeAfterFailure() async throws {
        let dir = TempDir()
        let store = ControlledStore(try SQLiteStore(directory: dir.path, durability: .normal))
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
            try await done.awaitCount(1)
            guard let result = outcome.withLockedValue({ $0 }) else { throw NoOutcome() }
            return result
        }
        store.failing = true
        #expect(try await submit() == false)
        #expect(committer.isFailing)
        // The store works again, but what was computed before resume() still fails.
        store.failing = false
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

/// Receipts (SPEC §14): signed by the signer thread ahead of the writer's commits, in
/// submission order; a failed commit dooms those signed after it, and the chain goes on from
/// the last committed receipt once the owner resumed.
@Suite("Group commit: receipts")
struct GroupCommitterReceiptTests {
    static let key = ReceiptSigningKey.generate()

    /// A committer with receipts signed by ``key`` over a fresh SQLite store in `dir`, started.
    private static func started(in dir: TempDir) throws -> (ControlledStore, GroupCommitter) {
        let store = ControlledStore(try SQLiteStore(directory: dir.path, durability: .normal))
        let committer = GroupCommitter(
            store: store, logger: Logger(label: "test"), receipts: ReceiptChain(key: key, head: try store.receiptHead()))
        committer.start()
        return (store, committer)
    }

    /// The stored receipts checked as a chain with ``key``.
    private static func verify(_ stored: [ReceiptRecord]) -> ChainReport {
        ChainVerifier.verify(lines: stored.map { String(decoding: $0.json, as: UTF8.self) }, keys: ReceiptKeySet([key.publicKey]))
    }

    /// Submits the withdrawal of a new alert with its receipt; its receipts, or nil when it failed.
    private static func decide(_ committer: GroupCommitter, _ ids: inout AlertIDGenerator) async throws -> (AlertID, [ReceiptRecord]?) {
        var alert = makeAlert(ids.next(at: Timestamp(milliseconds: 1)), state: .withdrawn)
        alert.decidedAt = Timestamp(milliseconds: 1_795_000_000_100)
        let outcome = NIOLockedValueBox<[ReceiptRecord]??>(nil)
        let done = Completions()
        committer.submit([.alert(alert), .receipt(alert)]) { result in
            outcome.withLockedValue { $0 = .some(try? result.get()) }
            done.done()
        }
        try await done.awaitCount(1)
        guard let result = outcome.withLockedValue({ $0 }) else { throw NoOutcome() }
        return (alert.id, result)
    }

    @Test(
        "receipts commit in submission order from the stored head; after a failed commit and a resume the chain goes on from the last committed one"
    )
    func chainAcrossAFailure() async throws {
        let dir = TempDir()
        let (store, committer) = try Self.started(in: dir)
        var ids = AlertIDGenerator()
        let (first, firstReceipts) = try await Self.decide(committer, &ids)
        #expect(firstReceipts?.map(\.seq) == [1])

        store.failing = true
        #expect(try await Self.decide(committer, &ids).1 == nil, "a failed commit has no receipt")
        store.failing = false
        #expect(try await Self.decide(committer, &ids).1 == nil, "signed ahead before the resume: doomed")
        committer.resume()
        let (after, afterReceipts) = try await Self.decide(committer, &ids)
        #expect(afterReceipts?.map(\.seq) == [2], "the chain goes on from the last committed receipt, no gap")

        let stored = try store.receipts(after: 0, limit: 10)
        #expect(stored.map(\.alertID) == [first, after])
        let report = Self.verify(stored)
        #expect(report.isValid && report.count == 2 && report.firstLinkChecked, "\(report)")
        #expect(try store.receiptHead() == report.head)
        await onOwnThread { committer.shutdown() }
    }

    @Test("many submissions with receipts at once: each commit holds every one made before it began, and the chain has no gap")
    func manyAtOnce() async throws {
        let dir = TempDir()
        let (store, committer) = try Self.started(in: dir)
        var ids = AlertIDGenerator()
        let done = Completions()
        let seqs = NIOLockedValueBox<[Int]>([])
        for _ in 0..<300 {
            var alert = makeAlert(ids.next(at: Timestamp(milliseconds: 1)), state: .answered)
            alert.decidedAt = Timestamp(milliseconds: 1_795_000_000_100)
            committer.submit([.alert(alert), .receipt(alert)]) { result in
                if case .success(let receipts) = result { seqs.withLockedValue { $0 += receipts.map(\.seq) } }
                done.done()
            }
        }
        try await done.awaitCount(300)
        #expect(seqs.withLockedValue { $0 } == Array(1...300), "completions in submission order, one receipt each, no gap")
        let stored = try store.receipts(after: 0, limit: 1000)
        let report = Self.verify(stored)
        #expect(report.isValid && report.count == 300, "\(report)")
        await onOwnThread { committer.shutdown() }
    }

    @Test(
        "submissions with and without receipts, interleaved: those without go around the signer only when none is ahead of them there, so every one completes in submission order"
    )
    func mixedOrder() async throws {
        let dir = TempDir()
        let (store, committer) = try Self.started(in: dir)
        var ids = AlertIDGenerator()
        let done = Completions()
        let order = NIOLockedValueBox<[Int]>([])
        for index in 0..<400 {
            var alert = makeAlert(ids.next(at: Timestamp(milliseconds: 1)), state: index % 3 == 0 ? .answered : .queued)
            var writes: [StoreWrite] = [.alert(alert)]
            if index % 3 == 0 {
                alert.decidedAt = Timestamp(milliseconds: 1_795_000_000_100)
                writes = [.alert(alert), .receipt(alert)]
            }
            committer.submit(writes) { result in
                if case .success = result { order.withLockedValue { $0.append(index) } }
                done.done()
            }
        }
        try await done.awaitCount(400)
        #expect(order.withLockedValue { $0 } == Array(0..<400), "completions in submission order")
        #expect(try store.receipts(after: 0, limit: 1000).count == 134)
        await onOwnThread { committer.shutdown() }
    }
}
