public import AlertdCore
public import AlertdEngine
public import AlertdWire
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Synchronization

/// Reads of what is committed, each on a pooled connection: answers come from the
/// database, never from an instance's cache.
extension PostgresAlertStore {

    public func alert(_ id: AlertID) async throws(EngineError) -> PositionedAlert? {
        try await read { [self] in
            guard let alert = try await one("SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE id = \(id.description)") else {
                return nil
            }
            guard alert.isPending else { return PositionedAlert(alert, position: nil) }
            return PositionedAlert(alert, position: try await position(of: alert))
        }
    }

    /// 0 displayed; else the alerts ahead of it in its client's queue, counted by the
    /// domain's order among the client's pending alerts as committed (SQL only reads them).
    func position(of alert: Alert) async throws -> Int {
        if alert.state == .displayed { return 0 }
        let pending = try await all(
            "SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = \(alert.client) AND state IN ('queued', 'displayed')")
        return AlertBoard.position(
            of: alert, amongQueued: pending.filter { $0.state == .queued }, displayed: pending.contains { $0.state == .displayed },
            policy: policy(of: alert.client))
    }

    public func pending(on client: String) async throws(EngineError) -> [PositionedAlert] {
        try await read { [self] in
            let alerts = try await all(
                "SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = \(client) AND state IN ('queued', 'displayed')")
            var board = AlertBoard(settings: settings.withLockedValue { $0 }, rules: rules)
            _ = board.restore(clients: [client], pending: alerts, now: clock.now())
            return board.pending(on: client).enumerated().map { PositionedAlert($0.element, position: $0.offset) }
        }
    }

    public func policy(of client: String) -> QueuePolicy {
        settings.withLockedValue { $0[client].policy }
    }

    public func displays(of clients: [String]?) async throws(EngineError) -> [VersionedDisplay] {
        try await read { [self] in
            let names: [String]
            if let clients {
                names = clients
            } else {
                names =
                    []
                    + (try await strings("SELECT id FROM clients ORDER BY id"))
            }
            guard !names.isEmpty else { return [] }
            var shown: [String: Alert] = [:]
            for alert in try await all(
                "SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = ANY(\(names)) AND state = 'displayed'")
            {
                shown[alert.client] = alert
            }
            return names.map { VersionedDisplay(client: $0, alert: shown[$0], version: nil) }
        }
    }

    /// Batched with the other reads waiting (``DisplayReader``): one statement for all.
    public func refreshDisplays(_ known: [(client: String, version: Int64?)]) async throws(EngineError) -> [VersionedDisplay] {
        guard !known.isEmpty else { return [] }
        let reply = Reply<Result<[VersionedDisplay], EngineError>>()
        displayReader.read(known, completion: reply.resolve)
        return try await reply.value().get()
    }

    public func clients(
        after: String?, limit: Int, where include: @escaping @Sendable (String) -> Bool
    ) async throws(EngineError) -> (page: [(client: String, pending: Int)], more: Bool) {
        try await read { [self] in
            var page: [(client: String, pending: Int)] = []
            var last = after ?? ""
            // In chunks, until the page is full of clients the token may see.
            while true {
                var chunk: [(String, Int)] = []
                for try await row in try await client.query(
                    """
                    SELECT c.id, (SELECT pg_catalog.count(*) FROM alerts a WHERE a.client = c.id AND a.state IN ('queued', 'displayed'))
                    FROM clients c WHERE c.id > \(last) ORDER BY c.id LIMIT 500
                    """, logger: logger
                ).decode((String, Int).self) {
                    chunk.append(row)
                }
                for (name, pending) in chunk where include(name) {
                    if page.count == limit { return (page, true) }
                    page.append((name, pending))
                }
                guard chunk.count == 500, let next = chunk.last?.0 else { return (page, false) }
                last = next
            }
        }
    }

    public func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) async throws(EngineError) -> [Alert] {
        let wanted = states.filter(\.isTerminal).map(\.rawValue).sorted()
        guard !wanted.isEmpty, limit > 0 else { return [] }
        return try await read { [self] in
            if let before {
                return try await all(
                    """
                    SELECT \(unescaped: AlertRow.columns) FROM alerts
                    WHERE client = \(client) AND decided_at IS NOT NULL AND state = ANY(\(wanted)) AND id < \(before.description)
                    ORDER BY id DESC LIMIT \(limit)
                    """)
            }
            return try await all(
                """
                SELECT \(unescaped: AlertRow.columns) FROM alerts
                WHERE client = \(client) AND decided_at IS NOT NULL AND state = ANY(\(wanted))
                ORDER BY id DESC LIMIT \(limit)
                """)
        }
    }

    public var pendingTotal: Int { counts.withLockedValue { $0.pending } }
    public var storeBytes: Int? { measuredBytes.withLockedValue { $0 } }

    /// Runs a read, in the caller's task; a failure is the engine's `unavailable` (the cause logged).
    func read<T: Sendable>(_ body: () async throws -> T) async throws(EngineError) -> T {
        do {
            return try await body()
        } catch {
            throw unavailable(error)
        }
    }

    /// Runs `body` in a transaction that tells the other instances of `notify` with its commit.
    func write(notify: [String], _ body: @escaping @Sendable (PostgresConnection) async throws -> Void) async throws(EngineError) {
        do {
            try await client.withTransaction(logger: logger) { [notifications, logger] connection in
                try await body(connection)
                try await notifications.send(notify, on: connection, logger: logger)
            }
        } catch {
            throw unavailable(error)
        }
    }

    func one(_ query: PostgresQuery) async throws -> Alert? {
        for try await row in try await client.query(query, logger: logger) { return try AlertRow.alert(row) }
        return nil
    }

    func all(_ query: PostgresQuery) async throws -> [Alert] {
        var alerts: [Alert] = []
        for try await row in try await client.query(query, logger: logger) { alerts.append(try AlertRow.alert(row)) }
        return alerts
    }

    func strings(_ query: PostgresQuery) async throws -> [String] {
        var values: [String] = []
        for try await value in try await client.query(query, logger: logger).decode(String.self) { values.append(value) }
        return values
    }
}
