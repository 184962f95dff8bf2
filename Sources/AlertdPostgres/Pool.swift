import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import Synchronization

// Over 400 lines on purpose: its three guards against a database that goes away (a bound on
// waiting for a connection, an end for work on a closed one, a new pool when the database is
// back) share the pool's private state and each other's; the header says why each exists.

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
///   cut short by that bound: what it commits, it reports. One loop gives up
///   every wait whose time is up (``expireWaits()``, every 50 ms while any
///   waits): a timer of each lease's own (a task sleeping beside it) cost a
///   child task and a libdispatch timer per statement (`Task.sleep` alone 3 %
///   of an instance's samples under load, bench/RESULTS.md, issue 46).
/// - **An end for work on a connection that closed under it.** With
///   PostgreSQL killed, postgres-nio (1.33) left some queries in flight on the
///   closed connections unanswered for good (a transaction stopped before its
///   COMMIT, another in the middle of reading rows). A client's changes run one
///   transaction after the other, so that client never changed again, even
///   after the database was back; a deadline round or a counts reading that
///   hung stopped those for the whole instance. Here work whose connection has
///   closed and that has not ended a moment later throws ``ConnectionLost``
///   (the work itself is left to postgres-nio; it holds nothing of ours). This is
///   postgres-nio's defect #487 (its fix was reverted by #501); the work runs in
///   one unowned task because a hung child of an owned group would block shutdown.
///   That task runs on the connection's event loop (``EventLoopExecutor``), so each
///   round trip's reply resumes it where it arrived.
/// - **A new pool when the database is back.** While it cannot connect, the
///   pool tries again after 100 ms × 1.25ⁿ⁻¹ (n attempts failed so far, at most
///   60 s): after a 10 s outage its next attempt was up to ~2.5 s away, after a
///   minute up to ~15 s, and every request waited for it. Here, once a request
///   gave up waiting, a probe connects on its own every 250 ms; when the
///   database answers and the pool still gives no connection within 250 ms, a
///   new pool takes the requests, and the old one is shut down once the work it
///   serves has ended; requests still waiting on the old one move to the new.
///   (A pool so busy that requests wait ``leaseWait`` for a connection looks the
///   same from here, and is replaced too: its work finishes, the new pool opens
///   its own connections.)
final class Pool: Sendable {
    /// How long an operation waits for a connection.
    let leaseWait: Duration
    private let configuration: PostgresClient.Configuration
    /// A connection of the probe's own, made with a short timeout.
    private let probe: PostgresConnection.Configuration
    private let logger: Logger
    private let state: NIOLockedValueBox<State>
    /// Set once the first pool runs (its `run()` has begun): postgres-nio warns of any
    /// lease before, so nothing leases until then (``untilRunning()``).
    private let firstRunning = Atomic<Bool>(false)
    /// Pools to run: the first, then each that takes over.
    private let runners: AsyncStream<Runner>
    private let newRunner: AsyncStream<Runner>.Continuation
    /// The leases waiting for a connection, each given up by ``expireWaits()``.
    private let waits = NIOLockedValueBox(Waits())
    /// Told when a wait is registered while none was (``expireWaits()`` sleeps until then).
    private let firstWait: AsyncStream<Void>
    private let firstWaitAdded: AsyncStream<Void>.Continuation

    private struct Waits {
        var next = 0
        var entries: [Int: Wait] = [:]
    }

    /// A lease waiting for a connection: given up at `deadline`, or once a pool newer than
    /// `generation` takes the requests (it waits there instead).
    private struct Wait {
        let deadline: ContinuousClock.Instant
        let generation: Int
        let giveUp: @Sendable () -> Void
    }

    private struct State {
        var current: PostgresClient
        var generation = 0
        var nextGeneration = 1
        /// Work running on each generation's pool.
        var running: [Int: Int] = [:]
        /// Pools taken over from, still serving work.
        var superseded: Set<Int> = []
        /// Ends each pool's run.
        var ends: [Int: AsyncStream<Void>.Continuation] = [:]
        /// A request gave up waiting for a connection since the probe last found the pool answering.
        var stalled = false
    }

    /// One pool and what ends its run.
    private struct Runner: Sendable {
        let client: PostgresClient
        let generation: Int
        let ended: AsyncStream<Void>
    }

    init(configuration: PostgresClient.Configuration, probe: PostgresConnection.Configuration, leaseWait: Duration, logger: Logger) {
        self.configuration = configuration
        self.probe = probe
        self.leaseWait = leaseWait
        self.logger = logger
        let first = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let (ended, end) = AsyncStream<Void>.makeStream()
        state = NIOLockedValueBox(State(current: first, ends: [0: end]))
        (runners, newRunner) = AsyncStream<Runner>.makeStream()
        (firstWait, firstWaitAdded) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        newRunner.yield(Runner(client: first, generation: 0, ended: ended))
    }

    /// The pool requests go to now (for the migrations at start).
    var current: PostgresClient { state.withLockedValue { $0.current } }

    /// Runs the pools and the probe until cancelled (or the service group shuts down).
    ///
    /// Each pool's `PostgresClient.run()` is started as an immediate task, which runs on this
    /// thread until it first suspends: `run()` marks its pool running before that, so when
    /// the pool is adopted (and the first one announced, ``untilRunning()``) no lease can
    /// come before it. (Started as a child task, it ran whenever the executor got to it, and
    /// the migrations at start leased first: postgres-nio logged "Trying to lease connection
    /// from `PostgresClient`, but `PostgresClient.run()` hasn't been called yet" at every
    /// start.) The task is this one's: cancelled with it, or when its pool is done, and
    /// awaited.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.watch() }
            group.addTask { await self.expireWaits() }
            for await runner in runners {
                group.addTask {
                    let running = Task.immediate { await runner.client.run() }
                    self.adopt(runner)
                    if runner.generation == 0 { self.firstRunning.store(true, ordering: .releasing) }
                    await withTaskCancellationHandler {
                        for await _ in runner.ended {}
                    } onCancel: {
                        running.cancel()
                    }
                    running.cancel()
                    await running.value
                }
            }
        }
    }

    /// Returns once the first pool runs: leasing before would make postgres-nio warn.
    func untilRunning() async throws {
        while !firstRunning.load(ordering: .acquiring) {
            try Task.checkCancellation()
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Runs `query` on a connection of the pool and returns all its rows.
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger) async throws -> Rows {
        try await withConnection { connection in
            var rows: [PostgresRow] = []
            for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
            return Rows(rows: rows)
        }
    }

    /// Runs a prepared statement (prepared once per connection) and returns all its rows.
    func execute<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> Rows
    where Statement.Row == PostgresRow {
        try await withConnection { connection in
            var rows: [PostgresRow] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
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

    /// `work` on a connection of the pool, waiting at most `wait` (``leaseWait``) for one.
    /// Still waiting when a new pool takes over, it waits on that one for the rest.
    private func withConnection<Result: Sendable>(
        wait: Duration? = nil, probing: Bool = false, _ work: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let wait = wait ?? leaseWait
        let deadline = ContinuousClock.now + wait
        while true {
            let (client, generation) = state.withLockedValue { state in
                state.running[state.generation, default: 0] += 1
                return (state.current, state.generation)
            }
            defer { finished(generation) }
            if let value = try await lease(client, generation: generation, until: deadline, waited: wait, probing: probing, work) {
                return value
            }
        }
    }

    /// `work` on a connection of `client`; nil when a new pool took over before one came.
    ///
    /// The lease is a task of its own so that its wait can be given up from outside
    /// (``expireWaits()`` cancels it: that takes its request out of the pool's queue); the
    /// caller awaits it, and its cancellation is the lease's.
    private func lease<Result: Sendable>(
        _ client: PostgresClient, generation: Int, until deadline: ContinuousClock.Instant, waited: Duration, probing: Bool,
        _ work: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result? {
        let gate = LeaseGate()
        let leasing = Task {
            try await client.withConnection { connection in
                // Given up on already: the connection goes back unused.
                guard gate.leased() else { throw CancellationError() }
                return try await Self.untilClosed(connection) { try await work(connection) }
            }
        }
        let (wait, first) = waits.withLockedValue { waits in
            defer { waits.next += 1 }
            let first = waits.entries.isEmpty
            // Given up unless the work has its connection by then.
            waits.entries[waits.next] = Wait(deadline: deadline, generation: generation) { if gate.expire() { leasing.cancel() } }
            return (waits.next, first)
        }
        if first { firstWaitAdded.yield() }
        defer { waits.withLockedValue { _ = $0.entries.removeValue(forKey: wait) } }
        do {
            return try await withTaskCancellationHandler {
                try await leasing.value
            } onCancel: {
                leasing.cancel()
            }
        } catch  where gate.expired {
            if ContinuousClock.now < deadline, self.generation != generation { return nil }
            if !probing { state.withLockedValue { $0.stalled = true } }
            throw NoConnection(waited: waited)
        }
    }

    /// Gives up, every 50 ms, the waits for a connection whose deadline passed or whose
    /// pool was taken over from; sleeps while no lease waits.
    private func expireWaits() async {
        var added = firstWait.makeAsyncIterator()
        while !Task.isCancelled {
            if waits.withLockedValue({ $0.entries.isEmpty }) {
                guard await added.next() != nil else { return }
                continue
            }
            try? await Task.sleep(for: .milliseconds(50))
            let now = ContinuousClock.now
            let current = generation
            let due = waits.withLockedValue { waits in
                let due = waits.entries.filter { $0.value.deadline <= now || $0.value.generation != current }
                for key in due.keys { waits.entries[key] = nil }
                return due.values.map(\.giveUp)
            }
            for giveUp in due { giveUp() }
        }
    }

    private var generation: Int { state.withLockedValue { $0.generation } }

    // MARK: - Taking over from a pool that waits to reconnect

    /// Every 250 ms while requests give up: does the database answer, and the pool?
    private func watch() async {
        var probes = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(250))
            guard state.withLockedValue({ $0.stalled }) else { continue }
            probes += 1
            guard await databaseAnswers(probe: probes) else { continue }
            let poolAnswers =
                (try? await withConnection(wait: .milliseconds(250), probing: true) { [logger] connection in
                    for try await _ in try await connection.query("SELECT 1", logger: logger) {}
                    return true
                }) ?? false
            if poolAnswers {
                state.withLockedValue { $0.stalled = false }
            } else {
                replace()
            }
        }
    }

    /// Whether a connection of our own can be made now.
    private func databaseAnswers(probe id: Int) async -> Bool {
        do {
            let connection = try await PostgresConnection.connect(configuration: probe, id: -id, logger: Self.quiet)
            try? await connection.close()
            return true
        } catch {
            return false
        }
    }

    private static let quiet = Logger(label: "alertd.postgres-probe", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Starts a new pool; it takes the requests once it runs (``adopt(_:)``).
    private func replace() {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let (ended, end) = AsyncStream<Void>.makeStream()
        let generation = state.withLockedValue { state in
            defer { state.nextGeneration += 1 }
            state.ends[state.nextGeneration] = end
            state.stalled = false
            return state.nextGeneration
        }
        logger.notice("the database answers again, its connection pool still waits to reconnect: a new pool takes over")
        newRunner.yield(Runner(client: client, generation: generation, ended: ended))
    }

    /// Sends requests to `runner`'s pool from now on (called right before it runs); the
    /// pool it takes over from ends once its work has.
    private func adopt(_ runner: Runner) {
        let end = state.withLockedValue { state -> AsyncStream<Void>.Continuation? in
            guard runner.generation > state.generation else { return nil }
            let old = state.generation
            state.current = runner.client
            state.generation = runner.generation
            state.superseded.insert(old)
            guard state.running[old] == nil else { return nil }
            state.superseded.remove(old)
            return state.ends.removeValue(forKey: old)
        }
        end?.finish()
    }

    /// Work on `generation`'s pool ended.
    private func finished(_ generation: Int) {
        let end = state.withLockedValue { state -> AsyncStream<Void>.Continuation? in
            state.running[generation, default: 1] -= 1
            guard state.running[generation] == 0 else { return nil }
            state.running[generation] = nil
            guard state.superseded.remove(generation) != nil else { return nil }
            return state.ends.removeValue(forKey: generation)
        }
        end?.finish()
    }

    /// How long work may go on after its connection closed before it is given up.
    static let closedGrace: TimeAmount = .milliseconds(250)

    /// `work`'s result, or ``ConnectionLost`` once `connection` has been closed for
    /// ``closedGrace`` (checked every ``closedGrace``) and `work` has not ended.
    static func untilClosed<Result: Sendable>(
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
            // On the connection's event loop: each reply resumes the work where it arrived.
            Task(executorPreference: EventLoopExecutor(eventLoop: connection.eventLoop)) {
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
    private let state = NIOLockedValueBox(State.waiting)

    /// The operation has its connection; false when the wait was given up first.
    func leased() -> Bool {
        state.withLockedValue { state in
            if state == .waiting { state = .leased }
            return state == .leased
        }
    }

    /// Whether the wait was given up.
    var expired: Bool { state.withLockedValue { $0 == .expired } }

    /// Gives up the wait; false when the operation had its connection first.
    func expire() -> Bool {
        state.withLockedValue { state in
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

    private let state = NIOLockedValueBox(State())

    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLockedValue { state in
            if state.result == nil { state.continuation = continuation }
            return state.result
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(_ result: Result<Value, any Error>) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Value, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}
