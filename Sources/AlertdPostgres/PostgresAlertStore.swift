public import AlertdCore
public import AlertdEngine
public import AlertdReceipts
public import AlertdWire
public import Logging
import NIOConcurrencyHelpers
import PostgresNIO
public import ServiceLifecycle
import Synchronization

// Over 400 lines on purpose: the store's making, its services and the transaction path that
// hands changes to the flushes share its private state; reads, deliveries, webhooks, push,
// receipts and upkeep are extensions in files of their own.

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
public final class PostgresAlertStore: AlertStore, Service, ReportsParts {
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
    /// Work the store's calls start and do not wait for (reads and writes answered
    /// through completions, flushes, deadline rounds), run by ``run()``.
    let jobs = Jobs()
    let notifications: Notifications
    let presence: Presence
    /// Why an alert with a quorum above 1 is refused now (an instance without quorum
    /// support serves this database), as last read; nil: it is not.
    let quorumBlockers = NIOLockedValueBox<String?>(nil)
    let displayReader: DisplayReader
    let counts = NIOLockedValueBox(Counts())
    /// alertd's tables with their indexes and TOAST, as the last purge measured them.
    let measuredBytes = NIOLockedValueBox<Int?>(nil)
    /// The terminal alerts' bytes (their `size`s), as the last purge measured them.
    let measuredRetained = NIOLockedValueBox<Int?>(nil)
    /// The key every instance signs receipts with (SPEC §14: `receipts.key_file`, the same file on each).
    let receiptKey: ReceiptSigningKey
    /// The receipts kept and the chain's head, as last read (every second, with the counts).
    let measuredReceipts = NIOLockedValueBox<ReceiptTotals?>(nil)
    let healthy = Atomic<Bool>(true)
    /// Set once the schema is current: the counts are read only then.
    let migrated = Atomic<Bool>(false)
    /// The parts of ``run()`` running (``partsRunning``).
    private let parts = NIOLockedValueBox<Set<String>>([])
    /// Set while a round of ``fireDeadlines(now:events:)`` runs.
    let firing = Atomic<Bool>(false)

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

    /// - Parameters:
    ///   - receiptKey: the key receipts are signed with; every instance of one database must
    ///     be given the same (SPEC §14).
    ///   - onFlush: told of each committed flush (for metrics).
    public init(
        url: PostgresURL, poolSize: Int, settings: QueueSettings, rules: AlertRules, clock: any WallClock, logger: Logger,
        receiptKey: ReceiptSigningKey, onFlush: @escaping @Sendable (FlushCost) -> Void = { _ in }
    ) throws {
        self.receiptKey = receiptKey
        self.url = url
        self.clock = clock
        self.rules = rules
        self.logger = logger
        self.instance = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        self.settings = NIOLockedValueBox(settings)
        // Every connection names its instance (pg_stat_activity): older versions' name none.
        var configuration = try url.clientConfiguration(applicationName: "alertd/\(instance)")
        configuration.options.maximumConnections = max(1, poolSize)
        // A database that cannot be reached answers 503 soon, not after ten seconds: a
        // connection attempt gives up after 3 s, and so does a request waiting for a connection.
        configuration.options.connectTimeout = .seconds(3)
        var probe = try url.connectionConfiguration(applicationName: "alertd/\(instance)")
        probe.options.connectTimeout = .seconds(1)
        client = Pool(configuration: configuration, probe: probe, leaseWait: .seconds(3), logger: logger)
        flushes = Flushes(logger: logger, onFlush: onFlush)
        notifications = Notifications(url: url, instance: instance, logger: logger)
        presence = Presence(url: url, instance: instance, logger: logger)
        displayReader = DisplayReader(logger: logger)
        flushes.store = self
        displayReader.store = self
        recorder.store = self
    }

    // MARK: - Service

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.part("pool") { await self.client.run() } }
            group.addTask { await self.part("notifications") { await self.notifications.run() } }
            group.addTask { await self.part("presence") { await self.presence.run { self.migrated.load(ordering: .acquiring) } } }
            group.addTask { await self.part("counts") { await self.refreshCounts() } }
            // Until a graceful shutdown (or cancellation), and then until the work started has
            // ended, while the connections are still there for it.
            await part("jobs") { await jobs.run() }
            group.cancelAll()
        }
    }

    /// Runs one part of ``run()``, named in ``partsRunning`` until it ends.
    private func part(_ name: String, _ body: () async -> Void) async {
        parts.withLockedValue { _ = $0.insert(name) }
        await body()
        parts.withLockedValue { _ = $0.remove(name) }
    }

    /// The parts of ``run()`` not ended, the jobs' among them: what a shutdown that hangs waits for.
    public var partsRunning: [String] {
        let counts = jobs.counts
        return parts.withLockedValue { $0.sorted() }.map { $0 == "jobs" ? "jobs (\(counts.running) running, \(counts.queued) queued)" : $0 }
    }

    /// Applies the schema's migrations (under an advisory lock); the versions applied.
    @discardableResult
    public func migrate() async throws -> [Int] {
        try await client.untilRunning()
        let applied = try await Schema.migrate(client.current, logger: logger)
        try await notifications.loadKey(client.current, now: clock.now().milliseconds, logger: logger)
        try? await warnOfPublicConnect()
        migrated.store(true, ordering: .releasing)
        try? await readCounts()
        if !applied.isEmpty { logger.info("schema migrated", metadata: ["versions": "\(applied)"]) }
        return applied
    }

    /// Warns when every role may connect (PostgreSQL's default for a new database): any of
    /// them may LISTEN and NOTIFY on alertd's channel (SPEC §9). Notifications are sealed, so
    /// that is no way in, but a database only alertd's role reaches is the one to run.
    private func warnOfPublicConnect() async throws {
        for try await (open, name) in try await client.query(
            """
            SELECT pg_catalog.has_database_privilege('public', pg_catalog.current_database(), 'CONNECT'),
                   pg_catalog.current_database()::text
            """, logger: logger
        ).decode((Bool, String).self) where open {
            logger.warning(
                "every role may connect to database \(name) (PUBLIC holds CONNECT): any of them can listen and send on alertd's notification channel. alertd seals its notifications and drops any it did not seal; still, revoke it: REVOKE CONNECT ON DATABASE \"\(name)\" FROM PUBLIC, then GRANT CONNECT to the roles that need it (docs/high-availability.md)"
            )
        }
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
        // their JSON: a few bytes more per button than the budget counts), and the rendered
        // copy each is counted with, as the board counts it (its `size`).
        for try await (client, count, size) in try await client.query(
            """
            SELECT client, pg_catalog.count(*), \(Alert.fixedFootprint)::bigint * pg_catalog.count(*) + coalesce(pg_catalog.sum(
                pg_catalog.octet_length(title) + coalesce(pg_catalog.octet_length(message), 0) + coalesce(pg_catalog.octet_length(callback_url), 0)
                + coalesce(pg_catalog.octet_length(metadata), 0) + pg_catalog.octet_length(buttons)
                + \(unescaped: Self.sizeOf)), 0)::bigint
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
        for try await (expiry, dismissal, step, escalatedDismissal) in try await client.query(
            """
            SELECT (SELECT pg_catalog.min(expires_at) FROM alerts WHERE state IN ('queued', 'displayed')),
                   (SELECT pg_catalog.min(dismiss_at) FROM alerts WHERE state = 'displayed'),
                   (SELECT pg_catalog.min(escalate_at) FROM alerts WHERE escalate_at IS NOT NULL AND state IN ('queued', 'displayed')),
                   (SELECT pg_catalog.min(x.dismiss_at) FROM escalations x JOIN alerts a ON a.id = x.alert_id
                    WHERE x.dismiss_at IS NOT NULL AND a.state IN ('queued', 'displayed'))
            """, logger: logger
        ).decode((Int64?, Int64?, Int64?, Int64?).self) {
            next = [expiry, dismissal, step, escalatedDismissal].compactMap { $0 }.min()
        }
        await readQuorumBlockers()
        try await readReceiptTotals()
        let sooner = counts.withLockedValue { counts in
            var read = next.map(Timestamp.init(milliseconds:))
            if counts.noted != noted, let sooner = counts.nextDeadline, read.map({ sooner < $0 }) ?? true { read = sooner }
            defer {
                counts = Counts(
                    pending: pending, clients: clients, nextDeadline: read, pendingByClient: byClient, bytes: bytes,
                    bytesByClient: bytesByClient, noted: counts.noted)
            }
            guard let read else { return false }
            return counts.nextDeadline.map { read < $0 } ?? true
        }
        // Another instance's deadline, sooner than this one knew: its loop looks again (should
        // that instance be gone, the deadline still fires on time).
        if sooner { notifications.deliver(.deadline) }
    }

    /// An alert row's `size` (``AlertdCore/Alert/renderedFootprint`` and its events' bodies), in SQL;
    /// for a row written before sizes were (migration 8), its columns' bytes instead.
    static let sizeOf = """
        coalesce(size, 512 + pg_catalog.octet_length(title) + coalesce(pg_catalog.octet_length(message), 0) \
        + pg_catalog.octet_length(buttons) + coalesce(pg_catalog.octet_length(callback_url), 0) \
        + coalesce(pg_catalog.octet_length(metadata), 0) + 2 * coalesce(pg_catalog.octet_length(votes), 0))
        """

    /// Reads whether an instance without quorum support serves this database (SPEC §10,
    /// issue 44 item 7): a live instance registered without `quorum`, or an alertd older
    /// than the registry, which registers nothing and is seen by its `LISTEN "alertd"`
    /// connection: a session of alertd's role, on this database, that names no instance
    /// (this version's connections are `alertd/<instance>`).
    func readQuorumBlockers() async {
        do {
            var blockers: [String] = []
            for try await (who, version) in try await client.query(
                """
                SELECT 'instance ' || i.id, 'alertd ' || i.version FROM instances i
                WHERE \(unescaped: Presence.isLive("i")) AND NOT (' ' || i.capabilities || ' ') LIKE '% quorum %'
                UNION ALL
                SELECT 'the alertd listening from ' || coalesce(pg_catalog.host(a.client_addr), 'a local socket') || ' (pid ' || a.pid || ')',
                    'a version older than 0.1.0'
                FROM pg_catalog.pg_stat_activity a
                WHERE a.datname = pg_catalog.current_database() AND a.usename = current_user
                  AND a.query LIKE 'LISTEN "\(unescaped: Notifications.channel)"%' AND a.application_name NOT LIKE 'alertd/%'
                """, logger: logger
            ).decode((String, String).self) {
                blockers.append("\(who) (\(version))")
            }
            let reason =
                blockers.isEmpty
                ? nil
                : "an alert with a quorum above 1 is refused while an instance without quorum support serves this database: "
                    + blockers.joined(separator: ", ")
                    + "; it would take one vote as the answer. Post it again once every instance runs alertd 0.1.0 or later "
                    + "(docs/high-availability.md, rolling upgrades)"
            quorumBlockers.withLockedValue { $0 = reason }
        } catch {
            logger.debug("the instances serving were not read", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    public var quorumRefusal: String? { quorumBlockers.withLockedValue { $0 } }

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
        client: String, others: [String], now: Timestamp, idempotencyKey: String?, readingWebhooks: Bool,
        _ body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>
    ) async throws(EngineError) -> Committed<Value> {
        // Resolved when the flush that takes it commits (or fails).
        let reply = Reply<Result<Committed<Value>, EngineError>>()
        flushes.enqueue(
            Flushes.Operation(
                client: client, others: others, now: now, idempotencyKey: idempotencyKey, readingWebhooks: readingWebhooks, body: body,
                completion: reply.resolve))
        return try await reply.value().get()
    }

    /// One round at a time: a round asked for while one runs returns at once with nothing
    /// (the engine looks again; the deadlines the running round fires read as due until it
    /// committed them, so ``nextDeadline`` says ``recheckMilliseconds`` later meanwhile, and
    /// the next deadline is read once they are); a round that fails leaves them due, and
    /// the next round fires them.
    public func fireDeadlines(
        now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent]
    ) async -> [Result<Committed<Void>, EngineError>] {
        let recheck = now.adding(milliseconds: Self.recheckMilliseconds)
        counts.withLockedValue { counts in
            if let next = counts.nextDeadline, next < recheck { counts.nextDeadline = recheck }
        }
        guard firing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return [] }
        defer { firing.store(false, ordering: .releasing) }
        var results: [Result<Committed<Void>, EngineError>] = []
        do {
            // The clients with a deadline due; each fires in its own transaction, on what is
            // committed, with the clients its due alerts are also pending on or escalate to
            // (SPEC §12): an alert pending on several is decided or escalated holding them all.
            var due: [String: (others: Set<String>, steps: Int)] = [:]
            for try await (client, escalation, escalateAt, escalated) in try await client.query(
                """
                SELECT d.client, d.escalation, d.escalate_at,
                    (SELECT pg_catalog.array_agg(e.client ORDER BY e.step) FROM escalations e WHERE e.alert_id = d.id)
                FROM (
                    SELECT id, client, escalation, escalate_at FROM alerts
                    WHERE (state IN ('queued', 'displayed') AND expires_at <= \(now.milliseconds))
                       OR (state = 'displayed' AND dismiss_at <= \(now.milliseconds))
                       OR (state IN ('queued', 'displayed') AND escalate_at <= \(now.milliseconds))
                    UNION
                    SELECT a.id, a.client, a.escalation, a.escalate_at FROM escalations x JOIN alerts a ON a.id = x.alert_id
                    WHERE x.dismiss_at <= \(now.milliseconds) AND a.state IN ('queued', 'displayed')
                    LIMIT 1000
                ) d
                """, logger: logger
            ).decode((String, String?, Int64?, [String]?).self) {
                var entry = due[client] ?? ([], 0)
                entry.others.formUnion(escalated ?? [])
                if let escalateAt, escalateAt <= now.milliseconds, let escalation,
                    let steps = try? EscalationStep.steps(from: JSONParser.parse(Array(escalation.utf8))),
                    steps.indices.contains(escalated?.count ?? 0)
                {
                    entry.others.insert(steps[escalated?.count ?? 0].to)
                    entry.steps += 1
                }
                due[client] = entry
            }
            results = await withTaskGroup(of: Result<Committed<Void>, EngineError>.self) { group in
                for (client, entry) in due {
                    group.addTask {
                        await withCheckedContinuation { fired in
                            self.flushes.enqueue(
                                Flushes.Operation(
                                    client: client, others: entry.others.subtracting([client]).sorted(), sequences: entry.steps + 1,
                                    now: now, firing: events, completion: { fired.resume(returning: $0) }))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            try await readCounts()
        } catch {
            logger.warning("due deadlines not read", metadata: ["error": "\(String(reflecting: error))"])
        }
        return results
    }

    /// How soon the engine looks at deadlines again while a round fires them.
    static let recheckMilliseconds: Int64 = 250

    public var nextDeadline: Timestamp? { counts.withLockedValue { $0.nextDeadline } }

    /// New settings apply from each client's next transaction (its board is
    /// built with them); a queue whose policy changed is reordered at once, in a
    /// transaction of its own, whose display change is returned like any other.
    public func reconfigure(
        _ settings: QueueSettings, now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent]
    ) async -> [Result<Committed<Void>, EngineError>] {
        let old = self.settings.withLockedValue { old in
            defer { old = settings }
            return old
        }
        let clients: [String]
        do {
            clients = try await strings("SELECT id FROM clients ORDER BY id").filter { old[$0].policy != settings[$0].policy }
        } catch {
            logger.warning("queues not reordered for their new policy", metadata: ["error": "\(String(reflecting: error))"])
            return []
        }
        return await withTaskGroup(of: Result<Committed<Void>, EngineError>.self) { group in
            for client in clients {
                group.addTask {
                    await withCheckedContinuation { reordered in
                        self.flushes.enqueue(
                            Flushes.Operation(
                                client: client, now: now, firing: events, completion: { reordered.resume(returning: $0) }, fire: false))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    // MARK: - Errors

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
}
