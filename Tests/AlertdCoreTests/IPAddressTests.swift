import AlertdCore
import Testing

@Suite("IP addresses parse strictly and print canonically")
struct IPAddressTests {
    @Test(
        "Valid addresses parse and print in their canonical form",
        arguments: [
            ("0.0.0.0", "0.0.0.0"),
            ("127.0.0.1", "127.0.0.1"),
            ("255.255.255.255", "255.255.255.255"),
            ("169.254.169.254", "169.254.169.254"),
            ("::", "::"),
            ("::1", "::1"),
            ("1::", "1::"),
            ("fe80::1", "fe80::1"),
            ("FE80::0:1", "fe80::1"),
            ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
            ("1:0:0:4:0:0:0:8", "1:0:0:4::8"),
            ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
            ("1::2:3:4:5:6:7", "1:0:2:3:4:5:6:7"),
            ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
            ("0:0:0:0:0:0:0:0", "::"),
            ("::ffff:169.254.169.254", "::ffff:169.254.169.254"),
            ("::FFFF:a9fe:a9fe", "::ffff:169.254.169.254"),
            ("0:0:0:0:0:ffff:7f00:1", "::ffff:127.0.0.1"),
            ("64:ff9b::1.2.3.4", "64:ff9b::102:304"),
            ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"),
            ("::1.2.3.4", "::102:304"),
            ("fd00:ec2::254", "fd00:ec2::254"),
        ]
    )
    func valid(text: String, canonical: String) throws {
        let address = try #require(IPAddress(text))
        #expect(address.description == canonical)
        #expect(IPAddress(canonical) == address)
    }

    @Test(
        "Anything else is refused",
        arguments: [
            "", " ", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.256", "01.2.3.4", "1.2.3.04", "1.2.3.-4", "1..2.3", "1.2.3.4.",
            " 1.2.3.4", "1.2.3.4 ", "0x7f.0.0.1", "2130706433", "localhost",
            ":", ":::", "1:::2", "1::2::3", ":1::2", "1::2:", ":1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:",
            "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8", "12345::", "g::1", "::-1",
            "fe80::1%eth0", "[::1]", "::1.2.3", "::256.1.1.1", "1.2.3.4::", "::1.2.3.4:5", "1:2:3:4:5:6:7:1.2.3.4", "::ffff:01.2.3.4",
        ]
    )
    func invalid(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test("Addresses convert to and from network byte order")
    func bytes() throws {
        let v4 = try #require(IPAddress("169.254.1.2"))
        #expect(v4.bytes == [169, 254, 1, 2])
        #expect(IPAddress(bytes: [169, 254, 1, 2]) == v4)
        #expect(IPAddress(ipv4: 0xA9FE_0102) == v4)
        #expect(v4.family == .v4)

        let v6 = try #require(IPAddress("fe80::1:2"))
        #expect(v6.bytes == [0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2])
        #expect(IPAddress(bytes: v6.bytes) == v6)
        #expect(IPAddress(ipv6High: 0xFE80_0000_0000_0000, low: 0x0000_0000_0001_0002) == v6)
        #expect(v6.family == .v6)

        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 5)) == nil)
    }

    @Test("An IPv4-mapped IPv6 address reveals its IPv4 address, and only such an address does")
    func mapped() throws {
        let metadata = try #require(IPAddress("169.254.169.254"))
        #expect(IPAddress("::ffff:169.254.169.254")?.unmappedIPv4 == metadata)
        #expect(metadata.ipv6Mapped == IPAddress("::ffff:169.254.169.254"))
        #expect(metadata.unmappedIPv4 == nil)
        #expect(IPAddress("::169.254.169.254")?.unmappedIPv4 == nil)
        #expect(IPAddress("64:ff9b::169.254.169.254")?.unmappedIPv4 == nil)
        #expect(IPAddress("::1")?.ipv6Mapped == IPAddress("::1"))
    }

    @Test("An IPv4 address and its mapped IPv6 form are different values")
    func mappedIsNotEqual() {
        #expect(IPAddress("1.2.3.4") != IPAddress("::ffff:1.2.3.4"))
    }
}

@Suite("Networks contain the addresses under their prefix")
struct IPNetworkTests {
    @Test(
        "Membership follows the prefix, across IPv4 and its mapped IPv6 form",
        arguments: [
            ("169.254.0.0/16", "169.254.0.0", true),
            ("169.254.0.0/16", "169.254.255.255", true),
            ("169.254.0.0/16", "169.255.0.0", false),
            ("169.254.0.0/16", "169.253.255.255", false),
            ("169.254.0.0/16", "::ffff:169.254.169.254", true),
            ("169.254.0.0/16", "::169.254.169.254", false),
            ("169.254.0.0/16", "fe80::1", false),
            ("10.0.0.0/8", "10.255.255.255", true),
            ("10.0.0.0/8", "11.0.0.0", false),
            ("0.0.0.0/0", "203.0.113.9", true),
            ("0.0.0.0/0", "::ffff:203.0.113.9", true),
            ("0.0.0.0/0", "2001:db8::1", false),
            ("192.0.2.7", "192.0.2.7", true),
            ("192.0.2.7", "192.0.2.8", false),
            ("192.0.2.0/31", "192.0.2.1", true),
            ("192.0.2.0/31", "192.0.2.2", false),
            ("fe80::/10", "fe80::1", true),
            ("fe80::/10", "febf:ffff::1", true),
            ("fe80::/10", "fec0::1", false),
            ("fe80::/10", "fe7f::1", false),
            ("fe80::/10", "169.254.169.254", false),
            ("2001:db8::/32", "2001:db8:ffff::1", true),
            ("2001:db8::/32", "2001:db9::1", false),
            ("2001:db8::/96", "2001:db8::ffff:ffff", true),
            ("2001:db8::/96", "2001:db8::1:0:0", false),
            ("::1", "::1", true),
            ("::1/128", "::2", false),
            ("::/0", "ffff::1", true),
            ("::ffff:0:0/96", "10.1.2.3", true),
            ("::ffff:10.0.0.0/104", "10.9.9.9", true),
            ("::ffff:10.0.0.0/104", "11.0.0.1", false),
        ]
    )
    func membership(network: String, address: String, contained: Bool) throws {
        let network = try #require(IPNetwork(network))
        let address = try #require(IPAddress(address))
        #expect(network.contains(address) == contained)
    }

    @Test("Host bits past the prefix are cleared")
    func normalised() {
        #expect(IPNetwork("10.1.2.3/8")?.description == "10.0.0.0/8")
        #expect(IPNetwork("fe80::abcd/10")?.description == "fe80::/10")
        #expect(IPNetwork("10.1.2.3")?.description == "10.1.2.3/32")
        #expect(IPNetwork("::1")?.prefixLength == 128)
    }

    @Test(
        "Bad prefixes are refused",
        arguments: [
            "10.0.0.0/33", "fe80::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/a", "10.0.0.0/8/8", "/8", "10.0.0.0/1234", "10.0.0.0/ 8",
        ])
    func invalid(text: String) {
        #expect(IPNetwork(text) == nil)
    }
}
