import AlertdTestSupport
import Foundation
import Glibc
import Testing

/// A TCP connection to 127.0.0.1 that sends nothing: one socket of an idle-socket flood.
final class IdleSocket: Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let connected = connectLoopback(fd, port: port)
        try #require(fd >= 0 && connected == 0, "cannot connect to 127.0.0.1:\(port)")
    }

    /// Whether the daemon closed it within `timeout` (polled on a thread of its own).
    func awaitClose(timeout: Duration) async -> Bool {
        let fd = fd
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return await onOwnThread {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, milliseconds) == 1 else { return false }
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_PEEK)) <= 0
        }
    }

    deinit { close(fd) }
}

@Suite("Idle-socket floods: connections that send nothing are cut early, capped per address at accept, and never starve the watchdog")
struct ConnectionFloodTests {
    @Test("200 idle connections with max_connections 2: the watchdog keeps pinging")
    func watchdogUnderIdleFlood() async throws {
        let notify = try FakeNotifySocket()
        // The flood is not cut for its silence during the test: it holds every slot throughout.
        let daemon = try await Daemon.start(
            .init(
                config: "limits: { max_connections: 2, first_byte_timeout_seconds: 30 }\n",
                environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"]))
        defer { daemon.cleanup() }
        _ = await notify.receive(until: "READY=1", timeout: .seconds(10))
        var flood: [IdleSocket]? = try (0..<200).map { _ in try IdleSocket(port: daemon.port) }
        // Pings (every 0.5 s) go on while silent sockets hold every slot libmicrohttpd
        // has for the network (before: 0 in 9 s). First drop those queued before.
        _ = await notify.receive(until: "nothing", timeout: .milliseconds(500))
        let pings = await notify.receive(until: "nothing", timeout: .seconds(3)).filter { $0.contains("WATCHDOG=1") }.count
        #expect(pings >= 3, "\(daemon.stderrText.suffix(800))")
        #expect(!daemon.stderrText.contains("watchdog probe failed"))
        #expect(flood?.count == 200)
        flood = nil
        let metrics = try await awaitMetrics(daemon) { $0.contains("alertd_http_connections_refused_total") }
        #expect((metric(metrics, #"alertd_http_connections_refused_total{reason="capacity"}"#) ?? 0) >= 1, "\(metrics)")
    }

    @Test("socket-activated (one libmicrohttpd daemon with a pool of threads): the watchdog keeps pinging under an idle flood")
    func watchdogUnderIdleFloodSocketActivated() async throws {
        let (fd, _) = try SystemdProtocolTests.listeningSocket()
        defer { close(fd) }
        let notify = try FakeNotifySocket()
        var options = Daemon.Options(
            config: "limits: { max_connections: 2, first_byte_timeout_seconds: 30 }\n",
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"])
        options.inheritedSocket = fd
        let daemon = try await Daemon.start(options)
        defer { daemon.cleanup() }
        _ = await notify.receive(until: "READY=1", timeout: .seconds(10))
        let flood = try (0..<200).map { _ in try IdleSocket(port: daemon.port) }
        _ = await notify.receive(until: "nothing", timeout: .milliseconds(500))
        let pings = await notify.receive(until: "nothing", timeout: .seconds(3)).filter { $0.contains("WATCHDOG=1") }.count
        #expect(pings >= 3, "\(daemon.stderrText.suffix(800))")
        withExtendedLifetime(flood) {}
    }

    @Test("limits.first_byte_timeout_seconds: a connection that sends nothing is closed after it; one that began a request is not")
    func firstByteDeadline() async throws {
        let daemon = try await Daemon.start(.init(config: "limits: { first_byte_timeout_seconds: 1, read_timeout_seconds: 30 }\n"))
        defer { daemon.cleanup() }
        // Taken before the idle connection opens: it must not be closed sooner than 1 s after.
        let opened = ContinuousClock.now
        let idle = try IdleSocket(port: daemon.port)
        let started = try await daemon.rawConnection()
        try await started.send(Array("GET /healthz HTTP/1.1\r\nHost: local".utf8))
        // Without the first-byte deadline it stayed until read_timeout_seconds (30 s).
        #expect(await idle.awaitClose(timeout: .seconds(6)), "an idle connection outlived a 1 s first-byte timeout")
        #expect(ContinuousClock.now - opened >= .milliseconds(900))
        #expect(started.isOpen, "a connection that sent part of a request has the whole read timeout")
        try await started.send(Array("host\r\n\r\n".utf8))
        #expect(try await started.readResponse().status == 200)
        let text = try await daemon.client().get("/metrics").text
        #expect((metric(text, #"alertd_http_connections_cut_total{waiting="first_byte"}"#) ?? 0) >= 1)
    }
}
