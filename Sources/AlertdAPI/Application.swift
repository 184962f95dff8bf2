import AlertdCallbacks
import AlertdCore
import AlertdDelivery
import AlertdHTTP
import AlertdStore
import AlertdWire
import CoreMetrics
import Crypto
import Foundation
import Glibc
public import Logging
import struct NIOConcurrencyHelpers.NIOLockedValueBox
import ServiceLifecycle
import Synchronization

/// Builds alertd from a config and runs it until SIGTERM or SIGINT.
///
/// ```swift
/// Signals.block()                    // first thing in main, before any thread starts
/// try await Application.run(config: config, logger: logger)
/// ```
public enum Application {
    /// - Parameter reload: reads the config again, for SIGHUP; nil: SIGHUP is logged and ignored.
    public static func run(config: Config, logger: Logger, reload: (@Sendable () throws -> Config)? = nil) async throws {
        // A socket from systemd (socket activation) wins over `listen`.
        let inherited = try Systemd.inheritedSocket(logger: logger)
        let listen: HTTPServerConfiguration.Listen
        let host: String
        if let fd = inherited {
            listen = .socket(fd: fd)
            var inheritedAddress = config
            inheritedAddress.listen = HTTPServer.localAddress(of: fd)
            host = (try? inheritedAddress.listenAddress().host) ?? "the inherited socket"
        } else {
            let (name, port) = try config.listenAddress()
            listen = .address(host: name, port: port)
            host = name
        }
        if !Config.isLoopback(host), config.tokens.isEmpty, !config.allowAnonymous {
            let address = inherited == nil ? config.listen : "\(host) (the socket systemd passed)"
            throw ConfigError(
                "refusing to listen on \(address): there are no auth.tokens, so anyone who can reach it could post and answer alerts; add tokens, listen on a loopback address, or set auth.allow_anonymous: true"
            )
        }
        if config.limits.ratePerSecond != nil, config.tokens.isEmpty {
            logger.warning("limits.rate_per_second has no effect: it limits each token, and there are no auth.tokens")
        }
        let tls = try config.tls.map { files in
            let (certificate, key) = try files.read()
            return HTTPServerConfiguration.TLSMaterial(certificatePEM: certificate, keyPEM: key)
        }
        raiseOpenFileLimit(logger: logger)
        let core = try build(config: config, clock: SystemClock(), logger: logger)
        let (committer, service, handler) = (core.committer, core.service, core.handler)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: listen,
                maxConnections: config.limits.maxConnections,
                readTimeoutSeconds: config.limits.readTimeoutSeconds,
                maxBodyBytes: config.limits.maxBodyBytes, maxConnectionsPerAddress: config.limits.maxConnectionsPerIP, tls: tls),
            handler: handler, logger: logger)
        try server.start()
        logger.info(
            "listening",
            metadata: [
                "address": "\(server.boundAddress)", "state_dir": "\(config.stateDir)",
                "durability": "\(config.durability.rawValue)", "pending": "\(core.restoredPending)",
                "scheme": "\(tls == nil ? "http" : "https")",
            ])
        // systemd: ready once listening with the store open; the watchdog pings
        // only while the server answers.
        let notifier = Systemd.Notifier()
        notifier?.send("READY=1\nSTATUS=serving on \(server.boundAddress)\nMAINPID=\(getpid())")
        var watchdog: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let notifier, let interval = Systemd.watchdogInterval() {
            watchdog.append(
                .init(
                    service: WatchdogService(
                        notifier: notifier, interval: interval, address: server.boundAddress, tls: tls != nil,
                        probeToken: server.probeToken, logger: logger)))
        }

        let reloader = reload.map { load in
            Reloader(config: config, listeningHost: host, handler: handler, service: service, logger: logger, load: load)
        }
        let signals = SignalService(logger: logger) { reloader?.reload() ?? logger.warning("SIGHUP ignored: no config to reload") }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: StateLockService(lock: core.lock)),
                    .init(service: StoreService(committer: committer)),
                    .init(service: DeliveryService(worker: core.deliveries)),
                    .init(service: PurgeService(service: service)),
                    .init(service: ReadinessService(readiness: core.readiness)),
                    .init(service: HTTPService(server: server, service: service, notifier: notifier, logger: logger)),
                ] + watchdog + [
                    .init(service: signals, successTerminationBehavior: .gracefullyShutdownGroup)
                ],
                logger: logger))
        try await group.run()
        logger.info("stopped")
    }

    /// Everything but the listening socket and the services: the store opened and
    /// restored, the committer running, the service and its HTTP handler.
    /// The daemon and the in-process tests build alertd through this one function.
    struct Core {
        let store: any AlertStore
        let committer: GroupCommitter
        let service: AlertService
        let deliveries: DeliveryWorker
        let handler: APIHandler
        let restoredPending: Int
        let lock: StateLock
        let readiness: Readiness

        /// Answers waiters, commits what is queued and stops the threads (without HTTP).
        func shutdown() {
            service.drain()
            deliveries.shutdown()
            committer.shutdown()
            service.stopTimers()
            lock.release()
        }
    }

    static func build(
        config: Config, clock: any WallClock, logger: Logger,
        openStore: (Config) throws -> any AlertStore = { try SQLiteStore(directory: $0.stateDir, durability: $0.durability) }
    ) throws -> Core {
        let started = DeadlineTimer.now()
        let lock = try StateLock(directory: config.stateDir)
        let store: any AlertStore
        do {
            store = try openStore(config)
        } catch {
            lock.release()
            throw error
        }
        let stored = try store.load()
        let loaded = DeadlineTimer.now()
        var board = AlertBoard(settings: config.queueSettings, rules: config.alertRules, lastID: stored.lastID)
        let normalized = board.restore(clients: stored.clients, pending: stored.pending, now: clock.now())
        logger.info(
            "restored",
            metadata: [
                "pending": "\(stored.pending.count)", "clients": "\(stored.clients.count)",
                "load_ms": "\((loaded - started) / 1_000_000)", "restore_ms": "\((DeadlineTimer.now() - loaded) / 1_000_000)",
            ])

        let failure = FailureFlag()
        let metrics = AlertdMetrics()
        let committer = GroupCommitter(
            store: store, logger: logger,
            onFailure: { error in
                failure.set("\(error)")
                logger.error(
                    "a commit failed: changes are refused (503) until a commit succeeds again", metadata: ["error": "\(error)"])
            },
            onCommit: { metrics.commitDuration.recordNanoseconds(Int64($0)) })
        committer.start()
        if !normalized.saved.isEmpty {
            // A policy changed since the last run: commit the new displays before serving.
            let done = DispatchSemaphore(value: 0)
            let result = Mutex<Result<Void, any Error>>(.success(()))
            committer.submit(normalized.saved.map { .alert($0) }) { outcome in
                result.withLock { $0 = outcome }
                done.signal()
            }
            done.wait()
            try result.withLock { try $0.get() }
            board.committed(normalized)
        }

        let webhooks = try configWebhooks(config, at: clock.now()) + store.webhooks()
        let deny = try DenyList(config.callbacks.deny)
        // The worker takes the stored pending deliveries before anything can
        // decide an alert (the deadline thread starts with the service), so a
        // new event is never both restored and handed over.
        let pending = try store.pendingDeliveries()
        let deliveries = DeliveryWorker(
            settings: .init(timeout: config.callbacks.timeout, policy: config.callbacks.retryPolicy, deny: deny),
            committer: committer, clock: clock, logger: logger,
            observe: { record, delivery in
                switch record.state {
                case .delivered:
                    metrics.delivery("delivered")
                    let latency = max(0, record.attempt.at.milliseconds - delivery.eventCreatedAt.milliseconds)
                    metrics.deliveryLatency.recordMilliseconds(latency)
                case .pending: metrics.delivery("retry")
                case .failed: metrics.delivery("failed")
                }
            })
        deliveries.start(restoring: pending)
        let service = AlertService(
            board: board, store: store, committer: committer, clock: clock,
            settings: .init(
                maxWaitSeconds: config.limits.maxWaitSeconds, maxWaiters: config.limits.maxWaiters,
                maxWaitersPerToken: config.limits.maxWaitersPerToken,
                retentionSeconds: config.retentionSeconds, signingSecret: config.callbacks.signingSecret),
            failure: failure, webhooks: webhooks, logger: logger, outbox: { deliveries.enqueue($0) }, metrics: metrics)
        service.start()
        let readiness = Readiness(store: store, failure: failure, service: service)
        let rateLimiter = RateLimiter(config.limits)
        let handler = APIHandler(
            service: service, auth: Authenticator(tokens: config.tokens), rateLimiter: rateLimiter,
            hosts: HostPolicy(allowedHosts: config.allowedHosts, tls: config.tls != nil), metrics: metrics,
            metricsNeedToken: config.metricsRequireToken, logger: logger
        ) {
            readiness.isReady()
        }
        return Core(
            store: store, committer: committer, service: service, deliveries: deliveries, handler: handler,
            restoredPending: stored.pending.count,
            lock: lock, readiness: readiness)
    }

    /// The config's webhooks, with ids that stay the same across restarts.
    static func configWebhooks(_ config: Config, at time: Timestamp) -> [Webhook] {
        config.webhooks.map { entry in
            let digest = SHA256.hash(data: Array("\(entry.client)\n\(entry.url)".utf8))
            let hex = digest.prefix(10).map { String(format: "%02x", $0) }.joined()
            return Webhook(
                id: "wh_cfg_" + hex, client: entry.client, url: entry.url, secret: entry.secret, createdAt: time, source: .config)
        }
    }

    static func raiseOpenFileLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            logger.warning("cannot raise the open file limit", metadata: ["errno": "\(errno)"])
        }
    }
}

/// Set while the store fails commits (a full disk, an I/O error): the daemon is
/// not ready and refuses changes until a commit succeeds again and memory has
/// been rebuilt from the store (``AlertService/recover()``).
final class FailureFlag: Sendable {
    private let reason = Mutex<String?>(nil)
    func set(_ text: String) { reason.withLock { $0 = $0 ?? text } }
    func clear() { reason.withLock { $0 = nil } }
    var failure: String? { reason.withLock { $0 } }
}

/// `/readyz`: the store takes writes and the daemon is not shutting down.
/// The store is probed by ``ReadinessService`` off the HTTP threads (a probe
/// waits for the writer); requests read the last result.
final class Readiness: Sendable {
    let store: any AlertStore
    let failure: FailureFlag
    let service: AlertService
    private let writable: Atomic<Bool>

    init(store: any AlertStore, failure: FailureFlag, service: AlertService) {
        self.store = store
        self.failure = failure
        self.service = service
        self.writable = Atomic(store.isWritable())
    }

    func isReady() -> Bool {
        failure.failure == nil && !service.isDraining && writable.load(ordering: .relaxed)
    }

    /// Probes the store now (a real commit); after a failed commit, once one
    /// goes through again, rebuilds memory from the store and takes changes again.
    func refresh() {
        // While commits fail, only room for a real batch counts (a full disk may
        // still take one small row), so memory is not rebuilt just to fail again.
        let failing = failure.failure != nil
        let ok = failing ? store.hasRoom(forBytes: Self.headroomBytes) : store.isWritable()
        writable.store(ok, ordering: .relaxed)
        if ok, failing { service.recover() }
    }

    /// The room a store must show before changes are taken again after a failed commit.
    static let headroomBytes = 1 << 20

    /// Whether a failed commit has changes refused now.
    var isFailing: Bool { failure.failure != nil }
}

/// Probes the store for `/readyz` every two seconds, every half second while
/// commits fail (so writes resume soon after the disk has room again).
struct ReadinessService: Service {
    let readiness: Readiness

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: readiness.isFailing ? .milliseconds(500) : .seconds(2))
                readiness.refresh()
            }
        }
    }
}

/// The group committer: stopped last, after every in-flight change is committed.
struct StoreService: Service {
    let committer: GroupCommitter

    func run() async throws {
        try? await gracefulShutdown()
        committer.shutdown()
    }
}

/// The delivery worker: stopped after the HTTP server (no new decisions) and
/// before the committer (its last attempts are recorded).
struct DeliveryService: Service {
    let worker: DeliveryWorker

    func run() async throws {
        try? await gracefulShutdown()
        worker.shutdown()
    }
}

/// Deletes terminal alerts past `alerts.retention`, once a minute.
struct PurgeService: Service {
    let service: AlertService

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await service.purge()
                try? await Task.sleep(for: .seconds(60))
            }
        }
    }
}

/// The HTTP server. On shutdown: stop accepting, answer parked waiters, let
/// requests in flight (commits) finish, then stop libmicrohttpd.
struct HTTPService: Service {
    let server: HTTPServer
    let service: AlertService
    let notifier: Systemd.Notifier?
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        notifier?.send("STOPPING=1\nSTATUS=draining")
        logger.info("shutting down", metadata: ["requests": "\(server.activeRequests)"])
        server.stopAccepting()
        service.drain()
        let deadline = DeadlineTimer.now() + 10_000_000_000
        while server.activeRequests > 0, DeadlineTimer.now() < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if server.suspendedRequests > 0 {
            // A commit stuck past the deadline (a stalled disk): answer 503 rather
            // than leave its client hanging, and let the connections resume.
            logger.warning("answering requests still waiting with 503", metadata: ["requests": "\(server.suspendedRequests)"])
            server.answerSuspended()
            let grace = DeadlineTimer.now() + 2_000_000_000
            while server.suspendedRequests > 0, DeadlineTimer.now() < grace {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        if server.activeRequests > 0 {
            logger.warning("closing requests still open", metadata: ["requests": "\(server.activeRequests)"])
        }
        server.stop()
        service.stopTimers()
    }
}

/// Releases the state directory once everything else stopped.
struct StateLockService: Service {
    let lock: StateLock

    func run() async throws {
        try? await gracefulShutdown()
        lock.release()
    }
}

/// SIGHUP: re-reads the config file and applies what may change while alertd
/// runs — tokens, rate limits, the config's webhooks, waiter limits,
/// retention and the log level — without touching open connections. A config
/// that does not load is refused with one log line and the running one stays.
/// Keys that only take effect at start are named in the log.
final class Reloader: Sendable {
    private let load: @Sendable () throws -> Config
    private let current: Mutex<Config>
    private let handler: APIHandler
    private let service: AlertService
    private let listeningHost: String
    private let logger: Logger

    init(
        config: Config, listeningHost: String, handler: APIHandler, service: AlertService, logger: Logger,
        load: @escaping @Sendable () throws -> Config
    ) {
        self.current = Mutex(config)
        self.listeningHost = listeningHost
        self.handler = handler
        self.service = service
        self.logger = logger
        self.load = load
    }

    func reload() {
        let new: Config
        do {
            new = try load()
            if !Config.isLoopback(listeningHost), new.tokens.isEmpty, !new.allowAnonymous {
                throw ConfigError("it has no auth.tokens and alertd listens on \(listeningHost): the API would be open to anyone")
            }
        } catch {
            logger.error("config reload refused; the running config stays", metadata: ["error": "\(error)"])
            return
        }
        let old = current.withLock { $0 }
        let keepLimiter = new.limits.ratePerSecond == old.limits.ratePerSecond && new.limits.rateBurst == old.limits.rateBurst
        handler.access.withLockedValue { access in
            access = APIHandler.Access(
                auth: Authenticator(tokens: new.tokens), rateLimiter: keepLimiter ? access.rateLimiter : RateLimiter(new.limits),
                hosts: HostPolicy(allowedHosts: new.allowedHosts, tls: access.hosts.scheme == "https"))
        }
        service.replaceConfigWebhooks(with: Application.configWebhooks(new, at: service.clock.now()))
        service.update(
            maxWaitSeconds: new.limits.maxWaitSeconds, maxWaiters: new.limits.maxWaiters,
            maxWaitersPerToken: new.limits.maxWaitersPerToken, retentionSeconds: new.retentionSeconds)
        if new.queueSettings != old.queueSettings { service.reconfigure(new.queueSettings) }
        LogfmtHandler.level.store(LogfmtHandler.levelCode(new.logLevel), ordering: .relaxed)
        current.withLock { $0 = new }

        var atStart: [String] = []
        if new.listen != old.listen { atStart.append("listen") }
        if new.stateDir != old.stateDir { atStart.append("state_dir") }
        if new.durability != old.durability { atStart.append("durability") }
        if new.limits.maxBodyBytes != old.limits.maxBodyBytes { atStart.append("limits.max_body_bytes") }
        if new.limits.maxConnections != old.limits.maxConnections { atStart.append("limits.max_connections") }
        if new.limits.maxConnectionsPerIP != old.limits.maxConnectionsPerIP { atStart.append("limits.max_connections_per_ip") }
        if new.limits.readTimeoutSeconds != old.limits.readTimeoutSeconds { atStart.append("limits.read_timeout_seconds") }
        if new.alertRules != old.alertRules { atStart.append("alerts") }
        let (a, b) = (new.callbacks, old.callbacks)
        if a.signingSecret != b.signingSecret || a.timeout != b.timeout || a.maxAge != b.maxAge
            || a.retryInitialSeconds != b.retryInitialSeconds || a.retryMaxIntervalSeconds != b.retryMaxIntervalSeconds || a.deny != b.deny
        {
            atStart.append("callbacks")
        }
        if new.metricsRequireToken != old.metricsRequireToken { atStart.append("metrics") }
        var metadata: Logger.Metadata = [
            "tokens": "\(new.tokens.count)", "config_webhooks": "\(new.webhooks.count)", "log_level": "\(new.logLevel)",
        ]
        if !atStart.isEmpty { metadata["changed_at_next_start"] = "\(atStart.joined(separator: ","))" }
        logger.info("config reloaded", metadata: metadata)
    }
}
