import AlertdWire
import Testing

@Suite("Which hosts are this machine")
struct HostsTests {
    @Test(
        "localhost and its names, 127.0.0.0/8 and ::1, bracketed or not, in any case",
        arguments: [
            "localhost", "LocalHost", "api.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "127.1", "0x7f000001", "0177.0.0.1",
            "2130706433",
        ])
    func loopback(host: String) {
        #expect(Hosts.isLoopback(host))
    }

    @Test(
        "anything else, including the any-address and names that only look local",
        arguments: [
            "0.0.0.0", "::", "[::]", "10.1.2.3", "alertd.internal", "localhost.example.com", "128.0.0.1", "::2", "notlocalhost",
            // Names in public DNS that anyone may point anywhere (issue 44 item 9).
            "127.0.0.1.nip.io", "127.0.0.1.example.com", "127.attacker.example", "127.", "127.0.0.1.",
        ])
    func beyond(host: String) {
        #expect(!Hosts.isLoopback(host))
    }

    @Test(
        "an IPv4 address in any form inet_aton reads is that address",
        arguments: [
            ("127.0.0.1", 0x7F00_0001), ("127.1", 0x7F00_0001), ("127.0.1", 0x7F00_0001), ("0x7f000001", 0x7F00_0001),
            ("0X7F.0.0.1", 0x7F00_0001), ("0177.0.0.1", 0x7F00_0001), ("2130706433", 0x7F00_0001), ("0", 0),
            ("10.1", 0x0A00_0001), ("0xa9.0xfe.0xa9.0xfe", 0xA9FE_A9FE), ("255.255.255.255", 0xFFFF_FFFF),
        ] as [(String, UInt32)])
    func ipv4Forms(text: String, value: UInt32) {
        #expect(Hosts.ipv4(text) == value)
    }

    @Test(
        "anything else is not an address",
        arguments: [
            "", ".", "127.", "127.0.0.1.", "1.2.3.4.5", "256.0.0.1", "1.2.3.256", "1.16777216", "4294967296", "0x", "08", "0x1g",
            "127.0.0.1.nip.io", "localhost", "1..2", "-1", "+1", " 1", "1 ",
        ])
    func notIPv4(text: String) {
        #expect(Hosts.ipv4(text) == nil)
    }
}
