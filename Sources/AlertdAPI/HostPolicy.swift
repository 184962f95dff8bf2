import AlertdCore
import AlertdWire
import Foundation
import Glibc

/// The defence of an anonymous API (no tokens) against DNS rebinding and
/// cross-site requests from a web page in the operator's browser.
///
/// Without tokens, every request that reaches alertd is trusted, and loopback
/// is no boundary for a browser: a page on `evil.example` can rebind its name
/// to 127.0.0.1 and then talk to alertd *as its own origin*, reading answers and
/// sending any request. Such a request always names the attacker's host in
/// `Host`, so while the API is anonymous:
///
/// - `Host` must be a loopback name (`localhost`, `*.localhost`), an IP address
///   literal (no DNS is involved, so nothing can rebind it) or a name listed in
///   `http.allowed_hosts`; a request without `Host` (HTTP/1.0) passes.
/// - A request carrying `Origin` must come from alertd's own origin (the scheme
///   and `Host` it was sent to) or from a host in `http.allowed_hosts` (a
///   reverse proxy's public name, whatever its scheme); only `GET`/`HEAD` of the
///   dashboard's own files (`/`, `/ui/…`) pass from any origin.
///
/// Refusals are 403 `forbidden`. With tokens these checks are off: a token is
/// not something a browser adds by itself, so a foreign page cannot use one.
public struct HostPolicy: Sendable {
    /// `http.allowed_hosts`, lower-cased, without a trailing dot.
    let allowedHosts: Set<String>
    /// `https` when alertd serves TLS itself, else `http`.
    public let scheme: String

    public init(allowedHosts: [String] = [], tls: Bool = false) {
        self.allowedHosts = Set(allowedHosts.map(Self.normalised))
        scheme = tls ? "https" : "http"
    }

    /// nil when the request may go on; else why not.
    func check(method: String, isDashboard: Bool, host: String?, origin: String?) -> Problem? {
        // Every anonymous request comes here: the usual loopback Host passes
        // without parsing or allocating.
        if origin == nil, let host, Self.isPlainLoopback(host) { return nil }
        if let host {
            guard let authority = Authority(host), isTrusted(authority) else {
                return Problem(
                    .forbidden,
                    "Host \(Self.shown(host)) is not a loopback name, an IP address or a name in http.allowed_hosts: "
                        + "without tokens alertd answers only requests addressed to it by those (a defence against DNS rebinding); "
                        + "add the name to http.allowed_hosts, or configure tokens")
            }
        }
        guard let origin else { return nil }
        if isDashboard, method == "GET" || method == "HEAD" { return nil }
        if let own = host.flatMap({ Authority($0) }), let from = Authority(origin: origin) {
            if from.scheme == scheme, from.host == own.host, from.port(default: scheme) == own.port(default: scheme) { return nil }
            if allowedHosts.contains(from.host) { return nil }
        }
        return Problem(
            .forbidden,
            "a request from the web page of \(Self.shown(origin)) may not use alertd without tokens: "
                + "Origin is not alertd's own (nor a host in http.allowed_hosts)")
    }

    /// Whether `text` can be an entry of `http.allowed_hosts`: a host name, no
    /// port, no scheme (IP addresses need no entry).
    public static func isHostName(_ text: String) -> Bool {
        Authority(text).map { $0.port == nil && !$0.isAddress } == true
    }

    /// `127.0.0.1`, `localhost` or `[::1]`, optionally with `:` and a port up to 65535.
    /// On the raw bytes: the generic algorithms on `String.UTF8View` cost more
    /// than the rest of a GET together.
    static func isPlainLoopback(_ host: String) -> Bool {
        var host = host
        return host.withUTF8 { bytes -> Bool in
            guard let base = bytes.baseAddress else { return false }
            var nameLength = bytes.count
            var index = bytes.count - 1
            while index >= 0 {
                if bytes[index] == UInt8(ascii: ":") {
                    nameLength = index
                    break
                }
                // `]` before any colon: the colons of `[::1]` are not a port's.
                if bytes[index] == UInt8(ascii: "]") || bytes[index] < UInt8(ascii: "0") || bytes[index] > UInt8(ascii: "9") { break }
                index -= 1
            }
            func named(_ literal: StaticString) -> Bool {
                nameLength == literal.utf8CodeUnitCount && memcmp(base, literal.utf8Start, nameLength) == 0
            }
            guard named("127.0.0.1") || named("localhost") || named("[::1]") else { return false }
            let digits = bytes.count - nameLength - 1
            guard nameLength < bytes.count else { return true }
            guard (1...5).contains(digits) else { return false }
            var port = 0
            for offset in (nameLength + 1)..<bytes.count { port = port * 10 + Int(bytes[offset] - UInt8(ascii: "0")) }
            return port <= 65535
        }
    }

    private func isTrusted(_ authority: Authority) -> Bool {
        let name = authority.host
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        if authority.isAddress { return true }
        return allowedHosts.contains(name)
    }

    static func normalised(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// A header value fit for an error detail: printable ASCII, at most 100 characters.
    private static func shown(_ value: String) -> String {
        let printable = value.unicodeScalars.prefix(100).map { $0.isASCII && $0.value >= 32 && $0.value < 127 ? Character($0) : "?" }
        return "\"" + String(printable) + (value.unicodeScalars.count > 100 ? "…" : "") + "\""
    }

    /// `host[:port]` of a `Host` header or an `Origin`, host lower-cased.
    struct Authority: Equatable {
        var scheme: String?
        var host: String
        var port: Int?
        /// The host is an IP address literal (IPv6 in brackets in the header).
        var isAddress: Bool

        /// A `Host` header value: `name`, `name:port`, `1.2.3.4:port`, `[::1]:port`.
        init?(_ text: some StringProtocol) {
            var rest = Substring(text)
            var bracketed = false
            let hostPart: Substring
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                hostPart = rest[rest.index(after: rest.startIndex)..<close]
                rest = rest[rest.index(after: close)...]
                bracketed = true
            } else {
                let colon = rest.firstIndex(of: ":") ?? rest.endIndex
                hostPart = rest[..<colon]
                rest = rest[colon...]
            }
            if rest.isEmpty {
                port = nil
            } else {
                guard rest.first == ":", let value = Int(rest.dropFirst()), (0...65535).contains(value) else { return nil }
                port = value
            }
            guard !hostPart.isEmpty,
                hostPart.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") })
            else { return nil }
            if bracketed {
                guard let address = IPAddress(hostPart), address.family == .v6 else { return nil }
                host = address.description
                isAddress = true
            } else {
                host = HostPolicy.normalised(String(hostPart))
                isAddress = IPAddress(hostPart) != nil
            }
        }

        /// An `Origin` header value: `scheme://host[:port]`; nil for `null` and anything else.
        init?(origin: String) {
            guard let separator = origin.range(of: "://") else { return nil }
            let scheme = origin[..<separator.lowerBound].lowercased()
            guard scheme == "http" || scheme == "https", var parsed = Authority(origin[separator.upperBound...]) else { return nil }
            parsed.scheme = scheme
            self = parsed
        }

        /// The port, or the scheme's default.
        func port(default scheme: String) -> Int { port ?? (scheme == "https" ? 443 : 80) }
    }
}
