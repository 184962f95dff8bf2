public import AlertdWire

/// The JSON Canonicalization Scheme (RFC 8785): one byte sequence for one JSON value,
/// whoever writes it. Receipts (SPEC §14) hash and sign these bytes, so a verifier in any
/// language (Python's `rfc8785`, Go's, Java's) that canonicalizes the same value gets the
/// same bytes.
///
/// - Objects: members sorted by their names' UTF-16 code units, no whitespace.
/// - Strings: `"` and `\` escaped, `\b \t \n \f \r`, other controls as `\u00xx`
///   (lowercase hex); everything else as UTF-8, unescaped (`/`, U+2028, emoji).
/// - Numbers: the IEEE 754 double nearest the literal, written as ECMAScript's
///   `Number.prototype.toString` writes it (`1e+30`, `0.002`, `4.5`, `-0` as `0`);
///   NaN and the infinities have no JSON form and a literal beyond the double range
///   (`1e400`) is refused.
///
/// ```swift
/// let value = try JSONParser.parse(#"{"b": 2.50, "a": "\u00e9"}"#)
/// String(decoding: try JCS.canonicalize(value), as: UTF8.self)   // {"a":"é","b":2.5}
/// ```
public enum JCS {
    /// The canonical UTF-8 bytes of `value`.
    public static func canonicalize(_ value: JSONValue) throws(JCSError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        try write(value, into: &out)
        return out
    }

    /// Appends the canonical bytes of `value` to `out`.
    public static func write(_ value: JSONValue, into out: inout [UInt8]) throws(JCSError) {
        try write(value, into: &out, outOfRange: nil)
    }

    /// `outOfRange`: how a number beyond the double range is written (nil: it is refused).
    static func write(_ value: JSONValue, into out: inout [UInt8], outOfRange: ((JSONNumber) -> String)?) throws(JCSError) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let number):
            let double = number.double
            guard double.isFinite else {
                guard let outOfRange else { throw JCSError(.numberOutOfRange, number.literal) }
                out.append(contentsOf: outOfRange(number).utf8)
                return
            }
            out.append(contentsOf: serialize(double).utf8)
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                try write(element, into: &out, outOfRange: outOfRange)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            // RFC 8785 §3.2.3: by the names' UTF-16 code units, compared as unsigned integers.
            // ASCII names (nearly all) order the same by their UTF-8 bytes, read in place.
            let ascii = object.allSatisfy { member in member.key.utf8.allSatisfy { $0 < 0x80 } }
            let sorted =
                ascii
                ? object.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                : object.sorted { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                try write(member.value, into: &out, outOfRange: outOfRange)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A string as RFC 8785 §3.2.2.2 (ECMAScript's `JSON.stringify`) writes it.
    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = s
        text.withUTF8 { bytes in
            // Runs of bytes that need no escape are copied whole.
            var start = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                start = index + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
                case 0x08: out.append(contentsOf: #"\b"#.utf8)
                case 0x09: out.append(contentsOf: #"\t"#.utf8)
                case 0x0A: out.append(contentsOf: #"\n"#.utf8)
                case 0x0C: out.append(contentsOf: #"\f"#.utf8)
                case 0x0D: out.append(contentsOf: #"\r"#.utf8)
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: #"\u00"#.utf8)
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// A finite double as ECMAScript's `Number.prototype.toString` writes it (ECMA-262
    /// §7.1.12.1, which RFC 8785 §3.2.2.3 adopts): the shortest digits that read back as
    /// the same double, in plain notation for exponents from -6 to 20 and as `de±x`
    /// beyond. Swift's own `description` already finds the shortest digits (closest to
    /// the value when several are as short), as ECMAScript asks; only the layout differs.
    ///
    /// - Precondition: `value` is finite.
    public static func serialize(_ value: Double) -> String {
        precondition(value.isFinite, "JCS has no form for \(value)")
        if value == 0 { return "0" }  // -0 too
        // A whole number up to 2^53 is its own shortest digits: written as the integer (the
        // common case, and a `description` and its reading spared). Above, the shortest digits
        // of a double may end before the integer's do (2^60 is 1152921504606847000).
        if value.magnitude <= 9_007_199_254_740_992, value == value.rounded(.towardZero) { return String(Int64(value)) }
        let (digits, n) = decimal(value.magnitude)
        let k = digits.count
        var text = value < 0 ? "-" : ""
        if k <= n && n <= 21 {
            text += String(decoding: digits, as: UTF8.self) + String(repeating: "0", count: n - k)
        } else if 0 < n && n <= 21 {
            text += String(decoding: digits[..<n], as: UTF8.self) + "." + String(decoding: digits[n...], as: UTF8.self)
        } else if -6 < n && n <= 0 {
            text += "0." + String(repeating: "0", count: -n) + String(decoding: digits, as: UTF8.self)
        } else {
            let exponent = n - 1
            text += String(decoding: digits[..<1], as: UTF8.self)
            if k > 1 { text += "." + String(decoding: digits[1...], as: UTF8.self) }
            text += "e" + (exponent < 0 ? "-" : "+") + String(exponent.magnitude)
        }
        return text
    }

    /// The shortest decimal digits of a positive finite double (no leading or trailing
    /// zero) and `n`, with `value = 0.digits × 10^n`, read off Swift's `description`
    /// (`123.45`, `1e-07`, `1.7976931348623157e+308`).
    private static func decimal(_ value: Double) -> (digits: [UInt8], n: Int) {
        let text = Array(value.description.utf8)
        let e = text.firstIndex { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
        var exponent = 0
        if let e { exponent = Int(String(decoding: text[(e + 1)...], as: UTF8.self)) ?? 0 }
        var digits: [UInt8] = []
        var beforePoint = 0
        var sawPoint = false
        for byte in text[..<(e ?? text.count)] {
            if byte == UInt8(ascii: ".") {
                sawPoint = true
            } else {
                digits.append(byte)
                if !sawPoint { beforePoint += 1 }
            }
        }
        while digits.first == UInt8(ascii: "0") {
            digits.removeFirst()
            beforePoint -= 1
        }
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        return (digits, beforePoint + exponent)
    }
}

/// A value JCS cannot write: a number beyond the double range (`1e400`).
public struct JCSError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable { case numberOutOfRange }
    let code: Code
    /// The literal in question.
    public let literal: String

    init(_ code: Code, _ literal: String) {
        self.code = code
        self.literal = literal
    }

    /// A number whose nearest double is infinite: I-JSON (RFC 7493), and so JCS, has no form for it.
    public static let numberOutOfRange = JCSError(.numberOutOfRange, "")

    public static func == (a: JCSError, b: JCSError) -> Bool { a.code == b.code }

    public var description: String {
        switch code {
        case .numberOutOfRange: "the number \(literal) is beyond the range of an IEEE 754 double, which JCS (RFC 8785) requires"
        }
    }
}
