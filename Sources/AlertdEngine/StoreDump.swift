/// Everything a store holds, table by table, for `alertd migrate-store`: the
/// embedded store writes one (``rows``), the shared store reads one in. Both
/// stores keep the same tables under the same names; the columns listed here
/// are the ones they share.
public struct StoreDump: Sendable {
    /// One cell of a row.
    public enum Cell: Sendable, Equatable {
        case null
        case integer(Int64)
        case text(String)
        case bytes([UInt8])
    }

    /// A table's rows, their cells in ``StoreDump/columns``' order.
    public var rows: [String: [[Cell]]]

    public init(rows: [String: [[Cell]]] = [:]) { self.rows = rows }

    /// The tables copied, in an order that keeps every reference valid, and
    /// their shared columns (the first is the key rows are read in order of).
    public static let columns: [(table: String, columns: [String])] = [
        ("clients", ["id", "created_at"]),
        (
            "alerts",
            [
                "id", "client", "state", "priority", "title", "message", "style", "buttons", "callback_url", "metadata", "created_at",
                "displayed_at", "decided_at", "expires_at", "dismiss_after_ms", "button_index", "decided_by", "quorum", "votes",
                "posted_by", "size", "fields", "escalation",
            ]
        ),
        ("idempotency_keys", ["client", "key", "alert_id", "body_sha256", "created_at"]),
        ("webhooks", ["id", "client", "url", "secret", "created_at"]),
        ("events", ["id", "alert_id", "client", "type", "created_at", "body"]),
        ("deliveries", ["id", "event_id", "alert_id", "target", "webhook_id", "secret", "state", "next_attempt_at", "result"]),
        ("delivery_attempts", ["delivery_id", "number", "at", "status_code", "error"]),
        // The steps escalated alerts took (SPEC §12); PostgreSQL orders each among the alerts
        // posted before it joined its client's queue, and derives the rest (`escalate_at`, `dismiss_at`).
        ("escalations", ["alert_id", "step", "client", "at", "seq", "displayed_at"]),
        // Signed receipts (SPEC §14), copied as they are (the bytes are what was signed), and the
        // chain's head, so the target goes on from it: the next receipt after the copy links to
        // the last one before it. The target signs with the key the copy's receipts name only if
        // its instances are given that key (docs/receipts.md).
        ("receipts", ["seq", "alert_id", "client", "decided_at", "body"]),
        ("receipt_chain", ["id", "seq", "sha256", "count", "bytes"]),
    ]

    /// "12 alerts, 3 webhooks, …": what a dump holds, for the operator.
    public var summary: String {
        Self.columns.filter { $0.table != "receipt_chain" }.map {
            "\(rows[$0.table]?.count ?? 0) \($0.table.split(separator: "_").joined(separator: " "))"
        }.joined(
            separator: ", ")
    }
}
