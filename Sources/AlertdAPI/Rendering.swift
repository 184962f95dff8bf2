import AlertdCore
import AlertdWire

/// The API's other resources, written straight to JSON bytes (the alert's is `Alert.json(position:)`).
enum Rendering {
    /// `{"deliveries": [...]}`: each target of an alert's event, its attempts and next try.
    ///
    /// - Parameter wholeTargets: whether targets are shown as they are (to
    ///   `admin`, or to everyone when no tokens are configured); otherwise
    ///   through ``Redaction/callbackURL(_:)``.
    static func deliveries(_ records: [DeliveryRecord], wholeTargets: Bool) -> [UInt8] {
        var out = JSONWriter(capacity: 256 + records.count * 256)
        out.beginObject()
        out.key("deliveries")
        out.beginArray()
        for record in records {
            out.beginObject()
            out.key("id")
            out.string(record.id)
            out.key("event_id")
            out.string(record.eventID)
            out.key("type")
            out.string(record.type)
            out.key("target")
            out.string(wholeTargets ? record.target : Redaction.callbackURL(record.target))
            out.key("webhook_id")
            out.string(record.webhookID)
            out.key("state")
            out.string(record.state.rawValue)
            out.key("attempts")
            out.beginArray()
            for attempt in record.attempts {
                out.beginObject()
                out.key("at")
                out.timestamp(attempt.at)
                out.key("status_code")
                if let code = attempt.statusCode { out.int(code) } else { out.null() }
                out.key("error")
                out.string(attempt.error)
                out.endObject()
            }
            out.endArray()
            out.key("next_attempt_at")
            out.timestamp(record.state == .pending ? record.nextAttemptAt : nil)
            out.key("silence_id")
            out.string(record.silenceID)
            out.endObject()
        }
        out.endArray()
        out.endObject()
        return out.bytes
    }

    /// A webhook as listed: never its secret.
    static func write(_ webhook: Webhook, into out: inout JSONWriter) {
        out.beginObject()
        out.key("id")
        out.string(webhook.id)
        out.key("url")
        out.string(webhook.url)
        out.key("source")
        out.string(webhook.source.rawValue)
        out.endObject()
    }

    /// The answer to a registration: the only time the secret is shown.
    static func createdWebhook(_ webhook: Webhook) -> [UInt8] {
        var out = JSONWriter(capacity: 256)
        out.beginObject()
        out.key("id")
        out.string(webhook.id)
        out.key("url")
        out.string(webhook.url)
        out.key("secret")
        out.string(webhook.secret)
        out.endObject()
        return out.bytes
    }
}
