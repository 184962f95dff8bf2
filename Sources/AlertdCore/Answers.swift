public import AlertdWire

// Answers with words (SPEC §13): the fields an alert asks for, and the comment and values a
// choice carries. The daemon checks both here, and so does the SDK's test double
// (AlertdClientTesting), so the two cannot disagree.

extension AlertField {
    /// At most this many fields on one alert.
    public static let limit = 5
    /// The longest `max_length`.
    public static let maxLengthRange = 1...1000
    /// The longest label, in characters.
    public static let labelLimit = 64
    /// The longest placeholder, in characters.
    public static let placeholderLimit = 256

    static let members: Set<String> = ["name", "label", "placeholder", "required", "max_length", "buttons"]

    /// Whether `name` matches `[a-z][a-z0-9_]{0,31}`.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, (1...32).contains(bytes.count), (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
            return false
        }
        return bytes.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "_")
        }
    }

    /// A posted alert's `fields` (SPEC §13), each with the buttons it belongs to resolved (by
    /// default every button but the cancel one); every violation in `errors` at its path
    /// (`fields[1].name`).
    static func validate(_ value: JSONValue?, buttons: [Button], errors: inout [FieldError]) -> [AlertField] {
        let items: [JSONValue]
        switch value {
        case nil, .null?: return []
        case .array(let list)?: items = list
        case let other?:
            errors.append(FieldError(field: "fields", reason: "must be an array, not \(other.typeName)"))
            return []
        }
        if items.count > limit {
            errors.append(FieldError(field: "fields", reason: "at most \(limit) fields, got \(items.count)"))
        }
        if !items.isEmpty, buttons.isEmpty {
            errors.append(FieldError(field: "fields", reason: "need buttons: a notice has no answer to ask for"))
        }
        var fields: [AlertField] = []
        var names: Set<String> = []
        for (index, item) in items.enumerated() {
            let path = "fields[\(index)]"
            guard case .object(let members) = item else {
                errors.append(FieldError(field: path, reason: "must be an object, not \(item.typeName)"))
                continue
            }
            for key in members.keys where !Self.members.contains(key) {
                errors.append(FieldError(field: "\(path).\(key)", reason: "unknown field"))
            }
            var field = AlertField(name: "")
            switch members["name"] {
            case nil, .null?:
                errors.append(FieldError(field: "\(path).name", reason: "is required"))
            case .string(let name)?:
                if !isValidName(name) {
                    errors.append(
                        FieldError(
                            field: "\(path).name",
                            reason: "must match [a-z][a-z0-9_]{0,31} (a lowercase letter, then lowercase letters, digits or _)"))
                } else if !names.insert(name).inserted {
                    errors.append(FieldError(field: "\(path).name", reason: "duplicates another field's name"))
                }
                field.name = name
            case let other?:
                errors.append(FieldError(field: "\(path).name", reason: "must be a string, not \(other.typeName)"))
            }
            field.label = text(members["label"], at: "\(path).label", min: 1, max: labelLimit, errors: &errors)
            field.placeholder = text(members["placeholder"], at: "\(path).placeholder", min: 0, max: placeholderLimit, errors: &errors)
            switch members["required"] {
            case nil, .null?: break
            case .bool(let required)?: field.required = required
            case let other?:
                errors.append(FieldError(field: "\(path).required", reason: "must be true or false, not \(other.typeName)"))
            }
            field.maxLength =
                NewAlert.integer(members["max_length"], field: "\(path).max_length", in: maxLengthRange, errors: &errors)
                ?? defaultMaxLength
            switch members["buttons"] {
            case nil, .null?:
                let titles = buttons.filter { $0.style != .cancel }.map(\.title)
                if titles.isEmpty, !buttons.isEmpty {
                    errors.append(
                        FieldError(
                            field: "\(path).buttons",
                            reason: "the alert has no button but its cancel one, which a field belongs to only when named here"))
                }
                field.buttons = titles
            case .array(let list)?:
                var titles: [String] = []
                for (position, entry) in list.enumerated() {
                    let at = "\(path).buttons[\(position)]"
                    guard case .string(let title) = entry else {
                        errors.append(FieldError(field: at, reason: "must be a button's title (a string), not \(entry.typeName)"))
                        continue
                    }
                    if !buttons.contains(where: { $0.title == title }) {
                        errors.append(FieldError(field: at, reason: "names no button of the alert: \(title)"))
                    } else if titles.contains(title) {
                        errors.append(FieldError(field: at, reason: "names \(title) twice"))
                    }
                    titles.append(title)
                }
                if list.isEmpty {
                    errors.append(
                        FieldError(
                            field: "\(path).buttons", reason: "must name at least one button (leave it out for every non-cancel button)"))
                }
                field.buttons = titles
            case let other?:
                errors.append(FieldError(field: "\(path).buttons", reason: "must be an array of button titles, not \(other.typeName)"))
            }
            fields.append(field)
        }
        return fields
    }

    private static func text(_ value: JSONValue?, at path: String, min: Int, max: Int, errors: inout [FieldError]) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            if let problem = NewAlert.textProblem(text, min: min, max: max) { errors.append(FieldError(field: path, reason: problem)) }
            return text
        case let other?:
            errors.append(FieldError(field: path, reason: "must be a string, not \(other.typeName)"))
            return nil
        }
    }
}

/// What a choice says besides its button (SPEC §13): the comment and the values of the
/// alert's fields.
public struct ChoiceWords: Sendable, Hashable {
    /// Why; nil when none.
    public var comment: String?
    /// The fields' values by name; empty when none.
    public var values: [String: String]

    public init(comment: String? = nil, values: [String: String] = [:]) {
        self.comment = comment
        self.values = values
    }

    /// No comment, no values.
    public static let none = ChoiceWords()

    /// The longest comment, in characters (code points, as every length of §2).
    public static let commentLimit = 1000

    /// What is wrong with these words whatever the alert (the API refuses it before it
    /// looks at the alert): a comment over 1 000 characters, a value over the longest
    /// `max_length` (1 000), U+0000 in either.
    public var shapeProblems: [FieldError] {
        var errors: [FieldError] = []
        if let comment, let problem = NewAlert.textProblem(comment, min: 0, max: Self.commentLimit) {
            errors.append(FieldError(field: "comment", reason: problem))
        }
        for name in values.keys.sorted() {
            if let problem = NewAlert.textProblem(values[name]!, min: 0, max: AlertField.maxLengthRange.upperBound) {
                errors.append(FieldError(field: "values.\(name)", reason: problem))
            }
        }
        return errors
    }

    /// These words as a choice of `button` (an index into `buttons`) of an alert with
    /// `fields` keeps them: an empty comment or value is none. Or every violation, each at
    /// its path (`comment`, `values.ticket`): those of ``shapeProblems``, a value for a
    /// field the alert does not have or that does not belong to the button, a value over
    /// its field's `max_length`, a required field of the button left out or empty.
    public func checked(button: Int, of buttons: [Button], fields: [AlertField]) -> Result<ChoiceWords, InvalidAnswer> {
        var errors = shapeProblems
        var kept = ChoiceWords()
        if let comment, !comment.isEmpty { kept.comment = comment }
        let chosen = buttons[button]
        for name in values.keys.sorted() {
            let value = values[name]!
            let path = "values.\(name)"
            guard let field = fields.first(where: { $0.name == name }) else {
                let known = fields.isEmpty ? "it asks for none" : "its fields are " + fields.map(\.name).joined(separator: ", ")
                errors.append(FieldError(field: path, reason: "the alert has no field \(name); \(known)"))
                continue
            }
            guard field.belongs(to: chosen.title, style: chosen.style) else {
                let owners = (field.buttons ?? []).map { "\"\($0)\"" }.joined(separator: ", ")
                errors.append(FieldError(field: path, reason: "is not asked for button \"\(chosen.title)\" (it belongs to \(owners))"))
                continue
            }
            if value.isEmpty { continue }
            if errors.contains(where: { $0.field == path }) {
                // Already refused whatever the alert.
            } else if value.unicodeScalars.count > field.maxLength {
                errors.append(
                    FieldError(field: path, reason: "must be at most \(field.maxLength) characters, got \(value.unicodeScalars.count)"))
            }
            kept.values[name] = value
        }
        for field in fields where field.required && field.belongs(to: chosen.title, style: chosen.style) {
            if (values[field.name] ?? "").isEmpty {
                errors.append(FieldError(field: "values.\(field.name)", reason: "is required for button \"\(chosen.title)\""))
            }
        }
        return errors.isEmpty ? .success(kept) : .failure(InvalidAnswer(errors: errors))
    }
}

/// Every violation found in a choice's comment and values (400 `invalid-answer`).
public struct InvalidAnswer: Error, Sendable, Hashable {
    public var errors: [FieldError]

    public init(errors: [FieldError]) { self.errors = errors }

    /// `values.ticket: is required for button "Deploy"; comment: …`.
    public var summary: String { errors.map(\.description).joined(separator: "; ") }
}
