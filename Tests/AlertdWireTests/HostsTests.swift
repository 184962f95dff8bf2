import AlertdWire
import Testing

@Suite("Which hosts are this machine")
struct HostsTests {
    @Test(
        "localhost and its names, 127.0.0.0/8 and ::1, bracketed or not, in any case",
        arguments: ["localhost", "LocalHost", "api.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"])
    func loopback(host: String) {
        #expect(Hosts.isLoopback(host))
    }

    @Test(
        "anything else, including the any-address and names that only look local",
        arguments: ["0.0.0.0", "::", "[::]", "10.1.2.3", "alertd.internal", "localhost.example.com", "128.0.0.1", "::2", "notlocalhost"])
    func beyond(host: String) {
        #expect(!Hosts.isLoopback(host))
    }
}
