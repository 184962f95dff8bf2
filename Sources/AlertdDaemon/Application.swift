public import AlertdAPI
import AlertdAlertmanager
public import AlertdDeliveryWorker
public import AlertdCore
import AlertdDelivery
public import AlertdEngine
import AlertdHTTP
public import AlertdPostgres
import AlertdReceipts
public import AlertdSQLite
import AlertdWire
import CoreMetrics
import Crypto
import Foundation
import Glibc
public import Logging
public import ServiceLifecycle
import UnixSignals

/// alertd assembled from a config: the store opened, the engine, the delivery
/// worker and the API — everything but the listening socket — and the
/// services that run them.
///
/// The daemon (``Application/run(config:logger:reload:)``) and the in-process
/// tests build alertd through ``open(config:clock:logger:openStore:)`` and
/// ``start()`` alike.
public struct Alertd: Sendable {
    /// The store the engine uses: ``sqlite`` or ``postgres``, as the config says.
    public let store: any AlertStore
    /// The embedded store (`store.backend: sqlite`, the default).
    public let sqlite: SQLiteAlertStore?
    /// The store several instances share (`store.backend: postgres`).
    public let postgres: PostgresAlertStore?
    public let engine: Engine
    public let api: API
    public let deliveries: DeliveryWorker
    let metrics: AlertdMetrics
    /// The state directory's lock (the embedded store's alone).
    let lock: StateLock?
    /// Open once ``start()`` has read back what alertd needs: the loops wait for it.
    public let started = Gate()

    /// The long-running parts, in the order a service group starts them and
    /// the reverse of the order it stops them: the store (its writer, or its
    /// connections) and the state lock stop last, after the delivery worker
    /// recorded its last attempts, which is after the deadline loop, purge and
    /// readiness stopped. The loops wait until alertd has started.
    public var services: [any Service] {
        var services: [any Service] = []
        if let lock { services.append(StateLockService(lock: lock)) }
        if let sqlite { services.append(sqlite) }
        if let postgres { services.append(postgres) }
        return services + [
            Gated(started, DeliveryService(worker: deliveries)), Gated(started, DeadlineService(engine: engine)),
            Gated(started, EngineJobsService(engine: engine)),
            Gated(started, PurgeService(engine: engine)), Gated(started, ReadinessService(engine: engine)),
        ]
    }

    /// Opens alertd and starts it (``start()``), for an embedded store.
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

    /// Builds the store, the engine, the delivery worker and the API. With the
    /// embedded store it takes the state directory and reads every pending
    /// alert back: the blocking part of a start, for a thread that may block.
    public static func open(
        config: Config, clock: any WallClock, logger: Logger,
        openStore: (Config) throws -> any PersistentStore = { try SQLiteStore(directory: $0.stateDir, durability: $0.durability) }
    ) throws -> Alertd {
        let started = DispatchTime.now().uptimeNanoseconds
        let metrics = AlertdMetrics()
        metrics.name(clients: config.namedClients)
        let store: any AlertStore
        var lock: StateLock?
        var sqlite: SQLiteAlertStore?
        var postgres: PostgresAlertStore?
        // Receipts' keys (SPEC §14): the stores sign every decision's receipt with the signing
        // key, GET /v1/keys lists them all. SQLite makes its own key in state_dir at the first
        // start when receipts.key_file is not set (after the state directory's lock is taken);
        // PostgreSQL needs the file, the same on every instance.
        func loadReceiptKeys() throws -> (signing: ReceiptSigningKey, keys: ReceiptKeySet) {
            let loaded = try ReceiptKeyFiles.load(config)
            guard let signing = loaded.signing else { throw ReceiptKeyFiles.requiredError(config) }
            if let generated = loaded.generated {
                logger.info("receipts signing key made", metadata: ["file": "\(generated)", "key_id": "\(signing.keyID)"])
            }
            return (signing, loaded.keys)
        }
        let receiptKeys: (signing: ReceiptSigningKey, keys: ReceiptKeySet)
        switch config.store {
        case .sqlite:
            let taken = try StateLock(directory: config.stateDir)
            lock = taken
            do {
                receiptKeys = try loadReceiptKeys()
                let embedded = try SQLiteAlertStore(
                    persistent: try openStore(config), settings: config.queueSettings, rules: config.alertRules, clock: clock,
                    logger: logger, receiptKey: receiptKeys.signing, onCommit: { metrics.commitDuration.recordNanoseconds(Int64($0)) })
                logger.info(
                    "restored",
                    metadata: [
                        "pending": "\(embedded.restoredPending)",
                        "ms": "\((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)",
                    ])
                sqlite = embedded
                store = embedded
            } catch {
                taken.release()
                throw error
            }
        case .postgres(let url, let poolSize):
            receiptKeys = try loadReceiptKeys()
            let shared = try PostgresAlertStore(
                url: url, poolSize: poolSize, settings: config.queueSettings, rules: config.alertRules, clock: clock, logger: logger,
                receiptKey: receiptKeys.signing, onFlush: { metrics.flushed($0) })
            postgres = shared
            store = shared
        }
        do {
            var trusted: [String: DeliveryWorker.TrustedTarget] = [:]
            if let alertmanager = config.alertmanager, let silences = alertmanager.silencesURL {
                trusted[silences] = DeliveryWorker.TrustedTarget(authorization: alertmanager.authorization)
            }
            let deliveries = DeliveryWorker(
                settings: .init(
                    timeout: config.callbacks.timeout, policy: config.callbacks.retryPolicy, deny: try config.callbacks.denyList(),
                    trustedTargets: trusted),
                log: store, clock: clock, logger: logger, observe: metrics.observeAttempt)
            let engine = Engine(
                store: store, clock: clock, rules: config.alertRules,
                settings: .init(
                    maxWaitSeconds: config.limits.maxWaitSeconds, maxWaiters: config.limits.maxWaiters,
                    maxWaitersPerToken: config.limits.maxWaitersPerToken, retentionSeconds: config.retentionSeconds,
                    signingSecret: config.callbacks.signingSecret, alertmanager: config.alertmanager,
                    callbackDeny: try config.callbacks.denyList(), retentionMax: config.retentionMax,
                    maxPendingDeliveriesPerClient: config.callbacks.maxPendingPerClient,
                    retentionMaxBytesPerClient: config.retentionMaxBytesPerClient, retentionMaxBytes: config.retentionMaxBytes,
                    push: config.push, receiptRetentionSeconds: config.receipts.retentionSeconds),
                configWebhooks: configWebhooks(config, at: clock.now()), logger: logger,
                observer: .init(
                    created: { metrics.alertsCreated.increment() }, decided: { metrics.terminal($0.rawValue) },
                    escalated: { metrics.escalated(client: $0, to: $1) }),
                deliver: { deliveries.enqueue($0) }, backlog: { deliveries.backlog(of: $0) },
                lookUp: { host, port in await deliveries.addresses(of: host, port: port, within: Alertd.lookupSeconds) },
                cancel: { deliveries.cancel($0) })
            deliveries.attach(engine)
            let api = API(
                engine: engine, access: access(config, tls: config.tls != nil),
                metrics: metrics.api(engine: engine, deliveries: deliveries),
                metricsNeedToken: config.metricsRequireToken, receiptKeys: receiptKeys.keys, logger: logger)
            return Alertd(
                store: store, sqlite: sqlite, postgres: postgres, engine: engine, api: api, deliveries: deliveries, metrics: metrics,
                lock: lock)
        } catch {
            lock?.release()
            throw error
        }
    }

    /// Reads back what alertd needs before serving — with PostgreSQL, once the
    /// schema is brought up to date — and opens ``started``: the stored pending
    /// deliveries (taken by the worker before anything can decide an alert, so a
    /// new event is never both restored and handed over), the API's webhooks and
    /// every client's displayed alert.
    public func start() async throws {
        if let postgres {
            try await postgres.migrate()
        }
        deliveries.restore(try await store.pendingDeliveries())
        try await engine.start()
        started.open()
    }

    /// How long a post or a webhook registration waits for the name of its callback URL to
    /// resolve before the check of `callbacks.deny` lets it through (the delivery worker
    /// checks it again before each attempt): a slow name server delays that request by this
    /// much at most, on its own task.
    public static let lookupSeconds: Double = 2

    /// Releases the state directory (``services`` do at the end of a run).
    public func releaseStateDirectory() { lock?.release() }

    /// Tokens, rate limits and the anonymous host policy of a config.
    static func access(
        _ config: Config, tls: Bool, keeping limiter: RateLimiter? = nil, concurrency: TokenConcurrency? = nil
    ) -> API.Access {
        let perToken = config.limits.maxRequestsPerToken
        return API.Access(
            auth: Authenticator(tokens: config.tokens),
            rateLimiter: limiter ?? RateLimiter(ratePerSecond: config.limits.ratePerSecond, burst: config.limits.rateBurst),
            hosts: HostPolicy(allowedHosts: config.allowedHosts, tls: tls),
            concurrency: perToken == 0 ? nil : concurrency ?? TokenConcurrency(limit: perToken))
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
            return HTTPServerConfiguration.TLSMaterial(
                certificatePEM: certificate, keyPEM: key,
                priorities: files.priorities ?? HTTPServerConfiguration.TLSMaterial.defaultPriorities)
        }
        logger.info(
            "config", metadata: ["file": "\(config.source ?? "none: built-in defaults (no --config, no \(Config.defaultPath))")"])
        raiseOpenFileLimit(logger: logger)
        let alertd = try Alertd.open(config: config, clock: SystemClock(), logger: logger)
        // The per-address limit is on by default once alertd listens beyond loopback.
        let perAddress = config.limits.connectionsPerIP(listeningOnLoopback: Config.isLoopback(host))
        if config.limits.maxConnectionsPerIP == nil, let perAddress {
            logger.info(
                "connections per client address limited by default: alertd listens beyond loopback",
                metadata: ["max_connections_per_ip": "\(perAddress)"])
        }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: listen,
                maxConnections: config.limits.maxConnections,
                readTimeoutSeconds: config.limits.readTimeoutSeconds,
                firstByteTimeoutSeconds: config.limits.firstByteTimeoutSeconds,
                writeTimeoutSeconds: config.limits.writeTimeoutSeconds,
                maxResponseBytesInFlight: config.limits.maxResponseBytesInFlight,
                maxBodyBytes: config.limits.maxBodyBytes, maxConnectionsPerAddress: perAddress, tls: tls),
            handler: alertd.api, logger: logger)
        // Weakly: the server holds the API, whose metrics hold these; a strong reference
        // here closed that circle, and the whole daemon outlived a failed start.
        alertd.metrics.observeServer { [weak server] in server?.counts }
        // systemd: ready once listening with the store open; the watchdog pings
        // only while the server answers.
        let notifier = Systemd.Notifier()
        let listening: Logger.Metadata = [
            "scheme": "\(tls == nil ? "http" : "https")",
            // The absolute path, whatever the file or --state-dir said: where the store really is.
            "store":
                "\(alertd.sqlite == nil ? config.store.description : "sqlite:\(Config.absolute(config.stateDir))")",
            "durability": "\(alertd.sqlite == nil ? "as the database commits" : config.durability.rawValue)",
            "tokens": "\(config.tokens.isEmpty ? "none (anonymous API, Host and Origin checked)" : "\(config.tokens.count)")",
        ]
        var services = alertd.services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
        services.append(.init(service: Gated(alertd.started, ReadDeadlineSweeper(server: server))))
        // The watchdog probes the bound address, known once the server listens (after
        // alertd started: gated on `started` it read an empty address and never pinged).
        let serving = Gate()
        services.append(
            .init(
                service: HTTPService(
                    server: server, alertd: alertd, notifier: notifier, serving: serving, listening: listening, logger: logger)))
        if let notifier, let interval = Systemd.watchdogInterval() {
            services.append(
                .init(
                    service: Gated(
                        serving,
                        WatchdogService(notifier: notifier, interval: interval, server: server, tls: tls != nil, logger: logger))))
        }
        let reloader = reload.map { load in Reloader(config: config, listeningHost: host, alertd: alertd, logger: logger, load: load) }
        services.append(
            .init(
                service: ReloadService(logger: logger) {
                    if let reloader { await reloader.reload() } else { logger.warning("SIGHUP ignored: no config to reload") }
                }))
        do {
            try await ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            ).run()
        } catch {
            // A failed start (libmicrohttpd refused a TLS priority string) can cancel the
            // delivery service before it ran, and so before it shut its HTTP clients down;
            // freed open, they trap. (Shut down already, they say so in a warning.)
            await alertd.deliveries.shutdown()
            throw error
        }
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
