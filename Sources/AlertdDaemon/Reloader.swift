import AlertdAPI
import AlertdDeliveryWorker
import AlertdEngine
import Logging
import NIOConcurrencyHelpers
import Synchronization

/// SIGHUP: re-reads the config file and applies what may change while alertd
/// runs — tokens, rate limits, the config's webhooks, client policies and
/// limits, waiter limits, retention, `callbacks.deny` and `callbacks.allow`, and the
/// log level — without touching open
/// connections. A config that does not load is refused with one log line and
/// the running one stays. Keys that only take effect at start are named in the log.
final class Reloader: Sendable {
    private let load: @Sendable () throws -> Config
    private let current: NIOLockedValueBox<Config>
    private let alertd: Alertd
    private let listeningHost: String
    private let logger: Logger

    init(config: Config, listeningHost: String, alertd: Alertd, logger: Logger, load: @escaping @Sendable () throws -> Config) {
        self.current = NIOLockedValueBox(config)
        self.listeningHost = listeningHost
        self.alertd = alertd
        self.logger = logger
        self.load = load
    }

    func reload() async {
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
        let old = current.withLockedValue { $0 }
        let keepLimiter = new.limits.ratePerSecond == old.limits.ratePerSecond && new.limits.rateBurst == old.limits.rateBurst
        alertd.api.updateAccess { access in
            // TLS is as alertd started: a change takes effect at the next start.
            // The requests in flight stay counted unless the bound changed.
            let keepConcurrency = access.concurrency?.limit == new.limits.maxRequestsPerToken
            access = Alertd.access(
                new, tls: access.hosts.scheme == "https", keeping: keepLimiter ? access.rateLimiter : nil,
                concurrency: keepConcurrency ? access.concurrency : nil)
        }
        let engine = alertd.engine
        engine.replaceConfigWebhooks(with: Alertd.configWebhooks(new, at: engine.now()))
        engine.update(
            maxWaitSeconds: new.limits.maxWaitSeconds, maxWaiters: new.limits.maxWaiters,
            maxWaitersPerToken: new.limits.maxWaitersPerToken, retentionSeconds: new.retentionSeconds,
            retentionMax: new.retentionMax, maxPendingDeliveriesPerClient: new.callbacks.maxPendingPerClient,
            retentionMaxBytesPerClient: new.retentionMaxBytesPerClient, retentionMaxBytes: new.retentionMaxBytes)
        alertd.metrics.name(clients: new.namedClients)
        let denyChanged = new.callbacks.deny != old.callbacks.deny || new.callbacks.allow != old.callbacks.allow
        if denyChanged, let deny = try? new.callbacks.denyList() {
            // Checked when the file was read; both the checks at post and the worker's, at once.
            engine.update(callbackDeny: deny)
            alertd.deliveries.update(deny: deny)
        }
        LogfmtHandler.level.store(LogfmtHandler.levelCode(new.logLevel), ordering: .relaxed)
        current.withLockedValue { $0 = new }

        var atStart: [String] = []
        if new.listen != old.listen { atStart.append("listen") }
        if new.stateDir != old.stateDir { atStart.append("state_dir") }
        if new.durability != old.durability { atStart.append("durability") }
        if new.limits.maxBodyBytes != old.limits.maxBodyBytes { atStart.append("limits.max_body_bytes") }
        if new.limits.maxConnections != old.limits.maxConnections { atStart.append("limits.max_connections") }
        if new.limits.maxConnectionsPerIP != old.limits.maxConnectionsPerIP { atStart.append("limits.max_connections_per_ip") }
        if new.limits.readTimeoutSeconds != old.limits.readTimeoutSeconds { atStart.append("limits.read_timeout_seconds") }
        if new.limits.firstByteTimeoutSeconds != old.limits.firstByteTimeoutSeconds {
            atStart.append("limits.first_byte_timeout_seconds")
        }
        if new.limits.writeTimeoutSeconds != old.limits.writeTimeoutSeconds { atStart.append("limits.write_timeout_seconds") }
        if new.limits.maxResponseBytesInFlight != old.limits.maxResponseBytesInFlight {
            atStart.append("limits.max_response_bytes_in_flight")
        }
        if new.alertRules != old.alertRules { atStart.append("alerts") }
        let (a, b) = (new.callbacks, old.callbacks)
        if a.signingSecret != b.signingSecret || a.timeout != b.timeout || a.maxAge != b.maxAge
            || a.retryInitialSeconds != b.retryInitialSeconds || a.retryMaxIntervalSeconds != b.retryMaxIntervalSeconds
        {
            atStart.append("callbacks")
        }
        if new.metricsRequireToken != old.metricsRequireToken { atStart.append("metrics") }
        if new.alertmanager != old.alertmanager { atStart.append("integrations") }
        if new.tls != old.tls { atStart.append("tls") }
        if new.receipts != old.receipts { atStart.append("receipts") }
        var metadata: Logger.Metadata = [
            "tokens": "\(new.tokens.count)", "config_webhooks": "\(new.webhooks.count)", "log_level": "\(new.logLevel)",
        ]
        if denyChanged { metadata["callbacks_deny_allow"] = "applied" }
        if !atStart.isEmpty { metadata["changed_at_next_start"] = "\(atStart.joined(separator: ","))" }
        // Last: a changed policy's reordering waits for its commits (the database's, with
        // PostgreSQL); every other setting is in force by then.
        if new.queueSettings != old.queueSettings { await engine.reconfigure(new.queueSettings) }
        logger.info("config reloaded", metadata: metadata)
    }
}
