import AlertdTestSupport
import Foundation
import Glibc
import Testing

/// A unix datagram socket standing in for systemd's notify socket. A thread of its own
/// reads the datagrams; tests await the ones they expect.
final class FakeNotifySocket: Sendable {
    let path: String
    private let fd: Int32
    /// Every datagram so far, and how many `receive` has handed out.
    private let messages = Observed((all: [String](), read: 0, closed: false))

    init() throws {
        path = NSTemporaryDirectory() + "alertd-notify-\(UUID().uuidString.prefix(8))"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(fd >= 0 && bound == 0, "cannot bind \(path)")
        let thread = Thread { [messages] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !messages.value.closed {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) == 1 else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard count > 0 else { continue }
                let message = String(decoding: buffer[..<count], as: UTF8.self)
                messages.update { $0.all.append(message) }
            }
            close(fd)
        }
        thread.name = "fake-notify-socket"
        thread.start()
    }

    deinit {
        messages.update { $0.closed = true }  // the reader closes the socket
        unlink(path)
    }

    /// The datagrams not handed out yet, up to the first that contains `wanted`, once it
    /// came; all of them after `timeout` otherwise.
    func receive(until wanted: String, timeout: Duration) async -> [String] {
        let found = await messages.wait(timeout: timeout) { state in
            state.all[state.read...].firstIndex { $0.contains(wanted) }
        }
        return messages.update { state in
            let end = found.map { $0 + 1 } ?? state.all.count
            defer { state.read = end }
            return Array(state.all[state.read..<end])
        }
    }
}

@Suite("systemd: readiness, watchdog, stopping and socket activation")
struct SystemdProtocolTests {
    @Test("at max_connections the watchdog's probe is still served: a busy daemon keeps pinging and is not restarted")
    func watchdogAtConnectionLimit() async throws {
        let notify = try FakeNotifySocket()
        let daemon = try await Daemon.start(
            .init(
                config: "limits: { max_connections: 3, max_wait_seconds: 30 }\n",
                // 1 s: pings every 0.5 s, each probe given 0.25 s (a quarter of the interval);
                // at 0.4 s a probe had 0.1 s, which a loaded machine missed.
                environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"]))
        defer { daemon.cleanup() }
        _ = await notify.receive(until: "READY=1", timeout: .seconds(10))
        // Fill every slot: an observer's keep-alive connection and two parked long-polls,
        // parked one at a time (connections accepted together would all be counted at once).
        let observer = try await daemon.rawConnection()
        var held: [RawConnection] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while held.count < 2, ContinuousClock.now < deadline {
            let client = try await daemon.rawConnection()
            try await client.send(Array("GET /v1/clients/ops/alerts/current?wait=30 HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
            // Kept only once it is seen parked; refused (the connection closed): try again.
            var parked = false
            while !parked, ContinuousClock.now < deadline, client.isOpen {
                parked = try await observer.request("GET", "/readyz").jsonObject()["waiters"] as? Int == held.count + 1
                if !parked { try await Task.sleep(for: .milliseconds(10)) }
            }
            if parked { held.append(client) }
        }
        try #require(held.count == 2)
        let refused = try await daemon.rawConnection().request("GET", "/healthz")
        try #require(refused.status == 503, "clients are refused: the daemon is at max_connections")
        // Pings (every 0.5 s) go on while it is full: the probe does not need a client's slot.
        // First drop the pings queued before it was full (and any probe then in flight).
        _ = await notify.receive(until: "nothing", timeout: .milliseconds(500))
        let pings = await notify.receive(until: "nothing", timeout: .seconds(3)).filter { $0.contains("WATCHDOG=1") }.count
        #expect(pings >= 3, "\(daemon.stderrText.suffix(500))")
        #expect(!daemon.stderrText.contains("watchdog probe failed"))
    }

    @Test("READY=1 once listening (with MAINPID), WATCHDOG=1 pings while it answers, STOPPING=1 on SIGTERM")
    func notify() async throws {
        let notify = try FakeNotifySocket()
        let daemon = try await Daemon.start(.init(environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"]))
        defer { daemon.cleanup() }
        let ready = await notify.receive(until: "READY=1", timeout: .seconds(10))
        let readyMessage = try #require(ready.last { $0.contains("READY=1") }, "no READY=1: \(ready)")
        #expect(readyMessage.contains("MAINPID=\(daemon.pid)"))
        #expect(try await daemon.client().get("/healthz").status == 200, "ready means serving")
        // The watchdog pings at half its 1 s interval: three must come within 10 s, even on
        // a machine loaded by the rest of the suite (its probe had 50 ms under a 0.2 s
        // interval, and a loaded CI machine answered none of them in time).
        var pings = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while pings < 3, ContinuousClock.now < deadline {
            pings += await notify.receive(until: "WATCHDOG=1", timeout: .seconds(2)).filter { $0.contains("WATCHDOG=1") }.count
        }
        #expect(pings >= 3, "\(daemon.stderrText.suffix(1500))")
        daemon.sendSignal(SIGTERM)
        let stopping = await notify.receive(until: "STOPPING=1", timeout: .seconds(10))
        #expect(stopping.contains { $0.contains("STOPPING=1") }, "\(stopping)")
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test("without NOTIFY_SOCKET nothing is sent and nothing fails")
    func noNotifySocket() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        #expect(try await daemon.client().get("/healthz").status == 200)
        #expect(try await daemon.terminate() == 0)
    }

    @Test("a listening socket handed over as fd 3 (LISTEN_FDS, LISTEN_PID) is served instead of --listen")
    func socketActivation() async throws {
        let (fd, port) = try Self.listeningSocket()
        defer { close(fd) }
        var options = Daemon.Options()
        options.inheritedSocket = fd
        let daemon = try await Daemon.start(options)
        defer { daemon.cleanup() }
        #expect(daemon.port == port, "it serves the inherited socket, not a port of its own")
        let http = daemon.client()
        #expect(try await http.get("/healthz").status == 200)
        let alert = try await http.postAlert("ops", #"{"title":"Socket-activated","buttons":[{"title":"OK"}]}"#)
        #expect(alert["state"] as? String == "displayed")
        #expect(try await daemon.terminate() == 0)
    }

    @Test("LISTEN_PID of another process is ignored: alertd binds --listen itself")
    func foreignListenPID() async throws {
        let daemon = try await Daemon.start(.init(environment: ["LISTEN_FDS": "1", "LISTEN_PID": "1"]))
        defer { daemon.cleanup() }
        #expect(try await daemon.client().get("/healthz").status == 200)
    }

    /// A TCP socket listening on 127.0.0.1 at a free port.
    static func listeningSocket() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(fd >= 0 && bound && listen(fd, 128) == 0)
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
