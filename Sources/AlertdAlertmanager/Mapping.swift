public import AlertdCore
public import AlertdWire
import Crypto

/// How an Alertmanager alert becomes an alertd alert, and how its repeats are
/// recognised.
///
/// - title: `annotations.summary`, else `labels.alertname`, else
///   `Alertmanager alert <fingerprint>`; cut to 256 characters (with `…`).
/// - message: `annotations.description`, cut to 4096 characters with what a silence would match
///   (or why there is none) as its last paragraph, when the integration has silence buttons.
/// - priority: ``AlertmanagerSettings/severityPriority`` of the `severity` label.
/// - buttons and expiry: the integration's (without its silence buttons when the labels allow no silence).
/// - metadata: `{"alertmanager": {"fingerprint", "status", "labels", "starts_at", "generator_url",
///   "silence_matchers"}}`; `generator_url` is left out when the whole would pass alertd's 4096 bytes.
///
/// One pending alertd alert per fingerprint and client: the integration posts
/// under the idempotency key ``key`` (per fingerprint), whose record says which
/// alert it made and for which firing (``firingDigest``: the fingerprint and
/// `startsAt`). See `Engine.receive(_:on:respond:)` for the rules.
public enum AlertmanagerMapping {
    /// What the metadata of every alert the integration posted holds its data under.
    public static let metadataKey = "alertmanager"

    /// `decided_by` of an alert withdrawn because Alertmanager resolved it. Not a
    /// possible token name (those have no spaces), so never mistaken for a person.
    public static let resolvedBy = "alertmanager (resolved)"

    /// The idempotency key of a fingerprint on its client.
    public static func key(fingerprint: String) -> String { keyPrefix + fingerprint }

    /// The prefix of the integration's idempotency keys, which other posts may not use:
    /// a key taken first by a plain post would hide the fingerprint's alerts.
    public static let keyPrefix = "alertmanager:"

    /// What the key's record holds for one firing: the same fingerprint and
    /// `startsAt` are one firing, repeated; a new `startsAt` is a new firing.
    public static func firingDigest(_ alert: AlertmanagerAlert) -> [UInt8] {
        Array(SHA256.hash(data: Array("alertmanager firing\n\(alert.fingerprint)\n\(alert.startsAt)".utf8)))
    }

    /// The alertd alert for a firing alert; fails (naming the alert's labels)
    /// only when its labels alone pass the metadata limit.
    ///
    /// When the integration has silence buttons, the alert shows what a silence
    /// would match (a last paragraph of the message, and
    /// `metadata.alertmanager.silence_matchers`, the label names); an alert whose
    /// labels allow no silence (``AlertmanagerSilence/matchers(_:only:)``) gets
    /// the other buttons only, and the message says why.
    public static func draft(
        for alert: AlertmanagerAlert, path: String, settings: AlertmanagerSettings
    ) -> Result<NewAlert, InvalidAlert> {
        let title =
            nonEmpty(alert.annotations["summary"]) ?? nonEmpty(alert.label("alertname")) ?? "Alertmanager alert \(alert.fingerprint)"
        var buttons = settings.buttons.map(\.button)
        var silenceNote: String?
        var silenceNames: [String]?
        if settings.silences {
            let scope = AlertmanagerSilence.matchers(alert.labels, only: settings.matcherLabels)
            if scope.missing.isEmpty {
                silenceNames = scope.matchers.map(\.name)
                silenceNote =
                    "A silence matches: " + scope.matchers.map { "\($0.name)=\(quoted($0.value))" }.joined(separator: ", ")
            } else {
                buttons = settings.buttons.filter { $0.silenceSeconds == nil }.map(\.button)
                if buttons.isEmpty { buttons = [Button(title: "Acknowledge")] }
                silenceNote =
                    "No silence from alertd: the alert has no label "
                    + scope.missing.joined(separator: ", ") + " (a silence always matches alertname and the configured matcher_labels)"
            }
        }
        let message = self.message(nonEmpty(alert.annotations["description"]), note: silenceNote)
        let priority = alert.label("severity").flatMap { settings.severityPriority[$0] } ?? settings.defaultPriority
        var metadata = self.metadata(alert, generatorURL: true, silenceMatchers: silenceNames)
        var size = JSONValue.object(metadata).compactBytes().count
        if size > NewAlert.metadataLimit, alert.generatorURL != nil {
            metadata = self.metadata(alert, generatorURL: false, silenceMatchers: silenceNames)
            size = JSONValue.object(metadata).compactBytes().count
        }
        guard size <= NewAlert.metadataLimit else {
            return .failure(
                InvalidAlert(errors: [
                    FieldError(
                        field: "\(path).labels",
                        reason: "take \(size) bytes as alertd metadata, over the \(NewAlert.metadataLimit) bytes an alert may carry")
                ]))
        }
        return .success(
            NewAlert(
                title: cut(title, to: NewAlert.titleLimit), message: message, buttons: buttons,
                priority: min(max(priority, NewAlert.priorityRange.lowerBound), NewAlert.priorityRange.upperBound),
                expiresIn: settings.expiresIn, metadata: metadata))
    }

    /// The description, then the note on silences as its own paragraph; the
    /// description is cut first when both pass the limit.
    static func message(_ description: String?, note: String?) -> String? {
        guard let note else { return description.map { cut($0, to: NewAlert.messageLimit) } }
        let paragraph = cut(note, to: NewAlert.messageLimit)
        guard let description else { return paragraph }
        let room = NewAlert.messageLimit - paragraph.unicodeScalars.count - 2
        guard room > 1 else { return paragraph }
        return cut(description, to: room) + "\n\n" + paragraph
    }

    static func metadata(_ alert: AlertmanagerAlert, generatorURL: Bool, silenceMatchers: [String]? = nil) -> JSONObject {
        var labels = JSONObject()
        for label in alert.labels { labels[label.name] = .string(label.value) }
        var inner: JSONObject = [
            "fingerprint": .string(alert.fingerprint), "status": .string(alert.status.rawValue), "labels": .object(labels),
            "starts_at": .string(alert.startsAt),
        ]
        if generatorURL, let url = alert.generatorURL { inner["generator_url"] = .string(url) }
        if let silenceMatchers { inner["silence_matchers"] = .array(silenceMatchers.map { .string($0) }) }
        return [metadataKey: .object(inner)]
    }

    /// The label names a silence of an alert the integration posted matches on, as the alert
    /// showed them (`silence_matchers`); nil when it has none recorded.
    public static func silenceMatcherNames(of alert: Alert) -> [String]? {
        guard case .object(let inner)? = alert.metadata?.object?[metadataKey], case .array(let names)? = inner["silence_matchers"]
        else { return nil }
        var found: [String] = []
        for name in names {
            guard case .string(let text) = name else { return nil }
            found.append(text)
        }
        return found
    }

    /// The labels of an alert the integration posted, from its metadata, in order; nil for any other alert.
    public static func labels(of alert: Alert) -> [AlertmanagerAlert.Label]? {
        guard case .object(let inner)? = alert.metadata?.object?[metadataKey], case .object(let labels)? = inner["labels"] else {
            return nil
        }
        var found: [AlertmanagerAlert.Label] = []
        for (name, value) in labels {
            guard case .string(let text) = value else { return nil }
            found.append(.init(name, text))
        }
        return found.isEmpty ? nil : found
    }

    /// `text` if it has more than white space, with any U+0000 (which alertd refuses in
    /// a posted alert's text) made U+FFFD: a notification is not lost for it.
    static func nonEmpty(_ text: String?) -> String? {
        guard let text, text.contains(where: { !$0.isWhitespace }) else { return nil }
        return withoutNUL(text)
    }

    /// A label value as a matcher writes it: in double quotes, `\\`, `"` and line breaks escaped.
    static func quoted(_ value: String) -> String {
        var out = "\""
        for scalar in withoutNUL(value).unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// `text` with any U+0000 made U+FFFD.
    static func withoutNUL(_ text: String) -> String {
        guard text.unicodeScalars.contains("\u{0}") else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : $0 }))
    }

    /// `text` with at most `limit` code points, the last one `…` when cut.
    static func cut(_ text: String, to limit: Int) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return text }
        var kept = String.UnicodeScalarView(scalars.prefix(limit - 1))
        kept.append("…")
        return String(kept)
    }
}
