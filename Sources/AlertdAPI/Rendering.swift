import AlertdCore
import AlertdWire

/// The alert resource of §2, written straight to JSON bytes.
enum Rendering {
    static func alert(_ alert: Alert, position: Int?) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        write(alert, position: position, into: &json)
        return json.bytes
    }

    static func write(_ alert: Alert, position: Int?, into json: inout JSONWriter) {
        json.beginObject()
        json.key("id")
        json.string(alert.id.description)
        json.key("client")
        json.string(alert.client)
        json.key("state")
        json.string(alert.state.rawValue)
        json.key("position")
        if let position, alert.isPending { json.int(position) } else { json.null() }
        json.key("title")
        json.string(alert.title)
        json.key("message")
        json.string(alert.message)
        json.key("style")
        json.string(alert.style.rawValue)
        json.key("buttons")
        json.buttons(alert.buttons)
        json.key("priority")
        json.int(alert.priority)
        json.key("expires_in")
        seconds(alert.expiresAt.milliseconds - alert.createdAt.milliseconds, into: &json)
        json.key("dismiss_after")
        if let ms = alert.dismissAfterMilliseconds { seconds(ms, into: &json) } else { json.null() }
        json.key("callback_url")
        json.string(alert.callbackURL)
        json.key("metadata")
        if let metadata = alert.metadata { json.raw(metadata.bytes) } else { json.null() }
        json.key("created_at")
        json.timestamp(alert.createdAt)
        json.key("displayed_at")
        json.timestamp(alert.displayedAt)
        json.key("decided_at")
        json.timestamp(alert.decidedAt)
        json.key("expires_at")
        json.timestamp(alert.expiresAt)
        json.key("result")
        if let result = alert.result {
            json.beginObject()
            json.key("outcome")
            json.string(result.outcome.rawValue)
            json.key("button")
            json.string(result.button)
            json.key("button_index")
            if let index = result.buttonIndex { json.int(index) } else { json.null() }
            json.key("cancelled")
            json.bool(result.cancelled)
            json.key("decided_by")
            json.string(result.decidedBy)
            json.endObject()
        } else {
            json.null()
        }
        json.endObject()
    }

    /// Whole seconds as an integer, otherwise seconds with milliseconds.
    private static func seconds(_ milliseconds: Int64, into json: inout JSONWriter) {
        if milliseconds % 1000 == 0 {
            json.int64(milliseconds / 1000)
        } else {
            json.double(Double(milliseconds) / 1000)
        }
    }

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
