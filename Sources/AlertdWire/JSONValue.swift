/// A JSON value (RFC 8259), as produced by ``JSONParser`` and written by ``JSONWriter``.
///
/// Numbers keep their literal text (see ``JSONNumber``) and objects keep their
/// members in input order (see ``JSONObject``), so a value parsed from a request
/// can be stored and served again without changing its spelling.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"title":"Disk full","level":2}"#.utf8))
/// value["title"]?.stringValue   // "Disk full"
/// value["level"]?.numberValue?.int   // 2
/// ```
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, kept as its literal text.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object whose members keep their order.
    case object(JSONObject)
}

// MARK: - Accessors

extension JSONValue {
    /// `true` when the value is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The boolean, or `nil` when the value is not a boolean.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The number, or `nil` when the value is not a number.
    public var numberValue: JSONNumber? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The string, or `nil` when the value is not a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The elements, or `nil` when the value is not an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The object, or `nil` when the value is not an object.
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The member named `key` when the value is an object that has one, else `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// Creates `.bool(value)`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Creates `.number(JSONNumber(value))`.
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    /// Creates `.number(JSONNumber(value))`; the literal must be finite.
    public init(floatLiteral value: Double) { self = .number(JSONNumber(value)) }
    /// Creates `.string(value)`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// Creates `.array(elements)`.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Creates `.object` with the members in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text of the value.
    public var description: String {
        String(decoding: compactBytes(), as: UTF8.self)
    }
}

// MARK: - Codable

extension JSONValue: Codable {
    /// Decodes any JSON value. From ``JSONValueDecoder`` the value is taken as parsed.
    /// From other decoders numbers are read as `Int`, then `UInt64`, then `Double`, and
    /// object member order follows the decoder's `allKeys`, which Foundation does not keep.
    public init(from decoder: any Decoder) throws {
        if let parsed = decoder as? JSONValueDecoding {
            self = parsed.value
            return
        }
        if let container = try? decoder.container(keyedBy: JSONCodingKey.self) {
            self = .object(try JSONObject(from: container))
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            if let count = container.count { elements.reserveCapacity(count) }
            while !container.isAtEnd {
                elements.append(try container.decode(JSONValue.self))
            }
            self = .array(elements)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else {
            self = .number(try JSONNumber(from: decoder))
        }
    }

    /// Encodes the value; objects become keyed containers with their members in order.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let b):
            var container = encoder.singleValueContainer()
            try container.encode(b)
        case .number(let n):
            try n.encode(to: encoder)
        case .string(let s):
            var container = encoder.singleValueContainer()
            try container.encode(s)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .object(let object):
            try object.encode(to: encoder)
        }
    }
}

/// A coding key for any object member name.
struct JSONCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

extension JSONValue {
    /// The JSON type's name, for error reasons.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
