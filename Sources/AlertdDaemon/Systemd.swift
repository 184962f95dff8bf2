import AlertdHTTP
import Foundation
import Glibc
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
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
/// answers: a real `GET /healthz` to each of its connection loops, over a
/// connection handed to libmicrohttpd directly (``HTTPServer/addProbeConnections()``)
/// into slots clients cannot take, so neither a full listen backlog, nor
/// every connection slot held by silent sockets, nor a per-address limit on
/// loopback can make a busy daemon look hung. A server that stops answering
/// stops the pings, and systemd restarts it.
struct WatchdogService: Service {
    let notifier: Systemd.Notifier
    let interval: Double
    /// The server to probe. Its ``HTTPServer/probeToken`` goes with the probe,
    /// which then does not count as one of the clients' connections.
    let server: HTTPServer
    /// Whether the server speaks HTTPS: then the probe does too (without checking
    /// the certificate: it talks to itself).
    let tls: Bool
    let logger: Logger

    func run() async throws {
        let sslContext = try tls ? Self.sslContext() : nil
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let started = ContinuousClock.now
                // Pings go every half interval; systemd acts only once a whole interval
                // passed without one, so a probe may take most of a half interval (a
                // loaded machine answers slowly, and a slow answer is still an answer).
                let probeTimeout = max(0.05, interval * 0.4)
                let connections = await server.addProbeConnections()
                let probes = connections.map { fd in
                    Self.probe(fd: fd, ssl: sslContext, timeout: probeTimeout, token: server.probeToken)
                }
                var healthy = !probes.isEmpty
                for probe in probes { healthy = (try? await probe.get()) == true && healthy }
                if healthy {
                    notifier.send("WATCHDOG=1")
                } else {
                    logger.warning("watchdog probe failed: not pinging systemd", metadata: ["address": "\(server.boundAddress)"])
                }
                // The next probe half an interval after this one began, however long it took.
                try? await Task.sleep(until: started + .milliseconds(Int(interval * 500)))
            }
        }
    }

    /// The probe's TLS: no certificate check (it calls itself, over a socket pair).
    static func sslContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        return try NIOSSLContext(configuration: configuration)
    }

    /// Whether `GET /healthz` over the connected socket `fd` answers 200 within
    /// `timeout` seconds. Takes `fd` over (closes it); -1 fails at once. A future,
    /// not an async function: its deadline runs on an event loop, whatever the
    /// cooperative pool is doing.
    static func probe(
        fd: Int32, ssl: NIOSSLContext?, timeout: Double, token: String,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) -> EventLoopFuture<Bool> {
        let eventLoop = group.next()
        guard fd >= 0 else { return eventLoop.makeSucceededFuture(false) }
        let outcome = ProbeOutcome(eventLoop.makePromise(of: Bool.self))
        let connected = ClientBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let ssl { try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: ssl, serverHostname: nil)) }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ProbeHandler(outcome: outcome, token: token))
                }
            }
            .withConnectedSocket(fd)
        // On failure NIO closed the socket (or never took it over: a descriptor then leaks, never closes twice).
        connected.whenFailure { _ in outcome.finish(false) }
        let deadline = eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) { outcome.finish(false) }
        return outcome.promise.futureResult.always { _ in
            deadline.cancel()
            connected.whenSuccess { $0.close(promise: nil) }
        }
    }

    /// The probe's answer: the first of 200, another answer, a closed connection or the deadline.
    final class ProbeOutcome: Sendable {
        let promise: EventLoopPromise<Bool>
        private let done = NIOLockedValueBox(false)

        init(_ promise: EventLoopPromise<Bool>) { self.promise = promise }

        func finish(_ healthy: Bool) {
            let first = done.withLockedValue { done in
                defer { done = true }
                return !done
            }
            if first { promise.succeed(healthy) }
        }
    }

    /// Sends the probe's request once the connection is up and reads the status of its answer.
    final class ProbeHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart
        let outcome: ProbeOutcome
        let token: String

        init(outcome: ProbeOutcome, token: String) {
            self.outcome = outcome
            self.token = token
        }

        func channelActive(context: ChannelHandlerContext) {
            var head = NIOHTTP1.HTTPRequestHead(version: .http1_1, method: .GET, uri: "/healthz")
            head.headers.add(name: "Host", value: "localhost")
            head.headers.add(name: HTTPServer.probeHeader, value: token)
            head.headers.add(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head(let head) = unwrapInboundIn(data) { outcome.finish(head.status == .ok) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            outcome.finish(false)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            outcome.finish(false)
            context.close(promise: nil)
        }
    }
}
