import NIOConcurrencyHelpers
public import ServiceLifecycle

/// Work a call starts and does not wait for, owned by a service: ``run()`` runs each
/// job as a child task of its own, so none outlives the service that runs them, and
/// a shutdown waits for them. Nothing is started by an unowned `Task {}`.
///
/// A job started after ``close()`` (or after the service stopped) is not run: its
/// `refused` closure runs at once, so whoever waits on it is told.
public final class Jobs: Sendable {
    public typealias Job = @Sendable () async -> Void

    private struct State {
        var queued: [Job] = []
        /// Jobs started under ``run()`` and not ended.
        var running = 0
        var closed = false
        /// ``run()`` waiting for a job.
        var consumer: CheckedContinuation<Void, Never>?
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// Starts `job` under ``run()``; runs `refused` instead when the jobs are closed.
    public func start(_ job: @escaping Job, refused: () -> Void = {}) {
        let (taken, consumer) = state.withLockedValue { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.closed else { return (false, nil) }
            state.queued.append(job)
            defer { state.consumer = nil }
            return (true, state.consumer)
        }
        guard taken else { return refused() }
        consumer?.resume()
    }

    /// The jobs started and not ended, and those queued: for a report of a shutdown that hangs.
    public var counts: (running: Int, queued: Int) { state.withLockedValue { ($0.running, $0.queued.count) } }

    /// Takes no more jobs; ``run()`` returns once those taken have ended.
    public func close() {
        let consumer = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume()
    }

    /// Runs every job started, each as a child task, until closed — by ``close()``, a
    /// graceful shutdown or cancellation (then the jobs still queued start cancelled) —
    /// and returns once every job has ended. Call once.
    public func run() async {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withDiscardingTaskGroup { group in
                    while true {
                        let (jobs, closed) = state.withLockedValue { state in
                            defer {
                                state.running += state.queued.count
                                state.queued = []
                            }
                            return (state.queued, state.closed)
                        }
                        for job in jobs {
                            group.addTask {
                                await job()
                                self.state.withLockedValue { $0.running -= 1 }
                            }
                        }
                        if closed { return }
                        await withCheckedContinuation { (wake: CheckedContinuation<Void, Never>) in
                            let now = state.withLockedValue { state -> Bool in
                                guard state.queued.isEmpty, !state.closed else { return true }
                                state.consumer = wake
                                return false
                            }
                            if now { wake.resume() }
                        }
                    }
                }
            } onCancel: {
                self.close()
            }
        } onGracefulShutdown: {
            self.close()
        }
    }
}

/// A service that can name the parts of its `run()` that have not ended: a shutdown that
/// hangs names them (the in-process harness reports them when a service does not stop).
public protocol ReportsParts: Sendable {
    var partsRunning: [String] { get }
}

/// Runs the engine's own jobs (re-reads that other instances' changes ask for, reads a
/// request waits on, rounds of deadlines) and follows the changes other processes commit:
/// put it after the store in the service group, so it stops first.
public struct EngineJobsService: Service {
    let engine: Engine

    public init(engine: Engine) { self.engine = engine }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await cancelWhenGracefulShutdown { await engine.followChanges() } }
            group.addTask { await engine.jobs.run() }
        }
    }
}
