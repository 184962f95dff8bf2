import AlertdCore
import AlertdDelivery
import Testing

private func addresses(_ texts: [String]) -> [IPAddress] { texts.map { IPAddress($0)! } }

@Suite("The default deny list keeps callbacks off alertd's own host and networks (SPEC §5)")
struct DefaultDenyListTests {
    @Test(
        "Loopback, link-local, private, shared and this-network addresses, however written, are refused",
        arguments: [
            ("example.com", ["169.254.169.254"]),
            ("example.com", ["93.184.216.34", "169.254.169.254"]),
            ("example.com", ["fe80::1"]),
            ("example.com", ["::ffff:169.254.169.254"]),
            ("169.254.169.254", []),
            ("[fe80::1]", []),
            ("[::ffff:a9fe:a9fe]", []),
            // A co-located Prometheus (the review's /-/quit), by address and by name.
            ("127.0.0.1", []),
            ("localhost", ["127.0.0.1", "::1"]),
            ("127.1.2.3", []),
            ("[::1]", []),
            ("[::ffff:127.0.0.1]", []),
            ("0.0.0.0", []),
            ("[::]", []),
            ("internal.corp", ["10.0.0.1"]),
            ("internal.corp", ["172.16.0.1"]),
            ("internal.corp", ["172.31.255.255"]),
            ("internal.corp", ["192.168.1.1"]),
            ("internal.corp", ["::ffff:10.0.0.1"]),
            ("cgnat.example", ["100.64.0.1"]),
            ("cgnat.example", ["100.127.255.255"]),
            ("ula.example", ["fd00:ec2::254"]),
            ("ula.example", ["fc00::1"]),
        ]
    )
    func refused(host: String, resolved: [String]) {
        #expect(DenyList.standard.refuses(host: host, addresses: addresses(resolved)) != nil)
    }

    @Test(
        "Public addresses, and those just outside each range, are allowed",
        arguments: [
            ("example.com", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]),
            ("edge", ["169.255.0.1", "169.253.255.255", "fec0::1", "fe7f::1"]),
            ("edge", ["11.0.0.1", "9.255.255.255", "172.32.0.1", "172.15.255.255", "192.169.0.1", "192.167.255.255"]),
            ("edge", ["100.63.255.255", "100.128.0.1", "128.0.0.1", "1.0.0.1", "fe00::1", "fb00::1"]),
            ("metadata.google.internal", []),
        ]
    )
    func allowed(host: String, resolved: [String]) {
        #expect(DenyList.standard.refuses(host: host, addresses: addresses(resolved)) == nil)
    }

    @Test("callbacks.allow lets through the blocks and names it lists, and nothing else")
    func exceptions() throws {
        let list = try DenyList(DenyList.defaultEntries, allow: ["127.0.0.1", "10.20.0.0/16", "hooks.internal", "*.svc.cluster"])
        #expect(list.refuses(host: "127.0.0.1", addresses: []) == nil)
        #expect(list.refuses(host: "localhost", addresses: addresses(["127.0.0.1"])) == nil)
        #expect(list.refuses(host: "localhost", addresses: addresses(["127.0.0.1", "::1"])) == "::1 is in callbacks.deny entry ::1/128")
        #expect(list.refuses(host: "127.0.0.2", addresses: []) == "127.0.0.2 is in callbacks.deny entry 127.0.0.0/8")
        #expect(list.refuses(host: "svc", addresses: addresses(["10.20.3.4"])) == nil)
        #expect(list.refuses(host: "svc", addresses: addresses(["10.21.3.4"])) == "10.21.3.4 is in callbacks.deny entry 10.0.0.0/8")
        // A name the admin vouches for goes through whatever it resolves to.
        #expect(list.refuses(host: "hooks.internal", addresses: addresses(["192.168.7.7"])) == nil)
        #expect(list.refuses(host: "HOOKS.internal.", addresses: addresses(["192.168.7.7"])) == nil)
        #expect(list.refuses(host: "a.b.svc.cluster", addresses: addresses(["10.96.0.10"])) == nil)
        #expect(list.refuses(host: "other.internal", addresses: addresses(["192.168.7.7"])) != nil)
        // An allowed name does not lift a deny entry for another name.
        let named = try DenyList(["*.internal"], allow: ["hooks.example"])
        #expect(named.refuses(host: "db.internal", addresses: []) == "host db.internal matches callbacks.deny entry *.internal")
        #expect(named.allowed == ["hooks.example"])
    }

    @Test("A wrong allow entry is an error naming callbacks.allow")
    func badAllow() {
        #expect(throws: DenyListError.self) { try DenyList([], allow: ["10.0.0.0/33"]) }
        do {
            _ = try DenyList([], allow: ["db*.internal"])
            Issue.record("accepted db*.internal")
        } catch {
            #expect(error.description.hasPrefix("callbacks.allow entry \"db*.internal\""), "\(error)")
        }
    }

    @Test("The reason names the address and the entry it matched")
    func reason() {
        #expect(
            DenyList.standard.refuses(host: "example.com", addresses: addresses(["169.254.169.254"]))
                == "169.254.169.254 is in callbacks.deny entry 169.254.0.0/16")
        #expect(DenyList.standard.refuses(host: "x", addresses: addresses(["fe80::1"])) == "fe80::1 is in callbacks.deny entry fe80::/10")
        #expect(
            DenyList.standard.refuses(host: "x", addresses: addresses(["::ffff:169.254.169.254"]))
                == "::ffff:169.254.169.254 is in callbacks.deny entry 169.254.0.0/16")
    }

    @Test("The default entries are those of SPEC §5")
    func defaults() {
        #expect(
            DenyList.defaultEntries == [
                "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "::/128",
                "::1/128", "fe80::/10", "fc00::/7",
            ])
        #expect(DenyList.standard.entries == DenyList.defaultEntries)
    }

    @Test("An empty list refuses nothing")
    func empty() throws {
        #expect(try DenyList([]).refuses(host: "169.254.169.254", addresses: addresses(["169.254.169.254"])) == nil)
    }
}

@Suite("Deny list entries are blocks, addresses and host globs")
struct DenyListEntryTests {
    let deny: DenyList

    init() throws {
        deny = try DenyList([
            "10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1", "*.internal", "metadata.google.internal", "api.*.corp", "Mixed.Case.Example",
        ])
    }

    @Test(
        "Addresses in a listed block, or equal to a listed address, are refused",
        arguments: [
            (["10.1.2.3"], true), (["::ffff:10.1.2.3"], true), (["11.0.0.1"], false),
            (["192.0.2.7"], true), (["192.0.2.8"], false),
            (["2001:db8:1::5"], true), (["2001:db9::5"], false),
            (["::1"], true), (["127.0.0.1"], false),
            (["203.0.113.1", "10.0.0.1"], true), ([], false),
        ]
    )
    func addressEntries(resolved: [String], refused: Bool) {
        #expect((deny.refuses(host: "target.example", addresses: addresses(resolved)) != nil) == refused)
    }

    @Test(
        "Host globs match whole labels, in any case, with or without a trailing dot",
        arguments: [
            ("db.internal", true), ("a.b.internal", true), ("DB.INTERNAL", true), ("db.internal.", true), ("internal", false),
            ("internal.example", false), ("db.internalx", false), ("dbinternal", false),
            ("metadata.google.internal", true), ("metadata.google.com", false),
            ("api.eu.corp", true), ("api.eu.west.corp", true), ("API.EU.CORP", true), ("api.corp", false), ("xapi.eu.corp", false),
            ("web.eu.corp", false), ("mixed.case.example", true), ("MIXED.case.EXAMPLE.", true), ("other.case.example", false),
        ]
    )
    func hostEntries(host: String, refused: Bool) {
        #expect((deny.refuses(host: host, addresses: addresses(["203.0.113.1"])) != nil) == refused)
    }

    @Test("The reason names the host and the glob it matched")
    func reason() {
        #expect(deny.refuses(host: "Vault.Internal", addresses: []) == "host vault.internal matches callbacks.deny entry *.internal")
    }

    @Test("A lone * refuses every host")
    func starAlone() throws {
        let all = try DenyList(["*"])
        #expect(all.refuses(host: "example.com", addresses: []) != nil)
        #expect(all.refuses(host: "localhost", addresses: []) != nil)
    }

    @Test("Many stars match without blowing up")
    func manyStars() throws {
        let stars = try DenyList([Array(repeating: "*", count: 20).joined(separator: ".") + ".x"])
        let longHost = Array(repeating: "a", count: 100).joined(separator: ".")
        #expect(stars.refuses(host: longHost, addresses: []) == nil)
        #expect(stars.refuses(host: longHost + ".x", addresses: []) != nil)
    }

    @Test(
        "Invalid entries are config errors that name the entry",
        arguments: [
            ("", DenyListError.empty("")),
            ("10.0.0.0/33", .invalidPrefixLength("10.0.0.0/33")),
            ("fe80::/129", .invalidPrefixLength("fe80::/129")),
            ("10.0.0.0/", .invalidPrefixLength("10.0.0.0/")),
            ("10.0.0.0/x", .invalidPrefixLength("10.0.0.0/x")),
            ("/8", .invalidAddress("/8")),
            ("999.1.1.1", .invalidAddress("999.1.1.1")),
            ("10.0.0", .invalidAddress("10.0.0")),
            ("999.1.1.1/8", .invalidAddress("999.1.1.1/8")),
            ("fe80:::/10", .invalidAddress("fe80:::/10")),
            ("fe80::1%eth0", .invalidAddress("fe80::1%eth0")),
            ("db*.internal", .invalidHostPattern("db*.internal")),
            ("*internal", .invalidHostPattern("*internal")),
            ("a..b", .invalidHostPattern("a..b")),
            (".internal", .invalidHostPattern(".internal")),
            ("exa mple.com", .invalidHostPattern("exa mple.com")),
            ("https://example.com", .invalidAddress("https://example.com")),
        ]
    )
    func invalid(entry: String, error: DenyListError) {
        #expect(throws: error) { try DenyList(["169.254.0.0/16", entry]) }
        #expect(error.description.contains("\"\(entry)\""))
    }
}

@Suite("The unspecified address is checked as loopback")
struct UnspecifiedAddressTests {
    let deny = try! DenyList(["127.0.0.0/8", "::1"])

    @Test(
        "0.0.0.0 and :: reach this machine, so denying loopback refuses them",
        arguments: [("0.0.0.0", [String]()), ("[::]", []), ("example.com", ["0.0.0.0"]), ("example.com", ["::"])])
    func refused(host: String, resolved: [String]) {
        #expect(deny.refuses(host: host, addresses: addresses(resolved)) != nil)
    }

    @Test("Without a loopback entry they pass like any address")
    func allowedWithoutLoopback() throws {
        #expect(try DenyList(["169.254.0.0/16"]).refuses(host: "0.0.0.0", addresses: []) == nil)
    }
}

@Suite("The check at post and registration: what needs a lookup, and what a refusal says (issue 45, item 1)")
struct DenyListRefusalTests {
    @Test(
        "an address literal, or a name a host glob of deny or allow matches, is judged without a lookup; any other name needs one",
        arguments: [
            ("127.0.0.1", true), ("[::1]", true), ("metadata.internal", true), ("hooks.corp.internal", true), ("localhost", false),
            ("hooks.example.com", false), ("LOCALHOST.", false),
        ])
    func judgedWithoutResolving(host: String, judged: Bool) throws {
        let list = try DenyList(["127.0.0.0/8", "::1/128", "*.internal"], allow: ["hooks.corp.internal"])
        #expect(list.judgesWithoutResolving(host: host) == judged)
    }

    @Test("a deny list without address blocks judges every host by its name alone")
    func globsOnly() throws {
        #expect(try DenyList(["*.internal"]).judgesWithoutResolving(host: "localhost"))
    }

    @Test("a name refused for what it resolves to names the entry, never the address; a literal or a glob is said as before")
    func refusalWords() throws {
        let list = try DenyList(["127.0.0.0/8", "*.internal"])
        let named = try #require(list.refusal(host: "LocalHost.", addresses: [IPAddress("127.0.0.1")!]))
        #expect(named.entry == "127.0.0.0/8" && named.address == IPAddress("127.0.0.1"))
        #expect(named.withoutResolvedAddress == "localhost resolves to an address in callbacks.deny entry 127.0.0.0/8")
        #expect(named.description == "127.0.0.1 is in callbacks.deny entry 127.0.0.0/8")
        let literal = try #require(list.refusal(host: "127.0.0.2", addresses: []))
        #expect(literal.withoutResolvedAddress == "127.0.0.2 is in callbacks.deny entry 127.0.0.0/8")
        let glob = try #require(list.refusal(host: "db.internal", addresses: [IPAddress("10.0.0.1")!]))
        #expect(glob.withoutResolvedAddress == "host db.internal matches callbacks.deny entry *.internal")
        #expect(list.refusal(host: "hooks.example.com", addresses: [IPAddress("93.184.216.34")!]) == nil)
    }
}
