public import AlertdWire

/// Every violation found in a posted alert (400 `invalid-alert`).
public struct InvalidAlert: Error, Sendable, Hashable {
    public var errors: [FieldError]

    public init(errors: [FieldError]) { self.errors = errors }
}

/// The configured bounds validation needs.
public struct AlertRules: Sendable, Hashable {
    public var defaultExpiresIn: Double
    public var maxExpiresIn: Double
    public var defaultDismissAfter: Double

    public init(defaultExpiresIn: Double = 86_400, maxExpiresIn: Double = 604_800, defaultDismissAfter: Double = 2) {
        self.defaultExpiresIn = defaultExpiresIn
        self.maxExpiresIn = maxExpiresIn
        self.defaultDismissAfter = defaultDismissAfter
    }
}

/// An alert as posted (AlertdWire's `NewAlert`, the one model of it the SDK sends and
/// the daemon reads): the limits of §2, and the validation that turns a body into one.
/// A validated alert has its defaults filled in: `style`, `buttons`, `priority` and `quorum` are set.
extension NewAlert {
    public static let titleLimit = 256
    public static let messageLimit = 4096
    public static let buttonLimit = 16
    public static let buttonTitleLimit = 64
    public static let metadataLimit = 4096

    /// A number beyond the range of a double (`1e400`) has no canonical form (RFC 8785, which
    /// a receipt's `content_sha256` hashes what was asked with, SPEC §14) and would read back
    /// as infinity in most JSON libraries: each is refused, at its path (`metadata.a.b[2]`).
    static func outOfRangeNumbers(in value: JSONValue, at path: String, into errors: inout [FieldError]) {
        switch value {
        case .number(let number) where !number.double.isFinite:
            let reason = "\(number.literal) is beyond the range of a double (about ±1.8e308): JSON numbers here must be IEEE 754 doubles"
            errors.append(FieldError(field: path, reason: reason))
        case .array(let elements):
            for (index, element) in elements.enumerated() { outOfRangeNumbers(in: element, at: "\(path)[\(index)]", into: &errors) }
        case .object(let members):
            for member in members { outOfRangeNumbers(in: member.value, at: "\(path).\(member.key)", into: &errors) }
        default:
            break
        }
    }
    public static let priorityRange = -100...100
    /// How many different deciders an alert may need (SPEC §10).
    public static let quorumRange = 1...10

    static let postedMembers: Set<String> = [
        "title", "message", "style", "buttons", "priority", "expires_in", "dismiss_after", "callback_url", "metadata", "quorum",
        "fields", "escalation",
    ]
    static let stepFields: Set<String> = ["after", "to"]
    static let buttonFields: Set<String> = ["title", "style"]

    /// Validates a posted body. Returns the draft, or every violation found.
    ///
    /// - Parameter namedDeciders: whether deciders have names — the daemon has tokens
    ///   (`auth.tokens`). Without them every choice is anonymous, and a `quorum` above 1
    ///   could never be reached by different deciders: refused at `quorum` (SPEC §10).
    /// - Parameter client: the client it is posted to, which its own `escalation` may not
    ///   name (SPEC §12); nil: not checked.
    public static func validate(
        _ body: JSONValue, rules: AlertRules, namedDeciders: Bool, client: String? = nil
    ) -> Result<NewAlert, InvalidAlert> {
        var errors: [FieldError] = []
        guard case .object(let object) = body else {
            return .failure(InvalidAlert(errors: [FieldError(field: "", reason: "the alert must be a JSON object")]))
        }
        for key in object.keys where !postedMembers.contains(key) {
            errors.append(FieldError(field: key, reason: "unknown field"))
        }

        var title = ""
        switch object["title"] {
        case nil, .null?:
            errors.append(FieldError(field: "title", reason: "is required"))
        case .string(let text)?:
            if let problem = textProblem(text, min: 1, max: titleLimit) {
                errors.append(FieldError(field: "title", reason: problem))
            }
            title = text
        case let other?:
            errors.append(FieldError(field: "title", reason: "must be a string, not \(other.typeName)"))
        }

        var message: String?
        switch object["message"] {
        case nil, .null?: break
        case .string(let text)?:
            if let problem = textProblem(text, min: 0, max: messageLimit) {
                errors.append(FieldError(field: "message", reason: problem))
            }
            message = text
        case let other?:
            errors.append(FieldError(field: "message", reason: "must be a string, not \(other.typeName)"))
        }

        var style = AlertStyle.alert
        switch object["style"] {
        case nil, .null?: break
        case .string(let text)?:
            if let parsed = AlertStyle(rawValue: text) {
                style = parsed
            } else {
                errors.append(FieldError(field: "style", reason: "must be \"alert\" or \"action_sheet\""))
            }
        case let other?:
            errors.append(FieldError(field: "style", reason: "must be a string, not \(other.typeName)"))
        }

        var buttons: [Button] = []
        switch object["buttons"] {
        case nil, .null?: break
        case .array(let items)?:
            if items.count > buttonLimit {
                errors.append(FieldError(field: "buttons", reason: "at most \(buttonLimit) buttons, got \(items.count)"))
            }
            var seen: Set<String> = []
            var cancelSeen = false
            for (index, item) in items.enumerated() {
                let path = "buttons[\(index)]"
                guard case .object(let fields) = item else {
                    errors.append(FieldError(field: path, reason: "must be an object, not \(item.typeName)"))
                    continue
                }
                for key in fields.keys where !buttonFields.contains(key) {
                    errors.append(FieldError(field: "\(path).\(key)", reason: "unknown field"))
                }
                var button = Button(title: "")
                switch fields["title"] {
                case nil, .null?:
                    errors.append(FieldError(field: "\(path).title", reason: "is required"))
                case .string(let text)?:
                    if let problem = textProblem(text, min: 1, max: buttonTitleLimit) {
                        errors.append(FieldError(field: "\(path).title", reason: problem))
                    } else if !seen.insert(text).inserted {
                        errors.append(FieldError(field: "\(path).title", reason: "duplicates another button's title"))
                    }
                    button.title = text
                case let other?:
                    errors.append(FieldError(field: "\(path).title", reason: "must be a string, not \(other.typeName)"))
                }
                switch fields["style"] {
                case nil, .null?: break
                case .string(let text)?:
                    if let parsed = ButtonStyle(rawValue: text) {
                        button.style = parsed
                        if parsed == .cancel {
                            if cancelSeen {
                                errors.append(FieldError(field: "\(path).style", reason: "only one button may have style \"cancel\""))
                            }
                            cancelSeen = true
                        }
                    } else {
                        errors.append(FieldError(field: "\(path).style", reason: "must be \"default\", \"cancel\" or \"destructive\""))
                    }
                case let other?:
                    errors.append(FieldError(field: "\(path).style", reason: "must be a string, not \(other.typeName)"))
                }
                buttons.append(button)
            }
        case let other?:
            errors.append(FieldError(field: "buttons", reason: "must be an array, not \(other.typeName)"))
        }

        let priority = integer(object["priority"], field: "priority", in: priorityRange, errors: &errors) ?? 0

        let expiresIn = positiveSeconds(object["expires_in"], field: "expires_in", errors: &errors)
        if let expiresIn, expiresIn > rules.maxExpiresIn {
            errors.append(FieldError(field: "expires_in", reason: "must be at most \(format(rules.maxExpiresIn)) seconds"))
        }
        let dismissAfter = positiveSeconds(object["dismiss_after"], field: "dismiss_after", errors: &errors)
        if dismissAfter != nil, !buttons.isEmpty {
            errors.append(FieldError(field: "dismiss_after", reason: "only an alert without buttons is dismissed"))
        }
        if let dismissAfter, dismissAfter > rules.maxExpiresIn {
            errors.append(FieldError(field: "dismiss_after", reason: "must be at most \(format(rules.maxExpiresIn)) seconds"))
        }

        var callbackURL: String?
        switch object["callback_url"] {
        case nil, .null?: break
        case .string(let text)?:
            if let problem = CallbackURL.problem(text) {
                errors.append(FieldError(field: "callback_url", reason: problem))
            }
            callbackURL = text
        case let other?:
            errors.append(FieldError(field: "callback_url", reason: "must be a string, not \(other.typeName)"))
        }

        var metadata: JSONObject?
        switch object["metadata"] {
        case nil, .null?: break
        case .object(let members)?:
            let size = JSONValue.object(members).compactBytes().count
            if size > metadataLimit {
                errors.append(FieldError(field: "metadata", reason: "is \(size) bytes as compact JSON; at most \(metadataLimit)"))
            }
            Self.outOfRangeNumbers(in: .object(members), at: "metadata", into: &errors)
            metadata = members
        case let other?:
            errors.append(FieldError(field: "metadata", reason: "must be an object, not \(other.typeName)"))
        }

        let quorum = integer(object["quorum"], field: "quorum", in: quorumRange, errors: &errors) ?? 1
        if quorum > 1, buttons.isEmpty {
            errors.append(FieldError(field: "quorum", reason: "above 1 needs buttons to choose"))
        }
        if quorum > 1, !namedDeciders {
            errors.append(
                FieldError(
                    field: "quorum",
                    reason: "above 1 needs deciders with names: alertd has no tokens (auth.tokens), so every choice is anonymous"))
        }

        let fields = AlertField.validate(object["fields"], buttons: buttons, errors: &errors)

        let escalation = escalationSteps(
            object["escalation"], client: client, expiresIn: min(expiresIn ?? rules.defaultExpiresIn, rules.maxExpiresIn), errors: &errors)

        guard errors.isEmpty else { return .failure(InvalidAlert(errors: errors)) }
        return .success(
            NewAlert(
                title: title, message: message, style: style, buttons: buttons, priority: priority,
                expiresIn: expiresIn, dismissAfter: dismissAfter, callbackURL: callbackURL, metadata: metadata, quorum: quorum,
                fields: fields.isEmpty ? nil : fields, escalation: escalation
            )
        )
    }

    /// The alert's own `escalation` (SPEC §12): nil when absent or null (the client's policy
    /// applies), `[]` to turn it off; every violation in `errors`, each at its step
    /// (`escalation[1].after`).
    static func escalationSteps(_ value: JSONValue?, client: String?, expiresIn: Double, errors: inout [FieldError]) -> [EscalationStep]? {
        switch value {
        case nil, .null?:
            return nil
        case .array(let items)?:
            var steps: [EscalationStep] = []
            var shapeErrors: [FieldError] = []
            for (index, item) in items.enumerated() {
                let path = "escalation[\(index)]"
                guard case .object(let members) = item else {
                    shapeErrors.append(
                        FieldError(field: path, reason: "must be an object {\"after\": seconds, \"to\": client}, not \(item.typeName)"))
                    continue
                }
                for key in members.keys.sorted() where !stepFields.contains(key) {
                    shapeErrors.append(FieldError(field: "\(path).\(key)", reason: "unknown field"))
                }
                var step = EscalationStep(after: 0, to: "")
                switch members["after"] {
                case nil, .null?: shapeErrors.append(FieldError(field: "\(path).after", reason: "is required"))
                case .number(let number)?: step.after = number.double
                case let other?:
                    shapeErrors.append(FieldError(field: "\(path).after", reason: "must be a number of seconds, not \(other.typeName)"))
                }
                switch members["to"] {
                case nil, .null?: shapeErrors.append(FieldError(field: "\(path).to", reason: "is required"))
                case .string(let text)?: step.to = text
                case let other?: shapeErrors.append(FieldError(field: "\(path).to", reason: "must be a client id, not \(other.typeName)"))
                }
                steps.append(step)
            }
            errors += shapeErrors
            // The rules of a policy, for the steps whose shape is right (a missing member is said once).
            let broken = Set(shapeErrors.map { $0.field.prefix { $0 != "." } })
            errors += EscalationRules.problems(steps, client: client, expiresIn: expiresIn).filter { error in
                !broken.contains(error.field.prefix { $0 != "." })
            }
            return steps
        case let other?:
            errors.append(
                FieldError(
                    field: "escalation", reason: "must be an array of steps {\"after\": seconds, \"to\": client}, not \(other.typeName)"))
            return nil
        }
    }

    /// What is wrong with a text field: its length in code points, or a U+0000 in it.
    ///
    /// U+0000 is refused on every store: PostgreSQL's `text` cannot hold it, a
    /// dashboard or a log written in C would cut the text there, and no question
    /// a person reads needs it. An API that answered it one way on SQLite and
    /// another on PostgreSQL would surprise whoever moves between them.
    static func textProblem(_ text: String, min: Int, max: Int) -> String? {
        if text.unicodeScalars.contains("\u{0}") { return "must not contain U+0000" }
        let count = text.unicodeScalars.count
        if count < min { return min == 1 ? "must not be empty" : "must be at least \(min) characters" }
        if count > max { return "must be at most \(max) characters, got \(count)" }
        return nil
    }

    /// The shortest `expires_in` or `dismiss_after`: one millisecond.
    public static let minimumSeconds = 0.001

    /// An optional integer field within `range`: nil when absent or refused (the reason in
    /// `errors`). A whole number however written (`65`, `65.0`, `6.5e1`): JSON has no
    /// integer type.
    static func integer(_ value: JSONValue?, field: String, in range: ClosedRange<Int>, errors: inout [FieldError]) -> Int? {
        switch value {
        case nil, .null?:
            return nil
        case .number(let number)?:
            if let value = number.wholeInt, range.contains(value) { return value }
            let reason = number.isWhole ? "must be between \(range.lowerBound) and \(range.upperBound)" : "must be an integer"
            errors.append(FieldError(field: field, reason: reason))
            return nil
        case let other?:
            errors.append(FieldError(field: field, reason: "must be an integer, not \(other.typeName)"))
            return nil
        }
    }

    private static func positiveSeconds(_ value: JSONValue?, field: String, errors: inout [FieldError]) -> Double? {
        switch value {
        case nil, .null?:
            return nil
        case .number(let number)?:
            let seconds = number.double
            // Deadlines are kept in milliseconds: less than one would be stored as 0.
            guard seconds.isFinite, seconds >= minimumSeconds else {
                errors.append(FieldError(field: field, reason: "must be a number of seconds, at least 0.001"))
                return nil
            }
            return seconds
        case let other?:
            errors.append(FieldError(field: field, reason: "must be a number of seconds, not \(other.typeName)"))
            return nil
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
    }
}
