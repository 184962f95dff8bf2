public import AlertdCore
public import AlertdEngine
public import AlertdWire
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Web Push's rows (SPEC §11): the VAPID key among the secrets, the subscriptions (told to
/// the other instances, `s`), and the answer tokens, used once across every instance.
extension PostgresAlertStore {
    public func secret(named name: String, make: @escaping @Sendable () -> [UInt8]) async throws(EngineError) -> [UInt8] {
        let candidate = make()
        let now = clock.now().milliseconds
        do {
            // The first instance's stays: every other reads it back.
            try await client.query(
                """
                INSERT INTO secrets (name, value, created_at) VALUES (\(name), \(candidate.bytea), \(now))
                ON CONFLICT (name) DO NOTHING
                """, logger: logger)
            for try await value in try await client.query("SELECT value FROM secrets WHERE name = \(name)", logger: logger).decode(
                ByteBuffer.self)
            {
                return [UInt8](bytea: value)
            }
        } catch {
            throw unavailable(error)
        }
        throw EngineError.unreadable
    }

    public func pushSubscriptions() async throws(EngineError) -> [PushSubscription] {
        do {
            var subscriptions: [PushSubscription] = []
            for try await row in try await client.query(
                "SELECT \(unescaped: Self.subscriptionColumns) FROM push_subscriptions ORDER BY id", logger: logger
            ).decode(SubscriptionRow.self) {
                subscriptions.append(Self.subscription(row))
            }
            return subscriptions
        } catch {
            throw unavailable(error)
        }
    }

    /// The columns a ``SubscriptionRow`` holds, in order.
    static let subscriptionColumns = "id, endpoint, p256dh, auth, clients, answer, decider, created_at"
    typealias SubscriptionRow = (String, String, ByteBuffer, ByteBuffer, String, Bool, String?, Int64)

    static func subscription(_ row: SubscriptionRow) -> PushSubscription {
        let (id, endpoint, p256dh, auth, clients, answer, decider, created) = row
        return PushSubscription(
            id: id, endpoint: endpoint, p256dh: [UInt8](bytea: p256dh), auth: [UInt8](bytea: auth),
            clients: PushSubscription.clients(stored: clients), answer: answer, decider: decider,
            createdAt: Timestamp(milliseconds: created))
    }

    /// Saves `subscription`, replacing the one of its endpoint, which it returns: taken in the
    /// same transaction (`DELETE … RETURNING`), not read of every subscription before it.
    public func savePushSubscription(_ subscription: PushSubscription) async throws(EngineError) -> PushSubscription? {
        let s = subscription
        let replaced = NIOLockedValueBox<PushSubscription?>(nil)
        try await write(notify: ["s"]) { connection in
            for try await row in try await connection.query(
                "DELETE FROM push_subscriptions WHERE endpoint = \(s.endpoint) RETURNING \(unescaped: Self.subscriptionColumns)",
                logger: self.logger
            ).decode(SubscriptionRow.self) {
                replaced.withLockedValue { $0 = Self.subscription(row) }
            }
            try await connection.query(
                """
                INSERT INTO push_subscriptions (\(unescaped: Self.subscriptionColumns))
                VALUES (\(s.id), \(s.endpoint), \(s.p256dh.bytea), \(s.auth.bytea), \(s.storedClients), \(s.answer), \(s.decider),
                        \(s.createdAt.milliseconds))
                """, logger: self.logger)
        }
        return replaced.withLockedValue { $0 }
    }

    public func deletePushSubscription(id: String) async throws(EngineError) -> Bool {
        let deleted = NIOLockedValueBox(false)
        try await write(notify: ["s"]) { connection in
            try await connection.query("DELETE FROM answer_tokens WHERE subscription_id = \(id)", logger: self.logger)
            for try await _ in try await connection.query(
                "DELETE FROM push_subscriptions WHERE id = \(id) RETURNING id", logger: self.logger)
            {
                deleted.withLockedValue { $0 = true }
            }
        }
        return deleted.withLockedValue { $0 }
    }

    public func saveAnswerToken(_ token: AnswerToken) async throws(EngineError) {
        do {
            try await client.query(
                """
                INSERT INTO answer_tokens (hash, alert_id, client, subscription_id, decider, expires_at, used_at)
                VALUES (\(token.hash.bytea), \(token.alertID.description), \(token.client), \(token.subscriptionID), \(token.decider),
                        \(token.expiresAt.milliseconds), \(token.usedAt?.milliseconds))
                ON CONFLICT (alert_id, subscription_id) DO UPDATE
                    SET hash = excluded.hash, expires_at = excluded.expires_at, used_at = NULL
                """, logger: logger)
        } catch {
            throw unavailable(error)
        }
    }

    public func answerToken(hash: [UInt8]) async throws(EngineError) -> AnswerToken? {
        do {
            for try await (alert, client, subscription, decider, expires, used) in try await client.query(
                """
                SELECT alert_id, client, subscription_id, decider, expires_at, used_at FROM answer_tokens WHERE hash = \(hash.bytea)
                """, logger: logger
            ).decode((String, String, String, String?, Int64, Int64?).self) {
                guard let alertID = AlertID(alert) else { return nil }
                return AnswerToken(
                    hash: hash, alertID: alertID, client: client, subscriptionID: subscription, decider: decider,
                    expiresAt: Timestamp(milliseconds: expires), usedAt: used.map(Timestamp.init(milliseconds:)))
            }
            return nil
        } catch {
            throw unavailable(error)
        }
    }

    /// One statement: of two instances using a token at once, one updates the row.
    public func useAnswerToken(hash: [UInt8], now: Timestamp) async throws(EngineError) -> Bool {
        do {
            for try await _ in try await client.query(
                "UPDATE answer_tokens SET used_at = \(now.milliseconds) WHERE hash = \(hash.bytea) AND used_at IS NULL RETURNING hash",
                logger: logger)
            {
                return true
            }
            return false
        } catch {
            throw unavailable(error)
        }
    }
}
