public import AlertdWire
import NIOHTTP1

// MARK: Webhooks and deliveries

extension AlertdClient {
    /// Registers a callback URL for every alert of `client` (admin role): `POST …/webhooks`.
    ///
    /// The answer holds the signing secret — the only time it is shown. Without `secret` the
    /// daemon generates one (`whsec_…`).
    ///
    /// ```swift
    /// let hook = try await alerts.addWebhook(on: "ops", url: "https://ci.example.com/alertd")
    /// let verifier = try WebhookVerifier(secret: hook.secret!)
    /// ```
    public func addWebhook(on client: String, url: String, secret: String? = nil) async throws -> WebhookResource {
        let answer = try await transport.send(
            .POST, Self.clientPath(client) + "/webhooks", body: WebhookRegistration(url: url, secret: secret),
            timeout: requestTimeout)
        return try transport.decode(WebhookResource.self, from: answer)
    }

    /// The webhooks registered for `client`, without their secrets.
    public func webhooks(on client: String) async throws -> [WebhookResource] {
        let answer = try await transport.send(.GET, Self.clientPath(client) + "/webhooks", timeout: requestTimeout)
        return try transport.decode(WebhookList.self, from: answer).webhooks
    }

    /// One registered webhook, without its secret.
    public func webhook(on client: String, id: String) async throws -> WebhookResource {
        let answer = try await transport.send(
            .GET, Self.clientPath(client) + "/webhooks/" + Transport.percentEncoded(id), timeout: requestTimeout)
        return try transport.decode(WebhookResource.self, from: answer)
    }

    /// Removes a registered webhook. Its deliveries still pending are cancelled with it
    /// (their state becomes `cancelled`): returns how many (the daemon's
    /// `Alertd-Cancelled-Deliveries`; 0 from a daemon that does not say, which cancels none).
    @discardableResult
    public func removeWebhook(on client: String, id: String) async throws -> Int {
        let answer = try await transport.send(
            .DELETE, Self.clientPath(client) + "/webhooks/" + Transport.percentEncoded(id), timeout: requestTimeout)
        return answer.headers.first(name: "alertd-cancelled-deliveries").flatMap { Int($0) } ?? 0
    }

    /// The push subscriptions this token made (SPEC §11; `admin`: every one), never the devices' keys.
    public func pushSubscriptions() async throws -> [PushSubscriptionResource] {
        let answer = try await transport.send(.GET, "/v1/push/subscriptions", timeout: requestTimeout)
        return try transport.decode(PushSubscriptionList.self, from: answer).subscriptions
    }

    /// Removes a push subscription (this token's, or any with `admin`): the device is pushed
    /// nothing more, and its answer links stop working.
    public func removePushSubscription(id: String) async throws {
        _ = try await transport.send(.DELETE, "/v1/push/subscriptions/" + Transport.percentEncoded(id), timeout: requestTimeout)
    }

    /// The deliveries of an alert's terminal event: each target, every attempt, the next one's time.
    ///
    /// ```swift
    /// for delivery in try await alerts.deliveries(on: "ops", id: id) {
    ///     print(delivery.target, delivery.state, delivery.attempts.count)
    /// }
    /// ```
    public func deliveries(on client: String, id: String) async throws -> [DeliveryRecord] {
        let answer = try await transport.send(.GET, Self.alertPath(client, id) + "/deliveries", timeout: requestTimeout)
        return try transport.decode(DeliveryList.self, from: answer).deliveries
    }
}
