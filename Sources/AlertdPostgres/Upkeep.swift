import AlertdCore
public import AlertdEngine
public import AlertdWire
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Synchronization

/// Purges, the size measurement, the health probe.
extension PostgresAlertStore {

    public func purge(decidedBefore: Timestamp, keepPerClient: Int, keysBefore: Timestamp) async throws(EngineError) -> [String] {
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
                try await connection.query("DELETE FROM answer_tokens WHERE expires_at < \(keysBefore.milliseconds)", logger: logger)
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
            return forgotten
        } catch {
            throw unavailable(error)
        }
    }

    /// Deletes up to 10 000 terminal alerts past retention — decided before `decidedBefore`,
    /// or beyond their client's newest `keepPerClient` (by id) — with their events,
    /// deliveries and attempts, in one transaction; how many.
    func purgeBatch(decidedBefore: Timestamp, keepPerClient: Int) async throws -> Int {
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
    func measureSize() async {
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
}
