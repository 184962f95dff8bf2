import AlertdEngine
import AlertdTestSupport
import AsyncHTTPClient
import Foundation
import Glibc
import NIOCore
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon

@Suite("The watchdog pings only when its probe gets 200 from /healthz")
struct WatchdogProbeTests {
    /// The probe run synchronously (its deadline is on the client's event loop): the
    /// time measured is the probe's, not the cooperative pool's. It blocks a thread of
    /// its own while it waits, never one of the pool's.
    static func probe(_ address: String, timeout: Double) async -> (healthy: Bool, took: Duration) {
        await onOwnThread {
            let client = WatchdogService.client()
            defer { try? client.syncShutdown() }
            let started = ContinuousClock.now
            let healthy = (try? WatchdogService.probe(address, scheme: "http", client: client, timeout: timeout).wait()) ?? false
            return (healthy, ContinuousClock.now - started)
        }
    }

    @Test("Nothing listening: the probe fails")
    func refused() async {
        let (fd, port) = Self.listeningSocket()
        close(fd)  // the port is free again: connections are refused
        #expect(!(await Self.probe("127.0.0.1:\(port)", timeout: 0.5).healthy))
    }

    @Test("A server that accepts but never answers: the probe fails within its timeout")
    func hung() async {
        let (fd, port) = Self.listeningSocket()  // listening, never accepting: the kernel completes the handshake
        defer { close(fd) }
        let (healthy, took) = await Self.probe("127.0.0.1:\(port)", timeout: 0.3)
        #expect(!healthy)
        #expect(took < .seconds(3))
    }

    @Test("Malformed addresses fail without a connection", arguments: ["", "127.0.0.1", "127.0.0.1:x", "nohost:80"])
    func malformed(address: String) async {
        #expect(!(await Self.probe(address, timeout: 0.2).healthy))
    }

    static func listeningSocket() -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        listen(fd, 16)
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
