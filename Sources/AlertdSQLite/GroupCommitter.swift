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
/// **Receipts** (SPEC §14). Each ``StoreWrite/receipt(_:)`` becomes the next receipt of the
/// deployment's chain (``ReceiptChain``), in submission order, which is commit order; its
/// alert's terminal event carries it, and the chain's new head is written with it. Signing
/// is the one step that cannot be spread over threads (each receipt links to the hash of
/// the one before, signature included), and it costs CPU where a commit mostly waits for
/// its fsync: so a second thread, the signer, drafts and signs the receipts of submissions as
/// they arrive while the writer commits the ones before (measured: signing on the writer,
/// before each commit, made the writer the bottleneck, bench/RESULTS.md, issue 47). Each
/// thread has its own condition, so a submission wakes the signer only, and a signed batch
/// the writer only; a submission with no receipt, with none still at the signer before it,
/// goes straight to the writer (issue 46: a hop and a wake fewer). Both run off every request's
/// thread and outside the board's lock. A commit still holds every submission made before
/// it began: the writer waits for the signer to have signed those, and takes every one
/// signed. The signer signs ahead on the chain as the commits will leave it; a commit that
/// fails dooms every submission after it until ``resume()`` (above), and the signer goes on
/// from the last committed head with the first submission made after the resume. A
/// completion is told the receipts its submission's writes made.
public final class GroupCommitter: @unchecked Sendable {
    public typealias Completion = @Sendable (Result<[ReceiptRecord], any Error>) -> Void

    private struct Submission {
        var writes: [StoreWrite]
        var completion: Completion
        /// ``resume()`` calls before it was submitted.
        var epoch: Int
    }

    /// A submission as the signer leaves it: its writes with its receipts signed and its
    /// events carrying them, the receipts, and the chain's head after them.
    private struct Signed {
        var submission: Submission
        var writes: [StoreWrite]
        var receipts: [ReceiptRecord] = []
        var head: ChainLink?
        /// Why it could not be signed (no key; a receipt with no canonical form).
        var error: (any Error)?
    }

    // Guarded by `incoming`: what callers hand over, and what the signer and the writer share.
    /// Submitted, not yet signed.
    private var queue: [Submission] = []
    /// Submissions made since the start: a commit waits until every submission made before
    /// it began is signed.
    private var submittedCount = 0
    private var stopping = false
    private var running = false
    /// False once the signer has stopped: a submission then fails at once.
    private var accepting = true
    /// The signer has taken a batch and not yet handed it to the writer: a submission
    /// with no receipt cannot go around it.
    private var signing = false
    /// Counts ``resume()`` calls; each submission is stamped with it.
    private var epoch = 0
    /// The last commit failure and the newest epoch it dooms: submissions of that
    /// epoch or older were computed on a state that includes the failed change,
    /// so they fail too, never committed.
    private var failure: (error: any Error, through: Int)?
    /// The chain's head as committed (the writer sets it): where the signer goes on from
    /// after a resume.
    private var committedHead: ChainLink?
    /// Wakes the signer.
    private let incoming = NSCondition()

    // Guarded by `outgoing`: what the signer hands the writer.
    /// Signed, not yet committed, in submission order.
    private var signed: [Signed] = []
    private var signedCount = 0
    private var signerDone = false
    /// Wakes the writer.
    private let outgoing = NSCondition()

    private let finished = DispatchSemaphore(value: 0)

    private let store: any PersistentStore
    private let logger: Logger
    private let maxBatch: Int
    /// The chain as signed so far (the signer thread's alone); nil: no key, and a receipt to
    /// write fails its submission.
    private var chain: ReceiptChain?
    /// The epoch of the submissions ``chain`` was last advanced for (the signer's).
    private var chainEpoch = 0
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
        self.committedHead = receipts?.head
        self.onCommit = onCommit
        self.store = store
        self.logger = logger
        self.maxBatch = maxBatch
        self.onFailure = onFailure
    }

    /// Starts the signer and writer threads.
    public func start() {
        incoming.lock()
        defer { incoming.unlock() }
        guard !running, !stopping else { return }
        running = true
        let signer = Thread { [self] in self.sign() }
        signer.name = "alertd-signer"
        signer.start()
        let writer = Thread { [self] in self.run() }
        writer.name = "alertd-writer"
        writer.start()
    }

    /// Queues a write set. Never blocks on the disk.
    public func submit(_ writes: [StoreWrite], completion: @escaping Completion) {
        incoming.lock()
        if stopping && (!running || !accepting) {
            incoming.unlock()
            completion(.failure(StoppedError()))
            return
        }
        let submission = Submission(writes: writes, completion: completion, epoch: epoch)
        submittedCount += 1
        if queue.isEmpty, !signing, !writes.contains(where: \.isReceipt) {
            // Nothing to sign and nothing ahead of it at the signer: straight to the writer,
            // in order (both locks held), one thread hop fewer for every change without a
            // receipt.
            outgoing.lock()
            signed.append(Signed(submission: submission, writes: writes))
            signedCount += 1
            outgoing.signal()
            outgoing.unlock()
        } else {
            queue.append(submission)
            incoming.signal()
        }
        incoming.unlock()
    }

    /// After a failure: submissions from now on are committed again (those made
    /// before still fail). Call once memory matches the store again.
    ///
    /// - Parameter head: the receipts chain's head as the store holds it, read back with its
    ///   memory: the receipts of submissions from now on go on from there. A commit that
    ///   failed may still have reached the disk (an I/O error after the write), and then its
    ///   receipts are the chain's, not the head this committer last saw committed.
    public func resume(head: ChainLink? = nil) {
        incoming.lock()
        if let head { committedHead = head }
        epoch += 1
        incoming.unlock()
    }

    /// Whether submissions made now would fail for an earlier failed commit.
    public var isFailing: Bool {
        incoming.lock()
        defer { incoming.unlock() }
        return failure.map { $0.through >= epoch } ?? false
    }

    /// Commits everything already queued, then stops the threads and returns.
    public func shutdown() {
        incoming.lock()
        let wasRunning = running
        stopping = true
        incoming.signal()
        incoming.unlock()
        if wasRunning { finished.wait() }
    }

    public struct StoppedError: Error, CustomStringConvertible {
        public var description: String { "the store writer has stopped" }
    }

    // MARK: - The signer

    private func sign() {
        while true {
            incoming.lock()
            while queue.isEmpty && !stopping { incoming.wait() }
            if queue.isEmpty && stopping {
                accepting = false
                incoming.unlock()
                outgoing.lock()
                signerDone = true
                outgoing.signal()
                outgoing.unlock()
                return
            }
            let take = min(queue.count, maxBatch)
            let batch = Array(queue.prefix(take))
            queue.removeFirst(take)
            // Where to go on from for a submission made after the resume that followed a failure.
            let restart = failure.map { (through: $0.through, head: committedHead) }
            signing = true
            incoming.unlock()
            let done = batch.map { sign($0, restart: restart) }
            incoming.lock()
            outgoing.lock()
            signed.append(contentsOf: done)
            signedCount += done.count
            signing = false
            outgoing.signal()
            outgoing.unlock()
            incoming.unlock()
        }
    }

    /// One submission's writes in order, each receipt signed as the next of the chain and
    /// written before its alert's terminal event, which carries it. `restart`: the last
    /// failure's epoch and the head committed before it.
    private func sign(_ submission: Submission, restart: (through: Int, head: ChainLink?)?) -> Signed {
        var result = Signed(submission: submission, writes: [])
        guard submission.writes.contains(where: \.isReceipt) else {
            result.writes = submission.writes
            return result
        }
        if let restart, chainEpoch <= restart.through, submission.epoch > restart.through, let head = restart.head {
            // The first submission after the resume that followed a failure: every one signed
            // ahead since then is doomed, and the chain goes on from the last commit.
            chain?.reset(to: head)
        }
        chainEpoch = submission.epoch
        var mine: [AlertID: ReceiptRecord] = [:]
        result.writes.reserveCapacity(submission.writes.count + 1)
        do {
            for write in submission.writes {
                switch write {
                case .receipt(let alert):
                    guard var current = chain else { throw UnsignedReceipt(alert: alert.id) }
                    let appended = try current.append(try ReceiptDraft(decided: alert))
                    chain = current
                    let record = ReceiptRecord(appended, of: alert)
                    mine[alert.id] = record
                    result.receipts.append(record)
                    result.writes.append(.signedReceipt(record))
                case .event(let event) where !mine.isEmpty:
                    result.writes.append(.event(event.attaching(receipts: mine)))
                default:
                    result.writes.append(write)
                }
            }
            result.head = chain?.head
        } catch {
            result.error = error
        }
        return result
    }

    // MARK: - The writer

    private func run() {
        while true {
            outgoing.lock()
            while signed.isEmpty && !signerDone { outgoing.wait() }
            if signed.isEmpty && signerDone {
                outgoing.unlock()
                incoming.lock()
                running = false
                incoming.unlock()
                finished.signal()
                return
            }
            outgoing.unlock()
            // Every submission made before this commit began goes in it.
            incoming.lock()
            let target = submittedCount
            incoming.unlock()
            outgoing.lock()
            while signedCount < target { outgoing.wait() }
            let take = min(signed.count, maxBatch)
            let batch = Array(signed.prefix(take))
            signed.removeFirst(take)
            outgoing.unlock()
            commit(batch)
        }
    }

    private func commit(_ batch: [Signed]) {
        // Submissions made before the owner resumed from a failure fail with it.
        incoming.lock()
        let doomed = failure
        incoming.unlock()
        var live = batch
        if let doomed {
            live = batch.filter { $0.submission.epoch > doomed.through }
            for item in batch where item.submission.epoch <= doomed.through { item.submission.completion(.failure(doomed.error)) }
        }
        guard !live.isEmpty else { return }
        var writes: [StoreWrite] = []
        writes.reserveCapacity(live.count * 2 + 1)
        var (added, bytes, head): (Int, Int, ChainLink?) = (0, 0, nil)
        for item in live {
            writes.append(contentsOf: item.writes)
            if !item.receipts.isEmpty {
                added += item.receipts.count
                bytes += item.receipts.reduce(0) { $0 + $1.json.count }
                head = item.head
            }
        }
        if let head { writes.append(.receiptHead(head, added: added, bytes: bytes)) }
        var result: Result<Void, any Error> = .success(())
        if let error = live.lazy.compactMap(\.error).first {
            result = .failure(error)
        } else if !writes.isEmpty {
            do {
                let started = DispatchTime.now().uptimeNanoseconds
                try store.commit(writes)
                onCommit(DispatchTime.now().uptimeNanoseconds - started)
                if let head {
                    incoming.lock()
                    committedHead = head
                    incoming.unlock()
                }
            } catch {
                result = .failure(error)
            }
        }
        if case .failure(let error) = result {
            logger.error("store commit failed", metadata: ["error": "\(error)", "writes": "\(writes.count)"])
            incoming.lock()
            failure = (error, live.map(\.submission.epoch).max() ?? epoch)
            incoming.unlock()
            onFailure(error)
        }
        for item in live { item.submission.completion(result.map { item.receipts }) }
    }

    /// A receipt to write with no key to sign it: a store opened without one.
    public struct UnsignedReceipt: Error, CustomStringConvertible {
        let alert: AlertID
        public var description: String { "the receipt of alert \(alert) cannot be signed: the store has no receipts key" }
    }
}

extension StoreWrite {
    /// A receipt to draft and sign (the signer's work).
    fileprivate var isReceipt: Bool {
        if case .receipt = self { true } else { false }
    }
}
