public import AlertdCore
public import AlertdWire

/// One notification of Alertmanager's webhook receiver (payload version 4), as
/// far as alertd reads it.
///
/// Alertmanager's own fields are checked for what alertd relies on —
/// `version` is `"4"`, `alerts` a list of alerts each with a `status` of
/// `firing` or `resolved`, string `labels`, a `fingerprint` and an RFC 3339
/// `startsAt` — and the optional ones for their types. Members alertd does not
/// know are let through, unlike on `POST …/alerts`: they are Alertmanager's to
/// add in a later version, not a poster's typo.
///
/// ```swift
/// switch AlertmanagerNotification.parse(try JSONParser.parse(body)) {
/// case .success(let notification): notification.alerts   // firing and resolved alike
/// case .failure(let invalid): invalid.errors              // [{"field": "alerts[0].fingerprint", …}]
/// }
/// ```
public struct AlertmanagerNotification: Sendable, Hashable {
    /// The receiver's name in Alertmanager's config.
    public var receiver: String?
    /// `firing` while any alert of the group fires.
    public var status: String?
    public var externalURL: String?
    public var alerts: [AlertmanagerAlert]

    public init(receiver: String? = nil, status: String? = nil, externalURL: String? = nil, alerts: [AlertmanagerAlert]) {
        self.receiver = receiver
        self.status = status
        self.externalURL = externalURL
        self.alerts = alerts
    }

    /// The payload version this reads.
    public static let version = "4"

    /// Reads a webhook body; every violation found, with its field, or the notification.
    public static func parse(_ body: JSONValue) -> Result<AlertmanagerNotification, InvalidAlert> {
        var errors: [FieldError] = []
        guard case .object(let object) = body else {
            return .failure(
                InvalidAlert(errors: [FieldError(field: "", reason: "must be a JSON object: Alertmanager's webhook payload (version 4)")]))
        }
        switch object["version"] {
        case .string(let text)? where text == version: break
        case .string(let text)?:
            errors.append(FieldError(field: "version", reason: "must be \"4\" (Alertmanager's webhook payload version), not \"\(text)\""))
        case nil, .null?:
            errors.append(FieldError(field: "version", reason: "is required: this is not Alertmanager's webhook payload"))
        case let other?:
            errors.append(FieldError(field: "version", reason: "must be the string \"4\", not \(other.typeName)"))
        }
        let receiver = optionalString(object["receiver"], "receiver", &errors)
        let status = optionalString(object["status"], "status", &errors)
        let externalURL = optionalString(object["externalURL"], "externalURL", &errors)
        for name in ["groupLabels", "commonLabels", "commonAnnotations"] {
            _ = stringMap(object[name], name, required: false, &errors)
        }
        var alerts: [AlertmanagerAlert] = []
        switch object["alerts"] {
        case .array(let items)?:
            for (index, item) in items.enumerated() {
                if let alert = AlertmanagerAlert.parse(item, path: "alerts[\(index)]", &errors) { alerts.append(alert) }
            }
        case nil, .null?:
            errors.append(FieldError(field: "alerts", reason: "is required: the list of alerts"))
        case let other?:
            errors.append(FieldError(field: "alerts", reason: "must be an array, not \(other.typeName)"))
        }
        guard errors.isEmpty else { return .failure(InvalidAlert(errors: errors)) }
        return .success(AlertmanagerNotification(receiver: receiver, status: status, externalURL: externalURL, alerts: alerts))
    }

    static func optionalString(_ value: JSONValue?, _ field: String, _ errors: inout [FieldError]) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?:
            errors.append(FieldError(field: field, reason: "must be a string, not \(other.typeName)"))
            return nil
        }
    }

    /// A JSON object of strings (labels, annotations), sorted by name; nil when absent or wrong.
    static func stringMap(
        _ value: JSONValue?, _ field: String, required: Bool, _ errors: inout [FieldError]
    ) -> [(name: String, value: String)]? {
        switch value {
        case nil, .null?:
            if required { errors.append(FieldError(field: field, reason: "is required")) }
            return nil
        case .object(let members)?:
            var pairs: [(name: String, value: String)] = []
            for (name, member) in members {
                guard case .string(let text) = member else {
                    errors.append(FieldError(field: "\(field).\(name)", reason: "must be a string, not \(member.typeName)"))
                    continue
                }
                pairs.append((name, text))
            }
            return pairs.sorted { $0.name < $1.name }
        case let other?:
            errors.append(FieldError(field: field, reason: "must be an object of strings, not \(other.typeName)"))
            return nil
        }
    }
}

/// One alert of a notification.
public struct AlertmanagerAlert: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable {
        case firing, resolved
    }

    public var status: Status
    /// Sorted by name.
    public var labels: [Label]
    public var annotations: [String: String]
    /// As Alertmanager wrote it (RFC 3339, nanoseconds and offset as sent).
    public var startsAt: String
    public var endsAt: String?
    public var generatorURL: String?
    /// Alertmanager's id of the alert's label set: 16 hex digits, ``fingerprint(of:)`` of ``labels``
    /// (a notification whose fingerprint is not is refused).
    public var fingerprint: String

    public struct Label: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(
        status: Status, labels: [Label], annotations: [String: String] = [:], startsAt: String, endsAt: String? = nil,
        generatorURL: String? = nil, fingerprint: String
    ) {
        self.status = status
        self.labels = labels.sorted { $0.name < $1.name }
        self.annotations = annotations
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.generatorURL = generatorURL
        self.fingerprint = fingerprint
    }

    /// The value of label `name`, if the alert has it.
    public func label(_ name: String) -> String? { labels.first { $0.name == name }?.value }

    /// A label name as Prometheus allows it: `[a-zA-Z_][a-zA-Z0-9_]*`.
    public static func isLabelName(_ name: String) -> Bool {
        guard let first = name.utf8.first, first == UInt8(ascii: "_") || isLetter(first) else { return false }
        return name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || isLetter($0) || (48...57).contains($0) }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }

    /// Alertmanager's fingerprint of a label set, as its webhook writes it: 16
    /// lowercase hex digits of the 64-bit FNV-1a hash of the labels sorted by
    /// name, each name and each value followed by the byte 0xFF (which no UTF-8
    /// text holds). Prometheus's `model.LabelSet.Fingerprint`.
    ///
    /// ```swift
    /// AlertmanagerAlert.fingerprint(of: [.init("alertname", "DiskFull")])  // the 16 digits Alertmanager sends
    /// ```
    public static func fingerprint(of labels: [Label]) -> String {
        var hash: UInt64 = 14_695_981_039_346_656_037
        @inline(__always) func add(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash &*= 1_099_511_628_211
        }
        // Label names are ASCII ([a-zA-Z_][a-zA-Z0-9_]*), so byte order is Swift's order.
        for label in labels.sorted(by: { $0.name < $1.name }) {
            for byte in label.name.utf8 { add(byte) }
            add(0xFF)
            for byte in label.value.utf8 { add(byte) }
            add(0xFF)
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// A fingerprint as Alertmanager writes one: 16 hex digits.
    static func isFingerprint(_ text: String) -> Bool {
        text.utf8.count == 16
            && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
    }

    static func parse(_ value: JSONValue, path: String, _ errors: inout [FieldError]) -> AlertmanagerAlert? {
        guard case .object(let object) = value else {
            errors.append(FieldError(field: path, reason: "must be an object, not \(value.typeName)"))
            return nil
        }
        let before = errors.count
        var status: Status?
        switch object["status"] {
        case .string(let text)?:
            status = Status(rawValue: text)
            if status == nil {
                errors.append(FieldError(field: "\(path).status", reason: "must be \"firing\" or \"resolved\", not \"\(text)\""))
            }
        case nil, .null?:
            errors.append(FieldError(field: "\(path).status", reason: "is required: \"firing\" or \"resolved\""))
        case let other?:
            errors.append(FieldError(field: "\(path).status", reason: "must be a string, not \(other.typeName)"))
        }
        let labels = AlertmanagerNotification.stringMap(object["labels"], "\(path).labels", required: true, &errors)
        if let labels {
            if case .object(let members)? = object["labels"], members.isEmpty {
                errors.append(FieldError(field: "\(path).labels", reason: "must not be empty"))
            }
            for label in labels where !isLabelName(label.name) {
                errors.append(FieldError(field: "\(path).labels", reason: "\"\(label.name)\" is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)"))
            }
        }
        let annotations = AlertmanagerNotification.stringMap(object["annotations"], "\(path).annotations", required: false, &errors)
        var fingerprint = ""
        switch object["fingerprint"] {
        case .string(let text)?:
            if isFingerprint(text) {
                fingerprint = text.lowercased()
            } else {
                errors.append(
                    FieldError(field: "\(path).fingerprint", reason: "must be Alertmanager's hex fingerprint, not \"\(text.prefix(80))\""))
            }
        case nil, .null?:
            errors.append(FieldError(field: "\(path).fingerprint", reason: "is required"))
        case let other?:
            errors.append(FieldError(field: "\(path).fingerprint", reason: "must be a string, not \(other.typeName)"))
        }
        var startsAt = ""
        switch object["startsAt"] {
        case .string(let text)?:
            if Timestamp(rfc3339: text) == nil {
                errors.append(FieldError(field: "\(path).startsAt", reason: "must be an RFC 3339 time, not \"\(text.prefix(80))\""))
            }
            startsAt = text
        case nil, .null?:
            errors.append(FieldError(field: "\(path).startsAt", reason: "is required"))
        case let other?:
            errors.append(FieldError(field: "\(path).startsAt", reason: "must be a string, not \(other.typeName)"))
        }
        // Read as a string and otherwise left alone: alertd does not use it (a resolution is
        // `status`), so an odd value is no reason to lose the notification.
        let endsAt = AlertmanagerNotification.optionalString(object["endsAt"], "\(path).endsAt", &errors)
        let generatorURL = AlertmanagerNotification.optionalString(object["generatorURL"], "\(path).generatorURL", &errors)
        // The fingerprint is Alertmanager's hash of the labels, not a name the sender picks: a
        // notification cannot take a real alert's fingerprint (and so its one pending alert)
        // for labels of its own.
        if let labels, !fingerprint.isEmpty, errors.count == before {
            let expected = Self.fingerprint(of: labels.map { Label($0.name, $0.value) })
            if fingerprint != expected {
                errors.append(
                    FieldError(
                        field: "\(path).fingerprint",
                        reason: "is not Alertmanager's fingerprint of this alert's labels (they hash to \(expected))"))
            }
        }
        guard errors.count == before, let status, let labels else { return nil }
        return AlertmanagerAlert(
            status: status, labels: labels.map { Label($0.name, $0.value) },
            annotations: Dictionary(annotations ?? [], uniquingKeysWith: { first, _ in first }), startsAt: startsAt, endsAt: endsAt,
            generatorURL: generatorURL.flatMap { $0.isEmpty ? nil : $0 }, fingerprint: fingerprint)
    }
}
