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
    func events(for change: BoardChange, requestID: String? = nil) -> [OutboxEvent] {
        guard !change.decided.isEmpty else { return [] }
        let now = clock.now()
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
            for webhook in webhooks(of: alert.client) {
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
        return events
    }
}
