import Logging
import PostgresNIO

/// The schema, in numbered migrations. Instances starting together migrate
/// once: each takes a transaction-level advisory lock first, and applies only
/// the migrations `alertd_migrations` does not list. A migration once shipped
/// is never edited (add a new one).
enum Schema {
    /// The advisory lock key migrations serialize on ("alertd" in ASCII).
    static let migrationLock: Int64 = 0x616c_6572_7464

    // Ids compare as bytes (COLLATE "C"): they sort by creation as plain strings, and
    // client ids page in the same order everywhere, whatever the database's locale.
    static let migrations: [(version: Int, name: String, statements: [String])] = [
        (
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
        (
            2, "queue versions: an instance reads only what changed since its copy",
            [
                "ALTER TABLE clients ADD COLUMN version bigint NOT NULL DEFAULT 0",
                "ALTER TABLE alerts ADD COLUMN version bigint NOT NULL DEFAULT 0",
                "CREATE INDEX alerts_by_version ON alerts (client, version)",
            ]
        ),
        (
            3, "what a delivery produced (an Alertmanager silence id)",
            ["ALTER TABLE deliveries ADD COLUMN result text"]
        ),
    ]

    /// Brings the database up to date; returns the versions it applied.
    @discardableResult
    static func migrate(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS alertd_migrations (
                    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            var applied = Set<Int>()
            for try await version in try await connection.query("SELECT version FROM alertd_migrations", logger: logger).decode(Int.self) {
                applied.insert(version)
            }
            var done: [Int] = []
            for migration in migrations where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO alertd_migrations (version, name) VALUES (\(migration.version), \(migration.name))", logger: logger)
                done.append(migration.version)
            }
            return done
        }
    }
}
