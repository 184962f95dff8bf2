import AlertdCore
import AlertdEngine
import NIOConcurrencyHelpers

/// Delivery attempts written in the order they were recorded: those that
/// arrive while a batch commits wait, then go in the next one (one
/// transaction for many attempts, as the lanes do for queue changes).
final class Recorder: Sendable {
    typealias Completion = @Sendable (Result<Void, EngineError>) -> Void

    private struct State {
        var waiting: [(AttemptRecord, Completion)] = []
        var running = false
    }

    private let state = NIOLockedValueBox(State())
    /// Set once, right after the store is made (it owns the recorder).
    nonisolated(unsafe) weak var store: PostgresAlertStore?

    /// Attempts written in one transaction at most.
    static let batch = 256

    func enqueue(_ attempt: AttemptRecord, _ completion: @escaping Completion) {
        let start = state.withLockedValue { state -> Bool in
            state.waiting.append((attempt, completion))
            defer { state.running = true }
            return !state.running
        }
        guard start else { return }
        guard let store else { return refuse() }
        store.jobs.start({ await self.drain() }, refused: refuse)
    }

    /// Fails every attempt waiting: the store is stopping.
    private func refuse() {
        let waiting = state.withLockedValue { state in
            defer {
                state.waiting = []
                state.running = false
            }
            return state.waiting
        }
        for (_, completion) in waiting { completion(.failure(EngineError.stopping)) }
    }

    private func drain() async {
        while true {
            let batch = state.withLockedValue { state -> [(AttemptRecord, Completion)] in
                let batch = Array(state.waiting.prefix(Self.batch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.running = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            guard let store else {
                for (_, completion) in batch { completion(.failure(EngineError.stopping)) }
                continue
            }
            let result: Result<Void, EngineError>
            do {
                try await store.write(batch.map(\.0))
                result = .success(())
            } catch {
                result = .failure(store.unavailable(error))
            }
            for (_, completion) in batch { completion(result) }
        }
    }
}
