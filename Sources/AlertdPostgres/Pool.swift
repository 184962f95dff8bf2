import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import Synchronization

/// The store's connections: postgres-nio's `PostgresClient`, made safe for a
/// database that goes away.
///
/// - **A bound on waiting for a connection.** While the pool cannot connect
///   (the database stopped, unreachable), it queues every request for a
///   connection until it can again, or until a minute has passed (its circuit
///   breaker, which `PostgresClient` does not let us set). Requests then hung
///   for the whole outage and none failed, so `/readyz` stayed 200 too. Here a
///   request that has no connection after ``leaseWait`` gives up (its place in
///   the pool's queue cancelled) and throws ``NoConnection``; the store
///   answers 503 `unavailable`. An operation that got its connection is never
///   cut short by that bound: what it commits, it reports.
/// - **An end for work on a connection that closed under it.** With
///   PostgreSQL killed, postgres-nio (1.33) left some queries in flight on the
///   closed connections unanswered for good (a transaction stopped before its
///   COMMIT, another in the middle of reading rows). A client's changes run one
///   transaction after the other, so that client never changed again, even
///   after the database was back; a deadline round or a counts reading that
///   hung stopped those for the whole instance. Here work whose connection has
///   closed and that has not ended a moment later throws ``ConnectionLost``
///   (the work itself is left to postgres-nio; it holds nothing of ours).
struct Pool: Sendable {
    let client: PostgresClient
    /// How long an operation waits for a connection.
    let leaseWait: Duration

    /// Runs the pool until cancelled (or the service group shuts down).
    func run() async { await client.run() }

    /// Runs `query` on a connection of the pool and returns all its rows.
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger) async throws -> Rows {
        try await withConnection { connection in
            var rows: [PostgresRow] = []
            for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
            return Rows(rows: rows)
        }
    }

    /// `body` in a transaction on a connection of the pool (`PostgresClient.withTransaction`).
    func withTransaction<Result: Sendable>(
        logger: Logger, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            try await connection.withTransaction(logger: logger) { try await body($0) }
        }
    }

    /// `work` on a connection of the pool, waiting at most ``leaseWait`` for one.
    private func withConnection<Result: Sendable>(
        _ work: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let gate = LeaseGate()
        let wait = leaseWait
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    // Given up on already: the connection goes back unused.
                    guard gate.leased() else { throw CancellationError() }
                    return try await Self.untilClosed(connection) { try await work(connection) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: wait)
                return nil
            }
            var gaveUp = false
            do {
                while let outcome = try await group.next() {
                    if let value = outcome {
                        group.cancelAll()
                        return value
                    }
                    // The timer: give up, unless the work has its connection by now. Cancelling
                    // the lease's task takes its request out of the pool's queue.
                    if gate.expire() {
                        gaveUp = true
                        group.cancelAll()
                    }
                }
            } catch  where gaveUp {
                throw NoConnection(waited: wait)
            }
            throw CancellationError()
        }
    }

    /// How long work may go on after its connection closed before it is given up.
    static let closedGrace: TimeAmount = .milliseconds(250)

    /// `work`'s result, or ``ConnectionLost`` once `connection` has been closed for
    /// ``closedGrace`` (checked every ``closedGrace``) and `work` has not ended.
    private static func untilClosed<Result: Sendable>(
        _ connection: PostgresConnection, _ work: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let outcome = Outcome<Result>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.wait(continuation)
            let closedSeen = NIOLockedValueBox(false)
            let watch = connection.eventLoop.scheduleRepeatedTask(initialDelay: closedGrace, delay: closedGrace) { task in
                guard connection.isClosed else { return }
                // Seen closed on one tick and still running on the next: lost.
                if closedSeen.withLockedValue({ seen in
                    defer { seen = true }; return seen
                }) {
                    task.cancel()
                    outcome.resume(.failure(ConnectionLost()))
                }
            }
            Task {
                let result: Swift.Result<Result, any Error>
                do {
                    result = .success(try await work())
                } catch {
                    result = .failure(error)
                }
                watch.cancel()
                outcome.resume(result)
            }
        }
    }
}

/// All the rows of one query, read while the connection was held.
struct Rows: AsyncSequence, Sendable {
    typealias Element = PostgresRow
    let rows: [PostgresRow]

    struct AsyncIterator: AsyncIteratorProtocol {
        var rows: IndexingIterator<[PostgresRow]>
        mutating func next() async -> PostgresRow? { rows.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(rows: rows.makeIterator()) }
}

/// No connection came from the pool in time: the database cannot be reached
/// (or every connection is busy for that long).
struct NoConnection: Error, CustomStringConvertible {
    let waited: Duration
    var description: String { "no database connection within \(waited) (the database cannot be reached, or the pool is exhausted)" }
}

/// The connection closed under work that never ended.
struct ConnectionLost: Error, CustomStringConvertible {
    var description: String { "the database connection closed and the work on it did not end" }
}

/// Whether an operation got its connection before its wait was given up:
/// exactly one of the two happens.
final class LeaseGate: Sendable {
    private enum State { case waiting, leased, expired }
    private let state = Mutex(State.waiting)

    /// The operation has its connection; false when the wait was given up first.
    func leased() -> Bool {
        state.withLock { state in
            if state == .waiting { state = .leased }
            return state == .leased
        }
    }

    /// Gives up the wait; false when the operation had its connection first.
    func expire() -> Bool {
        state.withLock { state in
            if state == .waiting { state = .expired }
            return state == .expired
        }
    }
}

/// A continuation resumed once, by whichever comes first.
private final class Outcome<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var result: Result<Value, any Error>?
    }

    private let state = Mutex(State())

    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state in
            if state.result == nil { state.continuation = continuation }
            return state.result
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(_ result: Result<Value, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}
