import AlertdCallbacks
import AlertdEngine
import AlertdHTTP
import Dispatch
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
/// grace period and are recorded (the store stops after it).
struct DeliveryService: Service {
    let worker: DeliveryWorker

    func run() async throws {
        await cancelWhenGracefulShutdown { await worker.run() }
        await worker.shutdown()
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

/// The HTTP server. On shutdown: stop accepting, answer parked waiters, let
/// requests in flight (commits) finish, then stop libmicrohttpd.
struct HTTPService: Service {
    let server: HTTPServer
    let engine: Engine
    let notifier: Systemd.Notifier?
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        notifier?.send("STOPPING=1\nSTATUS=draining")
        logger.info("shutting down", metadata: ["requests": "\(server.activeRequests)"])
        server.stopAccepting()
        engine.drain()
        let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        while server.activeRequests > 0, DispatchTime.now().uptimeNanoseconds < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if server.suspendedRequests > 0 {
            // A commit stuck past the deadline (a stalled disk): answer 503 rather
            // than leave its client hanging, and let the connections resume.
            logger.warning("answering requests still waiting with 503", metadata: ["requests": "\(server.suspendedRequests)"])
            server.answerSuspended()
            let grace = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
            while server.suspendedRequests > 0, DispatchTime.now().uptimeNanoseconds < grace {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        if server.activeRequests > 0 {
            logger.warning("closing requests still open", metadata: ["requests": "\(server.activeRequests)"])
        }
        server.stop()
    }
}
