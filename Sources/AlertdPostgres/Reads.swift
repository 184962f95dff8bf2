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

    public func alert(_ id: AlertID, on client: String?) async throws(EngineError) -> PositionedAlert? {
        try await read { [self] in
            guard let alert = try await one("SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE id = \(id.description)") else {
                return nil
            }
            let client = client ?? alert.client
            guard alert.isOn(client) else { return nil }
            guard alert.isPending else { return PositionedAlert(alert, position: nil) }
            return PositionedAlert(alert.viewed(from: client), position: try await position(of: alert, on: client))
        }
    }

    /// 0 displayed there; else the alerts ahead of it in `client`'s queue, counted by the
    /// domain's order among the client's pending alerts as committed (SQL only reads them).
    func position(of alert: Alert, on client: String) async throws -> Int {
        if alert.isDisplayed(on: client) { return 0 }
        let pending = try await pendingAlerts(of: client)
        return AlertBoard.position(
            of: alert, on: client, amongQueued: pending.filter { !$0.isDisplayed(on: client) },
            displayed: pending.contains { $0.isDisplayed(on: client) }, policy: policy(of: client))
    }

    /// The pending alerts of `client` as committed: its own and those escalated to it (SPEC §12).
    func pendingAlerts(of client: String) async throws -> [Alert] {
        try await all(
            """
            SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = \(client) AND state IN ('queued', 'displayed')
            UNION ALL
            SELECT \(unescaped: AlertRow.columns) FROM escalations x JOIN alerts ON alerts.id = x.alert_id
            WHERE x.client = \(client) AND alerts.state IN ('queued', 'displayed')
            """)
    }

    public func pending(on client: String) async throws(EngineError) -> [PositionedAlert] {
        try await read { [self] in
            let alerts = try await pendingAlerts(of: client)
            var board = AlertBoard(settings: settings.withLockedValue { $0 }, rules: rules)
            board.hold(only: [client])
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
            // Alerts displayed where they escalated to (SPEC §12), as those clients hold them.
            for alert in try await all(
                """
                SELECT \(unescaped: AlertRow.columns) FROM escalations x JOIN alerts ON alerts.id = x.alert_id
                WHERE x.client = ANY(\(names)) AND x.displayed_at IS NOT NULL AND alerts.state IN ('queued', 'displayed')
                """)
            {
                for client in alert.displayedOn where client != alert.client && names.contains(client) {
                    shown[client] = alert.viewed(from: client)
                }
            }
            return names.map { VersionedDisplay(client: $0, alert: shown[$0], version: nil) }
        }
    }

    /// Other instances commit too: a read checks the database first (SPEC §9).
    public var publishesEveryCommit: Bool { false }

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
                        + (SELECT pg_catalog.count(*) FROM escalations x JOIN alerts a ON a.id = x.alert_id
                           WHERE x.client = c.id AND a.state IN ('queued', 'displayed'))
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
        // Its own, and those escalated to it (SPEC §12).
        let below = before?.description ?? "~"
        return try await read { [self] in
            try await all(
                """
                SELECT * FROM (
                    (SELECT \(unescaped: AlertRow.columns) FROM alerts
                     WHERE client = \(client) AND decided_at IS NOT NULL AND state = ANY(\(wanted)) AND id < \(below)
                     ORDER BY id DESC LIMIT \(limit))
                    UNION ALL
                    (SELECT \(unescaped: AlertRow.columns) FROM escalations x JOIN alerts ON alerts.id = x.alert_id
                     WHERE x.client = \(client) AND alerts.decided_at IS NOT NULL AND alerts.state = ANY(\(wanted))
                       AND alerts.id < \(below)
                     ORDER BY alerts.id DESC LIMIT \(limit))
                ) u ORDER BY id DESC LIMIT \(limit)
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
