public import AlertdAPI
public import AlertdCallbacks
public import AlertdCore
import AlertdDelivery
public import AlertdEngine
import AlertdHTTP
public import AlertdStore
import AlertdWire
import CoreMetrics
import Crypto
import Foundation
import Glibc
public import Logging
public import ServiceLifecycle
import UnixSignals

/// alertd assembled from a config: the store opened and restored, the engine,
/// the delivery worker and the API — everything but the listening socket —
/// and the services that run them.
///
/// The daemon (``Application/run(config:logger:reload:)``) and the in-process
/// tests build alertd through ``build(config:clock:logger:openStore:)`` alike.
public struct Alertd: Sendable {
    public let store: SQLiteAlertStore
    public let engine: Engine
    public let api: API
    public let deliveries: DeliveryWorker
    let metrics: AlertdMetrics
    let lock: StateLock

    /// The long-running parts, in the order a service group starts them and
    /// the reverse of the order it stops them: the state lock and the store
    /// writer stop last, after the delivery worker recorded its last attempts,
    /// which is after the deadline loop, purge and readiness stopped.
    public var services: [any Service] {
        [
            StateLockService(lock: lock), store, DeliveryService(worker: deliveries), DeadlineService(engine: engine),
            PurgeService(engine: engine), ReadinessService(engine: engine),
        ]
    }

    /// Releases the state directory (``services`` do at the end of a run).
    public func releaseStateDirectory() { lock.release() }

    /// Opens the store and builds alertd, then starts it (``start()``).
    ///
    /// - Parameter openStore: the rows under the store (tests wrap SQLite to make commits fail).
    public static func build(
        config: Config, clock: any WallClock, logger: Logger,
        openStore: (Config) throws -> any PersistentStore = { try SQLiteStore(directory: $0.stateDir, durability: $0.durability) }
    ) async throws -> Alertd {
        let alertd = try open(config: config, clock: clock, logger: logger, openStore: openStore)
        do {
            try await alertd.start()
        } catch {
            alertd.releaseStateDirectory()
            throw error
        }
        return alertd
    }

    /// Takes the state directory, opens the store (which reads every pending
    /// alert back) and builds the engine, the delivery worker and the API: the
    /// blocking part of a start, for a thread that may block.
    public static func open(
        config: Config, clock: any WallClock, logger: Logger,
        openStore: (Config) throws -> any PersistentStore = { try SQLiteStore(directory: $0.stateDir, durability: $0.durability) }
    ) throws -> Alertd {
        let started = DispatchTime.now().uptimeNanoseconds
        let lock = try StateLock(directory: config.stateDir)
        do {
            let metrics = AlertdMetrics()
            let store = try SQLiteAlertStore(
                persistent: try openStore(config), settings: config.queueSettings, rules: config.alertRules, clock: clock,
                logger: logger, onCommit: { metrics.commitDuration.recordNanoseconds(Int64($0)) })
            logger.info(
                "restored",
                metadata: [
                    "pending": "\(store.restoredPending)", "ms": "\((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)",
                ])
            let deliveries = DeliveryWorker(
                settings: .init(
                    timeout: config.callbacks.timeout, policy: config.callbacks.retryPolicy, deny: try DenyList(config.callbacks.deny)),
                log: store, clock: clock, logger: logger, observe: metrics.observeAttempt)
            let engine = Engine(
                store: store, clock: clock, rules: config.alertRules,
                settings: .init(
                    maxWaitSeconds: config.limits.maxWaitSeconds, maxWaiters: config.limits.maxWaiters,
                    maxWaitersPerToken: config.limits.maxWaitersPerToken, retentionSeconds: config.retentionSeconds,
                    signingSecret: config.callbacks.signingSecret),
                configWebhooks: configWebhooks(config, at: clock.now()), logger: logger,
                observer: .init(created: { metrics.alertsCreated.increment() }, decided: { metrics.terminal($0.rawValue) }),
                deliver: { deliveries.enqueue($0) })
            let api = API(
                engine: engine, access: access(config, tls: config.tls != nil),
                metrics: metrics.api(engine: engine, deliveries: deliveries),
                metricsNeedToken: config.metricsRequireToken, logger: logger)
            return Alertd(store: store, engine: engine, api: api, deliveries: deliveries, metrics: metrics, lock: lock)
        } catch {
            lock.release()
            throw error
        }
    }

    /// Reads back what runs needs before serving: the stored pending deliveries
    /// (taken by the worker before anything can decide an alert, so a new event
    /// is never both restored and handed over), the API's webhooks and every
    /// client's displayed alert.
    public func start() async throws {
        deliveries.restore(try await store.pendingDeliveries())
        try await engine.start()
    }

    /// Tokens, rate limits and the anonymous host policy of a config.
    static func access(_ config: Config, tls: Bool, keeping limiter: RateLimiter? = nil) -> API.Access {
        API.Access(
            auth: Authenticator(tokens: config.tokens),
            rateLimiter: limiter ?? RateLimiter(ratePerSecond: config.limits.ratePerSecond, burst: config.limits.rateBurst),
            hosts: HostPolicy(allowedHosts: config.allowedHosts, tls: tls))
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
}

/// Runs alertd from a config until SIGTERM or SIGINT.
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
        // The checks `alertd check-config` runs too.
        let check = config.startCheck(listeningHost: inherited == nil ? nil : host)
        for warning in check.warnings { logger.warning("\(warning)") }
        if !check.errors.isEmpty { throw ConfigErrors(errors: check.errors, partial: config) }
        let tls = try config.tls.map { files in
            let (certificate, key) = try files.read()
            return HTTPServerConfiguration.TLSMaterial(certificatePEM: certificate, keyPEM: key)
        }
        logger.info(
            "config", metadata: ["file": "\(config.source ?? "none: built-in defaults (no --config, no \(Config.defaultPath))")"])
        raiseOpenFileLimit(logger: logger)
        let alertd = try await Alertd.build(config: config, clock: SystemClock(), logger: logger)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: listen,
                maxConnections: config.limits.maxConnections,
                readTimeoutSeconds: config.limits.readTimeoutSeconds,
                maxBodyBytes: config.limits.maxBodyBytes, maxConnectionsPerAddress: config.limits.maxConnectionsPerIP, tls: tls),
            handler: alertd.api, logger: logger)
        try server.start()
        logger.info(
            "listening",
            metadata: [
                "address": "\(server.boundAddress)", "scheme": "\(tls == nil ? "http" : "https")",
                "store": "sqlite:\(config.stateDir)", "durability": "\(config.durability.rawValue)",
                "pending": "\(alertd.store.restoredPending)",
                "tokens": "\(config.tokens.isEmpty ? "none (anonymous API, Host and Origin checked)" : "\(config.tokens.count)")",
            ])
        // systemd: ready once listening with the store open; the watchdog pings
        // only while the server answers.
        let notifier = Systemd.Notifier()
        notifier?.send("READY=1\nSTATUS=serving on \(server.boundAddress)\nMAINPID=\(getpid())")
        var services = alertd.services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
        services.append(.init(service: ReadDeadlineSweeper(server: server)))
        services.append(.init(service: HTTPService(server: server, engine: alertd.engine, notifier: notifier, logger: logger)))
        if let notifier, let interval = Systemd.watchdogInterval() {
            services.append(
                .init(
                    service: WatchdogService(
                        notifier: notifier, interval: interval, address: server.boundAddress, tls: tls != nil,
                        probeToken: server.probeToken, logger: logger)))
        }
        let reloader = reload.map { load in Reloader(config: config, listeningHost: host, alertd: alertd, logger: logger, load: load) }
        services.append(
            .init(service: ReloadService(logger: logger) { reloader?.reload() ?? logger.warning("SIGHUP ignored: no config to reload") }))
        try await ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        ).run()
        logger.info("stopped")
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
