/// Host names and addresses as alertd judges them.
public enum Hosts {
    /// Whether `host` names this machine only: `localhost` and the names under it
    /// (RFC 6761), 127.0.0.0/8 and `::1` (in brackets or not), in any letter case.
    /// The daemon (is it listening beyond this machine?), `alertctl` (does a token
    /// cross the network in the clear?) and the PostgreSQL store (is the server
    /// unverified beyond this machine?) all ask it here.
    ///
    /// An IPv4 address counts by its value, in any form the C library reads as one
    /// (``ipv4(_:)``: `127.1`, `0x7f000001`); a name is never one because it begins
    /// like an address: `127.0.0.1.nip.io` is a name in public DNS, which anyone may
    /// point anywhere.
    public static func isLoopback(_ host: String) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if name == "localhost" || name.hasSuffix(".localhost") || name == "::1" { return true }
        guard let address = ipv4(name) else { return false }
        return address >> 24 == 127
    }

    /// The IPv4 address `text` stands for in any form `inet_aton(3)` accepts, and so
    /// `getaddrinfo(3)` (the resolver every HTTP client asks) connects to: one to four
    /// parts separated by dots, each decimal, octal (a leading `0`) or hexadecimal
    /// (`0x`), the last part filling the bytes the others leave (`127.1` is 127.0.0.1,
    /// `0x7f000001` and `2130706433` are too, `0177.0.0.1` as well). nil for anything
    /// else, names included. A URL's host in one of these forms must be judged as the
    /// address it is, not as a name.
    ///
    /// ```swift
    /// Hosts.ipv4("127.1")              // 0x7F00_0001
    /// Hosts.ipv4("0x7f.0.0.1")         // 0x7F00_0001
    /// Hosts.ipv4("127.0.0.1.nip.io")   // nil: a name
    /// ```
    public static func ipv4(_ text: some StringProtocol) -> UInt32? {
        var parts: [UInt64] = []
        var bytes = Substring(text).utf8[...]
        guard !bytes.isEmpty else { return nil }
        while true {
            guard parts.count < 4, let (value, rest) = part(bytes) else { return nil }
            parts.append(value)
            if rest.isEmpty { break }
            guard rest.first == UInt8(ascii: "."), parts.count < 4 else { return nil }
            bytes = rest.dropFirst()
        }
        // Every part but the last is one byte; the last fills what is left.
        let leading = parts.dropLast()
        guard leading.allSatisfy({ $0 <= 0xFF }), let last = parts.last else { return nil }
        let room = 8 * UInt64(4 - leading.count)
        guard last < (1 << room) else { return nil }
        var value: UInt64 = 0
        for (index, part) in leading.enumerated() { value |= part << (24 - 8 * UInt64(index)) }
        return UInt32(value | last)
    }

    /// One part of ``ipv4(_:)``: its value and what follows it; nil when it is no number.
    private static func part(_ bytes: Substring.UTF8View.SubSequence) -> (UInt64, Substring.UTF8View.SubSequence)? {
        var rest = bytes
        var base: UInt64 = 10
        var digits = 0
        if rest.first == UInt8(ascii: "0") {
            rest = rest.dropFirst()
            if rest.first == UInt8(ascii: "x") || rest.first == UInt8(ascii: "X") {
                base = 16
                rest = rest.dropFirst()
            } else {
                base = 8
                digits = 1  // "0" alone is zero
            }
        }
        var value: UInt64 = 0
        while let byte = rest.first {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f") where base == 16: digit = UInt64(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F") where base == 16: digit = UInt64(byte - UInt8(ascii: "A") + 10)
            default: digit = .max
            }
            guard digit != .max else { break }
            guard digit < base else { return nil }  // 8 or 9 in an octal part
            value = value * base + digit
            guard value <= 0xFFFF_FFFF else { return nil }
            digits += 1
            rest = rest.dropFirst()
        }
        return digits > 0 ? (value, rest) : nil
    }
}
