import AlertdCore
import Foundation
import Logging

/// Writes to the store from one thread, many requests per transaction.
///
/// Callers ``submit(_:completion:)`` write sets in the order they want them
/// applied (alertd submits under its board lock, so store order is board order).
/// The writer takes everything queued, commits it in one transaction, then calls
/// each completion in submission order. Durability then costs one fsync per batch,
/// not per request. An empty write set is a barrier: its completion runs once
/// everything submitted before it is committed.
public final class GroupCommitter: @unchecked Sendable {
    public typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    private struct Submission {
        var writes: [StoreWrite]
        var completion: Completion
    }

    // Guarded by `condition`.
    private var queue: [Submission] = []
    private var stopping = false
    private var running = false
    /// The first commit failure. Everything queued after it was computed on a
    /// state that includes the failed change, so it is failed too, never committed.
    private var failure: (any Error)?
    private let condition = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    private let store: any AlertStore
    private let logger: Logger
    private let maxBatch: Int
    private let onFailure: @Sendable (any Error) -> Void
    /// Told how long each commit took, in nanoseconds (for metrics).
    private let onCommit: @Sendable (UInt64) -> Void

    /// - Parameter onFailure: told when a commit failed (the store can no longer be trusted).
    public init(
        store: any AlertStore, logger: Logger, maxBatch: Int = 1024,
        onFailure: @escaping @Sendable (any Error) -> Void = { _ in },
        onCommit: @escaping @Sendable (UInt64) -> Void = { _ in }
    ) {
        self.onCommit = onCommit
        self.store = store
        self.logger = logger
        self.maxBatch = maxBatch
        self.onFailure = onFailure
    }

    /// Starts the writer thread.
    public func start() {
        condition.lock()
        running = true
        condition.unlock()
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
        queue.append(Submission(writes: writes, completion: completion))
        condition.signal()
        condition.unlock()
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
        var writes: [StoreWrite] = []
        writes.reserveCapacity(batch.count * 2)
        for submission in batch { writes.append(contentsOf: submission.writes) }
        var result: Result<Void, any Error> = .success(())
        if let failure {
            result = .failure(failure)
        } else if !writes.isEmpty {
            do {
                let started = DispatchTime.now().uptimeNanoseconds
                try store.commit(writes)
                onCommit(DispatchTime.now().uptimeNanoseconds - started)
            } catch {
                logger.critical("store commit failed", metadata: ["error": "\(error)", "writes": "\(writes.count)"])
                result = .failure(error)
                failure = error
                onFailure(error)
            }
        }
        for submission in batch { submission.completion(result) }
    }
}
