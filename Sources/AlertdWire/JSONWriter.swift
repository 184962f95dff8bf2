/// Appends compact JSON to a byte buffer. Used to build HTTP responses fast.
///
/// Commas and colons are written for you: call ``key(_:)`` before each
/// member value of an object and just write the elements of an array.
///
/// ```swift
/// var w = JSONWriter()
/// w.beginObject()
/// w.key("id"); w.int(7)
/// w.key("tags"); w.beginArray(); w.string("disk"); w.string("io"); w.endArray()
/// w.endObject()
/// // w.bytes == Array(#"{"id":7,"tags":["disk","io"]}"#.utf8)
/// ```
public struct JSONWriter: Sendable {
    /// The JSON written so far.
    public private(set) var bytes: [UInt8]

    /// One bit per open container (bit `depth - 1` is the innermost), set until its
    /// first element or member is written. Containers past 64 levels use `deepFirst`.
    private var firstBits: UInt64 = 0
    private var depth = 0
    private var deepFirst: [Bool] = []
    /// `true` right after a key, where the value takes no comma.
    private var afterKey = false

    /// Creates an empty writer whose buffer can hold `capacity` bytes before growing.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    /// Writes the comma that separates this value from the previous one, if any.
    @inline(__always)
    private mutating func separate() {
        if afterKey {
            afterKey = false
        } else if depth > 0 {
            if depth <= 64 {
                let bit: UInt64 = 1 << UInt64(depth - 1)
                if firstBits & bit != 0 {
                    firstBits &= ~bit
                } else {
                    bytes.append(UInt8(ascii: ","))
                }
            } else if deepFirst[depth - 65] {
                deepFirst[depth - 65] = false
            } else {
                bytes.append(UInt8(ascii: ","))
            }
        }
    }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        depth += 1
        if depth <= 64 {
            firstBits |= 1 << UInt64(depth - 1)
        } else {
            deepFirst.append(true)
        }
    }

    private mutating func close(_ bracket: UInt8) {
        assert(depth > 0 && !afterKey, "closing a container that is not open, or right after a key")
        if depth > 64 { deepFirst.removeLast() }
        if depth > 0 { depth -= 1 }
        bytes.append(bracket)
    }

    /// Opens an object: `{`.
    public mutating func beginObject() { open(UInt8(ascii: "{")) }

    /// Closes the innermost object: `}`.
    public mutating func endObject() { close(UInt8(ascii: "}")) }

    /// Opens an array: `[`.
    public mutating func beginArray() { open(UInt8(ascii: "[")) }

    /// Closes the innermost array: `]`.
    public mutating func endArray() { close(UInt8(ascii: "]")) }

    /// Writes a member name and its colon, `"k":`; the next value written is its value.
    public mutating func key(_ k: StaticString) {
        assert(!afterKey, "two keys in a row")
        separate()
        k.withUTF8Buffer { appendQuoted($0) }
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    /// Writes a member name and its colon, `"k":`; the next value written is its value.
    public mutating func key(_ k: String) {
        assert(!afterKey, "two keys in a row")
        separate()
        appendQuoted(k)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    // MARK: Scalars

    /// Writes a string, escaping `"`, `\` and control characters; other text stays raw UTF-8.
    public mutating func string(_ s: String) {
        separate()
        appendQuoted(s)
    }

    /// Writes a string, or `null` when `s` is `nil`.
    public mutating func string(_ s: String?) {
        if let s { string(s) } else { null() }
    }

    /// Writes an integer.
    public mutating func int(_ i: Int) {
        separate()
        appendInteger(Int64(i))
    }

    /// Writes an integer, or `null` when `i` is `nil`.
    public mutating func int(_ i: Int?) {
        if let i { int(i) } else { null() }
    }

    /// Writes a 64-bit integer.
    public mutating func int64(_ i: Int64) {
        separate()
        appendInteger(i)
    }

    /// Writes a 64-bit integer, or `null` when `i` is `nil`.
    public mutating func int64(_ i: Int64?) {
        if let i { int64(i) } else { null() }
    }

    /// Writes the shortest text that reads back as `d`.
    ///
    /// - Precondition: `d` is finite; JSON has no NaN or infinity.
    public mutating func double(_ d: Double) {
        precondition(d.isFinite, "JSON numbers must be finite, got \(d)")
        separate()
        bytes.append(contentsOf: d.description.utf8)
    }

    /// Writes a double, or `null` when `d` is `nil`.
    public mutating func double(_ d: Double?) {
        if let d { double(d) } else { null() }
    }

    /// Writes a number as its literal.
    public mutating func number(_ n: JSONNumber) {
        separate()
        bytes.append(contentsOf: n.literal.utf8)
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ b: Bool) {
        separate()
        appendASCII(b ? "true" : "false")
    }

    /// Writes a boolean, or `null` when `b` is `nil`.
    public mutating func bool(_ b: Bool?) {
        if let b { bool(b) } else { null() }
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        appendASCII("null")
    }

    // MARK: Whole values

    /// Writes a whole value; numbers keep their literal, objects their member order.
    public mutating func value(_ v: JSONValue) {
        switch v {
        case .null:
            null()
        case .bool(let b):
            bool(b)
        case .number(let n):
            number(n)
        case .string(let s):
            string(s)
        case .array(let elements):
            beginArray()
            for element in elements { value(element) }
            endArray()
        case .object(let object):
            beginObject()
            for member in object {
                key(member.key)
                value(member.value)
            }
            endObject()
        }
    }

    /// Writes a time as an RFC 3339 string, or null.
    public mutating func timestamp(_ time: Timestamp?) {
        guard let time else { return null() }
        separate()
        bytes.append(34)
        bytes.append(contentsOf: time.rfc3339Bytes)
        bytes.append(34)
    }

    /// Writes an already encoded JSON value as is.
    public mutating func raw(_ bytes: [UInt8]) {
        separate()
        self.bytes.append(contentsOf: bytes)
    }

    // MARK: Sizes

    /// How many bytes ``string(_:)`` writes for `s`: its UTF-8 with escapes, and the
    /// quotes; 4 (`null`) for nil. Counted without writing, for budgets of rendered bytes.
    public static func quotedLength(_ s: String?) -> Int {
        guard let s else { return 4 }
        if let length = s.utf8.withContiguousStorageIfAvailable(quotedLength) { return length }
        var copy = s
        return copy.withUTF8(quotedLength)
    }

    /// ``quotedLength(_:)`` of UTF-8 bytes: eight at a time while none needs an escape.
    private static func quotedLength(_ utf8: UnsafeBufferPointer<UInt8>) -> Int {
        let count = utf8.count
        var length = 2 + count
        guard let base = utf8.baseAddress.map(UnsafeRawPointer.init) else { return length }
        var i = 0
        while true {
            while i &+ 8 <= count && !StringBytes.needsEscape(base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                i &+= 8
            }
            guard i < count else { break }
            switch utf8[i] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x09, 0x0D, 0x08, 0x0C: length += 1
            case 0..<0x20: length += 5
            default: break
            }
            i += 1
        }
        return length
    }

    // MARK: Encoding

    @inline(__always)
    private mutating func appendASCII(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func appendQuoted(_ s: String) {
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { appendQuoted($0) }
        if done == nil {
            // Bridged strings without contiguous UTF-8.
            var s = s
            s.withUTF8 { appendQuoted($0) }
        }
    }

    /// Writes `"utf8"`, copying runs that need no escape in one go.
    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        let count = utf8.count
        if count == 0 {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        let base = UnsafeRawPointer(utf8.baseAddress!)
        var runStart = 0
        var i = 0
        while true {
            // Skip eight bytes at a time while none needs escaping.
            while i &+ 8 <= count && !StringBytes.needsEscape(base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                i &+= 8
            }
            guard i < count else { break }
            let b = utf8[i]
            i += 1
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            if runStart < i - 1 {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<(i - 1)]))
            }
            runStart = i
            appendEscape(b)
        }
        if runStart < count {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscape(_ b: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch b {
        case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes.append(UInt8(ascii: "u"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(hex.utf8Start[Int(b >> 4)])
            bytes.append(hex.utf8Start[Int(b & 0xF)])
        }
    }

    /// Writes the decimal digits of `i` without going through `String`.
    private mutating func appendInteger(_ i: Int64) {
        // Negating in two's complement then reading as unsigned gives |Int64.min| too.
        var magnitude = i < 0 ? UInt64(bitPattern: 0 &- i) : UInt64(i)
        if i < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        repeat {
            bytes.append(UInt8(truncatingIfNeeded: magnitude % 10) &+ UInt8(ascii: "0"))
            magnitude /= 10
        } while magnitude != 0
        var low = start
        var high = bytes.count - 1
        while low < high {
            bytes.swapAt(low, high)
            low += 1
            high -= 1
        }
    }
}

extension JSONValue {
    /// The value as compact JSON: no whitespace, members in order, numbers as written.
    public func compactBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.value(self)
        return writer.bytes
    }
}
