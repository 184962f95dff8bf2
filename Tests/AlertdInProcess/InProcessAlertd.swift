// The one harness that builds alertd in this process, for every tier that does (the API
// tests on a manual clock, the contract tier's in-process mode). Everything the tests need
// from the daemon's modules to run it is here, so that when they move only this target
// follows.

import AlertdAPI
public import AlertdCore
public import AlertdDaemon
import AlertdEngine
import AlertdHTTP
public import AlertdSQLite
public import AlertdTestSupport
import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Runs `body` against alertd built and run in this process as the daemon builds and runs
/// it, then shuts it down gracefully and waits for the end of its services.
///
/// alertd is opened by the daemon's own ``Alertd/open(config:clock:logger:openStore:)``
/// and runs the daemon's own services (``Alertd/services``: the state lock, the store, the
/// delivery worker, the deadline loop, the purge and the readiness probe) in one
/// swift-service-lifecycle `ServiceGroup`. In the place of the daemon's HTTP service,
/// last in the group and so the first to stop, a service of the harness starts alertd
/// (``Alertd/start()``) once the store runs and, at shutdown, answers the parked waiters
/// (`Engine.drain()`) before the others stop. Requests go to alertd's HTTP handler as
/// the server hands them over, without sockets.
///
/// ```swift
/// try await withInProcessAlertd(config: "clients:\n  ops: { policy: stack }\n", clock: ManualClock()) { alertd in
///     let notice = try await alertd.postAlert("ops", #"{"title":"Backup done","dismiss_after":2}"#)
///     alertd.clock.advance(seconds: 2)
///     await alertd.fireDeadlines()
///     #expect(try await alertd.get("/v1/clients/ops/alerts/current").status == 204)
/// }
/// ```
///
/// - Parameters:
///   - config: the config file's text; its `state_dir` is replaced by `stateDir`.
///   - store: `.postgres` adds a store section naming a database of ``TestPostgres``,
///     borrowed for the scope (``TestStore/run(_:_:)``); `.sqlite` leaves `config` as it is.
///   - clock: a manual clock, which only the test moves; nil: the system clock.
///   - stateDir: the state directory, kept afterwards; nil: a new one, removed afterwards.
///   - wrapStore: puts a store of the test's around the SQLite store each start opens
///     (``ControlledStore/wrap(_:)``).
///   - body: the test, with alertd running; ``InProcessAlertd/restart(config:)`` restarts
///     it on the same state.
/// - Throws: what `body` threw; else what ended alertd's services, if anything did.
public func withInProcessAlertd<T>(
    config: String = "", store: TestStore = .sqlite, clock: ManualClock? = nil, stateDir: String? = nil,
    wrapStore: (@Sendable (any PersistentStore) -> any PersistentStore)? = nil, _ body: (InProcessAlertd) async throws -> T
) async throws -> T {
    try await store.run(config) { config in
        let (runs, submit) = AsyncStream.makeStream(of: InProcessAlertd.Run.self)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            // Each start's service group runs here, one after the other.
            tasks.addTask {
                for await run in runs { await run.execute() }
            }
            let alertd: InProcessAlertd
            do {
                alertd = try InProcessAlertd(clock: clock, stateDir: stateDir, wrapStore: wrapStore, runs: submit)
            } catch {
                submit.finish()
                throw error
            }
            let outcome: Result<T, any Error>
            do {
                HangTrace.mark("starting alertd in process")
                try await alertd.start(config: config)
                HangTrace.mark("the body, in process")
                outcome = .success(try await body(alertd))
            } catch {
                outcome = .failure(error)
            }
            var stopped: (any Error)?
            HangTrace.mark("stopping alertd in process")
            do { try await alertd.stop() } catch { stopped = error }
            submit.finish()
            HangTrace.mark("waiting for the in-process alertd's services to end\(stopped.map { " (\($0))" } ?? "")")
            try await tasks.waitForAll()
            HangTrace.mark("alertd in process stopped")
            if let stopped, case .success = outcome { throw stopped }
            return try outcome.get()
        }
    }
}

/// alertd running in this process (``withInProcessAlertd(config:store:clock:stateDir:wrapStore:_:)``),
/// answering through its HTTP handler without sockets.
public final class InProcessAlertd: TestClient, Sendable {
    /// The state directory (the embedded store's, and its lock's).
    public let stateDir: String
    private let scratch: ScratchDirectory?
    private let manualClock: ManualClock?
    private let wrapStore: (@Sendable (any PersistentStore) -> any PersistentStore)?
    private let runs: AsyncStream<Run>.Continuation
    /// The last start and its config.
    private let current = NIOLockedValueBox<(run: Run, config: String)?>(nil)

    /// Quiet, unless `ALERTD_TEST_LOG` names a level (`warning`, `debug`, …): then to stderr,
    /// to see why an in-process daemon answered as it did.
    private static let logger = Logger(label: "alertd-in-process") { label in
        guard let name = ProcessInfo.processInfo.environment["ALERTD_TEST_LOG"], let level = Logger.Level(rawValue: name) else {
            return SwiftLogNoOpLogHandler()
        }
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }

    fileprivate init(
        clock: ManualClock?, stateDir: String?, wrapStore: (@Sendable (any PersistentStore) -> any PersistentStore)?,
        runs: AsyncStream<Run>.Continuation
    ) throws {
        let scratch = stateDir == nil ? try ScratchDirectory(prefix: "alertd-in-process") : nil
        self.scratch = scratch
        self.stateDir = stateDir ?? scratch!.url.path
        self.manualClock = clock
        self.wrapStore = wrapStore
        self.runs = runs
    }

    /// alertd as the last start built it: its engine, store and API.
    public var alertd: Alertd {
        guard let current = current.withLockedValue({ $0 }) else { preconditionFailure("alertd never started") }
        return current.run.alertd
    }

    /// The manual clock alertd runs on; a test that asked for none must not move time.
    public var clock: ManualClock {
        guard let manualClock else { preconditionFailure("this alertd runs on the system clock: start it with clock: ManualClock()") }
        return manualClock
    }

    // MARK: - Starting and stopping

    /// Starts alertd again on the same state (and the same clock and store wrapper), from
    /// `config`, or from the config it last started with. It must be stopped.
    public func start(config: String? = nil) async throws {
        let previous = current.withLockedValue { $0 }
        if let previous, !previous.run.hasEnded { throw TestFailure("alertd is running: stop it first") }
        guard let yaml = config ?? previous?.config else { throw TestFailure("no config to start alertd from") }
        var parsed = try Config.parse(yaml: yaml)
        parsed.stateDir = stateDir
        let settings = parsed
        let clock: any WallClock = manualClock ?? SystemClock()
        let wrapStore = self.wrapStore ?? { $0 }
        // Opening blocks (SQLite, the state directory's lock): on a thread of its own, never the pool's.
        let alertd = try await onOwnThread {
            try Alertd.open(config: settings, clock: clock, logger: Self.logger) {
                wrapStore(try SQLiteStore(directory: $0.stateDir, durability: $0.durability))
            }
        }
        let run = Run(alertd: alertd, logger: Self.logger)
        current.withLockedValue { $0 = (run, yaml) }
        runs.yield(run)
        switch await run.started(timeout: .seconds(300)) {
        case .serving:
            return
        case .failed(let error):
            // PostgresNIO's errors describe themselves only when reflected.
            throw TestFailure("alertd did not start: \(String(reflecting: error))")
        case nil:
            try? await stop()
            throw TestFailure("alertd did not start within 300 s")
        }
    }

    /// Shuts alertd down as SIGTERM does the daemon (graceful shutdown of its service
    /// group) and returns once every service has ended; throws what ended them otherwise.
    /// Nothing committed is lost: for a crash, see the end-to-end tier's `kill -9`.
    public func stop() async throws {
        guard let run = current.withLockedValue({ $0?.run }) else { return }
        try await run.stop(timeout: .seconds(120))
    }

    /// ``stop()``, then ``start(config:)``: a restart on the same state.
    public func restart(config: String? = nil) async throws {
        try await stop()
        try await start(config: config)
    }

    // MARK: - Requests

    /// Sends one request and returns its answer (at most 120 s later), as the server hands
    /// requests over: the head is admitted (or refused) first, then the whole request is
    /// handled; path and query are percent-decoded (`+` in the query is a space, as
    /// libmicrohttpd decodes arguments); `Host: 127.0.0.1` is added when there is none; a
    /// HEAD answer loses its body, as on the wire.
    public func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) async throws -> TestResponse {
        try await begin(method, path, headers: headers, body: body).value(timeout: .seconds(120))
    }

    /// Starts a request whose answer may come later (a parked waiter): ``PendingResponse``.
    public func begin(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) -> PendingResponse {
        let pending = PendingResponse()
        dispatch(method, path, headers: headers, body: body) { pending.deliver($0) }
        return pending
    }

    /// ``begin(_:_:headers:body:)`` with `json` as an `application/json` body.
    public func begin(_ method: String, _ path: String, json: String?, headers: [(String, String)] = []) -> PendingResponse {
        begin(
            method, path, headers: headers + (json == nil ? [] : [("Content-Type", "application/json")]), body: json.map { Array($0.utf8) })
    }

    /// Sends a request and blocks the calling thread for its answer (at most 120 s): only
    /// on a test's own `Thread`s (many clients at once), never in an async context.
    public func sendBlocking(_ method: String, _ path: String, json: String? = nil, headers: [(String, String)] = []) -> TestResponse? {
        let answered = DispatchSemaphore(value: 0)
        let answer = NIOLockedValueBox<TestResponse?>(nil)
        dispatch(
            method, path, headers: headers + (json == nil ? [] : [("Content-Type", "application/json")]), body: json.map { Array($0.utf8) }
        ) { response in
            answer.withLockedValue { $0 = response }
            answered.signal()
        }
        _ = answered.wait(timeout: .now() + 120)
        return answer.withLockedValue { $0 }
    }

    private func dispatch(
        _ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?, answer: @escaping @Sendable (TestResponse) -> Void
    ) {
        let target = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let query: [(name: String, value: String)] =
            target.count > 1
            ? target[1].split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (Self.decoded(parts[0], plus: true), parts.count > 1 ? Self.decoded(parts[1], plus: true) : "")
            } : []
        var fields = headers.map { (name: $0.0, value: $0.1) }
        if !fields.contains(where: { $0.name.lowercased() == "host" }) { fields.append((name: "Host", value: "127.0.0.1")) }
        var request = HTTPRequest(
            method: method, path: Self.decoded(target[0], plus: false), query: query, headers: fields, body: body ?? [])
        let api = alertd.api
        let deliver: @Sendable (HTTPResponse) -> Void = { response in
            answer(
                TestResponse(
                    status: response.status, headers: response.headers.map { ($0.name, $0.value) },
                    body: method == "HEAD" ? [] : response.body))
        }
        switch api.admit(request.head) {
        case .refuse(let response):
            deliver(response)
        case .proceed(let admission):
            request.admission = admission
            api.handle(
                request,
                responder: Responder.inProcess { response in
                    // The request is over once its answer is taken, as the server reports it
                    // (this releases the token's place among its requests in flight).
                    api.finished(admission)
                    deliver(response)
                })
        }
    }

    /// `%XX` decoded as libmicrohttpd does (other bytes as they are).
    private static func decoded(_ text: Substring, plus: Bool) -> String {
        var bytes: [UInt8] = []
        var rest = Array(text.utf8)[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "%"), rest.count >= 2, let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                rest = rest.dropFirst(2)
            } else {
                bytes.append(plus && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Moving alertd along

    /// Fires the deadlines due at the clock's time and returns once they are committed and published.
    public func fireDeadlines() async {
        await alertd.engine.fireDeadlines()
    }

    /// One round of the purge (the purge service runs one a minute), once the store has done it.
    public func purge() async { await alertd.engine.purge() }

    /// Returns once everything submitted to the embedded store so far is committed and
    /// published (with PostgreSQL, each change is answered once committed: no need).
    public func barrier() async {
        let alertd = self.alertd
        let now = manualClock?.now() ?? SystemClock().now()
        _ = try? await alertd.store.transact(client: "barrier", now: now, idempotencyKey: nil) { _, _ in
            Mutation((), afterEarlierCommits: true)
        }
    }
}

extension InProcessAlertd {
    /// One start of alertd: its services in one group, from the start to the group's end.
    final class Run: Sendable {
        enum Phase: Sendable {
            case starting
            case serving
            /// The group ended, with the error that ended it, if any.
            case ended((any Error)?)
            /// ``stop(timeout:)`` gave up waiting for the group: the test fails, naming what
            /// still ran, and the harness goes on without it (a hang names itself).
            case abandoned
        }

        enum Start: Sendable {
            case serving
            case failed(any Error)
        }

        let alertd: Alertd
        private let group: ServiceGroup
        private let phase = Observed(Phase.starting)
        /// Each service by name, and whether its `run()` has returned.
        private let services: NIOLockedValueBox<[(name: String, ended: Bool)]>
        /// Each service's report of its parts still running, where it gives one.
        private let reporters: [(any ReportsParts)?]

        init(alertd: Alertd, logger: Logger) {
            self.alertd = alertd
            let phase = self.phase
            let front = Front(alertd: alertd) {
                phase.update { if case .starting = $0 { $0 = .serving } }
            }
            // The daemon's services in the daemon's order, the front last, as the daemon's HTTP service is.
            let named = (alertd.services + [front]).map { ($0, Self.name(of: $0)) }
            let services = NIOLockedValueBox(named.map { (name: $0.1, ended: false) })
            self.reporters = named.map { Self.reporter(of: $0.0) }
            self.services = services
            let tracked = named.enumerated().map { index, service in
                Tracked(service: service.0) { services.withLockedValue { $0[index].ended = true } }
            }
            group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: tracked.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }, logger: logger))
        }

        /// Runs the group to its end, its services on ``ServiceThreads``, in a task of its own:
        /// returns when the group ended, or when ``stop(timeout:)`` gave up on it.
        func execute() async {
            Task(executorPreference: ServiceThreads.shared) { [group, phase] in
                do {
                    try await group.run()
                    phase.update { $0 = .ended(nil) }
                } catch {
                    phase.update { $0 = .ended(error) }
                }
            }
            _ = await phase.wait(timeout: .seconds(24 * 3600)) { phase -> Bool? in
                switch phase {
                case .ended, .abandoned: true
                case .starting, .serving: nil
                }
            }
        }

        var hasEnded: Bool {
            switch phase.value {
            case .ended, .abandoned: true
            case .starting, .serving: false
            }
        }

        /// Serving, or why not; nil after `timeout`.
        func started(timeout: Duration) async -> Start? {
            await phase.wait(timeout: timeout) { phase in
                switch phase {
                case .starting: nil
                case .serving: .serving
                case .ended(let error): .failed(error ?? TestFailure("alertd's services ended while it started"))
                case .abandoned: .failed(TestFailure("alertd's services were given up on"))
                }
            }
        }

        /// Graceful shutdown of the group, awaited to its end; after `timeout`, throws naming
        /// the services still running, and gives the group up.
        func stop(timeout: Duration) async throws {
            if !hasEnded { await group.triggerGracefulShutdown() }
            let ended = await phase.wait(timeout: timeout) { phase -> Start? in
                guard case .ended(let error) = phase else { return nil }
                return error.map { .failed($0) } ?? .serving
            }
            switch ended {
            case .serving: return
            case .failed(let error): throw TestFailure("alertd's services ended with \(String(reflecting: error))")
            case nil:
                let running = services.withLockedValue { services in
                    services.indices.filter { !services[$0].ended }.map { index in
                        let parts = reporters[index]?.partsRunning
                        return services[index].name + (parts.map { " (its parts still running: \($0.joined(separator: ", ")))" } ?? "")
                    }
                }
                phase.update { if case .ended = $0 {} else { $0 = .abandoned } }
                throw TestFailure(
                    "alertd's services did not stop within \(timeout); still running: \(running.joined(separator: ", "))")
            }
        }

        /// The service, or the one a gate holds, where it reports its parts.
        private static func reporter(of service: any Service) -> (any ReportsParts)? {
            let inner = Mirror(reflecting: service).children.first { $0.label == "service" }?.value
            return (inner ?? service) as? any ReportsParts
        }

        /// A service's name for a report: its type, and for a gated one the type it gates.
        private static func name(of service: any Service) -> String {
            let inner = Mirror(reflecting: service).children.first { $0.label == "service" }?.value
            return inner.map { "\(type(of: service))(\(type(of: $0)))" } ?? "\(type(of: service))"
        }
    }

    /// A service that reports the return of its `run()`.
    struct Tracked: Service {
        let service: any Service
        let ended: @Sendable () -> Void

        func run() async throws {
            defer { ended() }
            try await service.run()
        }
    }

    /// In the place of the daemon's HTTP service: starts alertd once the store runs (the
    /// loops wait for it), and at shutdown answers the parked waiters before the others stop.
    struct Front: Service {
        let alertd: Alertd
        let serving: @Sendable () -> Void

        func run() async throws {
            try await alertd.start()
            serving()
            try? await gracefulShutdown()
            alertd.engine.drain()
        }
    }
}

/// The answer of a request made in process, which may come later (a parked waiter) on any
/// thread; awaited, never waited for on a thread.
public final class PendingResponse: Sendable {
    private let response = Observed<TestResponse?>(nil)

    func deliver(_ answer: TestResponse) {
        response.update { $0 = $0 ?? answer }
    }

    /// Whether the answer has come.
    public var isAnswered: Bool { response.value != nil }

    /// The answer, once it comes; throws after `timeout`.
    public func value(timeout: Duration = .seconds(10)) async throws -> TestResponse {
        guard let answer = await response.wait(timeout: timeout, until: { $0 }) else {
            throw TestFailure("no answer within \(timeout)")
        }
        return answer
    }
}

/// Where the services of every in-process alertd run: threads of their own, not the
/// cooperative pool's. The daemon's services block a thread at times (the embedded store's
/// writer is joined at shutdown, the readiness probe writes to SQLite, the purge reads
/// beside the writer): one daemon per process can afford it, but dozens of alertds in one
/// test process on a two-thread cooperative pool stalled every other test's requests for
/// seconds (in-process answers "at once" took 15–20 s in a full run).
final class ServiceThreads: TaskExecutor {
    static let shared = ServiceThreads()

    // A queue of its own: libdispatch gives it more threads while some block.
    private let queue = DispatchQueue(label: "alertd-in-process-services", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
