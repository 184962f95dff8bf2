import AlertdCore
import AlertdEngine
import AlertdWire

/// The API's other resources, as AlertdWire's types write them (the alert's is
/// `Alert.json(position:)`): one writer per shape, shared with the SDK's reader.
enum Rendering {
    /// `{"deliveries": [...]}`: each target of an alert's event, its attempts and next try.
    ///
    /// - Parameter wholeTargets: whether targets are shown as they are (to
    ///   `admin`, or to everyone when no tokens are configured); otherwise
    ///   through ``Redaction/callbackURL(_:)``.
    ///
    /// A push's target is a device's endpoint at its push service, which identifies the
    /// device: it is shown redacted to everyone, `admin` included (SPEC §11).
    static func deliveries(_ records: [DeliveryRecord], wholeTargets: Bool) -> [UInt8] {
        var out = JSONWriter(capacity: 256 + records.count * 256)
        let shown = records.map { record in
            var shown = record
            if !wholeTargets || record.type?.hasPrefix(DeliveryKind.pushTypePrefix) == true {
                shown.target = Redaction.callbackURL(record.target)
            }
            return shown
        }
        DeliveryList(deliveries: shown).write(into: &out)
        return out.bytes
    }

    /// `{"alerts": [...], "next_cursor": …}`: a page of a client's alerts, each with its
    /// position while pending, its `callback_url` through ``Redaction/alert(_:)`` unless
    /// `wholeCallbackURLs`.
    static func alerts(_ alerts: [PositionedAlert], next: String?, wholeCallbackURLs: Bool) -> [UInt8] {
        var out = JSONWriter(capacity: 256 + alerts.count * 512)
        AlertPage.write(nextCursor: next, into: &out) { out in
            for item in alerts {
                (wholeCallbackURLs ? item.alert : Redaction.alert(item.alert)).write(position: item.position, into: &out)
            }
        }
        return out.bytes
    }

    /// A webhook as listed: never its secret.
    static func listed(_ webhook: Webhook) -> WebhookResource {
        WebhookResource(id: webhook.id, url: webhook.url, source: webhook.source.rawValue)
    }

    /// `{"webhooks": [...]}`, without secrets.
    static func webhooks(_ webhooks: [Webhook]) -> [UInt8] {
        var out = JSONWriter(capacity: 64 + webhooks.count * 128)
        WebhookList(webhooks: webhooks.map(listed)).write(into: &out)
        return out.bytes
    }

    /// A single webhook as listed.
    static func webhook(_ webhook: Webhook) -> [UInt8] {
        var out = JSONWriter(capacity: 128)
        listed(webhook).write(into: &out)
        return out.bytes
    }

    /// The answer to a registration: the only time the secret is shown.
    static func createdWebhook(_ webhook: Webhook) -> [UInt8] {
        var out = JSONWriter(capacity: 256)
        WebhookResource(id: webhook.id, url: webhook.url, secret: webhook.secret).write(into: &out)
        return out.bytes
    }

    /// `{"clients": [...], "next_cursor": …}`: the cursor names the page's last client when more follow.
    static func clients(_ page: [Engine.ClientSummary], more: Bool) -> [UInt8] {
        var out = JSONWriter(capacity: 64 + page.count * 64)
        ClientList(
            clients: page.map { ClientSummary(client: $0.client, pending: $0.pending, displayed: $0.displayed?.description) },
            nextCursor: more ? page.last.map { "c." + $0.client } : nil
        ).write(into: &out)
        return out.bytes
    }
}
