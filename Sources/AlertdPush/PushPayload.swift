public import AlertdCore
public import AlertdWire

/// What a push tells a device (SPEC §11), as the JSON its service worker decrypts:
///
/// - `alert.displayed`: `{"type", "alert": {id, client, title, message, style, buttons,
///   priority, quorum, votes, expires_at}}`, and for a subscription that may answer,
///   `answer_url` and `answer_expires_at`, added when the push is sent
///   (``withAnswer(_:url:expiresAt:)``): the outbox keeps no capability at rest.
/// - `alert.decided`: `{"type", "alert": {id, client, state}}`, so the device can close
///   the notification the first push opened (same `Topic`).
///
/// Never in a payload: `metadata`, `callback_url`, `result`, the deciders' answers (a
/// vote's `comment` and `values` are written `null` and `{}`).
public enum PushPayload {
    public static let displayedType = "alert.displayed"
    public static let decidedType = "alert.decided"
    /// Room kept for `answer_url` and `answer_expires_at`, added at send time.
    public static let answerRoom = 160
    /// The most a stored payload may hold, so that with its answer it still fits one record.
    public static let storedLimit = WebPushEncryption.maxPlaintext - answerRoom

    /// The `alert.displayed` payload of `alert`, at most ``storedLimit`` bytes: a message
    /// too long is cut and ends with "…"; should the rest still not fit (a long title and
    /// many long buttons in a script of 4-byte characters), the title is cut and the
    /// buttons left out: a tap opens the dashboard on the alert, which shows it whole.
    ///
    /// `reminder`: the alert is still displayed and unanswered `push.remind_every` later; the
    /// payload says so (`"reminder": true`), so a device can word its notification.
    ///
    /// `client`: the client it is displayed on, which the payload's `client` names (a tap
    /// opens that dashboard): its own, or one it escalated to (SPEC §12), when the payload
    /// also says `escalated_from`, its own client. Nil: its own.
    public static func displayed(_ alert: Alert, on client: String? = nil, reminder: Bool = false) -> [UInt8] {
        let client = client ?? alert.client
        let whole = displayed(alert, on: client, message: alert.message, title: alert.title, buttons: true, reminder: reminder)
        if whole.count <= storedLimit { return whole }
        if let message = alert.message, !message.isEmpty {
            if let cut = fitting(
                message, within: { displayed(alert, on: client, message: $0, title: alert.title, buttons: true, reminder: reminder) })
            {
                return cut
            }
        }
        return fitting(alert.title, within: { displayed(alert, on: client, message: nil, title: $0, buttons: false, reminder: reminder) })
            ?? displayed(alert, on: client, message: nil, title: "…", buttons: false, reminder: reminder)
    }

    /// The `alert.decided` payload of a terminal `alert`, as pushed to the subscriptions of
    /// `client` (nil: its own).
    public static func decided(_ alert: Alert, on client: String? = nil) -> [UInt8] {
        var json = JSONWriter(capacity: 128)
        json.beginObject()
        json.key("type")
        json.string(decidedType)
        json.key("alert")
        json.beginObject()
        json.key("id")
        json.string(alert.id.description)
        json.key("client")
        json.string(client ?? alert.client)
        json.key("state")
        json.string(alert.state.rawValue)
        json.endObject()
        json.endObject()
        return json.bytes
    }

    /// `payload` with `answer_url` and `answer_expires_at` added (an `alert.displayed`
    /// payload whose subscription may answer); nil when `payload` is not an object.
    public static func withAnswer(_ payload: [UInt8], url: String, expiresAt: Timestamp) -> [UInt8]? {
        guard payload.last == UInt8(ascii: "}") else { return nil }
        var tail = JSONWriter(capacity: 128)
        tail.beginObject()
        tail.key("answer_url")
        tail.string(url)
        tail.key("answer_expires_at")
        tail.timestamp(expiresAt)
        tail.endObject()
        // {…} + {"answer_url":…} → {…,"answer_url":…}
        return Array(payload.dropLast()) + [UInt8(ascii: ",")] + Array(tail.bytes.dropFirst())
    }

    /// What the sender needs of a stored payload: its type, the alert's id (the `Topic`),
    /// its priority (the `Urgency`) and expiry (the `TTL`).
    public struct Summary: Sendable, Hashable {
        public var type: String
        public var alertID: String
        public var priority: Int
        public var expiresAt: Timestamp?
        /// A reminder's: when the alert it reminds of was displayed (a display after it is another's to remind of).
        public var reminderOf: Timestamp? = nil
    }

    public static func summary(of payload: [UInt8]) -> Summary? {
        guard case .object(let object)? = try? JSONParser.parse(payload), case .string(let type)? = object["type"],
            case .object(let alert)? = object["alert"], case .string(let id)? = alert["id"]
        else { return nil }
        var priority = 0
        if case .number(let number)? = alert["priority"], let whole = number.wholeInt { priority = whole }
        var expiresAt: Timestamp?
        if case .string(let text)? = alert["expires_at"] { expiresAt = Timestamp(rfc3339: text) }
        var reminderOf: Timestamp?
        if case .bool(true)? = object["reminder"], case .string(let text)? = alert["displayed_at"] {
            reminderOf = Timestamp(rfc3339: text)
        }
        return Summary(type: type, alertID: id, priority: priority, expiresAt: expiresAt, reminderOf: reminderOf)
    }

    private static func displayed(
        _ alert: Alert, on client: String, message: String?, title: String, buttons: Bool, reminder: Bool
    ) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        json.key("type")
        json.string(displayedType)
        if reminder {
            json.key("reminder")
            json.bool(true)
        }
        json.key("alert")
        json.beginObject()
        json.key("id")
        json.string(alert.id.description)
        json.key("client")
        json.string(client)
        if client != alert.client {
            json.key("escalated_from")
            json.string(alert.client)
        }
        json.key("title")
        json.string(title)
        json.key("message")
        json.string(message)
        json.key("style")
        json.string(alert.style.rawValue)
        json.key("buttons")
        json.buttons(buttons ? alert.buttons : [])
        json.key("priority")
        json.int(alert.priority)
        json.key("quorum")
        json.int(alert.quorum)
        json.key("votes")
        // Who voted for what, never their words (SPEC §13's comments and values are the
        // deciders' answers, and ten comments would not fit one push).
        json.votes(
            alert.votes.map { vote in
                var bare = vote
                bare.comment = nil
                bare.values = [:]
                return bare
            })
        json.key("expires_at")
        json.timestamp(alert.expiresAt)
        if reminder {
            json.key("displayed_at")
            json.timestamp(alert.displayedAt)
        }
        json.endObject()
        json.endObject()
        return json.bytes
    }

    /// The longest prefix of `text` (in Unicode scalars) ending in "…" whose `render` fits
    /// in ``storedLimit``; nil when not even "…" does.
    private static func fitting(_ text: String, within render: (String) -> [UInt8]) -> [UInt8]? {
        let scalars = Array(text.unicodeScalars)
        func cut(_ count: Int) -> String {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars[..<count])
            view.append("…")
            return String(view)
        }
        var (low, high) = (0, scalars.count)
        guard render(cut(0)).count <= storedLimit else { return nil }
        while low < high {
            let middle = (low + high + 1) / 2
            if render(cut(middle)).count <= storedLimit { low = middle } else { high = middle - 1 }
        }
        return render(cut(low))
    }
}
