public import AlertdCore
public import AlertdEngine
public import AlertdWire
public import Logging
import NIOConcurrencyHelpers
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// The store several alertd instances share: the engine's store port over
/// PostgreSQL (§9).
///
/// - **Changes commit in flushes** (``Flushes``): every change waiting in the
///   instance, of any client, goes into one transaction that holds its
///   clients (transaction-level advisory locks, taken in one order in every
///   instance) and brings each client's cached queue up to date with what
///   other instances committed; nothing else changes those queues until it
///   commits, in this instance or another. One commit for many posts, as the
///   embedded store's group commit does, in five round trips whatever its size.
/// - **Callbacks' outbox**: a decision's event and its deliveries are written
///   in the decision's flush; the instance that wrote them holds them (it
///   attempts them next) under a lease (``Deliveries``).
/// - **Order within a queue** comes from the `alert_order` sequence, drawn in
///   that transaction: never from an instance's clock.
/// - **Other instances learn of a commit** through `NOTIFY alertd`, one per
///   flush, with each changed client's display where it fits:
///   ``Notifications`` listens on a connection of its own, reconnects when it
///   drops, and then asks the engine to look at everything again
///   (``StoreChange/resync``).
/// - **Deadlines fire once**: a client's due deadlines fire in its
///   transaction, after the lock, on what is committed: an instance that comes
///   second finds them fired.
/// - Counts that bound posters (`max_pending_total`, `max_clients`) and the
///   next deadline are read every second, not per request: across instances
///   those bounds hold to within a second's posts.
///
/// A `Service`: its `run()` runs the connection pool, the listener and the
/// counts until graceful shutdown; put it first in the service group.
public final class PostgresAlertStore: AlertStore, Service {
    let client: Pool
    let url: PostgresURL
    let clock: any WallClock
    let rules: AlertRules
    let logger: Logger
    /// This instance's name in notifications and delivery leases.
    let instance: String
    let settings: NIOLockedValueBox<QueueSettings>
    let flushes: Flushes
    let recorder = Recorder()
    let notifications: Notifications
    let displayReader: DisplayReader
    private let counts = NIOLockedValueBox(Counts())
    /// alertd's tables with their indexes and TOAST, as the last purge measured them.
    private let measuredBytes = NIOLockedValueBox<Int?>(nil)
    private let healthy = Atomic<Bool>(true)
    /// Set as the pool starts running: nothing leases a connection before (postgres-nio warns).
    private let clientRunning = Atomic<Bool>(false)
    /// Set once the schema is current: the counts are read only then.
    private let migrated = Atomic<Bool>(false)
    /// Set while a round of ``fireDeadlines(now:events:completion:)`` runs.
    private let firing = Atomic<Bool>(false)

    struct Counts: Sendable {
        var pending = 0
        var clients = 0
        var nextDeadline: Timestamp?
        var pendingByClient: [String: Int] = [:]
        /// The pending alerts' ``Alert/footprint``s together, and by client.
        var bytes = 0
        var bytesByClient: [String: Int] = [:]
        /// Counts the deadlines this instance noted: a reading that began before
        /// one was noted must not forget it.
        var noted = 0
    }

    /// What one flush cost: its changes, its round trips to the database, its time (nanoseconds).
    public struct FlushCost: Sendable {
        public var changes: Int
        public var roundTrips: Int
        public var nanoseconds: UInt64
    }

    /// - Parameter onFlush: told of each committed flush (for metrics).
    public init(
        url: PostgresURL, poolSize: Int, settings: QueueSettings, rules: AlertRules, clock: any WallClock, logger: Logger,
        onFlush: @escaping @Sendable (FlushCost) -> Void = { _ in }
    ) throws {
        self.url = url
        self.clock = clock
        self.rules = rules
        self.logger = logger
        self.instance = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        self.settings = NIOLockedValueBox(settings)
        var configuration = try url.clientConfiguration()
        configuration.options.maximumConnections = max(1, poolSize)
        // A database that cannot be reached answers 503 soon, not after ten seconds: a
        // connection attempt gives up after 3 s, and so does a request waiting for a connection.
        configuration.options.connectTimeout = .seconds(3)
        var probe = try url.connectionConfiguration()
        probe.options.connectTimeout = .seconds(1)
        client = Pool(configuration: configuration, probe: probe, leaseWait: .seconds(3), logger: logger)
        flushes = Flushes(logger: logger, onFlush: onFlush)
        notifications = Notifications(url: url, instance: instance, logger: logger)
        displayReader = DisplayReader(logger: logger)
        flushes.store = self
        displayReader.store = self
        recorder.store = self
    }

    // MARK: - Service

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask {
                self.clientRunning.store(true, ordering: .releasing)
                await self.client.run()
            }
            group.addTask { await self.notifications.run() }
            group.addTask { await self.refreshCounts() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }

    /// Applies the schema's migrations (under an advisory lock); the versions applied.
    @discardableResult
    public func migrate() async throws -> [Int] {
        while !clientRunning.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        let applied = try await Schema.migrate(client.current, logger: logger)
        migrated.store(true, ordering: .releasing)
        try? await readCounts()
        if !applied.isEmpty { logger.info("schema migrated", metadata: ["versions": "\(applied)"]) }
        return applied
    }

    /// Reads the counts every second (and the next deadline), for the bounds and readiness.
    private func refreshCounts() async {
        while !Task.isCancelled {
            guard migrated.load(ordering: .acquiring) else {
                try? await Task.sleep(for: .milliseconds(50))
                continue
            }
            do {
                try await readCounts()
                healthy.store(true, ordering: .relaxed)
            } catch {
                if healthy.exchange(false, ordering: .relaxed) {
                    logger.error("the database cannot be read", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    func readCounts() async throws {
        let noted = counts.withLockedValue { $0.noted }
        var byClient: [String: Int] = [:]
        var bytesByClient: [String: Int] = [:]
        var pending = 0
        var bytes = 0
        // The footprint as Alert.footprint adds it up, from the stored columns (buttons as
        // their JSON: a few bytes more per button than the budget counts).
        for try await (client, count, size) in try await client.query(
            """
            SELECT client, pg_catalog.count(*), \(Alert.fixedFootprint)::bigint * pg_catalog.count(*) + coalesce(pg_catalog.sum(
                pg_catalog.octet_length(title) + coalesce(pg_catalog.octet_length(message), 0) + coalesce(pg_catalog.octet_length(callback_url), 0)
                + coalesce(pg_catalog.octet_length(metadata), 0) + pg_catalog.octet_length(buttons)), 0)::bigint
            FROM alerts WHERE state IN ('queued', 'displayed') GROUP BY client
            """, logger: logger
        ).decode((String, Int, Int).self) {
            byClient[client] = count
            bytesByClient[client] = size
            pending += count
            bytes += size
        }
        var clients = 0
        for try await count in try await client.query("SELECT pg_catalog.count(*) FROM clients", logger: logger).decode(Int.self) {
            clients = count
        }
        var next: Int64?
        for try await (expiry, dismissal) in try await client.query(
            """
            SELECT (SELECT pg_catalog.min(expires_at) FROM alerts WHERE state IN ('queued', 'displayed')),
                   (SELECT pg_catalog.min(dismiss_at) FROM alerts WHERE state = 'displayed')
            """, logger: logger
        ).decode((Int64?, Int64?).self) {
            next = [expiry, dismissal].compactMap { $0 }.min()
        }
        counts.withLockedValue { counts in
            var read = next.map(Timestamp.init(milliseconds:))
            if counts.noted != noted, let sooner = counts.nextDeadline, read.map({ sooner < $0 }) ?? true { read = sooner }
            counts = Counts(
                pending: pending, clients: clients, nextDeadline: read, pendingByClient: byClient, bytes: bytes,
                bytesByClient: bytesByClient, noted: counts.noted)
        }
    }

    /// What the bounds see outside one client's transaction.
    func elsewhere(of client: String) -> (pending: Int, clients: Int, bytes: Int) {
        counts.withLockedValue { counts in
            let own = counts.pendingByClient[client] ?? 0
            return (
                max(0, counts.pending - own), max(0, counts.clients - (own > 0 ? 1 : 0)),
                max(0, counts.bytes - (counts.bytesByClient[client] ?? 0))
            )
        }
    }

    /// A deadline this instance committed: sooner than the last reading, perhaps.
    func noteDeadline(_ deadline: Timestamp?) {
        guard let deadline else { return }
        counts.withLockedValue { counts in
            counts.noted &+= 1
            if counts.nextDeadline.map({ deadline < $0 }) ?? true { counts.nextDeadline = deadline }
        }
    }

    // MARK: - Changing queues

    public func transact<Value: Sendable>(
        client: String, now: Timestamp, idempotencyKey: String?,
        _ body: @escaping @Sendable (inout AlertBoard, any IdempotencyKeys) throws(EngineError) -> Mutation<Value>,
        completion: @escaping @Sendable (Result<Committed<Value>, EngineError>) -> Void
    ) {
        flushes.enqueue(Flushes.Operation(client: client, now: now, idempotencyKey: idempotencyKey, body: body, completion: completion))
    }

    /// One round at a time: while a round runs, the engine is told to look again
    /// in ``recheck`` (the deadlines it fires are committed later, and the next
    /// deadline is read once they are); a round that fails leaves them due, and
    /// the next round fires them.
    public func fireDeadlines(
        now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent],
        completion: @escaping @Sendable (Result<Committed<Void>, EngineError>) -> Void
    ) {
        let recheck = now.adding(milliseconds: Self.recheckMilliseconds)
        counts.withLockedValue { counts in
            if let next = counts.nextDeadline, next < recheck { counts.nextDeadline = recheck }
        }
        guard firing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        Task {
            defer { firing.store(false, ordering: .releasing) }
            do {
                // The clients with a deadline due; each fires in its own transaction, on what is committed.
                var due: [String] = []
                for try await client in try await client.query(
                    """
                    SELECT DISTINCT client FROM alerts
                    WHERE (state IN ('queued', 'displayed') AND expires_at <= \(now.milliseconds))
                       OR (state = 'displayed' AND dismiss_at <= \(now.milliseconds))
                    LIMIT 1000
                    """, logger: logger
                ).decode(String.self) {
                    due.append(client)
                }
                await withDiscardingTaskGroup { group in
                    for client in due {
                        group.addTask {
                            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                                self.flushes.enqueue(
                                    Flushes.Operation(client: client, now: now, firing: events) { result in
                                        completion(result)
                                        done.resume()
                                    })
                            }
                        }
                    }
                }
                try await readCounts()
            } catch {
                logger.warning("due deadlines not read", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// How soon the engine looks at deadlines again while a round fires them.
    static let recheckMilliseconds: Int64 = 250

    public var nextDeadline: Timestamp? { counts.withLockedValue { $0.nextDeadline } }

    /// New settings apply from each client's next transaction (its board is
    /// built with them); a queue whose policy changed is reordered at once, in a
    /// transaction of its own, and its display change reported like any other.
    public func reconfigure(
        _ settings: QueueSettings, now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent],
        completion: @escaping @Sendable (Result<Committed<Void>, EngineError>) -> Void
    ) {
        let old = self.settings.withLockedValue { old in
            defer { old = settings }
            return old
        }
        Task {
            do {
                for client in try await strings("SELECT id FROM clients ORDER BY id") where old[client].policy != settings[client].policy {
                    flushes.enqueue(Flushes.Operation(client: client, now: now, firing: events, completion: completion, fire: false))
                }
            } catch {
                logger.warning("queues not reordered for their new policy", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    // MARK: - Reading

    public func alert(_ id: AlertID, completion: @escaping @Sendable (Result<PositionedAlert?, EngineError>) -> Void) {
        read(completion) { [self] in
            guard let alert = try await one("SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE id = \(id.description)") else {
                return nil
            }
            guard alert.isPending else { return PositionedAlert(alert, position: nil) }
            return PositionedAlert(alert, position: try await position(of: alert))
        }
    }

    /// 0 displayed; else 1 + the queued alerts ahead in the client's policy's order.
    private func position(of alert: Alert) async throws -> Int {
        if alert.state == .displayed { return 0 }
        let stack = policy(of: alert.client) == .stack
        let query: PostgresQuery =
            stack
            ? """
            SELECT pg_catalog.count(*) FROM alerts WHERE client = \(alert.client) AND state = 'queued'
              AND (priority > \(alert.priority) OR (priority = \(alert.priority) AND seq > \(alert.sequence)))
            """
            : """
            SELECT pg_catalog.count(*) FROM alerts WHERE client = \(alert.client) AND state = 'queued'
              AND (priority > \(alert.priority) OR (priority = \(alert.priority) AND seq < \(alert.sequence)))
            """
        var ahead = 0
        for try await count in try await client.query(query, logger: logger).decode(Int.self) { ahead = count }
        var displayed = 0
        for try await count in try await client.query(
            "SELECT pg_catalog.count(*) FROM alerts WHERE client = \(alert.client) AND state = 'displayed'", logger: logger
        ).decode(Int.self) {
            displayed = count
        }
        return ahead + displayed
    }

    public func pending(on client: String, completion: @escaping @Sendable (Result<[PositionedAlert], EngineError>) -> Void) {
        read(completion) { [self] in
            let alerts = try await all(
                "SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = \(client) AND state IN ('queued', 'displayed')")
            var board = AlertBoard(settings: settings.withLockedValue { $0 }, rules: rules)
            _ = board.restore(clients: [client], pending: alerts, now: clock.now())
            return board.pending(on: client).enumerated().map { PositionedAlert($0.element, position: $0.offset) }
        }
    }

    public func policy(of client: String) -> QueuePolicy {
        settings.withLockedValue { $0[client].policy }
    }

    public func displays(
        of clients: [String]?, completion: @escaping @Sendable (Result<[(client: String, alert: Alert?)], EngineError>) -> Void
    ) {
        read(completion) { [self] in
            let names: [String]
            if let clients {
                names = clients
            } else {
                names =
                    []
                    + (try await strings("SELECT id FROM clients ORDER BY id"))
            }
            guard !names.isEmpty else { return [] }
            var shown: [String: Alert] = [:]
            for alert in try await all(
                "SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = ANY(\(names)) AND state = 'displayed'")
            {
                shown[alert.client] = alert
            }
            return names.map { (client: $0, alert: shown[$0]) }
        }
    }

    /// Batched with the other reads waiting (``DisplayReader``): one statement for all.
    public func refreshDisplays(
        _ known: [(client: String, version: Int64?)], completion: @escaping @Sendable (Result<[VersionedDisplay], EngineError>) -> Void
    ) {
        guard !known.isEmpty else { return completion(.success([])) }
        displayReader.read(known, completion: completion)
    }

    public func clients(
        after: String?, limit: Int, where include: @escaping @Sendable (String) -> Bool,
        completion: @escaping @Sendable (Result<(page: [(client: String, pending: Int)], more: Bool), EngineError>) -> Void
    ) {
        read(completion) { [self] in
            var page: [(client: String, pending: Int)] = []
            var last = after ?? ""
            // In chunks, until the page is full of clients the token may see.
            while true {
                var chunk: [(String, Int)] = []
                for try await row in try await client.query(
                    """
                    SELECT c.id, (SELECT pg_catalog.count(*) FROM alerts a WHERE a.client = c.id AND a.state IN ('queued', 'displayed'))
                    FROM clients c WHERE c.id > \(last) ORDER BY c.id LIMIT 500
                    """, logger: logger
                ).decode((String, Int).self) {
                    chunk.append(row)
                }
                for (name, pending) in chunk where include(name) {
                    if page.count == limit { return (page, true) }
                    page.append((name, pending))
                }
                guard chunk.count == 500, let next = chunk.last?.0 else { return (page, false) }
                last = next
            }
        }
    }

    public func decided(
        on client: String, states: Set<AlertState>, before: AlertID?, limit: Int,
        completion: @escaping @Sendable (Result<[Alert], EngineError>) -> Void
    ) {
        let wanted = states.filter(\.isTerminal).map(\.rawValue).sorted()
        guard !wanted.isEmpty, limit > 0 else { return completion(.success([])) }
        read(completion) { [self] in
            if let before {
                return try await all(
                    """
                    SELECT \(unescaped: AlertRow.columns) FROM alerts
                    WHERE client = \(client) AND decided_at IS NOT NULL AND state = ANY(\(wanted)) AND id < \(before.description)
                    ORDER BY id DESC LIMIT \(limit)
                    """)
            }
            return try await all(
                """
                SELECT \(unescaped: AlertRow.columns) FROM alerts
                WHERE client = \(client) AND decided_at IS NOT NULL AND state = ANY(\(wanted))
                ORDER BY id DESC LIMIT \(limit)
                """)
        }
    }

    public var pendingTotal: Int { counts.withLockedValue { $0.pending } }
    public var storeBytes: Int? { measuredBytes.withLockedValue { $0 } }

    // MARK: - Webhooks

    public func webhooks() async throws(EngineError) -> [Webhook] {
        do {
            var webhooks: [Webhook] = []
            for try await (id, client, url, secret, created) in try await client.query(
                "SELECT id, client, url, secret, created_at FROM webhooks ORDER BY id", logger: logger
            ).decode((String, String, String, String, Int64).self) {
                webhooks.append(
                    Webhook(id: id, client: client, url: url, secret: secret, createdAt: Timestamp(milliseconds: created), source: .api))
            }
            return webhooks
        } catch {
            throw unavailable(error)
        }
    }

    public func saveWebhook(_ webhook: Webhook, completion: @escaping @Sendable (Result<Void, EngineError>) -> Void) {
        write(completion, notify: ["w"]) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO webhooks (id, client, url, secret, created_at)
                VALUES (\(webhook.id), \(webhook.client), \(webhook.url), \(webhook.secret), \(webhook.createdAt.milliseconds))
                ON CONFLICT (client, url) DO NOTHING RETURNING id
                """, logger: self.logger)
            var inserted = false
            for try await _ in rows { inserted = true }
            // Another instance registered the URL at the same moment.
            if !inserted {
                throw EngineError(.webhookExists, "client \(webhook.client) already has a webhook for \(webhook.url)")
            }
        }
    }

    public func deleteWebhook(id: String, completion: @escaping @Sendable (Result<Void, EngineError>) -> Void) {
        write(completion, notify: ["w"]) { connection in
            try await connection.query("DELETE FROM webhooks WHERE id = \(id)", logger: self.logger)
        }
    }

    // MARK: - Changes made elsewhere

    public func observeChanges(_ handler: @escaping @Sendable (StoreChange) -> Void) {
        notifications.handler.withLockedValue { $0 = handler }
    }

    // MARK: - Upkeep

    public func purge(
        decidedBefore: Timestamp, keepPerClient: Int, keysBefore: Timestamp,
        completion: @escaping @Sendable (Result<[String], EngineError>) -> Void
    ) {
        Task {
            do {
                // Batches of 10 000 alerts, a transaction each, until one is short: a busy
                // instance decides more than 10 000 alerts a minute (at most 100 batches a round).
                var batches = 0
                var full = true
                while full, batches < 100 {
                    batches += 1
                    full = try await purgeBatch(decidedBefore: decidedBefore, keepPerClient: keepPerClient) == 10_000
                }
                let forgotten = try await client.withTransaction(logger: logger) { [logger] connection -> [String] in
                    try await connection.query("DELETE FROM idempotency_keys WHERE created_at < \(keysBefore.milliseconds)", logger: logger)
                    // Clients with nothing left: forgotten, unless one is in a transaction now.
                    var forgotten: [String] = []
                    for try await id in try await connection.query(
                        """
                        DELETE FROM clients c WHERE NOT EXISTS (SELECT 1 FROM alerts a WHERE a.client = c.id)
                        AND pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(c.id, 0::int8)) RETURNING c.id
                        """, logger: logger
                    ).decode(String.self) {
                        forgotten.append(id)
                    }
                    return forgotten
                }
                await measureSize()
                completion(.success(forgotten))
            } catch {
                completion(.failure(unavailable(error)))
            }
        }
    }

    /// Deletes up to 10 000 terminal alerts past retention — decided before `decidedBefore`,
    /// or beyond their client's newest `keepPerClient` (by id) — with their events,
    /// deliveries and attempts, in one transaction; how many.
    private func purgeBatch(decidedBefore: Timestamp, keepPerClient: Int) async throws -> Int {
        try await client.withTransaction(logger: logger) { [logger] connection -> Int in
            // An alert with a delivery still pending stays until it is settled. The index of
            // decided alerts by (client, id) walks keepPerClient entries per client to the
            // first one that goes.
            var purged: [String] = []
            for try await id in try await connection.query(
                """
                SELECT id FROM (
                    SELECT id FROM alerts WHERE decided_at IS NOT NULL AND decided_at < \(decidedBefore.milliseconds)
                    UNION
                    SELECT a.id FROM clients c
                    CROSS JOIN LATERAL (
                        SELECT b.id FROM alerts b WHERE b.client = c.id AND b.decided_at IS NOT NULL
                        ORDER BY b.id DESC OFFSET \(keepPerClient) LIMIT 1) cut
                    JOIN alerts a ON a.client = c.id AND a.decided_at IS NOT NULL AND a.id <= cut.id
                ) p
                WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.alert_id = p.id AND d.state = 'pending')
                LIMIT 10000
                """, logger: logger
            ).decode(String.self) {
                purged.append(id)
            }
            guard !purged.isEmpty else { return 0 }
            try await connection.query(
                "DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE alert_id = ANY(\(purged)))",
                logger: logger)
            try await connection.query("DELETE FROM deliveries WHERE alert_id = ANY(\(purged))", logger: logger)
            try await connection.query("DELETE FROM events WHERE alert_id = ANY(\(purged))", logger: logger)
            try await connection.query("DELETE FROM alerts WHERE id = ANY(\(purged))", logger: logger)
            return purged.count
        }
    }

    /// Reads the size of alertd's tables (indexes and TOAST included) for `/metrics`.
    private func measureSize() async {
        do {
            for try await bytes in try await client.query(
                """
                SELECT coalesce(pg_catalog.sum(pg_catalog.pg_total_relation_size(c.oid)), 0)::bigint FROM pg_catalog.pg_class c
                WHERE c.relkind = 'r'
                  AND c.relnamespace = (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = pg_catalog.current_schema())
                """, logger: logger
            ).decode(Int.self) {
                measuredBytes.withLockedValue { $0 = bytes }
            }
        } catch {
            logger.debug("the store's size was not read", metadata: ["error": "\(error)"])
        }
    }

    public func checkHealth() async -> StoreHealth {
        do {
            try await readCounts()
            let wasHealthy = healthy.exchange(true, ordering: .relaxed)
            return wasHealthy ? .writable : .recovered
        } catch {
            healthy.store(false, ordering: .relaxed)
            return .notWritable
        }
    }

    public var isHealthy: Bool { healthy.load(ordering: .relaxed) }

    // MARK: - Helpers

    /// The engine's error for a database that failed: 503 with `Retry-After`; the cause goes to the log.
    func unavailable(_ error: any Error) -> EngineError {
        if let error = error as? EngineError { return error }
        if let error = error as? PostgresTransactionError, let cause = error.closureError as? EngineError { return cause }
        if let state = Self.requestFault(error) {
            // The database refused this request's data: the request's fault, not the store's
            // health (readiness stays; the balancer keeps the instance).
            logger.warning("the database refused a change", metadata: ["sqlstate": "\(state)", "error": "\(String(reflecting: error))"])
            return EngineError(
                .unavailable, "the database refused this change (SQLSTATE \(state); alertd's log says why); nothing was changed",
                retryAfter: EngineError.storeRetrySeconds)
        }
        healthy.store(false, ordering: .relaxed)
        logger.error("the database failed a request", metadata: ["error": "\(String(reflecting: error))"])
        return EngineError(
            .unavailable, "the database cannot be reached now (alertd's log says why); nothing was changed, retry later",
            retryAfter: EngineError.storeRetrySeconds)
    }

    /// The SQLSTATE of an error that is the request's data's fault, not the database's: a
    /// data exception (class 22), an integrity constraint (23), a program limit such as an
    /// index row too large (54). Nil for anything else.
    static func requestFault(_ error: any Error) -> String? {
        var error = error
        if let transaction = error as? PostgresTransactionError, let cause = transaction.closureError { error = cause }
        guard let psql = error as? PSQLError, let state = psql.serverInfo?[.sqlState] else { return nil }
        return ["22", "23", "54"].contains(String(state.prefix(2))) ? state : nil
    }

    private func read<T: Sendable>(
        _ completion: @escaping @Sendable (Result<T, EngineError>) -> Void, _ body: @escaping @Sendable () async throws -> T
    ) {
        Task {
            do {
                completion(.success(try await body()))
            } catch {
                completion(.failure(unavailable(error)))
            }
        }
    }

    private func write(
        _ completion: @escaping @Sendable (Result<Void, EngineError>) -> Void, notify: [String],
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Void
    ) {
        Task {
            do {
                try await client.withTransaction(logger: logger) { [instance, logger] connection in
                    try await body(connection)
                    try await Notifications.send(notify, from: instance, on: connection, logger: logger)
                }
                completion(.success(()))
            } catch {
                completion(.failure(unavailable(error)))
            }
        }
    }

    func one(_ query: PostgresQuery) async throws -> Alert? {
        for try await row in try await client.query(query, logger: logger) { return try AlertRow.alert(row) }
        return nil
    }

    func all(_ query: PostgresQuery) async throws -> [Alert] {
        var alerts: [Alert] = []
        for try await row in try await client.query(query, logger: logger) { alerts.append(try AlertRow.alert(row)) }
        return alerts
    }

    private func strings(_ query: PostgresQuery) async throws -> [String] {
        var values: [String] = []
        for try await value in try await client.query(query, logger: logger).decode(String.self) { values.append(value) }
        return values
    }
}
