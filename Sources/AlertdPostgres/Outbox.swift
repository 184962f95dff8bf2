import AlertdCore
import AlertdEngine
import AlertdWire
import Logging
import PostgresNIO

/// The callback outbox in PostgreSQL: events written with the decision that
/// made them; each delivery attempted by one instance at a time, under a lease.
enum Outbox {
    /// Writes an event and its deliveries (due at once), in the decision's transaction.
    static func write(_ event: OutboxEvent, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO events (id, alert_id, client, type, created_at, body)
            VALUES (\(event.id), \(event.alertID.description), \(event.client), \(event.type), \(event.createdAt.milliseconds), \(event.body.bytea))
            """, logger: logger)
        for delivery in event.deliveries {
            try await connection.query(
                """
                INSERT INTO deliveries (id, event_id, alert_id, target, webhook_id, secret, state, next_attempt_at)
                VALUES (\(delivery.id), \(event.id), \(event.alertID.description), \(delivery.target), \(delivery.webhookID),
                    \(delivery.secret), 'pending', \(event.createdAt.milliseconds))
                """, logger: logger)
        }
    }
}
