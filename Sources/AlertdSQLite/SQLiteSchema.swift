import GRDB

/// The schema, in ordered migrations: a database is brought up to date when it
/// is opened, and a migration once shipped is never edited (add a new one).
extension SQLiteStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: clients, alerts, idempotency keys") { db in
            try db.execute(
                sql: """
                    CREATE TABLE clients (
                        id TEXT PRIMARY KEY NOT NULL,
                        created_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE alerts (
                        id TEXT PRIMARY KEY NOT NULL,
                        client TEXT NOT NULL,
                        state TEXT NOT NULL,
                        priority INTEGER NOT NULL,
                        title TEXT NOT NULL,
                        message TEXT,
                        style TEXT NOT NULL,
                        buttons TEXT NOT NULL,
                        callback_url TEXT,
                        metadata TEXT,
                        created_at INTEGER NOT NULL,
                        displayed_at INTEGER,
                        decided_at INTEGER,
                        expires_at INTEGER NOT NULL,
                        dismiss_after_ms INTEGER,
                        button_index INTEGER,
                        decided_by TEXT
                    ) WITHOUT ROWID;
                    CREATE INDEX alerts_by_client ON alerts(client, id);
                    CREATE INDEX alerts_pending ON alerts(state) WHERE state IN ('queued', 'displayed');
                    CREATE INDEX alerts_by_decision ON alerts(decided_at) WHERE decided_at IS NOT NULL;
                    CREATE TABLE idempotency_keys (
                        client TEXT NOT NULL,
                        key TEXT NOT NULL,
                        alert_id TEXT NOT NULL,
                        body_sha256 BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        PRIMARY KEY (client, key)
                    ) WITHOUT ROWID;
                    CREATE INDEX idempotency_by_age ON idempotency_keys(created_at);
                    """)
        }
        migrator.registerMigration("v2: index decided alerts by client only") { db in
            // Listing by client reads decided alerts only (pending ones are served
            // from memory): a partial index spares every post one index insert.
            try db.execute(
                sql: """
                    DROP INDEX alerts_by_client;
                    CREATE INDEX alerts_decided_by_client ON alerts(client, id) WHERE decided_at IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v3: webhooks") { db in
            try db.execute(
                sql: """
                    CREATE TABLE webhooks (
                        id TEXT PRIMARY KEY NOT NULL,
                        client TEXT NOT NULL,
                        url TEXT NOT NULL,
                        secret TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v4: the callback outbox") { db in
            try db.execute(
                sql: """
                    CREATE TABLE events (
                        id TEXT PRIMARY KEY NOT NULL,
                        alert_id TEXT NOT NULL,
                        client TEXT NOT NULL,
                        type TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        body BLOB NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE deliveries (
                        id TEXT PRIMARY KEY NOT NULL,
                        event_id TEXT NOT NULL,
                        alert_id TEXT NOT NULL,
                        target TEXT NOT NULL,
                        webhook_id TEXT,
                        secret TEXT NOT NULL,
                        state TEXT NOT NULL,
                        next_attempt_at INTEGER
                    ) WITHOUT ROWID;
                    CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'pending';
                    CREATE INDEX deliveries_by_alert ON deliveries(alert_id, id);
                    CREATE TABLE delivery_attempts (
                        delivery_id TEXT NOT NULL,
                        number INTEGER NOT NULL,
                        at INTEGER NOT NULL,
                        status_code INTEGER,
                        error TEXT,
                        PRIMARY KEY (delivery_id, number)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v5: a row the readiness probe rewrites") { db in
            try db.execute(sql: "CREATE TABLE probe (id INTEGER PRIMARY KEY NOT NULL, at INTEGER NOT NULL, room BLOB)")
        }
        migrator.registerMigration("v6: what a delivery produced (an Alertmanager silence id)") { db in
            try db.execute(sql: "ALTER TABLE deliveries ADD COLUMN result TEXT")
        }
        migrator.registerMigration("v7: events by alert (a purge deletes an alert's events)") { db in
            try db.execute(sql: "CREATE INDEX events_by_alert ON events(alert_id)")
        }
        migrator.registerMigration("v8: quorum and votes (SPEC §10)") { db in
            // `votes`: the alert's votes as their JSON array; NULL for none. A row answered
            // before this migration has none: its one choice is read as its vote.
            try db.execute(
                sql: """
                    ALTER TABLE alerts ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
                    ALTER TABLE alerts ADD COLUMN votes TEXT;
                    """)
        }
        migrator.registerMigration("v9: pending deliveries by webhook (a webhook's removal cancels them)") { db in
            // Without it, removing a webhook scanned every delivery on the writer's thread.
            try db.execute(sql: "CREATE INDEX deliveries_pending_by_webhook ON deliveries(webhook_id) WHERE state = 'pending'")
        }
        migrator.registerMigration("v10: Web Push: secrets, subscriptions, answer tokens (SPEC §11)") { db in
            try db.execute(
                sql: """
                    CREATE TABLE secrets (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, created_at INTEGER NOT NULL);
                    CREATE TABLE push_subscriptions (
                        id TEXT PRIMARY KEY NOT NULL, endpoint TEXT NOT NULL UNIQUE, p256dh BLOB NOT NULL, auth BLOB NOT NULL,
                        clients TEXT NOT NULL, answer INTEGER NOT NULL, decider TEXT, created_at INTEGER NOT NULL);
                    CREATE TABLE answer_tokens (
                        hash BLOB PRIMARY KEY NOT NULL, alert_id TEXT NOT NULL, client TEXT NOT NULL,
                        subscription_id TEXT NOT NULL, decider TEXT, expires_at INTEGER NOT NULL, used_at INTEGER,
                        UNIQUE (alert_id, subscription_id));
                    CREATE INDEX answer_tokens_by_expiry ON answer_tokens(expires_at);
                    """)
        }
        migrator.registerMigration("v11: who posted an alert (SPEC §10: the poster cannot approve its own)") { db in
            // NULL for alerts posted before: without a name they bind no vote.
            try db.execute(sql: "ALTER TABLE alerts ADD COLUMN posted_by TEXT")
        }
        migrator.registerMigration("v12: each alert's size; terminal alerts bounded by bytes (alerts.retention_max_bytes)") { db in
            // `size`: the alert as rendered (Alert.renderedFootprint) plus the bodies of the
            // events written with it. Rows written before have none: their text and events
            // are counted once, here. The partial indexes of decided alerts carry it, so the
            // purge adds up a client's bytes, or every client's, without reading a row.
            try db.execute(
                sql: """
                    ALTER TABLE alerts ADD COLUMN size INTEGER;
                    UPDATE alerts SET size = 512 + length(CAST(title AS BLOB)) + coalesce(length(CAST(message AS BLOB)), 0)
                        + length(CAST(buttons AS BLOB)) + coalesce(length(CAST(callback_url AS BLOB)), 0)
                        + coalesce(length(CAST(metadata AS BLOB)), 0) + 2 * coalesce(length(CAST(votes AS BLOB)), 0)
                        + coalesce((SELECT sum(length(e.body)) FROM events e WHERE e.alert_id = alerts.id), 0);
                    DROP INDEX alerts_decided_by_client;
                    CREATE INDEX alerts_decided_by_client ON alerts(client, id, size) WHERE decided_at IS NOT NULL;
                    DROP INDEX alerts_by_decision;
                    CREATE INDEX alerts_by_decision ON alerts(decided_at, id, size) WHERE decided_at IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v13: answers with words: an alert's fields (SPEC §13)") { db in
            // `fields`: the alert's fields as their JSON array; NULL for none. A choice's comment
            // and values are kept in its vote (`votes`), the result's are its deciding vote's.
            try db.execute(sql: "ALTER TABLE alerts ADD COLUMN fields TEXT")
        }
        migrator.registerMigration("v14: escalation: an alert's policy and the steps it took (SPEC §12)") { db in
            // `escalation`: the alert's policy as its JSON array; NULL for none. `escalations`: one
            // row per step taken, with the alert's place on that client (its display there; its
            // sequence, 0 in this store: the step's time orders it). Alerts escalated to a client
            // are found by the client.
            try db.execute(
                sql: """
                    ALTER TABLE alerts ADD COLUMN escalation TEXT;
                    CREATE TABLE escalations (
                        alert_id TEXT NOT NULL,
                        step INTEGER NOT NULL,
                        client TEXT NOT NULL,
                        at INTEGER NOT NULL,
                        seq INTEGER NOT NULL DEFAULT 0,
                        displayed_at INTEGER,
                        PRIMARY KEY (alert_id, step)
                    ) WITHOUT ROWID;
                    CREATE INDEX escalations_by_client ON escalations(client, alert_id);
                    """)
        }
        migrator.registerMigration("v15: signed receipts of decisions and the chain's head (SPEC §14)") { db in
            // `receipts`: one row per decided alert (UNIQUE: one receipt per alert), `seq` its place
            // in the chain, `body` the receipt resource (its canonical JSON, signature included),
            // `decided_at` what receipts.retention counts from. `receipt_chain`: one row, the head
            // (the last receipt's seq and hash, which the next one links to) and what is kept:
            // it outlives the receipts a purge removes, so the chain goes on from its head.
            try db.execute(
                sql: """
                    CREATE TABLE receipts (
                        seq INTEGER PRIMARY KEY,
                        alert_id TEXT NOT NULL UNIQUE,
                        client TEXT NOT NULL,
                        decided_at INTEGER NOT NULL,
                        body TEXT NOT NULL
                    );
                    CREATE TABLE receipt_chain (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        seq INTEGER NOT NULL,
                        sha256 TEXT NOT NULL,
                        count INTEGER NOT NULL,
                        bytes INTEGER NOT NULL
                    );
                    INSERT INTO receipt_chain (id, seq, sha256, count, bytes) VALUES (1, 0, '\(String(repeating: "0", count: 64))', 0, 0);
                    """)
        }
        return migrator
    }
}
