public import AlertdWire

/// An alert's id: 128 bits, 48 of them the creation time in milliseconds, the rest
/// random, written as 26 Crockford base32 characters. Ids sort by creation as
/// plain strings, are URL-safe, and are unique.
public struct AlertID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public static func < (a: AlertID, b: AlertID) -> Bool {
        a.high != b.high ? a.high < b.high : a.low < b.low
    }

    /// The creation time the id carries.
    public var timestamp: Timestamp { Timestamp(milliseconds: Int64(high >> 16)) }

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let decoding: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (value, char) in alphabet.enumerated() {
            table[Int(char)] = Int8(value)
            table[Int(Character(Unicode.Scalar(char)).lowercased().utf8.first!)] = Int8(value)
        }
        return table
    }()

    public var description: String {
        var chars = [UInt8](repeating: 0, count: 26)
        var hi = high, lo = low
        // 26 characters × 5 bits = 130 bits: the first character holds the top 3 bits.
        for i in stride(from: 25, through: 0, by: -1) {
            chars[i] = Self.alphabet[Int(lo & 31)]
            lo = (lo >> 5) | ((hi & 31) << 59)
            hi >>= 5
        }
        return String(decoding: chars, as: UTF8.self)
    }

    /// Parses the 26-character form (case-insensitive); nil for anything else.
    public init?(_ text: String) {
        var text = text
        guard let parsed = text.withUTF8({ Self.parse($0) }) else { return nil }
        self = parsed
    }

    public init?(_ text: Substring) {
        self.init(String(text))
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> AlertID? {
        guard bytes.count == 26 else { return nil }
        var hi: UInt64 = 0, lo: UInt64 = 0
        for index in 0..<26 {
            let value = decoding[Int(bytes[index])]
            guard value >= 0, index > 0 || value < 8 else { return nil }
            hi = (hi << 5) | (lo >> 59)
            lo = (lo << 5) | UInt64(value)
        }
        return AlertID(high: hi, low: lo)
    }
}

/// Makes ids that increase strictly, even within one millisecond or when the
/// clock steps back.
///
/// The first id of a millisecond has fresh random bits; later ids of the same
/// millisecond (or of an earlier one, when the clock stepped back) count up from
/// the last, as monotonic ULIDs do. At thousands of posts a second that spares
/// two `getrandom` calls per post.
public struct AlertIDGenerator: Sendable {
    private var last: AlertID?

    public init(after last: AlertID? = nil) { self.last = last }

    public mutating func next(at time: Timestamp) -> AlertID {
        let ms = UInt64(max(0, time.milliseconds)) & 0xFFFF_FFFF_FFFF
        let id: AlertID
        if let last, last.high >> 16 >= ms {
            let low = last.low &+ 1
            id = AlertID(high: low == 0 ? last.high + 1 : last.high, low: low)
        } else {
            var generator = SystemRandomNumberGenerator()
            id = AlertID(high: ms << 16 | UInt64(generator.next() as UInt16), low: generator.next())
        }
        last = id
        return id
    }
}
