public import AlertdCore
public import AlertdEngine
import AlertdWire
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Synchronization

/// The API's webhooks, and what other instances change.
extension PostgresAlertStore {

    /// Other instances change them too: read again for each request that needs them as committed.
    public func webhooksIfChangedElsewhere() async throws(EngineError) -> [Webhook]? { try await webhooks() }

    public func webhooks() async throws(EngineError) -> [Webhook] {
        do {
            var webhooks: [Webhook] = []
            for try await (id, client, url, secret, created) in try await client.query(
                "SELECT id, client, url, secret, created_at FROM webhooks ORDER BY id", logger: logger
            ).decode((String, String, String, String, Int64).self) {
                webhooks.append(
                    Webhook(id: id, client: client, url: url, secret: secret, createdAt: Timestamp(milliseconds: created), source: .api))
            }
            return webhooks
        } catch {
            throw unavailable(error)
        }
    }

    public func saveWebhook(_ webhook: Webhook) async throws(EngineError) {
        try await write(notify: ["w"]) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO webhooks (id, client, url, secret, created_at)
                VALUES (\(webhook.id), \(webhook.client), \(webhook.url), \(webhook.secret), \(webhook.createdAt.milliseconds))
                ON CONFLICT (client, url) DO NOTHING RETURNING id
                """, logger: self.logger)
            var inserted = false
            for try await _ in rows { inserted = true }
            // Another instance registered the URL at the same moment.
            if !inserted {
                throw EngineError(
                    .webhookExists, "client \(webhook.client) already has a webhook for \(URLRedaction.redacted(webhook.url))")
            }
        }
    }

    /// Its pending deliveries are cancelled in the same transaction, whichever instance
    /// holds them: an instance that attempts one later finds it settled (its claim fails).
    public func deleteWebhook(id: String) async throws(EngineError) -> [String] {
        let cancelled = NIOLockedValueBox<[String]>([])
        try await write(notify: ["w"]) { connection in
            try await connection.query("DELETE FROM webhooks WHERE id = \(id)", logger: self.logger)
            var ids: [String] = []
            for try await delivery in try await connection.query(
                """
                UPDATE deliveries SET state = 'cancelled', next_attempt_at = NULL, lease_until = NULL, leased_by = NULL
                WHERE webhook_id = \(id) AND state = 'pending' RETURNING id
                """, logger: self.logger
            ).decode(String.self) {
                ids.append(delivery)
            }
            cancelled.withLockedValue { $0 = ids.sorted() }
        }
        return cancelled.withLockedValue { $0 }
    }

    // MARK: - Changes made elsewhere

    public var changes: AsyncStream<StoreChange> { notifications.changes }
}
