// Over 400 lines on purpose: the JSON value and its exact numbers (kept as written,
// so metadata round-trips byte for byte) are one type with its conversions.

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

// MARK: - JSONNumber

/// A number kept as its literal text (so metadata round-trips exactly), with typed views.
///
/// Two numbers are equal when they denote the same decimal value, whatever their
/// spelling: `1.5e3 == 1500`, `-0 == 0`. ``literal`` keeps the spelling.
///
/// ```swift
/// JSONNumber(literal: "-1.50e3")?.double   // -1500.0
/// JSONNumber(literal: "5")?.int            // 5
/// JSONNumber(literal: "5.0")?.int          // nil: not written as an integer
/// ```
public struct JSONNumber: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The number exactly as written, e.g. `"-1.50e3"`.
    public let literal: String

    /// Creates a number from its text; `nil` unless `literal` follows the RFC 8259 number grammar.
    public init?(literal: String) {
        var text = literal
        let valid = text.withUTF8 { utf8 in
            if case .success(let end) = JSONNumberGrammar.scan(UnsafeRawBufferPointer(utf8), from: 0) {
                return end == utf8.count
            }
            return false
        }
        guard valid else { return nil }
        self.literal = text
    }

    /// Creates a number from an already validated literal.
    init(unchecked literal: String) {
        self.literal = literal
    }

    /// Creates a number written as the decimal integer `value`.
    public init(_ value: Int) {
        self.literal = String(value)
    }

    /// Creates a number written as the shortest text that reads back as `value`.
    ///
    /// - Precondition: `value` is finite; JSON has no NaN or infinity.
    public init(_ value: Double) {
        precondition(value.isFinite, "JSON numbers must be finite, got \(value)")
        self.literal = value.description
    }

    /// The value as an `Int`, only when written as an integer that fits:
    /// `"5"` → 5, `"-0"` → 0, but `"5.0"`, `"1e2"` and out-of-range integers → `nil`.
    public var int: Int? {
        for byte in literal.utf8 where byte == UInt8(ascii: ".") || byte | 0x20 == UInt8(ascii: "e") {
            return nil
        }
        return Int(literal)
    }

    /// The value as an `Int` when it is a whole number that fits, however it is
    /// written: `"5"`, `"5.0"`, `"5e0"` and `"500e-2"` → 5; `"5.5"` and out-of-range
    /// numbers → `nil`. JSON does not tell integers from other numbers, and JSON
    /// Schema's `integer` is any whole number, so this is what an API that says
    /// "integer" accepts.
    public var wholeInt: Int? {
        if let int { return int }
        let value = canonical
        guard value.hugeLiteral == nil, value.exponent >= value.digits.count else { return nil }
        guard value.exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for index in 0..<value.exponent {
            let digit = index < value.digits.count ? UInt64(value.digits[index] &- UInt8(ascii: "0")) : 0
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(digit)
            guard !o1, !o2 else { return nil }
            magnitude = sum
        }
        if value.negative {
            return magnitude <= UInt64(Int.max) + 1 ? Int(truncatingIfNeeded: 0 &- magnitude) : nil
        }
        return magnitude <= UInt64(Int.max) ? Int(magnitude) : nil
    }

    /// Whether the value is a whole number (of any size): `"5"`, `"5.0"`, `"1e400"`, but not `"5.5"`.
    public var isWhole: Bool {
        let value = canonical
        if let huge = value.hugeLiteral {
            // An exponent beyond Int's range: whole when it is positive.
            return !huge.contains("e-") && !huge.contains("E-")
        }
        return value.exponent >= value.digits.count
    }

    /// The nearest `Double`; infinite when the magnitude is beyond `Double`'s range.
    public var double: Double {
        Double(literal) ?? .nan
    }

    /// The literal.
    public var description: String { literal }

    /// Whether both numbers denote the same decimal value.
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        lhs.literal == rhs.literal || lhs.canonical == rhs.canonical
    }

    /// Hashes the decimal value, to agree with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(canonical)
    }

    /// Decodes a number: its literal from ``JSONValueDecoder``; from other decoders
    /// as `Int`, then `UInt64`, then `Double` (the spelling is lost).
    public init(from decoder: any Decoder) throws {
        if let parsed = decoder as? JSONValueDecoding, case .number(let number) = parsed.value {
            self = number
            return
        }
        let container = try decoder.singleValueContainer()
        if let i = try? container.decode(Int.self) {
            self.init(i)
        } else if let u = try? container.decode(UInt64.self) {
            self.init(unchecked: String(u))
        } else {
            let d = try container.decode(Double.self)
            guard d.isFinite else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "JSON numbers must be finite")
            }
            self.init(d)
        }
    }

    /// Encodes the number as an `Int` or `UInt64` when it is written as one, else as a `Double`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let i = int {
            try container.encode(i)
        } else if let u = UInt64(literal) {
            try container.encode(u)
        } else {
            try container.encode(double)
        }
    }

    /// The decimal value as `0.digits × 10^exponent`, with no leading or trailing zero digit.
    private struct Canonical: Hashable {
        var negative: Bool
        var digits: [UInt8]
        var exponent: Int
        /// Set when the exponent does not fit in an `Int`; then the literal itself is compared.
        var hugeLiteral: String?
    }

    private var canonical: Canonical {
        var negative = false
        var digits: [UInt8] = []
        var pointPosition = 0
        var sawPoint = false
        var inExponent = false
        var exponentNegative = false
        var exponent = 0
        for b in literal.utf8 {
            if inExponent {
                switch b {
                case UInt8(ascii: "-"): exponentNegative = true
                case UInt8(ascii: "+"): break
                default:
                    let (m, o1) = exponent.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(Int(b &- UInt8(ascii: "0")))
                    guard !o1, !o2, s <= Int.max / 4 else {
                        // Beyond any exponent a real number has: compare spellings.
                        return Canonical(negative: negative, digits: [], exponent: 0, hugeLiteral: literal)
                    }
                    exponent = s
                }
                continue
            }
            switch b {
            case UInt8(ascii: "-"):
                negative = true
            case UInt8(ascii: "."):
                sawPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                inExponent = true
            case UInt8(ascii: "0") where digits.isEmpty:
                // A leading zero after the point moves the point left; before it, it is nothing.
                if sawPoint { pointPosition -= 1 }
            default:
                digits.append(b)
                if !sawPoint { pointPosition += 1 }
            }
        }
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        if digits.isEmpty {
            return Canonical(negative: false, digits: [], exponent: 0, hugeLiteral: nil)
        }
        let total = pointPosition + (exponentNegative ? -exponent : exponent)
        return Canonical(negative: negative, digits: digits, exponent: total, hugeLiteral: nil)
    }
}

// MARK: - JSONObject

/// An object that keeps its members in input order and answers lookups by key.
///
/// Keys are unique. Equality ignores member order, as JSON does: `{"a":1,"b":2}`
/// equals `{"b":2,"a":1}`; iteration and ``keys`` follow the order of insertion.
///
/// ```swift
/// let object: JSONObject = ["title": "Disk full", "level": 2]
/// object["title"]   // .string("Disk full")
/// object.keys       // ["title", "level"]
/// ```
public struct JSONObject: Sendable, Hashable, Sequence {
    /// One member.
    public typealias Element = (key: String, value: JSONValue)

    /// Objects with more members than this get a hash index; smaller ones are scanned.
    static var linearLimit: Int { 12 }

    /// One stored member: a struct rather than the `Element` tuple, so copies and
    /// destruction are specialized instead of going through generic tuple witnesses.
    struct Member {
        var key: String
        var value: JSONValue
    }

    private var members: [Member]
    /// Member position by key; only present when `members.count > linearLimit`.
    private var index: [String: Int]?

    /// Creates an object from members in order. When a key repeats, the later value
    /// replaces the earlier one, which keeps its position.
    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = []
        self.index = nil
        self.members.reserveCapacity(members.count)
        for member in members {
            self[member.key] = member.value
        }
    }

    /// Creates an object from members already known to have distinct keys.
    init(uniqueMembers members: [Member], index: [String: Int]?) {
        self.members = members
        self.index = index
        if index == nil && members.count > Self.linearLimit {
            self.index = Self.makeIndex(members)
        }
    }

    /// Member position (counted from the first of `members`) by key.
    static func makeIndex(_ members: some Collection<Member>) -> [String: Int] {
        var index: [String: Int] = [:]
        index.reserveCapacity(members.count)
        for (i, member) in members.enumerated() { index[member.key] = i }
        return index
    }

    /// The position of the member named `key`.
    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return members.firstIndex { $0.key == key }
    }

    /// The value of the member named `key`, or `nil` when there is none.
    ///
    /// Setting a value replaces the member in place or appends a new one;
    /// setting `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let i = position(of: key) else { return nil }
            return members[i].value
        }
        set {
            if let i = position(of: key) {
                if let newValue {
                    members[i].value = newValue
                } else {
                    members.remove(at: i)
                    index = members.count > Self.linearLimit ? Self.makeIndex(members) : nil
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
                if index != nil {
                    index![key] = members.count - 1
                } else if members.count > Self.linearLimit {
                    index = Self.makeIndex(members)
                }
            }
        }
    }

    /// The member names in order.
    public var keys: [String] { members.map(\.key) }

    /// The number of members.
    public var count: Int { members.count }

    /// `true` when the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The number of members.
    public var underestimatedCount: Int { members.count }

    /// Iterates the members in order.
    public func makeIterator() -> Iterator {
        Iterator(base: members.makeIterator())
    }

    /// Iterates the members of an object in order.
    public struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[Member]>

        /// The next member, or `nil` after the last.
        public mutating func next() -> (key: String, value: JSONValue)? {
            guard let member = base.next() else { return nil }
            return (key: member.key, value: member.value)
        }
    }

    /// Whether both objects have the same members, in any order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (i, member) in lhs.members.enumerated() {
            // Fast path: same key at the same position.
            if rhs.members[i].key == member.key {
                guard rhs.members[i].value == member.value else { return false }
            } else {
                guard let value = rhs[member.key], value == member.value else { return false }
            }
        }
        return true
    }

    /// Hashes the members without regard to their order, to agree with `==`.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for member in members {
            var h = Hasher()
            h.combine(member.key)
            h.combine(member.value)
            combined = combined &+ h.finalize()
        }
        hasher.combine(members.count)
        hasher.combine(combined)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// Creates an object with the members in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension JSONObject: Codable {
    /// Decodes an object: as parsed from ``JSONValueDecoder``; from other decoders
    /// through a keyed container, in the order of the decoder's `allKeys`.
    public init(from decoder: any Decoder) throws {
        if let parsed = decoder as? JSONValueDecoding, case .object(let object) = parsed.value {
            self = object
            return
        }
        try self.init(from: decoder.container(keyedBy: JSONCodingKey.self))
    }

    init(from container: KeyedDecodingContainer<JSONCodingKey>) throws {
        var members: [Element] = []
        members.reserveCapacity(container.allKeys.count)
        for key in container.allKeys {
            members.append((key: key.stringValue, value: try container.decode(JSONValue.self, forKey: key)))
        }
        self.init(members)
    }

    /// Encodes the members in order into a keyed container.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONCodingKey.self)
        for member in members {
            try container.encode(member.value, forKey: JSONCodingKey(stringValue: member.key))
        }
    }
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
