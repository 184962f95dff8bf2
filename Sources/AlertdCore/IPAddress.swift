import AlertdWire

/// An IPv4 or IPv6 address.
///
/// Text is parsed strictly: IPv4 as four decimal parts 0–255 without leading
/// zeros (`010.0.0.1` is refused rather than read as octal, as `inet_aton`
/// would); IPv6 as up to eight groups of one to four hex digits, with one `::`
/// for a run of zero groups and optionally an IPv4 address as the last 32
/// bits. Zone ids (`fe80::1%eth0`) and brackets are refused.
///
/// ```swift
/// let metadata = IPAddress("169.254.169.254")!
/// let mapped = IPAddress("::ffff:169.254.169.254")!
/// mapped.unmappedIPv4 == metadata  // true
/// IPAddress("fe80::0:1")!.description  // "fe80::1"
/// ```
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// IPv4 or IPv6.
    public enum Family: Sendable, Hashable {
        case v4, v6
    }

    enum Storage: Sendable, Hashable {
        case v4(UInt32)
        /// The 128 bits as two big-endian halves: `high` holds the first eight bytes.
        case v6(high: UInt64, low: UInt64)
    }

    let storage: Storage

    /// The IPv4 address whose 32 bits, most significant first, are `value`:
    /// `IPAddress(ipv4: 0x7F00_0001)` is `127.0.0.1`.
    public init(ipv4 value: UInt32) { storage = .v4(value) }

    /// The IPv6 address whose first eight bytes are `high` and last eight `low`,
    /// both most significant first: `IPAddress(ipv6High: 0, low: 1)` is `::1`.
    public init(ipv6High high: UInt64, low: UInt64) { storage = .v6(high: high, low: low) }

    /// The address in network byte order: 4 bytes make an IPv4 address, 16 an
    /// IPv6 one (as in `sin_addr` and `sin6_addr`); any other count is nil.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4:
            storage = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            let high = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = bytes.dropFirst(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            storage = .v6(high: high, low: low)
        default:
            return nil
        }
    }

    /// Parses the textual form of an IPv4 or IPv6 address; nil for anything else.
    public init?(_ text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        if utf8.contains(UInt8(ascii: ":")) {
            guard let (high, low) = Self.parseV6(utf8[...]) else { return nil }
            storage = .v6(high: high, low: low)
        } else {
            guard let value = Self.parseV4(utf8[...]) else { return nil }
            storage = .v4(value)
        }
    }

    /// The address a URL's host stands for when it is a literal: the strict forms
    /// above, or an IPv4 address in a form the C library reads as one (`127.1`,
    /// `0x7f000001`, `0177.0.0.1`: ``Hosts/ipv4(_:)``), which a resolver connects to as
    /// its canonical form and which must be judged as that; nil for a name.
    public init?(host text: some StringProtocol) {
        if let strict = IPAddress(text) {
            self = strict
        } else if let value = Hosts.ipv4(text) {
            storage = .v4(value)
        } else {
            return nil
        }
    }

    /// Whether this is an IPv4 or an IPv6 address (an IPv4-mapped IPv6 address is IPv6).
    public var family: Family {
        switch storage {
        case .v4: .v4
        case .v6: .v6
        }
    }

    /// The address in network byte order: 4 or 16 bytes.
    public var bytes: [UInt8] {
        switch storage {
        case .v4(let value):
            return (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32($0))) }
        case .v6(let high, let low):
            let first = (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            let second = (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
            return first + second
        }
    }

    /// For an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), the IPv4 address it
    /// carries; nil for every other address. A socket connected to the mapped
    /// address reaches the IPv4 one, so deny rules must see through it.
    public var unmappedIPv4: IPAddress? {
        guard case .v6(let high, let low) = storage, high == 0, low >> 32 == 0xFFFF else { return nil }
        return IPAddress(ipv4: UInt32(truncatingIfNeeded: low))
    }

    /// This address as IPv6: itself, or `::ffff:a.b.c.d` for an IPv4 address.
    public var ipv6Mapped: IPAddress {
        switch storage {
        case .v4(let value): IPAddress(ipv6High: 0, low: 0xFFFF_0000_0000 | UInt64(value))
        case .v6: self
        }
    }

    /// Dotted decimal for IPv4; the RFC 5952 form for IPv6 (lowercase, no
    /// leading zeros, the longest run of two or more zero groups as `::`, and
    /// `::ffff:a.b.c.d` for mapped IPv4).
    public var description: String {
        switch storage {
        case .v4(let value):
            return Self.dotted(value)
        case .v6(let high, let low):
            if let v4 = unmappedIPv4, case .v4(let value) = v4.storage { return "::ffff:" + Self.dotted(value) }
            let groups = (0..<8).map { i in UInt16(truncatingIfNeeded: (i < 4 ? high : low) >> (48 - 16 * UInt64(i % 4))) }
            // The longest run of zero groups (the first of equal runs), if two or more long.
            var bestStart = -1, bestLength = 1
            var i = 0
            while i < 8 {
                guard groups[i] == 0 else {
                    i += 1
                    continue
                }
                var j = i
                while j < 8, groups[j] == 0 { j += 1 }
                if j - i > bestLength { (bestStart, bestLength) = (i, j - i) }
                i = j
            }
            let hex = { (range: Range<Int>) in range.map { String(groups[$0], radix: 16) }.joined(separator: ":") }
            guard bestStart >= 0 else { return hex(0..<8) }
            return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
        }
    }

    private static func dotted(_ value: UInt32) -> String {
        "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
    }

    // MARK: Parsing

    private static func parseV4(_ text: ArraySlice<UInt8>) -> UInt32? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard (1...3).contains(part.count), part.first != UInt8(ascii: "0") || part.count == 1 else { return nil }
            var octet: UInt32 = 0
            for digit in part {
                guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
                octet = octet * 10 + UInt32(digit - UInt8(ascii: "0"))
            }
            guard octet <= 255 else { return nil }
            value = value << 8 | octet
        }
        return value
    }

    private static func parseV6(_ text: ArraySlice<UInt8>) -> (UInt64, UInt64)? {
        // Split at the one `::`, if any, into the groups before and after it.
        var head = text
        var tail: ArraySlice<UInt8>?
        var index = text.startIndex
        while index + 1 < text.endIndex {
            if text[index] == UInt8(ascii: ":"), text[index + 1] == UInt8(ascii: ":") {
                head = text[..<index]
                tail = text[(index + 2)...]
                break
            }
            index += 1
        }
        guard let headGroups = groups(head, mayEndInV4: tail == nil) else { return nil }
        var all = headGroups
        if let tail {
            guard let tailGroups = groups(tail, mayEndInV4: true), headGroups.count + tailGroups.count <= 7 else { return nil }
            all += [UInt16](repeating: 0, count: 8 - headGroups.count - tailGroups.count) + tailGroups
        }
        guard all.count == 8 else { return nil }
        let high = all[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        let low = all[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return (high, low)
    }

    /// The 16-bit groups of a `:`-separated list (empty for empty text); the
    /// last item may be an IPv4 address, which makes two groups.
    private static func groups(_ text: ArraySlice<UInt8>, mayEndInV4: Bool) -> [UInt16]? {
        guard !text.isEmpty else { return [] }
        let parts = text.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (n, part) in parts.enumerated() {
            if mayEndInV4, n == parts.count - 1, part.contains(UInt8(ascii: ".")) {
                guard let v4 = parseV4(part) else { return nil }
                groups.append(UInt16(truncatingIfNeeded: v4 >> 16))
                groups.append(UInt16(truncatingIfNeeded: v4))
                continue
            }
            guard (1...4).contains(part.count) else { return nil }
            var group: UInt16 = 0
            for char in part {
                guard let digit = hexValue(char) else { return nil }
                group = group << 4 | UInt16(digit)
            }
            groups.append(group)
        }
        return groups.count <= 8 ? groups : nil
    }

    private static func hexValue(_ char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): char - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): char - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): char - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A block of addresses: an address and how many of its leading bits are fixed.
///
/// An IPv4 network also contains the IPv4-mapped IPv6 forms of its addresses,
/// and an IPv6 network the IPv4 addresses whose mapped form it covers, so
/// `169.254.0.0/16` contains `::ffff:169.254.169.254`.
///
/// ```swift
/// let linkLocal = IPNetwork("169.254.0.0/16")!
/// linkLocal.contains(IPAddress("169.254.169.254")!)  // true
/// IPNetwork("fe80::1")!.prefixLength  // 128: a single address
/// ```
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The first address of the block (bits past the prefix are zero).
    public let address: IPAddress
    /// How many leading bits are fixed: 0–32 for IPv4, 0–128 for IPv6.
    public let prefixLength: Int

    /// The block of `address` with `prefixLength` leading bits (0–32 for IPv4,
    /// 0–128 for IPv6); bits of `address` past the prefix are cleared.
    public init?(address: IPAddress, prefixLength: Int) {
        switch address.storage {
        case .v4(let value):
            guard (0...32).contains(prefixLength) else { return nil }
            self.address = IPAddress(ipv4: value & Self.mask32(prefixLength))
        case .v6(let high, let low):
            guard (0...128).contains(prefixLength) else { return nil }
            let (maskHigh, maskLow) = Self.mask128(prefixLength)
            self.address = IPAddress(ipv6High: high & maskHigh, low: low & maskLow)
        }
        self.prefixLength = prefixLength
    }

    /// Parses `address/prefix`, or a lone address as a block of one.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        var length = address.family == .v4 ? 32 : 128
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...3).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), let parsed = Int(digits) else {
                return nil
            }
            length = parsed
        }
        self.init(address: address, prefixLength: length)
    }

    /// Whether `candidate`, or its IPv4 or IPv4-mapped IPv6 form, is in the block.
    public func contains(_ candidate: IPAddress) -> Bool {
        switch (address.storage, candidate.storage) {
        case (.v4(let network), .v4(let value)):
            return value & Self.mask32(prefixLength) == network
        case (.v4, .v6):
            guard let v4 = candidate.unmappedIPv4 else { return false }
            return contains(v4)
        case (.v6(let networkHigh, let networkLow), .v6(let high, let low)):
            let (maskHigh, maskLow) = Self.mask128(prefixLength)
            return high & maskHigh == networkHigh && low & maskLow == networkLow
        case (.v6, .v4):
            return contains(candidate.ipv6Mapped)
        }
    }

    public var description: String { "\(address)/\(prefixLength)" }

    private static func mask32(_ length: Int) -> UInt32 {
        length == 0 ? 0 : UInt32.max << UInt32(32 - length)
    }

    private static func mask128(_ length: Int) -> (UInt64, UInt64) {
        switch length {
        case 0: (0, 0)
        case 1...64: (UInt64.max << UInt64(64 - length), 0)
        default: (UInt64.max, length == 128 ? UInt64.max : UInt64.max << UInt64(128 - length))
        }
    }
}
