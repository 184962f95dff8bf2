public import AlertdCore
public import AlertdWire

/// The silence a button of an Alertmanager alert creates: the body of
/// Alertmanager's `POST /api/v2/silences`, written when the choice is
/// committed and sent through the outbox like a callback.
///
/// ```json
/// {"matchers": [{"name": "alertname", "value": "DiskFull", "isRegex": false, "isEqual": true}, …],
///  "startsAt": "2026-11-21T19:01:00.123Z", "endsAt": "2026-11-21T20:01:00.123Z",
///  "createdBy": "ops-console",
///  "comment": "Silenced from alertd: alert 01… on client ops, button \"Silence 1h\""}
/// ```
///
/// It runs from the choice: Alertmanager reached late (down, restarting)
/// silences what is left of the hour, not a new hour.
public enum AlertmanagerSilence {
    /// The outbox event type of a silence (callbacks are `alert.<state>`).
    public static let eventType = DeliveryKind.alertmanagerSilenceType

    /// `createdBy` when the API has no tokens (nobody's name is known).
    public static let anonymousCreator = "alertd"

    /// The silence choosing `alert`'s button creates, or nil: the alert was not
    /// posted by the integration, it is not answered, its button makes no silence,
    /// or its labels do not allow one (``matchers(_:only:)``).
    ///
    /// The matchers are those the alert showed when it was posted
    /// (`metadata.alertmanager.silence_matchers`, written only by the receiver), so a
    /// config reloaded in between never widens what the operator agreed to.
    public static func body(for alert: Alert, settings: AlertmanagerSettings) -> [UInt8]? {
        guard alert.state == .answered, let result = alert.result, let title = result.button,
            let seconds = settings.button(titled: title)?.silenceSeconds, let labels = AlertmanagerMapping.labels(of: alert)
        else { return nil }
        let scope = matchers(labels, only: AlertmanagerMapping.silenceMatcherNames(of: alert) ?? settings.matcherLabels)
        guard scope.missing.isEmpty else { return nil }
        let decidedAt = alert.decidedAt ?? alert.createdAt
        return body(
            matchers: scope.matchers, startsAt: decidedAt, endsAt: decidedAt.adding(seconds: seconds),
            createdBy: result.decidedBy ?? anonymousCreator,
            comment: "Silenced from alertd: alert \(alert.id) on client \(alert.client), button \"\(title)\"")
    }

    /// The label a silence always matches on: a silence without it would cover
    /// every alert that shares the other labels (`severity="critical"`).
    public static let requiredLabel = "alertname"

    /// What a silence of an alert with `labels` matches on: ``requiredLabel`` and
    /// the labels named in `names`, or, when `names` is nil, every label of the
    /// alert. `missing` names the labels the silence needs and the alert lacks;
    /// when it is not empty there is no silence — never a wider one.
    public static func matchers(
        _ labels: [AlertmanagerAlert.Label], only names: [String]?
    ) -> (matchers: [AlertmanagerAlert.Label], missing: [String]) {
        var required = [requiredLabel]
        for name in names ?? [] where !required.contains(name) { required.append(name) }
        let missing = required.filter { name in !labels.contains { $0.name == name } }
        guard missing.isEmpty else { return ([], missing) }
        guard let names else { return (labels, []) }
        return (labels.filter { $0.name == requiredLabel || names.contains($0.name) }, [])
    }

    static func body(
        matchers: [AlertmanagerAlert.Label], startsAt: Timestamp, endsAt: Timestamp, createdBy: String, comment: String
    ) -> [UInt8] {
        var json = JSONWriter(capacity: 256 + matchers.count * 96)
        json.beginObject()
        json.key("matchers")
        json.beginArray()
        for matcher in matchers {
            json.beginObject()
            json.key("name")
            json.string(matcher.name)
            json.key("value")
            json.string(matcher.value)
            json.key("isRegex")
            json.bool(false)
            json.key("isEqual")
            json.bool(true)
            json.endObject()
        }
        json.endArray()
        json.key("startsAt")
        json.timestamp(startsAt)
        json.key("endsAt")
        json.timestamp(endsAt)
        json.key("createdBy")
        json.string(createdBy)
        json.key("comment")
        json.string(comment)
        json.endObject()
        return json.bytes
    }

    /// When a stored silence body ends (`endsAt`): past it, creating it is pointless.
    public static func endsAt(of body: [UInt8]) -> Timestamp? {
        guard case .object(let object)? = try? JSONParser.parse(body), case .string(let text)? = object["endsAt"] else { return nil }
        return Timestamp(rfc3339: text)
    }

    /// The id in Alertmanager's answer to a created silence, `{"silenceID": "…"}`.
    public static func silenceID(fromResponse body: [UInt8]) -> String? {
        guard case .object(let object)? = try? JSONParser.parse(body), case .string(let id)? = object["silenceID"], !id.isEmpty,
            id.utf8.count <= 128
        else { return nil }
        return id
    }
}
