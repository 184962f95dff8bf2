import Logging
import PostgresNIO

// Over 400 lines on purpose: the migrations are one ordered list, each as it shipped (a
// migration is never edited once released), read top to bottom as the database applies them.

/// The schema, in numbered migrations. Instances starting together migrate
/// once: each takes a transaction-level advisory lock first, and applies only
/// the migrations `alertd_migrations` does not list. A migration once shipped
/// is never edited (add a new one).
enum Schema {
    /// The advisory lock key migrations serialize on ("alertd" in ASCII).
    static let migrationLock: Int64 = 0x616c_6572_7464

    // Ids compare as bytes (COLLATE "C"): they sort by creation as plain strings, and
    // client ids page in the same order everywhere, whatever the database's locale.
    static let migrations: [Migration] = [
        Migration(
            1, "clients, alerts, idempotency keys, webhooks, the outbox",
            [
                """
                CREATE TABLE clients (
                    id text COLLATE "C" PRIMARY KEY,
                    created_at bigint NOT NULL
                )
                """,
                // Order within a queue: a database sequence, never an instance's clock.
                "CREATE SEQUENCE alert_order",
                """
                CREATE TABLE alerts (
                    id text COLLATE "C" PRIMARY KEY,
                    client text COLLATE "C" NOT NULL,
                    seq bigint NOT NULL,
                    state text NOT NULL,
                    priority integer NOT NULL,
                    title text NOT NULL,
                    message text,
                    style text NOT NULL,
                    buttons text NOT NULL,
                    callback_url text,
                    metadata text,
                    created_at bigint NOT NULL,
                    displayed_at bigint,
                    decided_at bigint,
                    expires_at bigint NOT NULL,
                    dismiss_after_ms bigint,
                    dismiss_at bigint,
                    button_index integer,
                    decided_by text
                )
                """,
                "CREATE INDEX alerts_pending ON alerts (client) WHERE state IN ('queued', 'displayed')",
                "CREATE INDEX alerts_expiry ON alerts (expires_at) WHERE state IN ('queued', 'displayed')",
                "CREATE INDEX alerts_dismissal ON alerts (dismiss_at) WHERE state = 'displayed'",
                "CREATE INDEX alerts_decided ON alerts (client, id) WHERE decided_at IS NOT NULL",
                "CREATE INDEX alerts_by_decision ON alerts (decided_at) WHERE decided_at IS NOT NULL",
                """
                CREATE TABLE idempotency_keys (
                    client text NOT NULL,
                    key text NOT NULL,
                    alert_id text NOT NULL,
                    body_sha256 bytea NOT NULL,
                    created_at bigint NOT NULL,
                    PRIMARY KEY (client, key)
                )
                """,
                "CREATE INDEX idempotency_by_age ON idempotency_keys (created_at)",
                """
                CREATE TABLE webhooks (
                    id text PRIMARY KEY,
                    client text NOT NULL,
                    url text NOT NULL,
                    secret text NOT NULL,
                    created_at bigint NOT NULL,
                    UNIQUE (client, url)
                )
                """,
                """
                CREATE TABLE events (
                    id text PRIMARY KEY,
                    alert_id text NOT NULL,
                    client text NOT NULL,
                    type text NOT NULL,
                    created_at bigint NOT NULL,
                    body bytea NOT NULL
                )
                """,
                "CREATE INDEX events_by_alert ON events (alert_id)",
                """
                CREATE TABLE deliveries (
                    id text PRIMARY KEY,
                    event_id text NOT NULL,
                    alert_id text NOT NULL,
                    target text NOT NULL,
                    webhook_id text,
                    secret text NOT NULL,
                    state text NOT NULL,
                    next_attempt_at bigint,
                    lease_until bigint,
                    leased_by text
                )
                """,
                "CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending'",
                "CREATE INDEX deliveries_by_alert ON deliveries (alert_id, id)",
                """
                CREATE TABLE delivery_attempts (
                    delivery_id text NOT NULL,
                    number integer NOT NULL,
                    at bigint NOT NULL,
                    status_code integer,
                    error text,
                    PRIMARY KEY (delivery_id, number)
                )
                """,
            ]
        ),
        Migration(
            2, "queue versions: an instance reads only what changed since its copy",
            [
                "ALTER TABLE clients ADD COLUMN version bigint NOT NULL DEFAULT 0",
                "ALTER TABLE alerts ADD COLUMN version bigint NOT NULL DEFAULT 0",
                "CREATE INDEX alerts_by_version ON alerts (client, version)",
            ]
        ),
        Migration(
            3, "what a delivery produced (an Alertmanager silence id)",
            ["ALTER TABLE deliveries ADD COLUMN result text"]
        ),
        // `votes`: the alert's votes as their JSON array; NULL for none. A row answered before
        // this migration has none: its one choice is read as its vote. Columns with a constant
        // default are added without rewriting the table.
        Migration(
            4, "quorum and votes (SPEC §10)",
            [
                "ALTER TABLE alerts ADD COLUMN quorum integer NOT NULL DEFAULT 1",
                "ALTER TABLE alerts ADD COLUMN votes text",
            ]
        ),
        Migration(
            5, "secrets only alertd's instances read (the notifications' key)",
            [
                // Tables are not readable by PUBLIC; said again for a database whose default
                // privileges grant more. Never grant anything on this table (docs/high-availability.md).
                """
                CREATE TABLE secrets (
                    name text COLLATE "C" PRIMARY KEY,
                    value bytea NOT NULL,
                    created_at bigint NOT NULL
                )
                """,
                "REVOKE ALL ON secrets FROM PUBLIC",
            ]
        ),
        Migration(
            6, "Web Push: subscriptions and answer tokens (SPEC §11)",
            [
                """
                CREATE TABLE push_subscriptions (
                    id text COLLATE "C" PRIMARY KEY,
                    endpoint text NOT NULL UNIQUE,
                    p256dh bytea NOT NULL,
                    auth bytea NOT NULL,
                    clients text NOT NULL,
                    answer boolean NOT NULL,
                    decider text,
                    created_at bigint NOT NULL
                )
                """,
                """
                CREATE TABLE answer_tokens (
                    hash bytea PRIMARY KEY,
                    alert_id text NOT NULL,
                    client text NOT NULL,
                    subscription_id text NOT NULL,
                    decider text,
                    expires_at bigint NOT NULL,
                    used_at bigint,
                    UNIQUE (alert_id, subscription_id)
                )
                """,
                "CREATE INDEX answer_tokens_by_expiry ON answer_tokens (expires_at)",
            ]
        ),
        // NULL for alerts posted before: without a name they bind no vote (SPEC §10).
        Migration(7, "who posted an alert (SPEC §10: the poster cannot approve its own)", ["ALTER TABLE alerts ADD COLUMN posted_by text"]),
        // `size`: the alert as rendered (Alert.renderedFootprint) plus the bodies of the events
        // written with it; what its client's retention by bytes and the displayed alerts'
        // share of limits.max_pending_bytes count. NULL for a row written before: counted
        // from its columns (PostgresAlertStore.sizeOf).
        Migration(
            8, "each alert's size (alerts.retention_max_bytes, limits.max_pending_bytes)", ["ALTER TABLE alerts ADD COLUMN size bigint"]),
        Migration(
            9, "decided alerts by client with their size (the purge by bytes)",
            body: .index(name: "alerts_retained", definition: "ON alerts (client, id) INCLUDE (size) WHERE decided_at IS NOT NULL")),
        // Every instance's row, written at its start (Presence): what it supports, and the key of
        // the session-level advisory lock it holds while it runs. A row whose lock nobody holds is
        // a dead instance: its delivery leases are taken over at once.
        Migration(
            10, "instances: who serves, what each supports, the lock that shows it alive",
            [
                """
                CREATE TABLE instances (
                    id text COLLATE "C" PRIMARY KEY,
                    lock_key integer NOT NULL,
                    version text NOT NULL,
                    capabilities text NOT NULL,
                    started_at bigint NOT NULL
                )
                """
            ]),
        // `fields`: the alert's fields as their JSON array; NULL for none. A choice's comment and
        // values are kept in its vote (`votes`), the result's are its deciding vote's. A column
        // without a default is added without rewriting the table.
        Migration(11, "answers with words: an alert's fields (SPEC §13)", ["ALTER TABLE alerts ADD COLUMN fields text"]),
        // `escalation`: the alert's policy as its JSON array (NULL: none); `escalate_at`: when its
        // next step is due (NULL: none left, or terminal). `escalations`: one row per step
        // taken, the alert's place on that client: written in the transactions of that
        // client (its display there, `dismiss_at` of a buttonless one, `version`: the client's
        // version that wrote it), so that client's queue changes under its own lock while
        // the alert's row is its own client's. Columns without a default: no table rewrite.
        Migration(
            12, "escalation: an alert's policy, its next step, the steps it took (SPEC §12)",
            [
                "ALTER TABLE alerts ADD COLUMN escalation text",
                "ALTER TABLE alerts ADD COLUMN escalate_at bigint",
                """
                CREATE TABLE escalations (
                    alert_id text COLLATE "C" NOT NULL,
                    step integer NOT NULL,
                    client text COLLATE "C" NOT NULL,
                    at bigint NOT NULL,
                    seq bigint NOT NULL,
                    displayed_at bigint,
                    dismiss_at bigint,
                    version bigint NOT NULL DEFAULT 0,
                    PRIMARY KEY (alert_id, step),
                    UNIQUE (alert_id, client)
                )
                """,
                "CREATE INDEX escalations_by_client ON escalations (client, version)",
                "CREATE INDEX escalations_dismissal ON escalations (dismiss_at) WHERE dismiss_at IS NOT NULL",
            ]),
        Migration(
            13, "pending alerts by their next escalation step",
            body: .index(
                name: "alerts_escalation",
                definition: "ON alerts (escalate_at) WHERE escalate_at IS NOT NULL AND state IN ('queued', 'displayed')")),
        // Signed receipts (SPEC §14): one row per decided alert (UNIQUE: one receipt per alert),
        // `seq` its place in the deployment's one chain, `body` the receipt resource (its
        // canonical JSON, signature included), `decided_at` what receipts.retention counts from.
        // `receipt_chain`: one row, the chain's head and what is kept. A flush that decides
        // locks it (`FOR UPDATE`) after its clients' locks and holds it to its commit: every
        // instance appends to the chain in turn, with no gap and no fork (Flushes).
        Migration(
            14, "signed receipts of decisions and the chain's head (SPEC §14)",
            [
                """
                CREATE TABLE receipts (
                    seq bigint PRIMARY KEY,
                    alert_id text COLLATE "C" NOT NULL UNIQUE,
                    client text COLLATE "C" NOT NULL,
                    decided_at bigint NOT NULL,
                    body text NOT NULL
                )
                """,
                """
                CREATE TABLE receipt_chain (
                    id integer PRIMARY KEY CHECK (id = 1),
                    seq bigint NOT NULL,
                    sha256 text NOT NULL,
                    count bigint NOT NULL,
                    bytes bigint NOT NULL
                )
                """,
                "INSERT INTO receipt_chain (id, seq, sha256, count, bytes) VALUES (1, 0, '\(String(repeating: "0", count: 64))', 0, 0)",
            ]),
    ]

    /// The advisory lock (session-level) an index build takes, so that one instance builds it.
    static let indexLock: Int64 = migrationLock + 1

    /// Brings the database up to date; returns the versions it applied.
    ///
    /// Statements run in one transaction under ``migrationLock``, up to the first index
    /// migration not yet applied; that index is built outside any transaction
    /// (``buildIndex(_:on:logger:)``), then the next migrations follow the same way.
    /// Migrations may take longer than the session's `statement_timeout` and wait for
    /// locks beyond its `lock_timeout` (``PostgresURL/sessionParameters``): both are
    /// lifted for them.
    @discardableResult
    static func migrate(_ client: PostgresClient, migrations: [Migration] = migrations, logger: Logger) async throws -> [Int] {
        var done: [Int] = []
        while true {
            let (applied, index) = try await client.withTransaction(logger: logger) { connection -> ([Int], Migration?) in
                try await connection.run("SET LOCAL statement_timeout = 0", logger: logger)
                try await connection.run("SET LOCAL lock_timeout = 0", logger: logger)
                try await connection.run("SELECT pg_catalog.pg_advisory_xact_lock(\(migrationLock))", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS alertd_migrations (
                        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT pg_catalog.now())
                    """, logger: logger)
                let already = try await appliedVersions(connection, logger: logger)
                var applied: [Int] = []
                for migration in migrations where !already.contains(migration.version) {
                    guard case .statements(let statements) = migration.body else { return (applied, migration) }
                    for statement in statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO alertd_migrations (version, name) VALUES (\(migration.version), \(migration.name))", logger: logger)
                    applied.append(migration.version)
                }
                return (applied, nil)
            }
            done += applied
            guard let index else { return done }
            if try await client.withConnection({ try await buildIndex(index, on: $0, logger: logger) }) { done.append(index.version) }
        }
    }

    private static func appliedVersions(_ connection: PostgresConnection, logger: Logger) async throws -> Set<Int> {
        var applied = Set<Int>()
        for try await version in try await connection.query("SELECT version FROM alertd_migrations", logger: logger).decode(Int.self) {
            applied.insert(version)
        }
        return applied
    }

    /// Builds an index migration's index with `CREATE INDEX CONCURRENTLY`, outside any
    /// transaction: the table takes writes all along (a plain `CREATE INDEX` blocks
    /// them until it ends, and on a busy table during a rolling upgrade every instance
    /// still running would stall). One instance builds, under ``indexLock``, tried
    /// without waiting: an instance that waited for the lock in a statement would hold
    /// a snapshot the build itself waits for. The others look every second until the
    /// migration is recorded. A build that was interrupted (a crash, a cancel) leaves
    /// an invalid index under the name, which `IF NOT EXISTS` would take as built: it
    /// is dropped and built again. True when this instance built it.
    static func buildIndex(_ migration: Migration, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        guard case .index(let name, let definition) = migration.body else { return false }
        func recorded() async throws -> Bool {
            try await appliedVersions(connection, logger: logger).contains(migration.version)
        }
        while true {
            if try await recorded() { return false }
            var held = false
            for try await got in try await connection.query(
                "SELECT pg_catalog.pg_try_advisory_lock(\(indexLock))", logger: logger
            ).decode(Bool.self) {
                held = got
            }
            if held { break }
            try await Task.sleep(for: .seconds(1))
        }
        do {
            try await connection.run("SET statement_timeout = 0", logger: logger)
            if try await recorded() {
                try await release(connection, logger: logger)
                return false
            }
            var valid: Bool?
            for try await state in try await connection.query(
                "SELECT i.indisvalid FROM pg_catalog.pg_index i WHERE i.indexrelid = pg_catalog.to_regclass(\(name))", logger: logger
            ).decode(Bool.self) {
                valid = state
            }
            if valid == false {
                logger.warning("an earlier build of index \(name) did not finish: building it again")
                try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(name)"), logger: logger)
            }
            try await connection.query(
                PostgresQuery(unsafeSQL: "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(name) \(definition)"), logger: logger)
            try await connection.query(
                "INSERT INTO alertd_migrations (version, name) VALUES (\(migration.version), \(migration.name)) ON CONFLICT DO NOTHING",
                logger: logger)
            try await release(connection, logger: logger)
            return true
        } catch {
            try? await release(connection, logger: logger)
            throw error
        }
    }

    /// Gives back the index lock and the session's own statement timeout (the
    /// connection goes back to the pool).
    private static func release(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("RESET statement_timeout", logger: logger)
        try await connection.run("SELECT pg_catalog.pg_advisory_unlock(\(indexLock))", logger: logger)
    }
}

/// One step of the schema, applied once.
struct Migration: Sendable {
    let version: Int
    let name: String
    let body: Body

    enum Body: Sendable {
        /// Statements run in the migrations' transaction.
        case statements([String])
        /// One index (`name`, and its definition after the name: `ON table (columns) WHERE …`),
        /// built concurrently, in a migration of its own.
        case index(name: String, definition: String)
    }

    init(_ version: Int, _ name: String, _ statements: [String]) {
        self.init(version, name, body: .statements(statements))
    }

    init(_ version: Int, _ name: String, body: Body) {
        self.version = version
        self.name = name
        self.body = body
    }
}
