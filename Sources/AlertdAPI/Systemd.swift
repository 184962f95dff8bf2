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
/// answers: a real `GET /healthz` over a new connection to its own address.
/// A server that stops answering stops the pings, and systemd restarts it.
struct WatchdogService: Service {
    let notifier: Systemd.Notifier
    let interval: Double
    /// `host:port` to probe.
    let address: String
    /// Whether the server speaks HTTPS: then the probe does too (over AsyncHTTPClient,
    /// without checking the certificate: it talks to itself on its own address).
    let tls: Bool
    /// The server's ``HTTPServer/probeToken``: the probe is served even when
    /// every connection slot is taken, so a busy daemon is not restarted.
    let probeToken: String
    let logger: Logger

    func run() async throws {
        let client: HTTPClient? = tls ? Self.tlsClient() : nil
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let probeTimeout = max(0.05, interval / 4)
                let healthy: Bool
                if let client {
                    healthy = await Self.probeTLS(address, client: client, timeout: probeTimeout, token: probeToken)
                } else {
                    healthy = await Self.detached { [probeToken] in Self.probe(address, timeout: probeTimeout, token: probeToken) }
                }
                if healthy {
                    notifier.send("WATCHDOG=1")
                } else {
                    logger.warning("watchdog probe failed: not pinging systemd", metadata: ["address": "\(address)"])
                }
                try? await Task.sleep(for: .milliseconds(Int(interval * 500)))
            }
        }
        try? await client?.shutdown()
    }

    static func tlsClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        configuration.tlsConfiguration = tls
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Whether `GET https://address/healthz` answers 200 within `timeout` seconds.
    static func probeTLS(_ address: String, client: HTTPClient, timeout: Double, token: String = "") async -> Bool {
        var host = String(address[..<(address.lastIndex(of: ":") ?? address.endIndex)])
        let port = address[(address.lastIndex(of: ":").map { address.index(after: $0) } ?? address.endIndex)...]
        if host == "0.0.0.0" { host = "127.0.0.1" }
        if host == "::" || host == "[::]" { host = "[::1]" }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        var request = HTTPClientRequest(url: "https://\(host):\(port)/healthz")
        request.headers.add(name: HTTPServer.probeHeader, value: token)
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            return response.status == .ok
        } catch {
            return false
        }
    }

    /// Runs blocking work off the cooperative pool.
    static func detached<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }

    /// Whether `GET /healthz` on `address` answers 200 within `timeout` seconds.
    static func probe(_ address: String, timeout: Double, token: String = "") -> Bool {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else { return false }
        var host = String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if host == "0.0.0.0" { host = "127.0.0.1" }
        if host == "::" { host = "::1" }
        let family = host.contains(":") ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected: Int32
        if family == AF_INET6 {
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &socketAddress.sin6_addr) == 1 else { return false }
            connected = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &socketAddress.sin_addr) == 1 else { return false }
            connected = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard connected == 0 else { return false }
        let request = Array(
            "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\(HTTPServer.probeHeader): \(token)\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return false
        }
        var buffer = [UInt8](repeating: 0, count: 64)
        var received = 0
        while received < 12 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + received, $0.count - received, 0) }
            guard count > 0 else { break }
            received += count
        }
        return received >= 12 && String(decoding: buffer[..<12], as: UTF8.self) == "HTTP/1.1 200"
    }
}
