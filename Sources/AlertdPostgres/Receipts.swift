public import AlertdCore
public import AlertdEngine
import AlertdReceipts
import AlertdWire
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Signed receipts (SPEC §14): reads, the totals `/metrics` shows, and the purge by
/// `receipts.retention`. The flushes write them (``Flushes``).
extension PostgresAlertStore {
    public func receipt(of id: AlertID) async throws(EngineError) -> ReceiptRecord? {
        try await read { [self] in
            try await receipts("SELECT seq, alert_id, client, decided_at, body FROM receipts WHERE alert_id = \(id.description)").first
        }
    }

    public func receipts(after: Int, limit: Int) async throws(EngineError) -> [ReceiptRecord] {
        try await read { [self] in
            try await receipts(
                "SELECT seq, alert_id, client, decided_at, body FROM receipts WHERE seq > \(Int64(after)) ORDER BY seq LIMIT \(limit)")
        }
    }

    public var receiptTotals: ReceiptTotals? { measuredReceipts.withLockedValue { $0 } }

    private func receipts(_ query: PostgresQuery) async throws -> [ReceiptRecord] {
        var records: [ReceiptRecord] = []
        for try await (seq, alert, client, decidedAt, body) in try await client.query(query, logger: logger).decode(
            (Int64, String, String, Int64, String).self)
        {
            guard let id = AlertID(alert) else { continue }
            records.append(
                ReceiptRecord(
                    seq: Int(seq), alertID: id, client: client, decidedAt: Timestamp(milliseconds: decidedAt), json: Array(body.utf8)))
        }
        return records
    }

    /// Reads the chain's head and what is kept (one row), for `/metrics`.
    func readReceiptTotals() async throws {
        for try await (count, bytes, seq) in try await client.query(
            "SELECT count, bytes, seq FROM receipt_chain WHERE id = 1", logger: logger
        ).decode((Int64, Int64, Int64).self) {
            measuredReceipts.withLockedValue { $0 = ReceiptTotals(count: Int(count), bytes: Int(bytes), lastSeq: Int(seq)) }
        }
    }

    /// Deletes the chain's oldest receipts, those before the first decided at or after
    /// `decidedBefore`, 10 000 a transaction; how many.
    func purgeReceipts(decidedBefore: Timestamp) async throws -> Int {
        var total = 0
        for _ in 0..<100 {
            let deleted = try await client.withTransaction(logger: logger) { [logger] connection -> Int in
                var deleted = 0
                // By seq from the chain's start (its primary key) to the first receipt kept: as
                // many rows as go, and the head row's totals in the same transaction.
                for try await (count, bytes) in try await connection.query(
                    """
                    WITH kept AS (
                        SELECT coalesce(
                            (SELECT seq FROM receipts WHERE decided_at >= \(decidedBefore.milliseconds) ORDER BY seq LIMIT 1),
                            (SELECT seq + 1 FROM receipt_chain WHERE id = 1)) AS seq
                    ), gone AS (
                        DELETE FROM receipts WHERE seq IN (
                            SELECT r.seq FROM receipts r, kept WHERE r.seq < kept.seq ORDER BY r.seq LIMIT 10000)
                        RETURNING pg_catalog.octet_length(body) AS bytes
                    ), totals AS (
                        SELECT pg_catalog.count(*) AS count, coalesce(pg_catalog.sum(bytes), 0)::bigint AS bytes FROM gone
                    ), head AS (
                        UPDATE receipt_chain SET count = receipt_chain.count - totals.count, bytes = receipt_chain.bytes - totals.bytes
                        FROM totals WHERE receipt_chain.id = 1 AND totals.count > 0
                    )
                    SELECT count, bytes FROM totals
                    """, logger: logger
                ).decode((Int64, Int64).self) {
                    deleted = Int(count)
                    _ = bytes
                }
                return deleted
            }
            total += deleted
            if deleted < 10_000 { break }
        }
        return total
    }
}
