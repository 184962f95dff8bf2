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

    /// The tool result that carries it.
    var result: CallTool.Result {
        CallTool.Result(content: [.text(text: message, annotations: nil, _meta: nil)], isError: true)
    }
}

/// A tool's arguments as the agent sent them, read with messages the agent can act on.
/// The types and presence of arguments are checked here; the bounds of an alert's fields
/// (title length, button rules, priority range) are alertd's to check, and its
/// `invalid-alert` answer names each field (see ``Advice``).
struct Arguments {
    let tool: String
    let values: [String: Value]

    /// Refuses names the tool does not take, so a typo does not silently vanish (as alertd does, §2).
    init(_ values: [String: Value]?, tool: String, names: [String]) throws(ToolFailure) {
        self.tool = tool
        self.values = values ?? [:]
        let unknown = self.values.keys.filter { !names.contains($0) }.sorted()
        if !unknown.isEmpty {
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
