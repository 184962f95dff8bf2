import AlertdDeliveryWorker
import AlertdEngine
import AlertdHTTP
import Dispatch
import Glibc
import NIOConcurrencyHelpers
import Logging
import ServiceLifecycle

/// Releases the state directory once everything else stopped.
struct StateLockService: Service {
    let lock: StateLock

    func run() async throws {
        try? await gracefulShutdown()
        lock.release()
    }
}

/// The delivery worker's scheduling loop; on shutdown, attempts in flight get a
/// grace period and are recorded (the store stops after it). The loop is not
/// cancelled at a graceful shutdown: its attempts are its child tasks, and
/// cancelling it would cut them off at once. ``DeliveryWorker/shutdown()`` stops
/// it, and the loop returns once its last attempt has ended.
struct DeliveryService: Service {
    let worker: DeliveryWorker

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await worker.run() }
            try? await gracefulShutdown()
            await worker.shutdown()
        }
    }
}

/// Deletes terminal alerts past `alerts.retention`, once a minute.
struct PurgeService: Service {
    let engine: Engine

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await engine.purge()
                try? await Task.sleep(for: .seconds(60))
            }
        }
    }
}

/// Probes the store for `/readyz` every two seconds, every half second while it
/// is not healthy (so writes resume soon after a full disk has room again).
struct ReadinessService: Service {
    let engine: Engine

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: engine.isReady ? .seconds(2) : .milliseconds(500))
                await engine.checkStore()
            }
        }
    }
}

/// The HTTP server. It starts alertd (``Alertd/start()``), then serves and
/// tells systemd it is ready. On shutdown: stop accepting, answer parked
/// waiters, let requests in flight (commits) finish, then stop libmicrohttpd.
struct HTTPService: Service {
    let server: HTTPServer
    let alertd: Alertd
    let notifier: Systemd.Notifier?
    /// Opened once the server listens: what needs its address (the watchdog) waits for it.
    let serving: Gate
    /// What the `listening` line says besides the address.
    let listening: Logger.Metadata
    let logger: Logger

    func run() async throws {
        try await alertd.start()
        try server.start()
        serving.open()
        var metadata = listening
        metadata["address"] = "\(server.boundAddress)"
        metadata["pending"] = "\(alertd.engine.pendingTotal)"
        logger.info("listening", metadata: metadata)
        notifier?.send("READY=1\nSTATUS=serving on \(server.boundAddress)\nMAINPID=\(getpid())")
        try? await gracefulShutdown()
        notifier?.send("STOPPING=1\nSTATUS=draining")
        logger.info("shutting down", metadata: ["requests": "\(server.activeRequests)"])
        await server.stopAccepting()
        alertd.engine.drain()
        _ = await server.idle(within: 10)
        if server.suspendedRequests > 0 {
            // A commit stuck past the deadline (a stalled disk): answer 503 rather
            // than leave its client hanging, and let the connections resume.
            logger.warning("answering requests still waiting with 503", metadata: ["requests": "\(server.suspendedRequests)"])
            server.answerSuspended()
            // A suspended request is in flight until its answer is sent.
            _ = await server.idle(within: 2)
        }
        if server.activeRequests > 0 {
            logger.warning("closing requests still open", metadata: ["requests": "\(server.activeRequests)"])
        }
        server.stop()
    }
}

/// Runs a service once alertd has started; never, if it stops first.
struct Gated: Service {
    let gate: Gate
    let service: any Service

    init(_ gate: Gate, _ service: any Service) {
        self.gate = gate
        self.service = service
    }

    func run() async throws {
        let opened = await cancelWhenGracefulShutdown { await gate.wait() }
        guard opened, !Task.isCancelled else { return }
        try await service.run()
    }
}

/// Opens once; whoever waits for it goes on then (or when cancelled).
public final class Gate: Sendable {
    private struct State {
        var open = false
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var next: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    public func open() {
        let waiters = state.withLockedValue { state in
            state.open = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// True once open; false when the task was cancelled first.
    public func wait() async -> Bool {
        let id = state.withLockedValue { state in
            state.next += 1
            return state.next
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLockedValue { state -> Bool? in
                    if state.open { return true }
                    if Task.isCancelled { return false }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
        }
    }
}
