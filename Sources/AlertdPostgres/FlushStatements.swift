import AlertdCore
import AlertdEngine
import AlertdReceipts
import AlertdWire
import Foundation
import Logging
import PostgresNIO

// The statements of a flush (``Flushes``): each prepared once per connection, its
// functions named with their schema (`pg_catalog.`), so that a function of the same name
// another role created in a schema on the search path never runs in them (issue 27 item 7).
//
// Planned once per connection, too: an array parameter is read through a scalar subquery,
// `unnest((SELECT $1::text[]))`, never `unnest($1::text[])`. PostgreSQL plans a prepared
// statement anew at each execution while that custom plan looks cheaper than its generic
// one, and a custom plan sees the array's length (one client: one row) where the generic
// one guesses ten, so it always looks cheaper: these statements were planned at every
// execution, 0.06–0.9 ms each against 0.01–0.4 ms to run them (pg_stat_statements with
// `track_planning`, bench/RESULTS.md). Behind a subquery the array is unknown to both plans,
// they cost the same, and the generic plan is kept after the fifth execution. (The
// JSON-typed parameters of ``Write`` were never seen through: it was planned once already.)
extension Flushes {
    /// The chain of receipts' head (SPEC §14), locked until the transaction ends: what the
    /// flush's receipts follow. Taken after the clients' locks, and only by a flush that
    /// decides, so it serialises the commits that decide across every instance (one at a
    /// time holds it, from this read to its commit) and nothing else. No deadlock: a flush
    /// waits for it holding only client locks, and its holder waits for nothing more.
    struct ChainHead: PostgresPreparedStatement {
        static let name = "alertd_receipt_chain_head_v1"
        static let sql = "SELECT seq, sha256 FROM receipt_chain WHERE id = 1 FOR UPDATE"
        typealias Row = (Int64, String)

        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> (Int64, String) { try row.decode((Int64, String).self) }
    }

    static func chainHead(on connection: PostgresConnection, logger: Logger) async throws -> ChainLink {
        var head: ChainLink?
        for try await (seq, sha256) in try await connection.execute(ChainHead(), logger: logger) {
            head = ChainLink(seq: Int(seq), sha256: sha256)
        }
        guard let head else { throw AlertRow.Corrupt(description: "receipt_chain has no row: the schema is not migrated") }
        return head
    }
}

/// A statement that locks a flush's clients and draws `count` values of `alert_order`.
protocol LockStatement: PostgresPreparedStatement {
    var clients: [String] { get }
    var count: Int { get }
}

extension LockStatement {
    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(clients)
        bindings.append(Int32(count))
        return bindings
    }
}

extension Flushes {
    /// The flush's clients locked (sorted by lock key: one order in every instance),
    /// then one value of `alert_order` per change, drawn after the locks.
    struct Lock: LockStatement {
        static let name = "alertd_flush_lock_v2"
        static let sql = """
            WITH locked AS MATERIALIZED (
                SELECT pg_catalog.count(pg_catalog.pg_advisory_xact_lock(k)) FROM (
                    SELECT DISTINCT pg_catalog.hashtextextended(c, 0::int8) AS k FROM pg_catalog.unnest((SELECT $1::text[])) AS c ORDER BY k
                ) AS keys
            )
            SELECT COALESCE(pg_catalog.array_agg(pg_catalog.nextval('alert_order'::regclass)), '{}')
            FROM locked, pg_catalog.generate_series(1, (SELECT $2::int4))
            """
        typealias Row = [Int64]

        var clients: [String]
        var count: Int

        func decodeRow(_ row: PostgresRow) throws -> [Int64] { try row.decode([Int64].self) }
    }

    /// The flush's clients' locks tried, none waited for (so in any order), then one value
    /// of `alert_order` per change, drawn after every try (`count(*)` reads them all).
    struct TryLock: LockStatement {
        static let name = "alertd_flush_try_lock_v2"
        static let sql = """
            WITH tried AS MATERIALIZED (
                SELECT c, pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(c, 0::int8)) AS held
                FROM pg_catalog.unnest((SELECT $1::text[])) AS c
            )
            SELECT COALESCE((SELECT pg_catalog.array_agg(c) FROM tried WHERE held), '{}'),
                COALESCE((
                    SELECT pg_catalog.array_agg(pg_catalog.nextval('alert_order'::regclass))
                    FROM (SELECT pg_catalog.count(*) FROM tried) AS locked, pg_catalog.generate_series(1, (SELECT $2::int4))
                ), '{}')
            """
        typealias Row = ([String], [Int64])

        var clients: [String]
        var count: Int

        func decodeRow(_ row: PostgresRow) throws -> ([String], [Int64]) { try row.decode(([String], [Int64]).self) }
    }

    /// In a statement after the locks (its snapshot sees what they waited for): per
    /// client its version and the alerts of newer versions than `since` (the whole
    /// pending queue for -1), those escalated to it included (SPEC §12: their row or their
    /// step's row newer), then the idempotency keys asked for, then the API's webhooks of
    /// the clients a decision asked them for (its targets as committed, SPEC §9: read here,
    /// under the clients' locks, not in a round trip of their own before the transaction).
    ///
    /// Columns: client, version, then an idempotency key's key, alert id, digest and
    /// time (a webhook's time too), then a webhook's id, URL and secret, then an alert's
    /// columns from ``alertColumn`` (``AlertRow/columns``).
    struct Read: PostgresPreparedStatement {
        static let name = "alertd_flush_read_v6"
        static let alertColumn = 9
        static let sql = """
            SELECT r.client, c.version, NULL::text, NULL::text, NULL::bytea, NULL::bigint, NULL::text, NULL::text, NULL::text,
                \(AlertRow.qualified("a"))
            FROM ROWS FROM (pg_catalog.unnest((SELECT $1::text[])), pg_catalog.unnest((SELECT $2::int8[]))) AS r(client, since)
            LEFT JOIN clients c ON c.id = r.client
            LEFT JOIN LATERAL (
                SELECT \(AlertRow.columns) FROM alerts
                WHERE alerts.client = r.client AND r.since >= 0 AND c.version > r.since AND alerts.version > r.since
                UNION ALL
                SELECT \(AlertRow.columns) FROM alerts
                WHERE alerts.client = r.client AND r.since < 0 AND alerts.state IN ('queued', 'displayed')
                UNION ALL
                SELECT \(AlertRow.columns) FROM escalations e0 JOIN alerts ON alerts.id = e0.alert_id
                WHERE e0.client = r.client AND (
                    (r.since >= 0 AND c.version > r.since AND (e0.version > r.since OR alerts.version > r.since))
                    OR (r.since < 0 AND alerts.state IN ('queued', 'displayed')))
            ) AS a ON true
            UNION ALL
            SELECT k.client, NULL, k.key, k.alert_id, k.body_sha256, k.created_at, NULL, NULL, NULL, \(AlertRow.nulls)
            FROM ROWS FROM (pg_catalog.unnest((SELECT $3::text[])), pg_catalog.unnest((SELECT $4::text[]))) AS q(client, key)
            JOIN idempotency_keys k ON k.client = q.client AND k.key = q.key
            UNION ALL
            SELECT w.client, NULL, NULL, NULL, NULL, w.created_at, w.id, w.url, w.secret, \(AlertRow.nulls)
            FROM webhooks w WHERE w.client = ANY((SELECT $5::text[])::text[])
            """
        typealias Row = PostgresRow

        var clients: [String]
        var since: [Int64]
        var keyClients: [String]
        var keys: [String]
        /// The clients whose API webhooks are read with their queues (a decision's targets).
        var hookClients: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(clients)
            bindings.append(since)
            bindings.append(keyClients)
            bindings.append(keys)
            bindings.append(hookClients)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }

    }

    /// Every write of a flush in one statement: the rows
    /// travel as JSON arrays (`json_to_recordset`), bytes as base64.
    struct Write: PostgresPreparedStatement {
        static let name = "alertd_flush_write_v6"
        static let sql = """
            WITH written_clients AS (
                INSERT INTO clients (id, created_at, version)
                SELECT id, created_at, version FROM pg_catalog.json_to_recordset($1::json) AS r(id text, created_at bigint, version bigint)
                ON CONFLICT (id) DO UPDATE SET version = excluded.version
            ), written_alerts AS (
                INSERT INTO alerts (\(AlertRow.tableColumns), dismiss_at, escalate_at, version, size)
                SELECT \(AlertRow.tableColumns), dismiss_at, escalate_at, version, size FROM pg_catalog.json_to_recordset($2::json) AS r(
                    id text, client text, seq bigint, state text, priority integer, title text, message text, style text,
                    buttons text, callback_url text, metadata text, created_at bigint, displayed_at bigint, decided_at bigint,
                    expires_at bigint, dismiss_after_ms bigint, button_index integer, decided_by text, quorum integer,
                    votes text, posted_by text, fields text, escalation text, dismiss_at bigint, escalate_at bigint, version bigint,
                    size bigint)
                ON CONFLICT (id) DO UPDATE SET state = excluded.state, displayed_at = excluded.displayed_at,
                    decided_at = excluded.decided_at, button_index = excluded.button_index, decided_by = excluded.decided_by,
                    votes = excluded.votes, dismiss_at = excluded.dismiss_at, escalate_at = excluded.escalate_at,
                    version = excluded.version, size = excluded.size
            ), written_keys AS (
                INSERT INTO idempotency_keys (client, key, alert_id, body_sha256, created_at)
                SELECT client, key, alert_id, pg_catalog.decode(digest, 'base64'), created_at
                FROM pg_catalog.json_to_recordset($3::json) AS r(client text, key text, alert_id text, digest text, created_at bigint)
                ON CONFLICT (client, key) DO UPDATE SET alert_id = excluded.alert_id, body_sha256 = excluded.body_sha256,
                    created_at = excluded.created_at
            ), written_events AS (
                INSERT INTO events (id, alert_id, client, type, created_at, body)
                SELECT id, alert_id, client, type, created_at, pg_catalog.decode(body, 'base64')
                FROM pg_catalog.json_to_recordset($4::json) AS r(id text, alert_id text, client text, type text, created_at bigint, body text)
            ), written_deliveries AS (
                INSERT INTO deliveries (id, event_id, alert_id, target, webhook_id, secret, state, next_attempt_at, lease_until, leased_by)
                SELECT id, event_id, alert_id, target, webhook_id, secret, 'pending', next_attempt_at, lease_until, $5
                FROM pg_catalog.json_to_recordset($6::json) AS r(
                    id text, event_id text, alert_id text, target text, webhook_id text, secret text, next_attempt_at bigint,
                    lease_until bigint)
            ), written_escalations AS (
                INSERT INTO escalations (alert_id, step, client, at, seq, displayed_at, dismiss_at, version)
                SELECT alert_id, step, client, at, seq, displayed_at, dismiss_at, version
                FROM pg_catalog.json_to_recordset($7::json) AS r(
                    alert_id text, step integer, client text, at bigint, seq bigint, displayed_at bigint, dismiss_at bigint,
                    version bigint)
                ON CONFLICT (alert_id, step) DO UPDATE SET displayed_at = excluded.displayed_at, dismiss_at = excluded.dismiss_at,
                    version = excluded.version
            ), written_receipts AS (
                INSERT INTO receipts (seq, alert_id, client, decided_at, body)
                SELECT seq, alert_id, client, decided_at, body
                FROM pg_catalog.json_to_recordset($8::json) AS r(seq bigint, alert_id text, client text, decided_at bigint, body text)
            ), written_head AS (
                UPDATE receipt_chain SET seq = $9::int8, sha256 = $10::text, count = count + $11::int8, bytes = bytes + $12::int8
                WHERE id = 1 AND $11::int8 > 0
            )
            SELECT 1
            """
        typealias Row = Int64

        var clients: [(id: String, now: Timestamp, version: Int64)] = []
        var alerts: [(alert: Alert, version: Int64)] = []
        /// The rows of the steps alerts took (SPEC §12), each written by its client's slot.
        var escalations: [(alert: Alert, step: Int, version: Int64)] = []
        var keys: [IdempotencyRecord] = []
        var events: [OutboxEvent] = []
        /// Notification entries (``Notifications``), sent once the flush committed.
        var entries: [String] = []
        /// The alerts the flush decides, each to get its receipt (SPEC §14).
        var decided: [Alert] = []
        /// Their receipts, signed after the chain's head, and the head after them.
        var receipts: [ReceiptRecord] = []
        var head = ChainLink.start
        /// This instance, which holds the deliveries it writes (it attempts them next, for
        /// as long as a retry is held).
        let instance: String

        init(instance: String) {
            self.instance = instance
        }

        var isEmpty: Bool { clients.isEmpty && alerts.isEmpty && escalations.isEmpty && keys.isEmpty && events.isEmpty }

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 12)
            bindings.append(
                Self.json(clients) { json, client in
                    json.key("id"); json.string(client.id)
                    json.key("created_at"); json.int64(client.now.milliseconds)
                    json.key("version"); json.int64(client.version)
                })
            // An alert decided is written with its events: their bodies count in its size.
            var eventBytes: [AlertID: Int] = [:]
            for event in events { eventBytes[event.alertID, default: 0] += event.body.count }
            bindings.append(
                Self.json(alerts) { json, row in
                    AlertRow.write(
                        row.alert, version: row.version, size: row.alert.renderedFootprint + (eventBytes[row.alert.id] ?? 0),
                        into: &json)
                })
            bindings.append(
                Self.json(keys) { json, record in
                    json.key("client"); json.string(record.client)
                    json.key("key"); json.string(record.key)
                    json.key("alert_id"); json.string(record.alertID.description)
                    json.key("digest"); json.string(Data(record.bodyDigest).base64EncodedString())
                    json.key("created_at"); json.int64(record.createdAt.milliseconds)
                })
            bindings.append(
                Self.json(events) { json, event in
                    json.key("id"); json.string(event.id)
                    json.key("alert_id"); json.string(event.alertID.description)
                    json.key("client"); json.string(event.client)
                    json.key("type"); json.string(event.type)
                    json.key("created_at"); json.int64(event.createdAt.milliseconds)
                    json.key("body"); json.string(Data(event.body).base64EncodedString())
                })
            bindings.append(instance)
            let deliveries = events.flatMap { event in event.deliveries.map { (event, $0) } }
            bindings.append(
                Self.json(deliveries) { json, pair in
                    let (event, delivery) = pair
                    json.key("id"); json.string(delivery.id)
                    json.key("event_id"); json.string(event.id)
                    json.key("alert_id"); json.string(event.alertID.description)
                    json.key("target"); json.string(delivery.target)
                    json.key("webhook_id"); json.string(delivery.webhookID)
                    json.key("secret"); json.string(delivery.secret)
                    json.key("next_attempt_at"); json.int64(event.createdAt.milliseconds)
                    json.key("lease_until")
                    json.int64(event.createdAt.adding(milliseconds: PostgresAlertStore.retryLeaseMilliseconds).milliseconds)
                })
            bindings.append(
                Self.json(escalations) { json, row in
                    let escalation = row.alert.escalatedTo[row.step]
                    json.key("alert_id"); json.string(row.alert.id.description)
                    json.key("step"); json.int(row.step)
                    json.key("client"); json.string(escalation.client)
                    json.key("at"); json.int64(escalation.at.milliseconds)
                    json.key("seq"); json.int64(escalation.sequence)
                    json.key("displayed_at"); json.int64(escalation.displayedAt?.milliseconds)
                    // A buttonless alert displayed there is dismissed `dismiss_after` later (SPEC §12, §3).
                    json.key("dismiss_at")
                    json.int64(
                        row.alert.isPending
                            ? escalation.displayedAt.flatMap { shown in row.alert.dismissAfterMilliseconds.map { shown.milliseconds + $0 } }
                            : nil)
                    json.key("version"); json.int64(row.version)
                })
            bindings.append(
                Self.json(receipts) { json, record in
                    json.key("seq"); json.int(record.seq)
                    json.key("alert_id"); json.string(record.alertID.description)
                    json.key("client"); json.string(record.client)
                    json.key("decided_at"); json.int64(record.decidedAt.milliseconds)
                    json.key("body"); json.string(String(decoding: record.json, as: UTF8.self))
                })
            bindings.append(Int64(head.seq))
            bindings.append(head.sha256)
            bindings.append(Int64(receipts.count))
            bindings.append(Int64(receipts.reduce(0) { $0 + $1.json.count }))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }

        private static func json<Element>(_ rows: [Element], _ write: (inout JSONWriter, Element) -> Void) -> String {
            var json = JSONWriter(capacity: 64 + 256 * rows.count)
            json.beginArray()
            for row in rows {
                json.beginObject()
                write(&json, row)
                json.endObject()
            }
            json.endArray()
            return String(decoding: json.bytes, as: UTF8.self)
        }
    }
}
