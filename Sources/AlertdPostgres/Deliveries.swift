public import AlertdCore
public import AlertdEngine
public import AlertdWire
import Logging
import PostgresNIO

/// The outbox shared by every instance: each attempt made by one instance,
/// under a lease; a dead instance's deliveries taken over at once (its ``Presence``
/// lock is free), an unknown holder's once its lease ran out.
extension PostgresAlertStore {
    public func claim(_ delivery: PendingDelivery, until: Timestamp) async throws(EngineError) -> PendingDelivery? {
        guard let attempts = try await claim(delivery.id, until: until) else { return nil }
        // The store's count, or this instance's own when its last attempt's record has not
        // committed yet.
        var claimed = delivery
        claimed.attemptsMade = max(delivery.attemptsMade, attempts)
        return claimed
    }

    /// Takes a delivery for one attempt, until `until`: the attempts it had so far, or nil
    /// when another instance holds it or it is settled.
    func claim(_ deliveryID: String, until: Timestamp) async throws(EngineError) -> Int? {
        let now = clock.now()
        do {
            var attempts: Int?
            for try await count in try await client.query(
                """
                WITH dead AS MATERIALIZED (\(unescaped: Presence.dead))
                UPDATE deliveries SET lease_until = \(until.milliseconds), leased_by = \(instance)
                WHERE id = \(deliveryID) AND state = 'pending'
                  AND (lease_until IS NULL OR lease_until < \(now.milliseconds) OR leased_by = \(instance)
                       OR leased_by IN (SELECT id FROM dead))
                RETURNING (SELECT pg_catalog.count(*) FROM delivery_attempts a WHERE a.delivery_id = deliveries.id)
                """, logger: logger
            ).decode(Int.self) {
                attempts = count
            }
            return attempts
        } catch {
            throw unavailable(error)
        }
    }

    public func takeOrphans(now: Timestamp, until: Timestamp, limit: Int) async throws(EngineError) -> [PendingDelivery]? {
        do {
            var taken: [PendingDelivery] = []
            let rows = try await client.query(
                """
                WITH dead AS MATERIALIZED (\(unescaped: Presence.dead))
                UPDATE deliveries d SET lease_until = \(until.milliseconds), leased_by = \(instance)
                FROM events e
                WHERE e.id = d.event_id AND d.id IN (
                    SELECT id FROM deliveries WHERE state = 'pending' AND next_attempt_at <= \(now.milliseconds)
                      AND (lease_until IS NULL OR lease_until < \(now.milliseconds) OR leased_by IN (SELECT id FROM dead))
                    ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING d.id, d.event_id, d.target, d.secret, e.body, e.created_at, d.next_attempt_at,
                    (SELECT pg_catalog.count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id), e.type, e.client
                """, logger: logger)
            for try await (id, event, target, secret, body, created, due, attempts, type, client) in rows.decode(
                (String, String, String, String, ByteBuffer, Int64, Int64?, Int, String, String).self)
            {
                taken.append(
                    PendingDelivery(
                        id: id, eventID: event, target: target, secret: secret, body: [UInt8](bytea: body),
                        eventCreatedAt: Timestamp(milliseconds: created), attemptsMade: attempts,
                        due: Timestamp(milliseconds: due ?? created), kind: DeliveryKind(eventType: type), client: client))
            }
            return taken
        } catch {
            throw unavailable(error)
        }
    }

    /// Attempts are written in the order they are recorded, a batch per
    /// transaction (``Recorder``): a delivery's later attempt never commits
    /// before its earlier one, whose settled state it would otherwise undo.
    /// Returns once the attempt's batch committed.
    public func record(_ attempt: AttemptRecord) async throws(EngineError) {
        try await withCheckedContinuation { (done: CheckedContinuation<Result<Void, EngineError>, Never>) in
            recorder.enqueue(attempt) { done.resume(returning: $0) }
        }.get()
    }

    /// Writes one batch of attempt records, in order, in one transaction.
    func write(_ batch: [AttemptRecord]) async throws {
        try await client.withTransaction(logger: logger) { [instance, logger] connection in
            for attempt in batch {
                // One way only, as in the embedded store: an attempt counts while its
                // delivery is pending; a settled one, or a number recorded, stays.
                try await connection.query(
                    """
                    INSERT INTO delivery_attempts (delivery_id, number, at, status_code, error)
                    SELECT id, \(attempt.number), \(attempt.attempt.at.milliseconds), \(attempt.attempt.statusCode),
                        \(attempt.attempt.error)
                    FROM deliveries WHERE id = \(attempt.deliveryID) AND state = 'pending'
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
                // A retry stays this instance's until some time after it is due: no
                // other instance takes it over unless this one is gone by then.
                let lease = attempt.nextAttemptAt.map { $0.adding(milliseconds: Self.retryLeaseMilliseconds).milliseconds }
                try await connection.query(
                    """
                    UPDATE deliveries SET state = \(attempt.state.rawValue), next_attempt_at = \(attempt.nextAttemptAt?.milliseconds),
                        lease_until = \(lease), leased_by = \(lease == nil ? nil : instance), result = coalesce(\(attempt.result), result)
                    WHERE id = \(attempt.deliveryID) AND state = 'pending'
                    """, logger: logger)
            }
        }
    }

    /// How long after a retry is due it stays with the instance that made the attempt before.
    static let retryLeaseMilliseconds: Int64 = 30_000

    public func deliveries(of alertID: AlertID) async throws(EngineError) -> [DeliveryRecord] {
        try await read { [self] in
            do {
                // Both reads on one connection in one snapshot: read one after the other
                // as separate statements, a batch of attempt records committed between
                // them showed an attempt next to the state from before it (four attempts
                // of a delivery, the fourth a 204, and the delivery still pending).
                let records = try await client.withTransaction(logger: logger) { [logger] connection in
                    try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                    var rows:
                        [(
                            id: String, event: String, target: String, webhook: String?, state: String, next: Int64?, type: String?,
                            result: String?
                        )] = []
                    for try await row in try await connection.query(
                        """
                        SELECT d.id, d.event_id, d.target, d.webhook_id, d.state, d.next_attempt_at, e.type, d.result
                        FROM deliveries d LEFT JOIN events e ON e.id = d.event_id
                        WHERE d.alert_id = \(alertID.description) ORDER BY d.id
                        """, logger: logger
                    ).decode((String, String, String, String?, String, Int64?, String?, String?).self) {
                        rows.append(row)
                    }
                    var attempts: [String: [DeliveryAttempt]] = [:]
                    if !rows.isEmpty {
                        for try await (delivery, at, status, error) in try await connection.query(
                            """
                            SELECT delivery_id, at, status_code, error FROM delivery_attempts
                            WHERE delivery_id = ANY(\(rows.map(\.id))) ORDER BY delivery_id, number
                            """, logger: logger
                        ).decode((String, Int64, Int?, String?).self) {
                            attempts[delivery, default: []].append(
                                DeliveryAttempt(at: Timestamp(milliseconds: at), statusCode: status, error: error))
                        }
                    }
                    return rows.map { row in
                        DeliveryRecord(
                            id: row.id, eventID: row.event, target: row.target, webhookID: row.webhook,
                            state: DeliveryState(rawValue: row.state) ?? .pending, attempts: attempts[row.id] ?? [],
                            nextAttemptAt: row.next.map(Timestamp.init(milliseconds:)), type: row.type, silenceID: row.result)
                    }
                }
                return records
            }
        }
    }

    /// None at start: the worker takes the deliveries no instance holds (``takeOrphans(now:until:limit:)``).
    public func pendingDeliveries() async throws(EngineError) -> [PendingDelivery] { [] }
}
