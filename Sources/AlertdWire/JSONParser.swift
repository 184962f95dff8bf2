// Over 400 lines on purpose: one recursive-descent parser (strict RFC 8259, UTF-8
// checked, depth and size bounded) whose pieces only make sense together.

/// Why a JSON text was rejected, and where.
///
/// ```swift
/// do { _ = try JSONParser.parse(Array("[1,]".utf8)) }
/// catch { print(error) }   // "trailing comma at byte 3"
/// ```
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The byte offset where the problem is.
    public let offset: Int
    /// Short human text, e.g. `invalid UTF-8`, `duplicate key "title"`, `trailing characters`.
    public let reason: String

    /// Creates an error at `offset` for `reason`.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    /// `"<reason> at byte <offset>"`.
    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 parser working directly on bytes.
///
/// It rejects everything the RFC does not allow (and a few things it tolerates):
/// invalid UTF-8, a byte order mark, unescaped control characters, bad or lone
/// surrogate escapes, non-RFC numbers, comments, trailing commas or characters,
/// duplicate keys in one object, and nesting deeper than `maxDepth`. Parsing is
/// iterative, so hostile nesting cannot overflow the stack.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"title":"Disk full"}"#.utf8))
/// value["title"]   // .string("Disk full")
/// ```
public enum JSONParser {
    /// Parses exactly one JSON value (RFC 8259), surrounded by optional whitespace.
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 text, without a byte order mark.
    ///   - maxDepth: how many arrays and objects may nest; one more is an error.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONParseError(offset: 0, reason: "empty input")
        }
        // UInt8 may alias any byte-sized integer memory (e.g. a C `char` buffer).
        let buffer = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        var parser = Parser(buffer, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses exactly one JSON value (RFC 8259), surrounded by optional whitespace.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) -> JSONValue in try parse(raw, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses exactly one JSON value from the UTF-8 of `text`.
    public static func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(JSONParseError) -> JSONValue in
                try parse(UnsafeRawBufferPointer(utf8), maxDepth: maxDepth)
            }
        }
        return try result.get()
    }
}

// MARK: - Byte constants

extension UInt8 {
    fileprivate static var quote: UInt8 { UInt8(ascii: "\"") }
    fileprivate static var backslash: UInt8 { UInt8(ascii: "\\") }
    fileprivate static var slash: UInt8 { UInt8(ascii: "/") }
    fileprivate static var comma: UInt8 { UInt8(ascii: ",") }
    fileprivate static var colon: UInt8 { UInt8(ascii: ":") }
    fileprivate static var openBracket: UInt8 { UInt8(ascii: "[") }
    fileprivate static var closeBracket: UInt8 { UInt8(ascii: "]") }
    fileprivate static var openBrace: UInt8 { UInt8(ascii: "{") }
    fileprivate static var closeBrace: UInt8 { UInt8(ascii: "}") }
    fileprivate static var minus: UInt8 { UInt8(ascii: "-") }
    fileprivate static var plus: UInt8 { UInt8(ascii: "+") }
    fileprivate static var zero: UInt8 { UInt8(ascii: "0") }
    fileprivate static var nine: UInt8 { UInt8(ascii: "9") }
    fileprivate static var point: UInt8 { UInt8(ascii: ".") }
}

// MARK: - Numbers

/// The RFC 8259 number grammar, shared by the parser and ``JSONNumber/init(literal:)``.
enum JSONNumberGrammar {
    /// Scans the longest number starting at `start`: the offset just past it, or why there is none.
    ///
    /// `number = [ "-" ] int [ frac ] [ exp ]`, `int = "0" / ( digit1-9 *DIGIT )`,
    /// `frac = "." 1*DIGIT`, `exp = ( "e" / "E" ) [ "-" / "+" ] 1*DIGIT`.
    static func scan(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Result<Int, JSONParseError> {
        let count = bytes.count
        var i = start
        @inline(__always) func isDigit(_ i: Int) -> Bool {
            i < count && bytes[i] &- .zero < 10
        }
        if i < count && bytes[i] == .minus { i += 1 }
        guard isDigit(i) else {
            return .failure(JSONParseError(offset: i, reason: "invalid number: expected a digit"))
        }
        if bytes[i] == .zero {
            i += 1
            if isDigit(i) {
                return .failure(JSONParseError(offset: i - 1, reason: "invalid number: leading zero"))
            }
        } else {
            while isDigit(i) { i += 1 }
        }
        if i < count && bytes[i] == .point {
            i += 1
            guard isDigit(i) else {
                return .failure(JSONParseError(offset: i, reason: "invalid number: expected a digit after '.'"))
            }
            while isDigit(i) { i += 1 }
        }
        if i < count && bytes[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            if i < count && (bytes[i] == .minus || bytes[i] == .plus) { i += 1 }
            guard isDigit(i) else {
                return .failure(JSONParseError(offset: i, reason: "invalid number: expected a digit in exponent"))
            }
            while isDigit(i) { i += 1 }
        }
        return .success(i)
    }
}

// MARK: - Strings

/// Word-at-a-time tests on string bytes (the classic "has a zero byte" bit tricks).
enum StringBytes {
    private static var ones: UInt64 { 0x0101_0101_0101_0101 }
    private static var highs: UInt64 { 0x8080_8080_8080_8080 }

    /// Whether any byte of `w` is zero.
    @inline(__always)
    private static func hasZero(_ w: UInt64) -> Bool {
        (w &- ones) & ~w & highs != 0
    }

    /// Whether any byte of `w` is `"`, `\` or a control character (below 0x20).
    @inline(__always)
    static func needsEscape(_ w: UInt64) -> Bool {
        (w &- ones &* 0x20) & ~w & highs != 0
            || hasZero(w ^ (ones &* UInt64(UInt8(ascii: "\""))))
            || hasZero(w ^ (ones &* UInt64(UInt8(ascii: "\\"))))
    }

    /// Whether all eight bytes of `w` may appear as they are inside a string: ASCII,
    /// not a control character, not `"` or `\`.
    @inline(__always)
    static func isPlainASCII(_ w: UInt64) -> Bool {
        w & highs == 0 && !needsEscape(w)
    }
}

// MARK: - UTF-8

/// The length of the well-formed UTF-8 sequence starting at `i`, or `nil`
/// (Unicode Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
@inline(__always)
private func utf8SequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> Int? {
    let count = bytes.count
    let lead = bytes[i]
    @inline(__always) func continuation(_ j: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
        j < count && bytes[j] >= low && bytes[j] <= high
    }
    switch lead {
    case 0x00...0x7F:
        return 1
    case 0xC2...0xDF:
        return continuation(i + 1) ? 2 : nil
    case 0xE0:
        return continuation(i + 1, 0xA0) && continuation(i + 2) ? 3 : nil
    case 0xE1...0xEC, 0xEE...0xEF:
        return continuation(i + 1) && continuation(i + 2) ? 3 : nil
    case 0xED:
        return continuation(i + 1, 0x80, 0x9F) && continuation(i + 2) ? 3 : nil
    case 0xF0:
        return continuation(i + 1, 0x90) && continuation(i + 2) && continuation(i + 3) ? 4 : nil
    case 0xF1...0xF3:
        return continuation(i + 1) && continuation(i + 2) && continuation(i + 3) ? 4 : nil
    case 0xF4:
        return continuation(i + 1, 0x80, 0x8F) && continuation(i + 2) && continuation(i + 3) ? 4 : nil
    default:
        return nil
    }
}

// MARK: - The parser

/// One open array or object. Its elements or members sit on the parser's shared
/// scratch stacks from `start` on, so each container is allocated once, at its exact size.
private struct Frame {
    var isObject: Bool
    var start: Int
    /// Member position by key, built once the object outgrows a linear scan.
    var index: [String: Int]? = nil
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    let count: Int
    let maxDepth: Int
    var pos = 0
    /// Reused for strings that contain escapes.
    var scratch: [UInt8] = []
    /// Elements of the open arrays, innermost last.
    var elements: [JSONValue] = []
    /// Members of the open objects, innermost last.
    var members: [JSONObject.Member] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.count = bytes.count
        self.maxDepth = maxDepth
    }

    @inline(__always)
    func fail(_ reason: String, at offset: Int) -> JSONParseError {
        JSONParseError(offset: offset, reason: reason)
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < count {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF {
            throw fail("byte order mark not allowed", at: 0)
        }
        skipWhitespace()
        if pos == count { throw fail("empty input", at: pos) }
        let value = try parseValue()
        skipWhitespace()
        if pos != count { throw fail("trailing characters", at: pos) }
        return value
    }

    /// Why the byte at `pos` cannot start a value.
    func unexpected(expecting what: String) -> JSONParseError {
        if pos == count { return fail("unexpected end of input, expected \(what)", at: pos) }
        let b = bytes[pos]
        if b >= 0x80 {
            if utf8SequenceLength(bytes, at: pos) == nil { return fail("invalid UTF-8", at: pos) }
            return fail("unexpected character, expected \(what)", at: pos)
        }
        if b < 0x20 || b == 0x7F {
            return fail("unexpected byte 0x\(String(b, radix: 16, uppercase: true)), expected \(what)", at: pos)
        }
        return fail("unexpected character '\(Character(Unicode.Scalar(b)))', expected \(what)", at: pos)
    }

    /// Parses one value, iteratively: open containers live on an explicit stack.
    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        var stack: [Frame] = []
        var value: JSONValue

        parsing: while true {
            // Here `pos` is at the first byte of a value (whitespace skipped).
            guard pos < count else { throw unexpected(expecting: "a value") }
            switch bytes[pos] {
            case .openBrace:
                guard stack.count < maxDepth else { throw fail("nesting deeper than \(maxDepth)", at: pos) }
                pos += 1
                skipWhitespace()
                if pos < count && bytes[pos] == .closeBrace {
                    pos += 1
                    value = .object(JSONObject())
                } else {
                    if stack.isEmpty { stack.reserveCapacity(8) }
                    if members.capacity == 0 { members.reserveCapacity(16) }
                    stack.append(Frame(isObject: true, start: members.count))
                    try parseKey(into: &stack[stack.count - 1])
                    continue parsing
                }
            case .openBracket:
                guard stack.count < maxDepth else { throw fail("nesting deeper than \(maxDepth)", at: pos) }
                pos += 1
                skipWhitespace()
                if pos < count && bytes[pos] == .closeBracket {
                    pos += 1
                    value = .array([])
                } else {
                    if stack.isEmpty { stack.reserveCapacity(8) }
                    if elements.capacity == 0 { elements.reserveCapacity(16) }
                    stack.append(Frame(isObject: false, start: elements.count))
                    continue parsing
                }
            case .quote:
                value = .string(try parseString())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            case .minus, .zero ... .nine:
                value = .number(try parseNumber())
            default:
                throw unexpected(expecting: "a value")
            }

            // A value is complete: hand it to the enclosing container, closing as many as end here.
            while !stack.isEmpty {
                let top = stack.count - 1
                skipWhitespace()
                if stack[top].isObject {
                    // The member was pushed with its key by `parseKey`.
                    members[members.count - 1].value = value
                    guard pos < count else { throw unexpected(expecting: "',' or '}'") }
                    switch bytes[pos] {
                    case .comma:
                        pos += 1
                        skipWhitespace()
                        if pos < count && bytes[pos] == .closeBrace { throw fail("trailing comma", at: pos) }
                        try parseKey(into: &stack[top])
                        continue parsing
                    case .closeBrace:
                        pos += 1
                        let frame = stack.removeLast()
                        let object = Array(members[frame.start...])
                        members.removeSubrange(frame.start...)
                        value = .object(JSONObject(uniqueMembers: object, index: frame.index))
                    default:
                        throw unexpected(expecting: "',' or '}'")
                    }
                } else {
                    elements.append(value)
                    guard pos < count else { throw unexpected(expecting: "',' or ']'") }
                    switch bytes[pos] {
                    case .comma:
                        pos += 1
                        skipWhitespace()
                        if pos < count && bytes[pos] == .closeBracket { throw fail("trailing comma", at: pos) }
                        continue parsing
                    case .closeBracket:
                        pos += 1
                        let start = stack.removeLast().start
                        let array = Array(elements[start...])
                        elements.removeSubrange(start...)
                        value = .array(array)
                    default:
                        throw unexpected(expecting: "',' or ']'")
                    }
                }
            }
            return value
        }
    }

    /// Parses `"key" :` and leaves `pos` at the member's value.
    mutating func parseKey(into frame: inout Frame) throws(JSONParseError) {
        guard pos < count && bytes[pos] == .quote else { throw unexpected(expecting: "a string key") }
        let keyOffset = pos
        let key = try parseString()
        let position = members.count - frame.start
        if frame.index != nil {
            if frame.index!.updateValue(position, forKey: key) != nil { throw duplicate(key, at: keyOffset) }
        } else {
            if members[frame.start...].contains(where: { $0.key == key }) { throw duplicate(key, at: keyOffset) }
            if position >= JSONObject.linearLimit {
                var index = JSONObject.makeIndex(members[frame.start...])
                index[key] = position
                frame.index = index
            }
        }
        // The value is filled in when it is complete.
        members.append(JSONObject.Member(key: key, value: .null))
        skipWhitespace()
        guard pos < count && bytes[pos] == .colon else { throw unexpected(expecting: "':'") }
        pos += 1
        skipWhitespace()
    }

    func duplicate(_ key: String, at offset: Int) -> JSONParseError {
        let shown = key.count > 64 ? String(key.prefix(64)) + "…" : key
        return fail("duplicate key \"\(shown)\"", at: offset)
    }

    mutating func expectLiteral(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        let w = word.utf8Start
        var i = 0
        while i < n {
            guard pos + i < count && bytes[pos + i] == w[i] else {
                throw fail("invalid literal, expected '\(word)'", at: pos)
            }
            i += 1
        }
        pos += n
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = pos
        switch JSONNumberGrammar.scan(UnsafeRawBufferPointer(bytes), from: start) {
        case .success(let end):
            pos = end
            let literal = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
            return JSONNumber(unchecked: literal)
        case .failure(let error):
            throw error
        }
    }

    /// Parses a string at the opening quote. Strings without escapes become one slice.
    mutating func parseString() throws(JSONParseError) -> String {
        pos += 1
        let start = pos
        let base = UnsafeRawPointer(bytes.baseAddress!)  // Not nil: the input is not empty.
        while true {
            // Plain ASCII, eight bytes at a time.
            while pos &+ 8 <= count,
                StringBytes.isPlainASCII(base.loadUnaligned(fromByteOffset: pos, as: UInt64.self))
            {
                pos &+= 8
            }
            guard pos < count else { break }
            let b = bytes[pos]
            if b == .quote {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<pos]), as: UTF8.self)
                pos += 1
                return s
            } else if b == .backslash {
                return try parseEscapedString(from: start)
            } else if b < 0x20 {
                throw fail("unescaped control character in string", at: pos)
            } else if b < 0x80 {
                pos += 1
            } else {
                guard let n = utf8SequenceLength(bytes, at: pos) else { throw fail("invalid UTF-8", at: pos) }
                pos += n
            }
        }
        throw fail("unterminated string", at: start - 1)
    }

    /// Continues a string at its first backslash, decoding into `scratch`.
    mutating func parseEscapedString(from start: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<pos]))
        while pos < count {
            let b = bytes[pos]
            if b == .quote {
                pos += 1
                return String(decoding: scratch, as: UTF8.self)
            } else if b == .backslash {
                try parseEscape()
            } else if b < 0x20 {
                throw fail("unescaped control character in string", at: pos)
            } else if b < 0x80 {
                scratch.append(b)
                pos += 1
            } else {
                guard let n = utf8SequenceLength(bytes, at: pos) else { throw fail("invalid UTF-8", at: pos) }
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[pos..<pos + n]))
                pos += n
            }
        }
        throw fail("unterminated string", at: start - 1)
    }

    /// Decodes the escape at `pos` (a backslash) into `scratch`.
    mutating func parseEscape() throws(JSONParseError) {
        let escapeOffset = pos
        guard pos + 1 < count else { throw fail("unterminated string", at: pos) }
        let e = bytes[pos + 1]
        pos += 2
        switch e {
        case .quote: scratch.append(.quote)
        case .backslash: scratch.append(.backslash)
        case .slash: scratch.append(.slash)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try hex4(escapeOffset: escapeOffset)
            var scalarValue = UInt32(unit)
            switch unit {
            case 0xD800...0xDBFF:
                guard pos + 1 < count && bytes[pos] == .backslash && bytes[pos + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired surrogate escape", at: escapeOffset)
                }
                let lowOffset = pos
                pos += 2
                let low = try hex4(escapeOffset: lowOffset)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw fail("unpaired surrogate escape", at: escapeOffset)
                }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            case 0xDC00...0xDFFF:
                throw fail("unpaired surrogate escape", at: escapeOffset)
            default:
                break
            }
            // Always valid: surrogates were handled above.
            appendUTF8(scalarValue)
        default:
            throw fail("invalid escape", at: escapeOffset)
        }
    }

    /// Appends the UTF-8 encoding of a scalar value (never a surrogate).
    @inline(__always)
    mutating func appendUTF8(_ v: UInt32) {
        switch v {
        case 0..<0x80:
            scratch.append(UInt8(v))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | v >> 6))
            scratch.append(UInt8(0x80 | v & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | v >> 12))
            scratch.append(UInt8(0x80 | v >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | v & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | v >> 18))
            scratch.append(UInt8(0x80 | v >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | v >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | v & 0x3F))
        }
    }

    /// Reads the four hex digits after `\u` at `pos`.
    mutating func hex4(escapeOffset: Int) throws(JSONParseError) -> UInt16 {
        guard pos + 4 <= count else { throw fail("invalid \\u escape", at: escapeOffset) }
        var value: UInt16 = 0
        for i in 0..<4 {
            let b = bytes[pos + i]
            let digit: UInt8
            switch b {
            case .zero ... .nine: digit = b - .zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape", at: escapeOffset)
            }
            value = value << 4 | UInt16(digit)
        }
        pos += 4
        return value
    }
}
