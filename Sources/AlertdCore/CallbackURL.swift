/// The rule for `callback_url`: an absolute `http` or `https` URL with a host.
public enum CallbackURL {
    public static let maxLength = 2048

    /// Why the text is not an acceptable callback URL, or nil when it is.
    public static func problem(_ text: String) -> String? {
        if text.utf8.count > maxLength { return "must be at most \(maxLength) bytes" }
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else {
            return "must be an absolute http or https URL"
        }
        if text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0.value > 0x7E }) {
            return "must not contain spaces, control or non-ASCII characters (percent-encode them)"
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        // Brackets belong around an IPv6 address and nowhere else in the authority (RFC 3986).
        if authority.dropLast(hostPort.count).contains(where: { $0 == "[" || $0 == "]" }) {
            return "must not have [ or ] in its user info"
        }
        var host = Substring(hostPort)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return "has an unterminated IPv6 address" }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty, rest.first != ":" || !isPort(rest.dropFirst()) { return "has an invalid port" }
            if !isIPv6(host) { return "has \(host) in brackets, which is not an IPv6 address" }
        } else if host.contains(where: { $0 == "[" || $0 == "]" }) {
            return "must not have [ or ] in its host except around an IPv6 address"
        } else if let colon = host.lastIndex(of: ":") {
            let port = host[host.index(after: colon)...]
            host = host[..<colon]
            if !isPort(port) { return "has an invalid port" }
        }
        if host.isEmpty { return "must name a host" }
        if host.contains("%") { return "must not percent-encode its host" }
        return nil
    }

    /// RFC 4291's text form, without a zone: eight groups of 1–4 hex digits, one
    /// `::` standing for a run of zero groups, the last two groups possibly written
    /// as a dotted IPv4 address (octets without leading zeros).
    static func isIPv6(_ text: Substring) -> Bool {
        var hex = text
        var groups = 8
        if let lastColon = text.lastIndex(of: ":"), text[lastColon...].contains(".") {
            guard isIPv4(text[text.index(after: lastColon)...]) else { return false }
            hex = text[...lastColon]
            if !hex.hasSuffix("::") { hex = hex.dropLast() }
            groups = 6
        }
        func count(_ part: Substring) -> Int? {
            if part.isEmpty { return 0 }
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for field in fields {
                guard (1...4).contains(field.utf8.count), field.utf8.allSatisfy(isHexDigit) else { return nil }
            }
            return fields.count
        }
        if let gap = hex.indices.first(where: { hex[$0] == ":" && hex[hex.index(after: $0)...].first == ":" }) {
            let afterGap = hex.index(gap, offsetBy: 2)
            guard let left = count(hex[..<gap]), let right = count(hex[afterGap...]) else { return false }
            return left + right < groups
        }
        return count(hex) == groups
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }

    /// Four decimal octets 0–255, without leading zeros.
    private static func isIPv4(_ text: Substring) -> Bool {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4
            && octets.allSatisfy { octet in
                let digits = octet.utf8
                guard (1...3).contains(digits.count), digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return false }
                guard digits.count == 1 || digits.first != UInt8(ascii: "0") else { return false }
                return Int(octet).map { $0 <= 255 } ?? false
            }
    }

    private static func isPort(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy(\.isASCII), let value = Int(text) else { return false }
        return (1...65535).contains(value)
    }
}
