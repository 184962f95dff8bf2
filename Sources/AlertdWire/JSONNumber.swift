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
