import AlertdHTTP
import AsyncHTTPClient
import Foundation
import Glibc
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle

/// The two systemd protocols alertd speaks, without libsystemd: readiness
/// notification (`NOTIFY_SOCKET`: READY, STOPPING, WATCHDOG) and socket
/// activation (`LISTEN_PID`, `LISTEN_FDS`: the socket is fd 3).
enum Systemd {
    /// The first socket systemd passed to this process, if it passed any.
    ///
    /// - Throws: when the variables are for this process but malformed, or
    ///   fd 3 is not a listening stream socket.
    static func inheritedSocket(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) throws
        -> Int32?
    {
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else { return nil }
        guard let pid = Int32(pidText), pid == getpid() else { return nil }  // meant for another process
        guard let count = Int(countText), count >= 1 else {
            throw ConfigError("LISTEN_FDS=\(countText): socket activation needs at least one socket")
        }
        let fd: Int32 = 3
        var type: Int32 = 0
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0, type == Int32(SOCK_STREAM.rawValue) else {
            throw ConfigError("LISTEN_FDS: fd 3 is not a stream socket")
        }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening != 0 else {
            throw ConfigError("LISTEN_FDS: fd 3 is not listening (the socket unit needs Accept=no)")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if count > 1 { logger.warning("systemd passed several sockets; alertd serves the first", metadata: ["sockets": "\(count)"]) }
        for variable in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(variable) }
        return fd
    }

    /// Sends states to the service manager's notify socket. nil without `NOTIFY_SOCKET`.
    final class Notifier: Sendable {
        private let path: [UInt8]
        private let fd: Int32

        init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
            guard let socketPath = environment["NOTIFY_SOCKET"], !socketPath.isEmpty,
                socketPath.hasPrefix("/") || socketPath.hasPrefix("@")
            else { return nil }
            var bytes = Array(socketPath.utf8)
            if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
            guard bytes.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            self.path = bytes
            self.fd = fd
        }

        deinit { close(fd) }

        /// Sends `state` (`READY=1`, `STOPPING=1`, `WATCHDOG=1`, `STATUS=…`, newline-separated).
        @discardableResult
        func send(_ state: String) -> Bool {
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.enumerated() { raw[index] = byte }
            }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
            let message = Array(state.utf8)
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), pointer, length) }
                }
            }
            return sent == message.count
        }
    }

    /// The watchdog interval systemd asked for (`WATCHDOG_USEC`), if it is for this process.
    static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> Double? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != getpid() { return nil }
        return Double(usec) / 1_000_000
    }
}

/// Pings the watchdog at half its interval, but only after proving the server
/// answers: a real `GET /healthz` over a new connection to its own address,
/// through the HTTP client alertd already has (AsyncHTTPClient).
/// A server that stops answering stops the pings, and systemd restarts it.
struct WatchdogService: Service {
    let notifier: Systemd.Notifier
    let interval: Double
    /// The server to probe, on its own address. Its ``HTTPServer/probeToken``
    /// goes with the probe, which is served even when every connection slot is
    /// taken, so a busy daemon is not restarted.
    let server: HTTPServer
    /// Whether the server speaks HTTPS: then the probe does too (without checking
    /// the certificate: it talks to itself on its own address).
    let tls: Bool
    let logger: Logger

    func run() async throws {
        let client = Self.client()
        let (address, probeToken) = (server.boundAddress, server.probeToken)
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let started = ContinuousClock.now
                // Pings go every half interval; systemd acts only once a whole interval
                // passed without one, so a probe may take most of a half interval (a
                // loaded machine answers slowly, and a slow answer is still an answer).
                let probeTimeout = max(0.05, interval * 0.4)
                let healthy =
                    (try? await Self.probe(
                        address, scheme: tls ? "https" : "http", client: client, timeout: probeTimeout, token: probeToken
                    ).get()) ?? false
                if healthy {
                    notifier.send("WATCHDOG=1")
                } else {
                    logger.warning("watchdog probe failed: not pinging systemd", metadata: ["address": "\(address)"])
                }
                // The next probe half an interval after this one began, however long it took.
                try? await Task.sleep(until: started + .milliseconds(Int(interval * 500)))
            }
        }
        try? await client.shutdown()
    }

    /// The probe's client: no redirects, no certificate check (it calls itself).
    static func client() -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        configuration.tlsConfiguration = tls
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Whether `GET scheme://address/healthz` answers 200 within `timeout` seconds,
    /// on a connection of its own (`Connection: close`: an idle pooled one would
    /// hold a client's slot between probes). A future, not an async function: its
    /// deadline runs on the client's event loop, whatever the cooperative pool is doing.
    static func probe(
        _ address: String, scheme: String, client: HTTPClient, timeout: Double, token: String = ""
    ) -> EventLoopFuture<Bool> {
        let eventLoop = client.eventLoopGroup.any()
        guard let colon = address.lastIndex(of: ":"), UInt16(address[address.index(after: colon)...]) != nil else {
            return eventLoop.makeSucceededFuture(false)
        }
        var host = String(address[..<colon])
        let port = address[address.index(after: colon)...]
        if host == "0.0.0.0" { host = "127.0.0.1" }
        if host == "::" || host == "[::]" { host = "[::1]" }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        var headers = HTTPHeaders()
        headers.add(name: HTTPServer.probeHeader, value: token)
        headers.add(name: "Connection", value: "close")
        guard let request = try? HTTPClient.Request(url: "\(scheme)://\(host):\(port)/healthz", method: .GET, headers: headers) else {
            return eventLoop.makeSucceededFuture(false)
        }
        return client.execute(request: request, eventLoop: .indifferent, deadline: .now() + .milliseconds(Int64(timeout * 1000)))
            .map { $0.status == .ok }
            .recover { _ in false }
    }
}
