import AlertdCore
import AlertdEngine
import NIOConcurrencyHelpers

/// Delivery attempts written in the order they were recorded: those that
/// arrive while a batch commits wait, then go in the next one (one
/// transaction for many attempts, as the lanes do for queue changes).
final class Recorder: BatchRunner {
    typealias Completion = @Sendable (Result<Void, EngineError>) -> Void
    typealias Item = (attempt: AttemptRecord, completion: Completion)

    /// Attempts written in one transaction at most.
    static let batch = 256

    private let batcher = Batcher(InArrivalOrder<Item>(limit: Recorder.batch))
    /// Set once, right after the store is made (it owns the recorder).
    nonisolated(unsafe) weak var store: PostgresAlertStore?

    func enqueue(_ attempt: AttemptRecord, _ completion: @escaping Completion) {
        batcher.enqueue((attempt, completion), to: self)
    }

    var batchJobs: Jobs? { store?.jobs }

    /// Fails every attempt of a batch that will not run: the store is stopping.
    func refuse(_ batch: [Item]) {
        for (_, completion) in batch { completion(.failure(EngineError.stopping)) }
    }

    func run(_ batch: [Item]) async -> BatchEnd<Item> {
        guard let store else {
            refuse(batch)
            return BatchEnd()
        }
        let result: Result<Void, EngineError>
        do {
            try await store.write(batch.map(\.attempt))
            result = .success(())
        } catch {
            result = .failure(store.unavailable(error))
        }
        for (_, completion) in batch { completion(result) }
        return BatchEnd()
    }
}
