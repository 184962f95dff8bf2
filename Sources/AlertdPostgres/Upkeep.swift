import AlertdCore
public import AlertdEngine
public import AlertdWire
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Synchronization

/// Purges, the size measurement, the health probe.
extension PostgresAlertStore {

    public func purge(_ retention: Retention, keysBefore: Timestamp) async throws(EngineError) -> [String] {
        do {
            // Batches of 10 000 alerts, a transaction each, until one is short: a busy
            // instance decides more than 10 000 alerts a minute (at most 100 batches a round).
            // Then the bounds by bytes, the same way.
            var batches = 0
            var full = true
            while full, batches < 100 {
                batches += 1
                full = try await purgeBatch(decidedBefore: retention.decidedBefore, keepPerClient: retention.keepPerClient) == 10_000
            }
            full = retention.maxBytesPerClient < Int.max
            while full, batches < 200 {
                batches += 1
                full = try await purgeBatch(bytesPerClient: retention.maxBytesPerClient) == 10_000
            }
            full = retention.maxBytes < Int.max
            while full, batches < 300 {
                batches += 1
                full = try await purgeBatch(bytes: retention.maxBytes) == 10_000
            }
            if let before = retention.receiptsDecidedBefore { _ = try await purgeReceipts(decidedBefore: before) }
            let forgotten = try await client.withTransaction(logger: logger) { [logger] connection -> [String] in
                try await connection.query("DELETE FROM idempotency_keys WHERE created_at < \(keysBefore.milliseconds)", logger: logger)
                try await connection.query("DELETE FROM answer_tokens WHERE expires_at < \(keysBefore.milliseconds)", logger: logger)
                // The rows of dead instances that hold no delivery any more (while one does, its
                // row says its holder is dead, and the delivery is taken over at once).
                try await connection.query(
                    """
                    DELETE FROM instances i WHERE NOT \(unescaped: Presence.isLive("i"))
                    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.leased_by = i.id AND d.state = 'pending')
                    """, logger: logger)
                // Clients with nothing left: forgotten, unless one is in a transaction now.
                var forgotten: [String] = []
                for try await id in try await connection.query(
                    """
                    DELETE FROM clients c WHERE NOT EXISTS (SELECT 1 FROM alerts a WHERE a.client = c.id)
                    AND NOT EXISTS (SELECT 1 FROM escalations x WHERE x.client = c.id)
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
            return try await Self.delete(purged, on: connection, logger: logger)
        }
    }

    /// Deletes up to 10 000 terminal alerts beyond their client's newest `bytesPerClient`
    /// bytes (by id, their `size`s) that have no delivery pending, in one transaction; how many.
    func purgeBatch(bytesPerClient: Int) async throws -> Int {
        try await client.withTransaction(logger: logger) { [logger] connection -> Int in
            var purged: [String] = []
            for try await id in try await connection.query(
                """
                WITH over AS (
                    SELECT client FROM alerts WHERE decided_at IS NOT NULL
                    GROUP BY client HAVING pg_catalog.sum(\(unescaped: Self.sizeOf)) > \(bytesPerClient)
                ), kept AS (
                    SELECT a.id, pg_catalog.sum(\(unescaped: Self.sizeOf)) OVER (PARTITION BY a.client ORDER BY a.id DESC) AS bytes
                    FROM alerts a JOIN over o ON o.client = a.client WHERE a.decided_at IS NOT NULL
                )
                SELECT k.id FROM kept k
                WHERE k.bytes > \(bytesPerClient)
                  AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.alert_id = k.id AND d.state = 'pending')
                LIMIT 10000
                """, logger: logger
            ).decode(String.self) {
                purged.append(id)
            }
            return try await Self.delete(purged, on: connection, logger: logger)
        }
    }

    /// Deletes the oldest decided terminal alerts without a delivery pending, up to 10 000,
    /// until every client's together take at most `bytes`, in one transaction; how many.
    func purgeBatch(bytes limit: Int) async throws -> Int {
        try await client.withTransaction(logger: logger) { [logger] connection -> Int in
            var total = 0
            for try await bytes in try await connection.query(
                "SELECT coalesce(pg_catalog.sum(\(unescaped: Self.sizeOf)), 0)::bigint FROM alerts WHERE decided_at IS NOT NULL",
                logger: logger
            ).decode(Int.self) {
                total = bytes
            }
            guard total > limit else { return 0 }
            var purged: [String] = []
            for try await id in try await connection.query(
                """
                SELECT id FROM (
                    SELECT a.id, \(unescaped: Self.sizeOf) AS size,
                        pg_catalog.sum(\(unescaped: Self.sizeOf)) OVER (ORDER BY a.decided_at, a.id) AS freed
                    FROM alerts a WHERE a.decided_at IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.alert_id = a.id AND d.state = 'pending')
                ) o
                WHERE o.freed - o.size < \(total - limit)
                ORDER BY o.freed LIMIT 10000
                """, logger: logger
            ).decode(String.self) {
                purged.append(id)
            }
            return try await Self.delete(purged, on: connection, logger: logger)
        }
    }

    /// Deletes these terminal alerts with their events, deliveries and attempts; how many.
    static func delete(_ purged: [String], on connection: PostgresConnection, logger: Logger) async throws -> Int {
        guard !purged.isEmpty else { return 0 }
        try await connection.query(
            "DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE alert_id = ANY(\(purged)))",
            logger: logger)
        try await connection.query("DELETE FROM deliveries WHERE alert_id = ANY(\(purged))", logger: logger)
        try await connection.query("DELETE FROM events WHERE alert_id = ANY(\(purged))", logger: logger)
        try await connection.query("DELETE FROM escalations WHERE alert_id = ANY(\(purged))", logger: logger)
        try await connection.query("DELETE FROM alerts WHERE id = ANY(\(purged))", logger: logger)
        return purged.count
    }

    public var retainedBytes: Int? { measuredRetained.withLockedValue { $0 } }

    /// Reads the size of alertd's tables (indexes and TOAST included), and the terminal
    /// alerts' bytes as retention counts them, for `/metrics`.
    func measureSize() async {
        do {
            try await readReceiptTotals()
        } catch {
            logger.debug("the receipts' totals were not read", metadata: ["error": "\(error)"])
        }
        do {
            for try await bytes in try await client.query(
                "SELECT coalesce(pg_catalog.sum(\(unescaped: Self.sizeOf)), 0)::bigint FROM alerts WHERE decided_at IS NOT NULL",
                logger: logger
            ).decode(Int.self) {
                measuredRetained.withLockedValue { $0 = bytes }
            }
        } catch {
            logger.debug("the terminal alerts' bytes were not read", metadata: ["error": "\(error)"])
        }
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
