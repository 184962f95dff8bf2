import AlertdCore
public import AlertdEngine
public import AlertdReceipts
import AlertdWire
import Foundation
public import Logging

/// Writes to the store from one thread, many requests per transaction.
///
/// Callers ``submit(_:completion:)`` write sets in the order they want them
/// applied (alertd submits under its board lock, so store order is board order).
/// The writer takes everything queued, commits it in one transaction, then calls
/// each completion in submission order. Durability then costs one fsync per batch,
/// not per request. An empty write set is a barrier: its completion runs once
/// everything submitted before it is committed.
///
/// A thread of its own, not a task: a commit blocks for its fsync, and the cooperative
/// pool has as many threads as cores (two here). Measured against the same loop as a
/// task woken by a continuation (bench/RESULTS.md, issue 28): 11 185 and 9 866 posts/s
/// with the thread, 9 880 and 8 611 with the task.
///
/// A failed commit (a full disk, an I/O error) fails its batch, rolled back
/// whole, and every submission made until the owner calls ``resume()``: those
/// were computed on memory that included the failed change. The owner rebuilds
/// its memory from the store, then resumes, under the lock it submits under.
///
/// Receipts (SPEC §14) are signed here, on the writer thread, just before their batch's
/// transaction begins: each ``StoreWrite/receipt(_:)`` becomes the next receipt of the
/// deployment's chain (``ReceiptChain``) in commit order, its alert's terminal event gets
/// it, and the chain's new head is written with them. Signing is the one step that cannot
/// be spread over threads (each receipt links to the hash of the one before, signature
/// included), and here it runs off every request's thread and outside the board's lock. A
/// failed commit leaves the chain where the last commit left it. A completion is told the
/// receipts its submission's writes made.
public final class GroupCommitter: @unchecked Sendable {
    public typealias Completion = @Sendable (Result<[ReceiptRecord], any Error>) -> Void

    private struct Submission {
        var writes: [StoreWrite]
        var completion: Completion
        /// ``resume()`` calls before it was submitted.
        var epoch: Int
    }

    // Guarded by `condition`.
    private var queue: [Submission] = []
    private var stopping = false
    private var running = false
    /// Counts ``resume()`` calls; each submission is stamped with it.
    private var epoch = 0
    /// The last commit failure and the newest epoch it dooms: submissions of that
    /// epoch or older were computed on a state that includes the failed change,
    /// so they fail too, never committed.
    private var failure: (error: any Error, through: Int)?
    private let condition = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    private let store: any PersistentStore
    private let logger: Logger
    private let maxBatch: Int
    /// The chain as committed (the writer thread's alone); nil: no key, and a receipt to
    /// write fails its batch.
    private var chain: ReceiptChain?
    private let onFailure: @Sendable (any Error) -> Void
    /// Told how long each commit took, in nanoseconds (for metrics).
    private let onCommit: @Sendable (UInt64) -> Void

    /// - Parameters:
    ///   - receipts: the key receipts are signed with, and the chain's head as committed
    ///     (``PersistentStore/receiptHead()``); nil: the writes hold no receipt.
    ///   - onFailure: told when a commit failed: memory no longer matches the store.
    public init(
        store: any PersistentStore, logger: Logger, maxBatch: Int = 1024, receipts: ReceiptChain? = nil,
        onFailure: @escaping @Sendable (any Error) -> Void = { _ in },
        onCommit: @escaping @Sendable (UInt64) -> Void = { _ in }
    ) {
        self.chain = receipts
        self.onCommit = onCommit
        self.store = store
        self.logger = logger
        self.maxBatch = maxBatch
        self.onFailure = onFailure
    }

    /// Starts the writer thread.
    public func start() {
        condition.lock()
        defer { condition.unlock() }
        guard !running, !stopping else { return }
        running = true
        let thread = Thread { [self] in self.run() }
        thread.name = "alertd-writer"
        thread.start()
    }

    /// Queues a write set. Never blocks on the disk.
    public func submit(_ writes: [StoreWrite], completion: @escaping Completion) {
        condition.lock()
        if stopping && !running {
            condition.unlock()
            completion(.failure(StoppedError()))
            return
        }
        queue.append(Submission(writes: writes, completion: completion, epoch: epoch))
        condition.signal()
        condition.unlock()
    }

    /// After a failure: submissions from now on are committed again (those made
    /// before still fail). Call once memory matches the store again.
    public func resume() {
        condition.lock()
        epoch += 1
        condition.unlock()
    }

    /// Whether submissions made now would fail for an earlier failed commit.
    public var isFailing: Bool {
        condition.lock()
        defer { condition.unlock() }
        return failure.map { $0.through >= epoch } ?? false
    }

    /// Commits everything already queued, then stops the thread and returns.
    public func shutdown() {
        condition.lock()
        let wasRunning = running
        stopping = true
        condition.signal()
        condition.unlock()
        if wasRunning { finished.wait() }
    }

    public struct StoppedError: Error, CustomStringConvertible {
        public var description: String { "the store writer has stopped" }
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty && stopping {
                running = false
                condition.unlock()
                finished.signal()
                return
            }
            let take = min(queue.count, maxBatch)
            let batch = Array(queue.prefix(take))
            queue.removeFirst(take)
            condition.unlock()
            commit(batch)
        }
    }

    private func commit(_ batch: [Submission]) {
        // Submissions made before the owner resumed from a failure fail with it.
        condition.lock()
        let doomed = failure
        condition.unlock()
        var live = batch
        if let doomed {
            live = batch.filter { $0.epoch > doomed.through }
            for submission in batch where submission.epoch <= doomed.through { submission.completion(.failure(doomed.error)) }
        }
        guard !live.isEmpty else { return }
        var writes: [StoreWrite] = []
        writes.reserveCapacity(live.count * 2)
        var made: [[ReceiptRecord]] = Array(repeating: [], count: live.count)
        var signed = chain
        var result: Result<Void, any Error> = .success(())
        do {
            try sign(live, into: &writes, receipts: &made, chain: &signed)
        } catch {
            result = .failure(error)
        }
        if case .success = result, !writes.isEmpty {
            do {
                let started = DispatchTime.now().uptimeNanoseconds
                try store.commit(writes)
                onCommit(DispatchTime.now().uptimeNanoseconds - started)
                chain = signed
            } catch {
                result = .failure(error)
            }
        }
        if case .failure(let error) = result {
            logger.error("store commit failed", metadata: ["error": "\(error)", "writes": "\(writes.count)"])
            condition.lock()
            failure = (error, live.map(\.epoch).max() ?? epoch)
            condition.unlock()
            onFailure(error)
        }
        for (index, submission) in live.enumerated() { submission.completion(result.map { made[index] }) }
    }

    /// The batch's writes in order, each receipt signed as the next of the chain and written
    /// before its alert's terminal event, which carries it; the chain's head after them last.
    /// `receipts`: those each submission made.
    private func sign(
        _ live: [Submission], into writes: inout [StoreWrite], receipts: inout [[ReceiptRecord]], chain: inout ReceiptChain?
    ) throws {
        let start = chain?.head
        var (added, bytes) = (0, 0)
        for (index, submission) in live.enumerated() {
            var mine: [AlertID: ReceiptRecord] = [:]
            for write in submission.writes {
                switch write {
                case .receipt(let pending):
                    let alert = pending.alert
                    guard var current = chain else { throw UnsignedReceipt(alert: alert.id) }
                    let appended = try current.append(pending.draft)
                    chain = current
                    let record = ReceiptRecord(appended, of: alert)
                    mine[alert.id] = record
                    receipts[index].append(record)
                    writes.append(.signedReceipt(record))
                    added += 1
                    bytes += record.json.count
                case .event(let event) where !mine.isEmpty:
                    writes.append(.event(event.attaching(receipts: mine)))
                default:
                    writes.append(write)
                }
            }
        }
        if let head = chain?.head, head != start { writes.append(.receiptHead(head, added: added, bytes: bytes)) }
    }

    /// A receipt to write with no key to sign it: a store opened without one.
    public struct UnsignedReceipt: Error, CustomStringConvertible {
        let alert: AlertID
        public var description: String { "the receipt of alert \(alert) cannot be signed: the store has no receipts key" }
    }
}
