import AlertdCore
import AlertdEngine
import AlertdWire
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// One lane per client: the changes of a client that arrive while one of its
/// transactions runs wait, then run together in the next one — one lock, one
/// read of the queue, one commit for all of them (group commit, per client).
/// Clients run in parallel, up to the pool's connections.
final class Lanes: Sendable {
    /// One change of one client's queue.
    struct Operation: Sendable {
        let client: String
        let now: Timestamp
        let idempotencyKey: String?
        /// Runs on the board; nil when the body refused (its completion has been called).
        let apply: @Sendable (inout AlertBoard, any IdempotencyKeys) -> Applied?
        /// Tells the caller the transaction failed before the change was applied.
        let fail: @Sendable (EngineError) -> Void

        /// A transaction of the port.
        init<Value: Sendable>(
            client: String, now: Timestamp, idempotencyKey: String?,
            body: @escaping @Sendable (inout AlertBoard, any IdempotencyKeys) throws(EngineError) -> Mutation<Value>,
            completion: @escaping @Sendable (Result<Committed<Value>, EngineError>) -> Void
        ) {
            self.client = client
            self.now = now
            self.idempotencyKey = idempotencyKey
            fail = { completion(.failure($0)) }
            apply = { board, keys in
                let mutation: Mutation<Value>
                do throws(EngineError) {
                    mutation = try body(&board, keys)
                } catch {
                    completion(.failure(error))
                    return nil
                }
                let deliveries = mutation.events.flatMap(\.pendingDeliveries)
                return Applied(change: mutation.change, idempotency: mutation.idempotency, events: mutation.events) { result in
                    completion(
                        result.map { published in
                            Committed(
                                mutation.value, change: mutation.change, displays: published.displays, deliveries: deliveries,
                                versions: published.versions)
                        })
                }
            }
        }

        /// The client's due deadlines (or, `fire` false, only its queue brought in line
        /// with its policy), with the events of what they decided.
        init(
            client: String, now: Timestamp, firing events: @escaping @Sendable (BoardChange) -> [OutboxEvent],
            completion: @escaping @Sendable (Result<Committed<Void>, EngineError>) -> Void, fire: Bool = true
        ) {
            self.client = client
            self.now = now
            self.idempotencyKey = nil
            fail = { completion(.failure($0)) }
            apply = { board, _ in
                let change = fire ? board.fireDeadlines(now: now) : BoardChange()
                let written = events(change)
                let deliveries = written.flatMap(\.pendingDeliveries)
                return Applied(change: change, idempotency: nil, events: written) { result in
                    completion(
                        result.map {
                            Committed((), change: change, displays: $0.displays, deliveries: deliveries, versions: $0.versions)
                        })
                }
            }
        }
    }

    /// What an operation did, and how to tell its caller once committed (with the displays it changed).
    struct Applied: Sendable {
        var change: BoardChange
        var idempotency: IdempotencyRecord?
        var events: [OutboxEvent]
        var finish: @Sendable (Result<Published, EngineError>) -> Void
    }

    /// What a commit tells each of its changes: the displays it changed, and the client's versions.
    struct Published: Sendable {
        var displays: [(client: String, alert: Alert?)]
        var versions: [String: VersionStep]
    }

    private struct Lane {
        var waiting: [Operation] = []
        var running = false
    }

    private let lanes = NIOLockedValueBox<[String: Lane]>([:])

    /// A client's queue as this instance last committed it: reused while the
    /// client's version is unchanged, brought up to date from the alerts of newer
    /// versions when another instance changed it. Only queues with something
    /// pending are kept (so at most `limits.max_pending_total` alerts in all).
    private struct Queue: Sendable {
        var version: Int64?
        var settings: QueueSettings
        var board: AlertBoard
        var pending: [AlertID: Alert]
    }

    private let queues = NIOLockedValueBox<[String: Queue]>([:])
    private let logger: Logger
    /// Set once, right after the store is made (it owns the lanes).
    nonisolated(unsafe) weak var store: PostgresAlertStore?

    /// Changes that run in one transaction at most.
    static let batch = 256

    init(logger: Logger) {
        self.logger = logger
    }

    func enqueue(_ operation: Operation) {
        let start = lanes.withLockedValue { lanes -> Bool in
            lanes[operation.client, default: Lane()].waiting.append(operation)
            guard !lanes[operation.client]!.running else { return false }
            lanes[operation.client]!.running = true
            return true
        }
        if start { Task { await drain(operation.client) } }
    }

    /// Runs the client's waiting changes, a batch per transaction, until none waits.
    private func drain(_ client: String) async {
        while true {
            let batch = lanes.withLockedValue { lanes -> [Operation] in
                guard var lane = lanes[client], !lane.waiting.isEmpty else {
                    lanes[client] = nil
                    return []
                }
                let batch = Array(lane.waiting.prefix(Self.batch))
                lane.waiting.removeFirst(batch.count)
                lanes[client] = lane
                return batch
            }
            guard !batch.isEmpty, let store else { return }
            await run(batch, client: client, store: store)
        }
    }

    /// The idempotency keys of a batch: those it wrote first, then those the database holds.
    private struct Keys: IdempotencyKeys {
        let key: String?
        let records: [String: IdempotencyRecord]

        func record() throws(EngineError) -> IdempotencyRecord? { key.flatMap { records[$0] } }
    }

    private func run(_ batch: [Operation], client: String, store: PostgresAlertStore) async {
        // What each change did (nil: refused, already answered), as the transaction gets to it.
        let done = NIOLockedValueBox<[Applied?]>([])
        let shown: Alert?
        let step: VersionStep?
        do {
            let queue: Queue?
            (shown, queue, step) = try await store.client.withTransaction(logger: logger) {
                [logger, queues] connection -> (Alert?, Queue?, VersionStep?) in
                var applied: [Applied?] = []
                defer { done.withLockedValue { $0 = applied } }
                // The client held until commit, in this instance or another; and a queue
                // order for each change, from the database.
                var sequences: [Int64] = []
                for try await value in try await connection.query(
                    """
                    SELECT nextval('alert_order') FROM (SELECT pg_advisory_xact_lock(hashtextextended(\(client), 0))) AS locked,
                        generate_series(1, \(batch.count))
                    """, logger: logger
                ).decode(Int64.self) {
                    sequences.append(value)
                }
                // The queue as committed: this instance's copy when no one changed the
                // client since (its version), else the copy and what changed, else read whole.
                var version: Int64?
                for try await value in try await connection.query("SELECT version FROM clients WHERE id = \(client)", logger: logger)
                    .decode(Int64.self)
                {
                    version = value
                }
                let settings = store.settings.withLockedValue { $0 }
                // Taken out of the cache, not copied: the board is then changed in place (a copy
                // shared with the cache would copy every alert of the queue at the first change).
                let cached = queues.withLockedValue { $0.removeValue(forKey: client) }.flatMap { $0.settings == settings ? $0 : nil }
                var board: AlertBoard
                var pending: [AlertID: Alert]
                var normalized = BoardChange()
                if let cached, cached.version == version {
                    board = cached.board
                    pending = cached.pending
                } else if let cached, let since = cached.version, let version, since < version {
                    // Another instance changed the client: what it changed is merged into the
                    // cached board in place, O(changed) under the lock, not the queue rebuilt.
                    board = cached.board
                    pending = cached.pending
                    var changed: [Alert] = []
                    for try await row in try await connection.query(
                        "SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = \(client) AND version > \(since)", logger: logger)
                    {
                        let alert = try AlertRow.alert(row)
                        pending[alert.id] = alert.isPending ? alert : nil
                        changed.append(alert)
                    }
                    normalized = board.merge(committedElsewhere: changed, on: client, now: batch[0].now)
                    board.committed(normalized)
                } else {
                    pending = [:]
                    for try await row in try await connection.query(
                        "SELECT \(unescaped: AlertRow.columns) FROM alerts WHERE client = \(client) AND state IN ('queued', 'displayed')",
                        logger: logger)
                    {
                        let alert = try AlertRow.alert(row)
                        pending[alert.id] = alert
                    }
                    board = AlertBoard(settings: settings, rules: store.rules)
                    // Restoring brings the queue in line with its policy (a changed one): written too,
                    // and its display change told with the first change of the batch.
                    normalized = board.restore(clients: version != nil ? [client] : [], pending: Array(pending.values), now: batch[0].now)
                    board.committed(normalized)
                }
                var records: [String: IdempotencyRecord] = [:]
                let keys = Array(Set(batch.compactMap(\.idempotencyKey)))
                if !keys.isEmpty {
                    for try await (key, alertID, digest, created) in try await connection.query(
                        """
                        SELECT key, alert_id, body_sha256, created_at FROM idempotency_keys
                        WHERE client = \(client) AND key = ANY(\(keys))
                        """, logger: logger
                    ).decode((String, String, ByteBuffer, Int64).self) {
                        guard let id = AlertID(alertID) else { continue }
                        records[key] = IdempotencyRecord(
                            client: client, key: key, alertID: id, bodyDigest: [UInt8](bytea: digest),
                            createdAt: Timestamp(milliseconds: created))
                    }
                }

                board.elsewhere = store.elsewhere(of: client)
                board.sequences = sequences
                var saved: [AlertID: Alert] = [:]
                var order: [AlertID] = []
                func save(_ alerts: [Alert]) {
                    for alert in alerts where saved.updateValue(alert, forKey: alert.id) == nil { order.append(alert.id) }
                }
                save(normalized.saved)
                var decided: [AlertID] = []
                var events: [OutboxEvent] = []
                var newKeys: [IdempotencyRecord] = []
                for operation in batch {
                    guard var change = operation.apply(&board, Keys(key: operation.idempotencyKey, records: records)) else {
                        applied.append(nil)
                        continue
                    }
                    board.committed(change.change)
                    save(change.change.saved)
                    decided += change.change.decided.map(\.id)
                    events += change.events
                    if let record = change.idempotency {
                        records[record.key] = record
                        newKeys.append(record)
                    }
                    if !normalized.displayChanged.isEmpty, !applied.contains(where: { $0 != nil }) {
                        change.change.displayChanged = Array(Set(change.change.displayChanged + normalized.displayChanged))
                    }
                    applied.append(change)
                }
                // Every change of the queue is a new version of the client, its alerts marked with it:
                // a value of the global sequence drawn under the client's lock, so versions only grow,
                // even across a client forgotten and made again.
                let written = order.isEmpty ? version : sequences.max()
                if let written, written != version {
                    try await connection.query(
                        """
                        INSERT INTO clients (id, created_at, version) VALUES (\(client), \(batch[0].now.milliseconds), \(written))
                        ON CONFLICT (id) DO UPDATE SET version = excluded.version
                        """, logger: logger)
                }
                if !order.isEmpty {
                    try await connection.query(AlertRow.upsert(order.map { saved[$0]! }, version: written ?? 0), logger: logger)
                }
                for record in newKeys {
                    try await connection.query(
                        """
                        INSERT INTO idempotency_keys (client, key, alert_id, body_sha256, created_at)
                        VALUES (\(record.client), \(record.key), \(record.alertID.description), \(record.bodyDigest.bytea),
                            \(record.createdAt.milliseconds))
                        ON CONFLICT (client, key) DO UPDATE SET alert_id = excluded.alert_id, body_sha256 = excluded.body_sha256,
                            created_at = excluded.created_at
                        """, logger: logger)
                }
                for event in events { try await Outbox.write(event, instance: store.instance, on: connection, logger: logger) }
                if !order.isEmpty {
                    // The display as committed goes with the notification where it fits: the
                    // other instances publish it without reading it back.
                    let display = written.flatMap { Notifications.display(client: client, version: $0, alert: board.displayed(on: client)) }
                    try await Notifications.send(
                        ["c:" + client] + (display.map { [$0] } ?? []) + decided.map { "d:" + $0.description }, from: store.instance,
                        on: connection, logger: logger)
                }
                store.noteDeadline(board.nextDeadline)
                for id in order {
                    let alert = saved[id]!
                    pending[id] = alert.isPending ? alert : nil
                }
                let kept = pending.isEmpty ? nil : Queue(version: written, settings: settings, board: board, pending: pending)
                return (board.displayed(on: client), kept, written.map { VersionStep(from: version, to: $0) })
            }
            queues.withLockedValue { $0[client] = queue }
        } catch {
            queues.withLockedValue { $0[client] = nil }
            let failure = store.unavailable(error)
            let applied = done.withLockedValue { $0 }
            for (index, operation) in batch.enumerated() {
                if index < applied.count {
                    applied[index]?.finish(.failure(failure))
                } else {
                    operation.fail(failure)
                }
            }
            return
        }
        // Each change is told the displays it changed, as they stand at commit (a lane is one
        // client), and the client's version: the engine's published display then has it too.
        let versions = step.map { [client: $0] } ?? [:]
        for case let change? in done.withLockedValue({ $0 }) {
            change.finish(
                .success(Published(displays: change.change.displayChanged.map { (client: $0, alert: shown) }, versions: versions)))
        }
    }
}
