import AlertdCore
import AlertdEngine
import AlertdWire
import Logging
import PostgresNIO

/// The callback outbox in PostgreSQL: events written with the decision that
/// made them; each delivery attempted by one instance at a time, under a lease.
enum Outbox {
    /// Writes an event and its deliveries (due at once), in the decision's
    /// transaction; the instance that wrote them holds them (it attempts them
    /// next), for as long as a retry is held.
    static func write(_ event: OutboxEvent, instance: String, on connection: PostgresConnection, logger: Logger) async throws {
        let lease = event.createdAt.adding(milliseconds: PostgresAlertStore.retryLeaseMilliseconds).milliseconds
        try await connection.query(
            """
            INSERT INTO events (id, alert_id, client, type, created_at, body)
            VALUES (\(event.id), \(event.alertID.description), \(event.client), \(event.type), \(event.createdAt.milliseconds), \(event.body.bytea))
            """, logger: logger)
        for delivery in event.deliveries {
            try await connection.query(
                """
                INSERT INTO deliveries (id, event_id, alert_id, target, webhook_id, secret, state, next_attempt_at, lease_until, leased_by)
                VALUES (\(delivery.id), \(event.id), \(event.alertID.description), \(delivery.target), \(delivery.webhookID),
                    \(delivery.secret), 'pending', \(event.createdAt.milliseconds), \(lease), \(instance))
                """, logger: logger)
        }
    }
}
