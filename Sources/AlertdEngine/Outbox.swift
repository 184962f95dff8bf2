import AlertdAlertmanager
import AlertdCore
import AlertdDelivery
import AlertdWire
import Logging
import NIOConcurrencyHelpers

/// The ids of outbox events and deliveries, and where committed deliveries go.
final class Outbox: Sendable {
    private struct IDs: Sendable {
        var events = CallbackEventIDGenerator()
        var deliveries = AlertIDGenerator()
    }

    private let ids = NIOLockedValueBox(IDs())
    private let deliver: @Sendable ([PendingDelivery]) -> Void

    init(deliver: @escaping @Sendable ([PendingDelivery]) -> Void) {
        self.deliver = deliver
    }

    func eventID(at time: Timestamp) -> CallbackEventID { ids.withLockedValue { $0.events.next(at: time) } }
    func deliveryID(at time: Timestamp) -> String { "dl_" + ids.withLockedValue { $0.deliveries.next(at: time) }.description }

    /// Hands committed deliveries to the delivery worker.
    func hand(_ deliveries: [PendingDelivery]) {
        if !deliveries.isEmpty { deliver(deliveries) }
    }
}

extension Engine {
    /// The terminal events of the alerts a change decided, each with one
    /// delivery per target — the alert's `callback_url` and its client's
    /// webhooks (§5) — for the store to write in the same transaction as the
    /// terminal state. An alert with no target has no event.
    ///
    /// An alert of the Alertmanager integration answered with a silence button
    /// also gets an `alertmanager.silence` event: one delivery, to Alertmanager's
    /// silences API, written with the choice (docs/alertmanager.md).
    ///
    /// - Parameter webhooks: the targets of a request's decision as
    ///   ``committedWebhooks(of:api:)`` gives them; nil: the registry's.
    func events(for change: BoardChange, requestID: String? = nil, webhooks given: [Webhook]? = nil) -> [OutboxEvent] {
        let now = clock.now()
        // Displays and decisions pushed to the subscriptions of their clients (SPEC §11).
        let pushes = pushEvents(for: change, now: now)
        let escalations = escalationEvents(for: change, webhooks: given, now: now)
        guard !change.decided.isEmpty else { return escalations + pushes }
        let settings = self.settings
        let signingSecret = settings.signingSecret
        var events: [OutboxEvent] = []
        for alert in change.decided {
            if let alertmanager = settings.alertmanager, let target = alertmanager.silencesURL,
                let body = AlertmanagerSilence.body(for: alert, settings: alertmanager)
            {
                events.append(
                    OutboxEvent(
                        id: outbox.eventID(at: now).description, alertID: alert.id, client: alert.client,
                        type: AlertmanagerSilence.eventType,
                        createdAt: now, body: body,
                        deliveries: [OutboxDelivery(id: outbox.deliveryID(at: now), target: target, webhookID: nil, secret: "")]))
            }
            var deliveries: [OutboxDelivery] = []
            if let url = alert.callbackURL {
                if let signingSecret {
                    deliveries.append(OutboxDelivery(id: outbox.deliveryID(at: now), target: url, webhookID: nil, secret: signingSecret))
                } else {
                    var metadata: Logger.Metadata = ["alert": "\(alert.id)", "client": "\(alert.client)"]
                    if let requestID { metadata["request_id"] = "\(requestID)" }
                    logger.warning("callback_url not called: callbacks.signing_secret is not set", metadata: metadata)
                }
            }
            for webhook in given?.filter({ $0.client == alert.client }) ?? webhooks(of: alert.client) {
                deliveries.append(
                    OutboxDelivery(id: outbox.deliveryID(at: now), target: webhook.url, webhookID: webhook.id, secret: webhook.secret))
            }
            guard !deliveries.isEmpty else { continue }
            let event = CallbackEvent(
                id: outbox.eventID(at: now), state: alert.state, timestamp: alert.decidedAt ?? now,
                renderedAlert: alert.json(position: nil))
            events.append(
                OutboxEvent(
                    id: event.id.description, alertID: alert.id, client: alert.client, type: event.type, createdAt: now,
                    body: event.body, deliveries: deliveries))
        }
        return escalations + events + pushes
    }

    /// The `alert.escalated` event of each step a change took (SPEC §12), to the webhooks of
    /// the alert's client and of the client it was queued on: the alert as its own client
    /// holds it once the change is made, and the step. A step with no webhook has no event.
    func escalationEvents(for change: BoardChange, webhooks given: [Webhook]? = nil, now: Timestamp) -> [OutboxEvent] {
        guard !change.escalated.isEmpty else { return [] }
        var events: [OutboxEvent] = []
        for taken in change.escalated {
            guard let alert = change.saved.last(where: { $0.id == taken.id }), alert.escalation.indices.contains(taken.step) else {
                continue
            }
            let clients = [alert.client, taken.client]
            let targets = given?.filter { clients.contains($0.client) } ?? clients.flatMap { self.webhooks(of: $0) }
            guard !targets.isEmpty else { continue }
            let step = EscalationEvent(index: taken.step, after: alert.escalation[taken.step].after, to: taken.client, at: taken.at)
            let event = CallbackEvent(id: outbox.eventID(at: now), escalation: step, renderedAlert: alert.json(position: nil))
            events.append(
                OutboxEvent(
                    id: event.id.description, alertID: alert.id, client: alert.client, type: event.type, createdAt: now, body: event.body,
                    deliveries: targets.map { webhook in
                        OutboxDelivery(id: outbox.deliveryID(at: now), target: webhook.url, webhookID: webhook.id, secret: webhook.secret)
                    }))
        }
        return events
    }

    /// The webhooks a decision on `clients` (an alert's own, and those it is pending on,
    /// SPEC §12) sends its events to: the config file's and `api`, the API's as its
    /// transaction read them with its queues (``TransactionContext/webhooks()``: SPEC §9, a
    /// webhook registered or removed through another instance before the decision counts, as
    /// it would on one alertd); nil when the store read none, and the registry holds every
    /// change (an embedded store). The registry alone learns of another instance's webhooks
    /// through its notification, a few milliseconds after their commit.
    func committedWebhooks(of clients: [String], api: [Webhook]?) -> [Webhook]? {
        guard let api else { return nil }
        let wanted = Set(clients)
        let config = registry.withLockedValue { registry in clients.flatMap { registry.webhooks(of: $0) } }.filter { $0.source == .config }
        return config + api.filter { wanted.contains($0.client) }
    }
}
