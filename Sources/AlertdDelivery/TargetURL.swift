public import AlertdCore

/// A callback URL taken apart, so that an attempt can connect to the address
/// it checked against the deny list while the receiver still sees its own name.
///
/// Accepts what ``CallbackURL/problem(_:)`` accepts: absolute `http` or `https`
/// URLs, optional user info, a host name, an IPv4 address or a bracketed IPv6
/// address, an optional port. The fragment is dropped (it is never sent).
///
/// ```swift
/// let url = TargetURL("http://hooks.example.com:8080/alertd?x=1")!
/// url.host            // "hooks.example.com"
/// url.port            // 8080
/// url.hostHeader      // "hooks.example.com:8080"
/// url.connecting(to: IPAddress("10.0.0.5")!)  // "http://10.0.0.5:8080/alertd?x=1"
/// ```
public struct TargetURL: Sendable, Hashable {
    /// `http` or `https`, lowercased.
    public let scheme: String
    /// `user:password`, if the URL has it.
    public let userInfo: Substring?
    /// The host without brackets, lowercased.
    public let host: String
    /// The port, explicit or the scheme's default.
    public let port: Int
    /// Whether the URL names the port.
    public let hasExplicitPort: Bool
    /// Path and query as written; `/` when the URL has no path.
    public let pathAndQuery: String

    /// Parses `text`; nil if it is not an absolute http(s) URL with a host.
    public init?(_ text: String) {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            scheme = "http"
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            scheme = "https"
            rest = text.dropFirst(8)
        } else {
            return nil
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var path = rest[authority.endIndex...]
        if let hash = path.firstIndex(of: "#") { path = path[..<hash] }
        pathAndQuery = path.isEmpty ? "/" : path.hasPrefix("?") ? "/" + path : String(path)
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
        } else {
            userInfo = nil
        }
        var hostText: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            hostText = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            hostText = hostPort[..<colon]
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            hostText = hostPort
        }
        // A percent-encoded host would be decoded by the HTTP client after the deny list saw it encoded.
        guard !hostText.isEmpty, !hostText.contains("%") else { return nil }
        host = hostText.lowercased()
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = value
            hasExplicitPort = true
        } else {
            port = scheme == "https" ? 443 : 80
            hasExplicitPort = false
        }
    }

    /// The host as an address, when the URL names one instead of a name: in any form
    /// the resolver would read as one (`127.1` is 127.0.0.1), so that it is checked and
    /// connected to as the address it is.
    public var address: IPAddress? { IPAddress(host: host) }

    /// The `Host` header the receiver expects: the host (bracketed if IPv6) and the port if the URL names it.
    public var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return hasExplicitPort ? "\(name):\(port)" : name
    }

    /// The same URL with `address` in place of the host.
    public func connecting(to address: IPAddress) -> String {
        let literal = address.family == .v6 ? "[\(address)]" : "\(address)"
        let credentials = userInfo.map { "\($0)@" } ?? ""
        return "\(scheme)://\(credentials)\(literal):\(port)\(pathAndQuery)"
    }
}
