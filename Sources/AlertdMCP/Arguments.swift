import AlertdWire
import Foundation
import MCP

/// A tool call that cannot be carried out, told as the text the agent reads: what went
/// wrong and what to do about it. It becomes a tool result with `isError`, never a crash
/// and never a JSON-RPC error, so the model sees it and can correct itself (MCP, "Error Handling").
public struct ToolFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The sentence(s) the agent reads.
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }

    /// The tool result that carries it; what alertd or the agent wrote in it (a problem's
    /// detail, an argument quoted back) safe for a terminal.
    var result: CallTool.Result {
        CallTool.Result(content: [.text(text: Terminal.safe(message, newlines: true), annotations: nil, _meta: nil)], isError: true)
    }
}

/// A tool's arguments as the agent sent them, read with messages the agent can act on.
/// The types and presence of arguments are checked here; the bounds of an alert's fields
/// (title length, button rules, priority range) are alertd's to check, and its
/// `invalid-alert` answer names each field (see ``Advice``).
struct Arguments {
    let tool: String
    let values: [String: Value]

    /// Refuses names the tool does not take, so a typo does not silently vanish (as alertd
    /// does, §2); an `open` tool (request_permission, called by a host, not a model) ignores them.
    init(_ values: [String: Value]?, tool: String, names: [String], open: Bool = false) throws(ToolFailure) {
        self.tool = tool
        self.values = values ?? [:]
        let unknown = self.values.keys.filter { !names.contains($0) }.sorted()
        if !unknown.isEmpty, !open {
            throw ToolFailure(
                "\(tool) takes no argument named \(unknown.map { "'\($0)'" }.joined(separator: ", ")); "
                    + "its arguments are \(names.joined(separator: ", ")).")
        }
    }

    /// The argument's value; nil when absent or null.
    private func value(_ name: String) -> Value? {
        guard let value = values[name], !value.isNull else { return nil }
        return value
    }

    func string(_ name: String) throws(ToolFailure) -> String? {
        guard let value = value(name) else { return nil }
        guard let text = Self.text(value) else { throw ToolFailure("\(tool): '\(name)' must be a string, not \(value).") }
        return text
    }

    func requiredString(_ name: String) throws(ToolFailure) -> String {
        guard let text = try string(name) else { throw ToolFailure("\(tool) needs '\(name)' (a string).") }
        return text
    }

    /// A whole number; `5.0` counts as 5.
    func integer(_ name: String) throws(ToolFailure) -> Int? {
        guard let value = value(name) else { return nil }
        switch value {
        case .int(let number): return number
        case .double(let number) where number.rounded() == number && abs(number) < 1e15: return Int(number)
        default: throw ToolFailure("\(tool): '\(name)' must be a whole number, not \(value).")
        }
    }

    /// A number of seconds within `range`.
    func seconds(_ name: String, in range: ClosedRange<Double>) throws(ToolFailure) -> Double? {
        guard let value = value(name) else { return nil }
        let number: Double
        switch value {
        case .int(let whole): number = Double(whole)
        case .double(let fraction): number = fraction
        default: throw ToolFailure("\(tool): '\(name)' must be a number of seconds, not \(value).")
        }
        guard range.contains(number) else {
            throw ToolFailure(
                "\(tool): '\(name)' must be between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound)) seconds, "
                    + "not \(Self.format(number)).")
        }
        return number
    }

    /// `buttons`: a list of `{"title": …, "style": …}`; a bare string is a default-style button.
    func buttons(_ name: String) throws(ToolFailure) -> [Button]? {
        guard let value = value(name) else { return nil }
        guard let list = value.arrayValue else {
            throw ToolFailure("\(tool): '\(name)' must be a list of buttons like {\"title\": \"Deploy\"}, not \(value).")
        }
        var buttons: [Button] = []
        for (index, item) in list.enumerated() {
            if let title = Self.text(item) {
                buttons.append(.default(title))
                continue
            }
            guard let object = item.objectValue, let title = object["title"].flatMap(Self.text) else {
                throw ToolFailure("\(tool): \(name)[\(index)] must be an object with a 'title' (a string), not \(item).")
            }
            if let extra = object.keys.filter({ $0 != "title" && $0 != "style" }).sorted().first {
                throw ToolFailure("\(tool): \(name)[\(index)] takes only 'title' and 'style', not '\(extra)'.")
            }
            var style = ButtonStyle.default
            if let raw = object["style"], !raw.isNull {
                guard let parsed = Self.text(raw).flatMap(ButtonStyle.init(rawValue:)) else {
                    throw ToolFailure("\(tool): \(name)[\(index)].style must be default, cancel or destructive, not \(raw).")
                }
                style = parsed
            }
            buttons.append(Button(title: title, style: style))
        }
        return buttons
    }

    /// `fields` (SPEC §13): a list of `{"name": …, "label": …, "placeholder": …, "required": …,
    /// "max_length": …, "buttons": […]}`; a bare string is a field of that name. Their rules
    /// (names, lengths, buttons) are alertd's to check.
    func fields(_ name: String) throws(ToolFailure) -> [AlertField]? {
        guard let value = value(name) else { return nil }
        guard let list = value.arrayValue else {
            throw ToolFailure("\(tool): '\(name)' must be a list of fields like {\"name\": \"ticket\", \"required\": true}, not \(value).")
        }
        let members = ["name", "label", "placeholder", "required", "max_length", "buttons"]
        var fields: [AlertField] = []
        for (index, item) in list.enumerated() {
            if let text = Self.text(item) {
                fields.append(AlertField(name: text))
                continue
            }
            let at = "\(name)[\(index)]"
            guard let object = item.objectValue, let fieldName = object["name"].flatMap(Self.text) else {
                throw ToolFailure("\(tool): \(at) must be an object with a 'name' (a string), not \(item).")
            }
            if let extra = object.keys.filter({ !members.contains($0) }).sorted().first {
                throw ToolFailure("\(tool): \(at) takes only \(members.joined(separator: ", ")), not '\(extra)'.")
            }
            var field = AlertField(name: fieldName)
            func text(_ key: String) throws(ToolFailure) -> String? {
                guard let raw = object[key], !raw.isNull else { return nil }
                guard let text = Self.text(raw) else { throw ToolFailure("\(tool): \(at).\(key) must be a string, not \(raw).") }
                return text
            }
            field.label = try text("label")
            field.placeholder = try text("placeholder")
            if let raw = object["required"], !raw.isNull {
                guard case .bool(let required) = raw else {
                    throw ToolFailure("\(tool): \(at).required must be true or false, not \(raw).")
                }
                field.required = required
            }
            if let raw = object["max_length"], !raw.isNull {
                switch raw {
                case .int(let length): field.maxLength = length
                case .double(let length) where length.rounded() == length && abs(length) < 1e9: field.maxLength = Int(length)
                default: throw ToolFailure("\(tool): \(at).max_length must be a whole number, not \(raw).")
                }
            }
            if let raw = object["buttons"], !raw.isNull {
                guard let titles = raw.arrayValue?.compactMap(Self.text), titles.count == raw.arrayValue?.count else {
                    throw ToolFailure("\(tool): \(at).buttons must be a list of button titles, not \(raw).")
                }
                field.buttons = titles
            }
            fields.append(field)
        }
        return fields
    }

    /// A JSON object argument, in AlertdWire's terms (its members sorted by name: MCP's
    /// `Value` keeps no order); nil when absent or null.
    func object(_ name: String) throws(ToolFailure) -> JSONObject? {
        guard let value = value(name) else { return nil }
        guard value.objectValue != nil else { throw ToolFailure("\(tool): '\(name)' must be a JSON object, not \(value).") }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value), case .object(let object)? = try? JSONParser.parse(Array(data)) else {
            throw ToolFailure("\(tool): '\(name)' could not be read as JSON.")
        }
        return object
    }

    /// An argument as the client sent it (`.null` when absent).
    func raw(_ name: String) -> Value { values[name] ?? .null }

    /// The client to use: the argument, else the server's `--client`.
    func client(default fallback: String) throws(ToolFailure) -> String {
        try string("client") ?? fallback
    }

    /// A string argument. The SDK reads a string that is a whole data URL (`data:,…`) as
    /// binary data; such a text is given back as the SDK writes it again (the same URL, perhaps
    /// spelled in base64).
    private static func text(_ value: Value) -> String? {
        switch value {
        case .string(let text): return text
        case .data:
            guard let json = try? JSONEncoder().encode(value) else { return nil }
            return try? JSONDecoder().decode(String.self, from: json)
        default: return nil
        }
    }

    static func format(_ seconds: Double) -> String {
        seconds.rounded() == seconds && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
    }
}
