public import AlertdCore

/// The callback targets alertd refuses to call: `callbacks.deny` in the config.
///
/// Each entry is one of
/// - an IPv4 or IPv6 block, `169.254.0.0/16`, `fe80::/10`, or a single address
///   without a prefix, `10.0.0.7`. IPv4 blocks also catch the IPv4-mapped
///   IPv6 forms of their addresses (`::ffff:169.254.169.254`), since a
///   connection to one reaches the other;
/// - a host glob, `metadata.google.internal` or `*.internal`, compared without
///   regard to case and to a trailing dot. `*` stands for one or more whole
///   labels: `*.internal` matches `db.internal` and `a.b.internal` but not
///   `internal` itself; `api.*.corp` matches `api.eu.corp` and `api.eu.west.corp`.
///   A `*` inside a label (`db*.internal`) is not valid.
///
/// Check the host name and every address it resolves to before each attempt,
/// then connect to one of those same addresses, so that a name re-resolving
/// elsewhere between the check and the connection cannot get past it.
///
/// `callbacks.allow` names the exceptions, in the same two forms: an address
/// block lets the addresses in it through, a host glob lets that name through
/// whatever it resolves to (the admin vouches for the name, as for a receiver
/// on the same host or network).
///
/// ```swift
/// let deny = try DenyList(["169.254.0.0/16", "127.0.0.0/8", "*.internal"], allow: ["127.0.0.1"])
/// deny.refuses(host: "example.com", addresses: [IPAddress("169.254.169.254")!])
/// // "169.254.169.254 is in callbacks.deny entry 169.254.0.0/16"
/// deny.refuses(host: "localhost", addresses: [IPAddress("127.0.0.1")!])  // nil: allowed
/// deny.refuses(host: "localhost", addresses: [IPAddress("127.0.0.2")!])  // "127.0.0.2 is in …"
/// ```
public struct DenyList: Sendable {
    /// The default (SPEC §5): what a stranger's URL must never reach from
    /// alertd's host — "this network" (0.0.0.0/8, `::`), loopback (a
    /// co-located Prometheus, database or admin API), link-local (cloud
    /// metadata, 169.254.169.254), the private ranges (RFC 1918, IPv6 ULA, where
    /// AWS's `fd00:ec2::254` also lives) and shared address space (100.64.0.0/10,
    /// carrier and cloud NAT). IPv4-mapped IPv6 forms are covered by the IPv4 blocks.
    public static let defaultEntries = [
        "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "::/128",
        "::1/128", "fe80::/10", "fc00::/7",
    ]

    /// The list made of ``defaultEntries``, with no exceptions.
    public static let standard = DenyList(validated: defaultEntries)

    /// The deny entries as written in the config.
    public let entries: [String]
    /// The exceptions (`callbacks.allow`) as written in the config.
    public let allowed: [String]

    private struct NetworkRule: Sendable {
        let entry: String
        let network: IPNetwork
    }

    private struct HostRule: Sendable {
        let entry: String
        let pattern: HostPattern
    }

    private var networks: [NetworkRule] = []
    private var hosts: [HostRule] = []
    private var allowedNetworks: [IPNetwork] = []
    private var allowedHosts: [HostPattern] = []

    /// Parses `entries` and the exceptions `allow`.
    ///
    /// - Throws: ``DenyListError`` naming the first entry that is neither an
    ///   address block nor a host glob, and its list.
    public init(_ entries: [String], allow: [String] = []) throws(DenyListError) {
        self.entries = entries
        self.allowed = allow
        for entry in entries {
            switch try Self.parse(entry) {
            case .network(let network): networks.append(NetworkRule(entry: entry, network: network))
            case .host(let pattern): hosts.append(HostRule(entry: entry, pattern: pattern))
            }
        }
        for entry in allow {
            do throws(DenyListError) {
                switch try Self.parse(entry) {
                case .network(let network): allowedNetworks.append(network)
                case .host(let pattern): allowedHosts.append(pattern)
                }
            } catch {
                throw error.in(.allow)
            }
        }
    }

    private init(validated entries: [String]) {
        do {
            try self.init(entries)
        } catch {
            preconditionFailure("built-in deny list entry is invalid: \(error)")
        }
    }

    /// Why a target is refused: the host and the entry it matched, or the
    /// address and the block it is in; nil when nothing matches.
    ///
    /// `host` is the URL's host (brackets around an IPv6 literal and a
    /// trailing dot are allowed); `addresses` are those it resolved to. A host
    /// that is itself an address literal is checked as an address too.
    public func refuses(host: String, addresses: [IPAddress]) -> String? {
        refusal(host: host, addresses: addresses)?.description
    }

    /// What refuses a target: the entry, and the address it caught (nil when a host glob
    /// caught the name itself); nil when nothing does. See ``refuses(host:addresses:)``.
    public func refusal(host: String, addresses: [IPAddress]) -> Refusal? {
        let lowercased = Self.bare(host)
        if !hosts.isEmpty || !allowedHosts.isEmpty {
            let labels = lowercased.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            // A name the admin allowed goes through, whatever it resolves to.
            if allowedHosts.contains(where: { $0.matches(labels) }) { return nil }
            for rule in hosts where rule.pattern.matches(labels) {
                return Refusal(host: lowercased, entry: rule.entry, address: nil)
            }
        }
        var candidates = addresses
        // An address in any form the resolver reads as one (`127.1`, `0x7f000001`) is that address.
        if let literal = IPAddress(host: lowercased) { candidates.insert(literal, at: 0) }
        // A connection to the unspecified address reaches this machine: it is
        // checked as loopback too, so denying 127.0.0.0/8 or ::1 also covers it.
        for address in candidates where address == Self.unspecifiedV4 || address == Self.unspecifiedV6 {
            candidates += [IPAddress(ipv4: 0x7F00_0001), IPAddress(ipv6High: 0, low: 1)]
        }
        for address in candidates where !allowedNetworks.contains(where: { $0.contains(address) }) {
            for rule in networks where rule.network.contains(address) {
                return Refusal(host: lowercased, entry: rule.entry, address: address)
            }
        }
        return nil
    }

    /// Whether the host alone settles the check, with no lookup: an address literal, or
    /// a name one of the host globs (of `deny` or of `allow`) matches. Any other name is
    /// judged by the addresses it resolves to.
    public func judgesWithoutResolving(host: String) -> Bool {
        let lowercased = Self.bare(host)
        // An address in any form a resolver reads as one (`127.1`) is judged as that address.
        if IPAddress(host: lowercased) != nil || networks.isEmpty { return true }
        let labels = lowercased.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return allowedHosts.contains { $0.matches(labels) } || hosts.contains { $0.pattern.matches(labels) }
    }

    /// The host without the brackets of an IPv6 literal or a trailing dot, lowercased.
    private static func bare(_ host: String) -> String {
        var name = Substring(host)
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if name.hasSuffix(".") { name = name.dropLast() }
        return name.lowercased()
    }

    /// Why `callbacks.deny` refuses a target.
    public struct Refusal: Sendable, Hashable, CustomStringConvertible {
        /// The host, lowercased, without brackets or a trailing dot.
        public let host: String
        /// The deny entry that matched, as written in the config.
        public let entry: String
        /// The address the entry caught: the host itself when it is a literal, or one it
        /// resolved to; nil when a host glob caught the name.
        public let address: IPAddress?

        /// `host metadata.internal matches callbacks.deny entry *.internal`, or
        /// `127.0.0.1 is in callbacks.deny entry 127.0.0.0/8`.
        public var description: String {
            guard let address else { return "host \(host) matches callbacks.deny entry \(entry)" }
            return "\(address) is in callbacks.deny entry \(entry)"
        }

        /// Said without the address a name resolved to (whoever reads it learns nothing of
        /// what the name resolves to beyond the entry): `localhost resolves to an address
        /// in callbacks.deny entry 127.0.0.0/8`; a literal or a host glob as ``description``.
        public var withoutResolvedAddress: String {
            guard address != nil, IPAddress(host: host) == nil else { return description }
            return "\(host) resolves to an address in callbacks.deny entry \(entry)"
        }
    }

    private static let unspecifiedV4 = IPAddress(ipv4: 0)
    private static let unspecifiedV6 = IPAddress(ipv6High: 0, low: 0)

    // MARK: Entries

    private enum Rule {
        case network(IPNetwork)
        case host(HostPattern)
    }

    private static func parse(_ entry: String) throws(DenyListError) -> Rule {
        guard !entry.isEmpty else { throw .empty(entry) }
        if let slash = entry.firstIndex(of: "/") {
            guard IPAddress(entry[..<slash]) != nil else { throw .invalidAddress(entry) }
            guard let network = IPNetwork(entry) else { throw .invalidPrefixLength(entry) }
            return .network(network)
        }
        if let address = IPAddress(entry), let network = IPNetwork(address: address, prefixLength: address.family == .v4 ? 32 : 128) {
            return .network(network)
        }
        // Something with a colon, or ending in a numeric label, was meant as an address.
        let labels = entry.lowercased().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if entry.contains(":") || labels.last?.allSatisfy({ $0.isASCII && $0.isNumber }) == true {
            throw .invalidAddress(entry)
        }
        guard let pattern = HostPattern(labels) else { throw .invalidHostPattern(entry) }
        return .host(pattern)
    }
}

/// A host glob: labels, where `*` stands for one or more whole labels.
struct HostPattern: Sendable, Hashable {
    private let labels: [String]

    /// Lowercase labels; each is `*` or letters, digits, `-` and `_`.
    init?(_ labels: [String]) {
        for label in labels {
            guard label == "*" || (!label.isEmpty && label.utf8.allSatisfy(Self.isLabelByte)) else { return nil }
        }
        self.labels = labels
    }

    private static func isLabelByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): true
        default: false
        }
    }

    /// Whether the lowercase `host` labels match.
    ///
    /// Dynamic programming over (pattern label, host label) pairs, so many
    /// stars never make matching exponential.
    func matches(_ host: [String]) -> Bool {
        // matched[j]: the pattern labels seen so far match the first j host labels.
        var matched = [Bool](repeating: false, count: host.count + 1)
        matched[0] = true
        for label in labels {
            var next = [Bool](repeating: false, count: host.count + 1)
            if label == "*" {
                // One or more labels: next[j] if matched[i] for some i < j.
                var reachable = false
                for j in stride(from: 1, through: host.count, by: 1) {
                    reachable = reachable || matched[j - 1]
                    next[j] = reachable
                }
            } else {
                for j in stride(from: 1, through: host.count, by: 1) {
                    next[j] = matched[j - 1] && host[j - 1] == label
                }
            }
            matched = next
        }
        return matched[host.count]
    }
}

/// A `callbacks.deny` or `callbacks.allow` entry that is neither an address block nor a host glob.
public struct DenyListError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case empty, invalidAddress, invalidPrefixLength, invalidHostPattern
    }

    /// The list an entry belongs to.
    public enum List: String, Sendable, Hashable {
        case deny, allow
    }

    private let code: Code
    /// The entry as written.
    public let entry: String
    /// The list it was found in.
    public private(set) var list = List.deny

    private init(_ code: Code, _ entry: String) {
        self.code = code
        self.entry = entry
    }

    func `in`(_ list: List) -> DenyListError {
        var error = self
        error.list = list
        return error
    }

    /// The entry is an empty string.
    public static func empty(_ entry: String) -> DenyListError { DenyListError(.empty, entry) }
    /// The entry looks like an address (it has a `/` or `:`, or ends in a number) but is not one.
    public static func invalidAddress(_ entry: String) -> DenyListError { DenyListError(.invalidAddress, entry) }
    /// The prefix length after `/` is not a number from 0 to 32 (IPv4) or 128 (IPv6).
    public static func invalidPrefixLength(_ entry: String) -> DenyListError { DenyListError(.invalidPrefixLength, entry) }
    /// The entry is not a host glob: labels of letters, digits, `-` and `_`, or `*` alone.
    public static func invalidHostPattern(_ entry: String) -> DenyListError { DenyListError(.invalidHostPattern, entry) }

    public var description: String {
        let why =
            switch code {
            case .empty: "is empty"
            case .invalidAddress: "is not a valid IPv4 or IPv6 address or block"
            case .invalidPrefixLength: "has a prefix length that is not 0–32 for IPv4 or 0–128 for IPv6"
            case .invalidHostPattern:
                "is not a host glob (labels of letters, digits, - and _, separated by dots; * alone stands for one or more labels)"
            }
        return "callbacks.\(list.rawValue) entry \"\(entry)\" \(why)"
    }
}
