/// A value the person answering is asked for (SPEC §13), as `UIAlertController`'s text
/// fields are: a ticket number, a change window, a reason.
///
/// ```swift
/// let alert = NewAlert(
///     title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")],
///     fields: [AlertField(name: "ticket", label: "Change ticket", placeholder: "OPS-123", required: true)])
/// ```
///
/// As posted, `buttons` may be nil: the field then belongs to every button but the cancel
/// one. The alert resource the daemon returns has every member set: `buttons` lists the
/// titles the field belongs to, `required` and `maxLength` their values.
public struct AlertField: Sendable, Hashable, Codable {
    /// `[a-z][a-z0-9_]{0,31}`, unique within the alert: the key of its value in `values`.
    public var name: String
    /// What the person reads beside the input; the name when nil. 1–64 characters.
    public var label: String?
    /// A hint shown in the empty input (`OPS-123`). At most 256 characters.
    public var placeholder: String?
    /// Whether a choice of one of its buttons needs a non-empty value.
    public var required: Bool
    /// The longest value, in characters: 1–1 000, default 200.
    public var maxLength: Int
    /// The titles of the buttons it belongs to; nil when posting means every button but
    /// the cancel one.
    public var buttons: [String]?

    /// The default ``maxLength``.
    public static let defaultMaxLength = 200

    /// A field; see each property for its rules.
    public init(
        name: String, label: String? = nil, placeholder: String? = nil, required: Bool = false,
        maxLength: Int = AlertField.defaultMaxLength, buttons: [String]? = nil
    ) {
        self.name = name
        self.label = label
        self.placeholder = placeholder
        self.required = required
        self.maxLength = maxLength
        self.buttons = buttons
    }

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, label, placeholder, required
        case maxLength = "max_length"
        case buttons
    }

    /// Every member name a field has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// Decodes a field as posted or as the daemon writes it: `required` false and
    /// `max_length` 200 when absent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        label = try container.decodeIfPresent(String.self, forKey: .label)
        placeholder = try container.decodeIfPresent(String.self, forKey: .placeholder)
        required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? false
        maxLength = try container.decodeIfPresent(Int.self, forKey: .maxLength) ?? Self.defaultMaxLength
        buttons = try container.decodeIfPresent([String].self, forKey: .buttons)
    }

    /// Encodes what is set: a field to post leaves out `label`, `placeholder` and `buttons`
    /// when nil.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(label, forKey: .label)
        try container.encodeIfPresent(placeholder, forKey: .placeholder)
        try container.encode(required, forKey: .required)
        try container.encode(maxLength, forKey: .maxLength)
        try container.encodeIfPresent(buttons, forKey: .buttons)
    }

    /// The label people read: ``label``, else ``name``.
    public var shownLabel: String { label ?? name }

    /// Whether it belongs to the button `title` of style `style` (nil ``buttons``: every
    /// button but the cancel one).
    public func belongs(to title: String, style: ButtonStyle) -> Bool {
        buttons.map { $0.contains(title) } ?? (style != .cancel)
    }

    /// Writes the field as the daemon writes it, members in ``memberNames`` order, `null`
    /// for a label or placeholder not given.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("name")
        json.string(name)
        json.key("label")
        json.string(label)
        json.key("placeholder")
        json.string(placeholder)
        json.key("required")
        json.bool(required)
        json.key("max_length")
        json.int(maxLength)
        json.key("buttons")
        json.beginArray()
        for title in buttons ?? [] { json.string(title) }
        json.endArray()
        json.endObject()
    }
}

extension JSONWriter {
    /// `[{"name":…,"label":…,…}, …]`: how fields look in the API and in the stores.
    public mutating func fields(_ fields: [AlertField]) {
        beginArray()
        for field in fields { field.write(into: &self) }
        endArray()
    }
}

extension AlertField {
    /// Reads fields as ``JSONWriter/fields(_:)`` writes them (a store's column); nil when
    /// `value` is not such an array.
    public static func fields(from value: JSONValue) -> [AlertField]? {
        guard case .array(let items) = value else { return nil }
        var fields: [AlertField] = []
        for item in items {
            guard case .object(let members) = item, case .string(let name)? = members["name"],
                case .bool(let required)? = members["required"], case .number(let length)? = members["max_length"],
                let maxLength = length.wholeInt, case .array(let titles)? = members["buttons"]
            else { return nil }
            func text(_ key: String) -> String?? {
                switch members[key] {
                case .string(let text)?: .some(text)
                case .null?, nil: .some(nil)
                default: nil
                }
            }
            guard let label = text("label"), let placeholder = text("placeholder") else { return nil }
            var buttons: [String] = []
            for title in titles {
                guard case .string(let text) = title else { return nil }
                buttons.append(text)
            }
            fields.append(
                AlertField(name: name, label: label, placeholder: placeholder, required: required, maxLength: maxLength, buttons: buttons))
        }
        return fields
    }
}
