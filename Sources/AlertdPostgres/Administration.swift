import AlertdCore
import AlertdWire
public import AlertdEngine
public import Logging
import PostgresNIO

/// What `alertd migrate` and `alertd migrate-store` do to a database, without serving.
public enum PostgresAdministration {
    /// Applies the schema's migrations (under their advisory lock); the versions applied.
    public static func migrate(_ url: PostgresURL, logger: Logger) async throws -> [Int] {
        try await withClient(url, logger: logger) { client in try await Schema.migrate(client, logger: logger) }
    }

    /// A database that already holds alertd's data: `migrate-store` writes into none.
    public struct NotEmpty: Error, CustomStringConvertible {
        public let description: String
    }

    /// Migrates the database, then copies `dump` into it in one transaction:
    /// all or nothing. Refuses (``NotEmpty``) a database that holds any client,
    /// alert, key, webhook or event. Alerts get their queue order in the order
    /// of their ids (the order the embedded store keeps them in); deliveries
    /// still pending are held by no instance, so the first instance to look
    /// takes them over and attempts them.
    public static func load(_ dump: StoreDump, into url: PostgresURL, logger: Logger) async throws {
        try await withClient(url, logger: logger) { client in
            try await Schema.migrate(client, logger: logger)
            try await client.withTransaction(logger: logger) { connection in
                // A copy may take longer than a statement may (PostgresURL.sessionParameters).
                try await connection.run("SET LOCAL statement_timeout = 0", logger: logger)
                try await connection.run("SET LOCAL lock_timeout = 0", logger: logger)
                // Checked in the transaction that writes, under a lock two copies would share.
                try await connection.run("SELECT pg_catalog.pg_advisory_xact_lock(\(Schema.migrationLock))", logger: logger)
                for table in ["clients", "alerts", "idempotency_keys", "webhooks", "events", "deliveries", "receipts"] {
                    for try await _ in try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT 1 FROM \(table) LIMIT 1"), logger: logger)
                    {
                        throw NotEmpty(
                            description:
                                "the database already holds alertd's data (its \(table) table is not empty); copy into an empty one")
                    }
                }
                // Queue order: alerts in the order of their ids (even values), and each step an
                // alert took (SPEC §12) right after the alerts posted before it joined that queue
                // (odd values), as the embedded store orders them; `alert_order` then goes on after.
                let ids = (dump.rows["alerts"] ?? []).compactMap { row -> AlertID? in
                    guard case .text(let id) = row.first else { return nil }
                    return AlertID(id)
                }.sorted()
                for (table, columns) in StoreDump.columns {
                    var names = columns
                    if table == "alerts" { names += ["seq", "dismiss_at"] }
                    var placeholders = (1...columns.count).map { "$\($0)" }
                    if table == "alerts" { placeholders += ["$\(columns.count + 1)", "$\(columns.count + 2)"] }
                    var sql = "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(placeholders.joined(separator: ", ")))"
                    if table == "receipt_chain" {
                        // The migration wrote the head of an empty chain: the copy's head replaces it.
                        sql +=
                            " ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, sha256 = excluded.sha256, count = excluded.count, bytes = excluded.bytes"
                    }
                    for row in dump.rows[table] ?? [] {
                        var row = row
                        if table == "escalations", let seq = columns.firstIndex(of: "seq") {
                            row[seq] = .integer(stepOrder(row, columns: columns, ids: ids))
                        }
                        var binds = PostgresBindings(capacity: row.count + 2)
                        for cell in row { bind(cell, to: &binds) }
                        if table == "alerts" {
                            binds.append(alertOrder(row, ids: ids))
                            binds.append(dismissAt(row, columns: columns))
                        }
                        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
                    }
                }
                try await connection.run(
                    "SELECT pg_catalog.setval('alert_order'::regclass, \(Int64(2 * ids.count + 2)))", logger: logger)
                // The next step of each pending alert, and the dismissal of a buttonless one displayed where it escalated.
                try await connection.run(
                    """
                    UPDATE alerts a SET escalate_at = a.created_at + pg_catalog.round(
                        ((a.escalation::json -> (SELECT pg_catalog.count(*) FROM escalations x WHERE x.alert_id = a.id)::int)
                            ->> 'after')::float8 * 1000)::bigint
                    WHERE a.escalation IS NOT NULL AND a.state IN ('queued', 'displayed')
                    """, logger: logger)
                try await connection.run(
                    """
                    UPDATE escalations x SET dismiss_at = x.displayed_at + a.dismiss_after_ms FROM alerts a
                    WHERE a.id = x.alert_id AND x.displayed_at IS NOT NULL AND a.dismiss_after_ms IS NOT NULL
                      AND a.state IN ('queued', 'displayed')
                    """, logger: logger)
            }
        }
    }

    /// An alert's place in the queue order: even, by its id.
    private static func alertOrder(_ row: [StoreDump.Cell], ids: [AlertID]) -> Int64 {
        guard case .text(let text) = row.first, let id = AlertID(text) else { return 0 }
        return 2 * Int64(before(id, in: ids) + 1)
    }

    /// A step's place in the queue order: odd, after every alert posted before it joined.
    private static func stepOrder(_ row: [StoreDump.Cell], columns: [String], ids: [AlertID]) -> Int64 {
        guard let alert = columns.firstIndex(of: "alert_id"), let at = columns.firstIndex(of: "at"),
            case .text(let text) = row[alert], let id = AlertID(text), case .integer(let milliseconds) = row[at]
        else { return 1 }
        let key = AlertBoard.orderKey(id, at: Timestamp(milliseconds: milliseconds))
        return 2 * Int64(before(key, in: ids)) + 1
    }

    /// How many of the sorted `ids` are below `id`.
    private static func before(_ id: AlertID, in ids: [AlertID]) -> Int {
        var (low, high) = (0, ids.count)
        while low < high {
            let middle = (low + high) / 2
            if ids[middle] < id { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// When a displayed alert is dismissed: its display time plus its `dismiss_after`.
    private static func dismissAt(_ row: [StoreDump.Cell], columns: [String]) -> Int64? {
        guard let state = columns.firstIndex(of: "state"), let displayed = columns.firstIndex(of: "displayed_at"),
            let after = columns.firstIndex(of: "dismiss_after_ms"), row[state] == .text("displayed"),
            case .integer(let at) = row[displayed], case .integer(let milliseconds) = row[after]
        else { return nil }
        return at + milliseconds
    }

    private static func bind(_ cell: StoreDump.Cell, to binds: inout PostgresBindings) {
        switch cell {
        case .null: binds.appendNull()
        case .integer(let value): binds.append(value)
        case .text(let value): binds.append(value)
        case .bytes(let value): binds.append(value.bytea)
        }
    }

    /// The database could not be reached.
    public struct Unreachable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `body` with a client to `url` that runs until `body` returns. One
    /// connection is made first, so that a database that cannot be reached is
    /// said at once and in words (the pool would queue the work for a minute).
    private static func withClient<T: Sendable>(
        _ url: PostgresURL, logger: Logger, _ body: @escaping @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        do {
            let probe = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 0, logger: logger)
            try? await probe.close()
        } catch {
            throw Unreachable(description: "cannot connect to \(url): \(String(reflecting: error))")
        }
        var configuration = try url.clientConfiguration()
        configuration.options.maximumConnections = 2
        configuration.options.connectTimeout = .seconds(10)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            group.addTask { try await body(client) }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            throw CancellationError()
        }
    }
}
