import CMicroHTTPD
import Dispatch
import Glibc
public import Logging
import struct NIOConcurrencyHelpers.NIOLockedValueBox
import NIOConcurrencyHelpers
import Synchronization

// Over 400 lines on purpose: every libmicrohttpd callback, the raw pointers they
// share and the three phases of the access handler live here, so the one module
// that touches C keeps all of it in one file a reviewer can read end to end. What
// touches no callback lives beside it: the configuration
// (HTTPServerConfiguration.swift) and the listening socket (Sockets.swift).

public struct HTTPServerError: Error, CustomStringConvertible {
    public let description: String
}

/// An HTTP/1.1 server on libmicrohttpd: one thread per daemon driving it in external
/// epoll mode (``ConnectionLoop``), which is also the task executor of the requests it
/// reads; suspend/resume for answers that wait, bodies bounded while they are read.
///
/// The server is passed to libmicrohttpd unretained; it must outlive the MHD
/// daemon, which ``stop()`` guarantees by stopping MHD before returning.
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let logger: Logger

    private let daemons = NIOLockedValueBox<[DaemonHandle]>([])
    private let _boundAddress = NIOLockedValueBox<String>("")
    private let logThrottle = NIOLockedValueBox(LogThrottle())
    private let active = RequestCount()
    /// Connections libmicrohttpd accepts beyond `maxConnections`, per daemon, so
    /// that those over the bound get a 503 instead of waiting unaccepted.
    static let connectionHeadroom = 64
    /// Connections of each libmicrohttpd daemon that only the watchdog's probe may
    /// take (``addProbeConnections()``): connections from the network are closed
    /// as they are accepted once the others are taken, so a flood of silent
    /// sockets can fill every slot but these.
    static let probeReserve = 4
    /// Answers this small are queued even beyond `maxResponseBytesInFlight`
    /// (they still count): refusals are this small, and so is almost every answer.
    public static let smallAnswerBytes = 16 * 1024
    /// Bytes of answers queued and not yet taken by their clients.
    private let bytesInFlight = Atomic<Int>(0)
    /// Connections closed as they were accepted: over the per-address limit, or with every slot taken.
    private let refusedForAddress = Atomic<Int>(0)
    private let refusedForCapacity = Atomic<Int>(0)
    /// One gate per running MHD daemon, retained while it runs (its accept policy's context).
    private let gates = NIOLockedValueBox<[Unmanaged<AcceptGate>]>([])
    /// Requests whose connection is suspended, so a shutdown can answer them.
    let suspended = SuspendedConnections()
    /// The server as libmicrohttpd's callbacks see it: retained while any MHD
    /// daemon runs, so no MHD thread can outlive the object it calls into.
    private let retainedForMHD = NIOLockedValueBox<Unmanaged<HTTPServer>?>(nil)
    private let draining = Atomic<Bool>(false)
    /// Deadlines of connections reading a request; see ``HTTPServerConfiguration/readTimeoutSeconds``.
    let readDeadlines: ReadDeadlines
    /// A request carrying this value in ``probeHeader`` is the daemon's own
    /// watchdog probe: it is served even at `maxConnections` (or an address's
    /// limit), so a daemon busy at its bounds is not taken for a hung one.
    /// Random per process; it never leaves it.
    public let probeToken: String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }()
    public static let probeHeader = "X-Alertd-Probe"

    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler, logger: Logger) {
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
        readDeadlines = ReadDeadlines(
            timeout: configuration.readTimeoutSeconds, firstByteTimeout: configuration.firstByteTimeoutSeconds,
            writeTimeout: configuration.writeTimeoutSeconds, perAddressLimit: configuration.maxConnectionsPerAddress)
        tlsStrings = configuration.tls.map { (strdup($0.certificatePEM)!, strdup($0.keyPEM)!, strdup($0.priorities)!) }
    }

    deinit {
        // libmicrohttpd reads the PEM text while daemons run; they are stopped by now.
        if let (certificate, key, priorities) = tlsStrings {
            free(certificate)
            free(key)
            free(priorities)
        }
    }

    /// The certificate, key and priority string as C strings, alive as long as the server.
    private nonisolated(unsafe) let tlsStrings: (UnsafeMutablePointer<CChar>, UnsafeMutablePointer<CChar>, UnsafeMutablePointer<CChar>)?

    /// What the server counts, for `/metrics`.
    public struct Counts: Sendable {
        /// Bytes of answers queued and not yet taken by their clients.
        public var responseBytesInFlight: Int
        /// Connections cut since start, by what they were waiting for: `first_byte`, `request`, `answer`.
        public var cut: [(waiting: String, count: Int)]
        /// Connections closed as they were accepted, by reason: `address` (its address's limit), `capacity`.
        public var refused: [(reason: String, count: Int)]
    }

    public var counts: Counts {
        Counts(
            responseBytesInFlight: bytesInFlight.load(ordering: .relaxed),
            cut: [
                ("first_byte", readDeadlines.connectionsCut(waiting: .firstByte)),
                ("request", readDeadlines.connectionsCut(waiting: .request)),
                ("answer", readDeadlines.connectionsCut(waiting: .answer)),
            ],
            refused: [
                ("address", refusedForAddress.load(ordering: .relaxed)), ("capacity", refusedForCapacity.load(ordering: .relaxed)),
            ])
    }

    /// `host:port` the server listens on, once started.
    public var boundAddress: String { _boundAddress.withLockedValue { $0 } }
    /// Requests between their first byte and their completion, parked ones included.
    public var activeRequests: Int { active.value }

    /// Waits until no request is in flight (told when the last one ends), for
    /// `seconds` at most; whether none is.
    public func idle(within seconds: Double) async -> Bool { await active.idle(seconds: seconds) }
    /// Requests whose connection is suspended (parked waiters, pending commits).
    public var suspendedRequests: Int { suspended.count }

    /// Answers every request still suspended (the drain ran out of time): a
    /// suspended connection must not outlive `stop()`.
    public func answerSuspended() {
        for responder in suspended.all { responder.respond(handler.reject(.shuttingDown)) }
    }

    /// Binds (unless given a socket) and starts the connection loops.
    ///
    /// One single-threaded libmicrohttpd daemon per thread, each driven by its own
    /// ``ConnectionLoop``. Given an address, each gets its own `SO_REUSEPORT` socket,
    /// so the kernel spreads connections across threads (with one shared socket,
    /// whichever thread wakes first accepts a whole burst of connections and the others
    /// idle). Given an inherited socket, each daemon listens on a duplicate of it.
    public func start() throws {
        let threads = max(1, configuration.threads)
        var started: [DaemonHandle] = []
        do {
            var boundPort = 0
            if case .address(let host, let port) = configuration.listen {
                // SO_REUSEPORT would let another process share the port silently:
                // first make sure nobody listens there.
                if port != 0 { close(try Self.bindListener(host: host, port: port, reusePort: false, listening: false)) }
                boundPort = port
            }
            for index in 0..<threads {
                let fd: Int32
                switch configuration.listen {
                case .address(let host, _):
                    fd = try Self.bindListener(host: host, port: boundPort, reusePort: true)
                    if boundPort == 0 { boundPort = Self.port(of: fd) }
                case .socket(let inherited):
                    fd = index == 0 ? inherited : fcntl(inherited, F_DUPFD_CLOEXEC, 0)
                    guard fd >= 0 else { throw HTTPServerError(description: "dup: \(String(cString: strerror(errno)))") }
                }
                if started.isEmpty { _boundAddress.withLockedValue { $0 = Self.localAddress(of: fd) } }
                // On one shared socket any daemon may win a connection's accept: each may take
                // them all (takeClientSlot still holds the process to maxConnections).
                let share = configuration.listen.isSocket ? configuration.maxConnections : max(1, configuration.maxConnections / threads)
                started.append(
                    try startDaemon(on: fd, index: index, connectionLimit: share + Self.connectionHeadroom, reserve: Self.probeReserve))
            }
        } catch {
            for handle in started {
                handle.loop.stop()
                MHD_stop_daemon(handle.pointer)
            }
            releaseForMHD()
            throw error
        }
        daemons.withLockedValue { $0 = started }
        logger.debug("http server started", metadata: ["address": "\(boundAddress)", "threads": "\(threads)"])
    }

    private func startDaemon(on fd: Int32, index: Int, connectionLimit: Int, reserve: Int) throws -> DaemonHandle {
        // External polling: the daemon's loop (ConnectionLoop) calls MHD_run.
        var flags = MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue
        if Self.family(of: fd) == AF_INET6 { flags |= MHD_USE_IPv6.rawValue }
        if tlsStrings != nil { flags |= MHD_USE_TLS.rawValue }

        // Retained once for every daemon; released when stop() has stopped them all.
        let this = retainedForMHD.withLockedValue { retained in
            if retained == nil { retained = Unmanaged.passRetained(self) }
            return retained!.toOpaque()
        }
        var options: [MHD_OptionItem] = [
            // The logger first, or MHD logs the options before it on its own.
            MHD_OptionItem(option: .EXTERNAL_LOGGER, value: alertd_mhd_logger_address(), ptr_value: this),
            item(.LISTEN_SOCKET, Int(fd)),
            item(.CONNECTION_LIMIT, connectionLimit + reserve),
            item(.CONNECTION_MEMORY_LIMIT, configuration.connectionMemoryLimit),
            item(.CONNECTION_TIMEOUT, configuration.connectionTimeoutSeconds),
            item(.LISTEN_BACKLOG_SIZE, 1024),
            MHD_OptionItem(option: .NOTIFY_COMPLETED, value: unsafeBitCast(requestCompleted, to: Int.self), ptr_value: this),
            MHD_OptionItem(option: .NOTIFY_CONNECTION, value: unsafeBitCast(connectionNotified, to: Int.self), ptr_value: this),
        ]
        if let (certificate, key, priorities) = tlsStrings {
            options.append(MHD_OptionItem(option: .HTTPS_MEM_KEY, value: 0, ptr_value: UnsafeMutableRawPointer(key)))
            options.append(MHD_OptionItem(option: .HTTPS_MEM_CERT, value: 0, ptr_value: UnsafeMutableRawPointer(certificate)))
            options.append(MHD_OptionItem(option: .HTTPS_PRIORITIES, value: 0, ptr_value: UnsafeMutableRawPointer(priorities)))
        }
        options.append(item(.END, 0))
        // Retained while the daemon runs; it learns the daemon's pointer once started
        // (connections accepted before that are let in: the daemon is empty then).
        let gate = Unmanaged.passRetained(AcceptGate(server: self, clientLimit: connectionLimit))
        let daemon = options.withUnsafeMutableBufferPointer { buffer in
            alertd_start_daemon(UInt32(flags), acceptPolicy, gate.toOpaque(), accessHandler, this, buffer.baseAddress)
        }
        guard let daemon else {
            gate.release()
            throw HTTPServerError(
                description: "libmicrohttpd did not start on \(Self.localAddress(of: fd))"
                    + (tlsStrings == nil ? "" : " (is the TLS priority string valid? libmicrohttpd's log line above says)"))
        }
        gate.takeUnretainedValue().started(daemon)
        gates.withLockedValue { $0.append(gate) }
        do {
            let loop = try ConnectionLoop(daemon: daemon, name: "alertd-http-\(index)")
            try loop.start()
            return DaemonHandle(pointer: daemon, loop: loop)
        } catch {
            MHD_stop_daemon(daemon)
            throw error
        }
    }

    func connection(_ connection: OpaquePointer, opened: Bool, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        if opened {
            readDeadlines.opened(fd: alertd_connection_fd(connection), context: context)
        } else {
            readDeadlines.closed(context: context)
            // A slot came free: at its limit the daemon took the listening socket out of its
            // epoll set, and puts it back only at the start of an MHD_run.
            ConnectionLoop.current?.runAgain()
        }
    }

    /// Stops accepting connections; requests already read go on. From then on
    /// every answer carries `Connection: close`.
    public func stopAccepting() async {
        draining.store(true, ordering: .relaxed)
        for handle in daemons.withLockedValue({ $0 }) {
            // Not thread-safe in external mode: on the daemon's own loop.
            let daemon = DaemonPointer(pointer: handle.pointer)
            _ = await handle.loop.perform {
                let fd = MHD_quiesce_daemon(daemon.pointer)
                if fd >= 0 { close(fd) }
            }
        }
    }

    /// Stops libmicrohttpd: closes every connection and joins its threads.
    ///
    /// First waits, up to `grace` seconds, until no request is in flight. Every
    /// suspended connection must have been answered and resumed by then
    /// (``answerSuspended()``): libmicrohttpd aborts the process otherwise, so
    /// while any is left (or being resumed) this leaves libmicrohttpd running —
    /// the server stays alive for its threads — and the process exit closes them.
    /// Returns whether libmicrohttpd was stopped.
    @discardableResult
    public func stop(grace: Double = 2) -> Bool {
        _ = active.waitIdle(seconds: grace)
        guard suspended.isEmpty else {
            logger.error("not stopping libmicrohttpd: requests are still suspended", metadata: ["requests": "\(suspendedRequests)"])
            return false
        }
        let handles = daemons.withLockedValue { handles -> [DaemonHandle] in
            defer { handles = [] }
            return handles
        }
        // No MHD_run from here on, so nothing more is suspended. A request read between the
        // check above and its loop's stop may have been: answered now (503), or
        // MHD_stop_daemon would abort the process; `isEmpty` waits for a resume under way.
        for handle in handles { handle.loop.stop() }
        while !suspended.isEmpty { answerSuspended() }
        for handle in handles { MHD_stop_daemon(handle.pointer) }
        releaseForMHD()
        return true
    }

    /// Once every MHD daemon has stopped: the references their callbacks held.
    private func releaseForMHD() {
        retainedForMHD.withLockedValue { retained in
            retained?.release()
            retained = nil
        }
        for gate in gates.withLockedValue({ gates in
            defer { gates = [] }
            return gates
        }) {
            gate.release()
        }
    }

    /// Hands each MHD daemon one end of a new socket pair as a connection of its
    /// own (`MHD_add_connection`), into the slots kept for it (``probeReserve``),
    /// and returns the other ends, one per daemon (-1 where that failed): the
    /// watchdog's probe reaches every connection loop however many connections
    /// the network holds, and shares nothing with clients but the code that
    /// answers them. The caller closes each returned descriptor.
    public func addProbeConnections() async -> [Int32] {
        var ends: [Int32] = []
        for handle in daemons.withLockedValue({ $0 }) {
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                ends.append(-1)
                continue
            }
            // Not thread-safe in external mode: on the daemon's own loop.
            let daemon = DaemonPointer(pointer: handle.pointer)
            let theirs = pair[1]
            let added = await handle.loop.perform {
                AcceptGate.probeAddress.withUnsafeBytes { raw in
                    MHD_add_connection(
                        daemon.pointer, theirs, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
                } == .YES
            }
            // libmicrohttpd closes its end either way (nil: stopped, it never saw it).
            if added == nil { close(theirs) }
            if added == true {
                ends.append(pair[0])
            } else {
                close(pair[0])
                ends.append(-1)
            }
        }
        return ends
    }

    /// The accept policy (libmicrohttpd calls it for every connection it accepts,
    /// before the connection takes a slot): closes connections from an address
    /// at its limit, and, once all but ``probeReserve`` slots are taken, every
    /// connection but the watchdog's.
    fileprivate func accepts(_ gate: AcceptGate, address: UnsafePointer<sockaddr>, length: socklen_t) -> Bool {
        if AcceptGate.isProbe(address, length) { return true }
        if let daemon = gate.daemon, Int(alertd_daemon_connections(daemon)) >= gate.clientLimit {
            refusedForCapacity.add(1, ordering: .relaxed)
            return false
        }
        if readDeadlines.perAddressLimit != nil, let peer = AcceptGate.ipBytes(address, length), !readDeadlines.admits(address: peer) {
            refusedForAddress.add(1, ordering: .relaxed)
            return false
        }
        return true
    }

    // MARK: - The access handler, on a connection loop's thread

    /// libmicrohttpd's access handler, called several times per request: once the
    /// head is in (``headArrived(_:url:method:contextSlot:)``), then with each
    /// piece of the body (``bodyArrived(_:size:context:)``), then once more when the
    /// body is complete (``requestComplete(_:url:method:context:)``), and again after
    /// a parked request is resumed. What a request has reached is its context's phase.
    fileprivate func access(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>,
        method: UnsafePointer<CChar>,
        uploadData: UnsafePointer<CChar>?,
        uploadDataSize: UnsafeMutablePointer<Int>,
        contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = contextSlot.pointee else {
            return headArrived(connection, url: url, method: method, contextSlot: contextSlot)
        }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()

        switch context.phase {
        case .answered:
            uploadDataSize.pointee = 0
            return .YES
        case .refused(let response):
            uploadDataSize.pointee = 0
            context.phase = .answered
            return queue(response, on: connection, context: context)
        case .parked(let responder):
            // Resumed: the answer is ready.
            guard let response = responder.takeResumedResponse() else { return .YES }
            context.phase = .answered
            return queue(response, on: connection, context: context)
        case .reading:
            break
        }

        let size = uploadDataSize.pointee
        if size > 0 {
            uploadDataSize.pointee = 0
            return bodyArrived(uploadData, size: size, context: context)
        }
        return requestComplete(connection, url: url, method: method, context: context)
    }

    /// The first call: the request line and headers are in. Validates what is cheap,
    /// and decides who may send a body before a byte of it is read. Never answers a
    /// good request here: in 0.9.75 that forces `Connection: close`.
    private func headArrived(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let context = RequestContext()
        contextSlot.pointee = Unmanaged.passRetained(context).toOpaque()
        active.begin()
        /// Answers at once with `response` (closing the connection unless `close` is false).
        func refuse(_ response: HTTPResponse, close: Bool = true) -> MHD_Result {
            context.phase = .answered
            return queue(response, on: connection, context: context, close: close)
        }
        // Over limits.max_connections: a 503 that closes the connection, not
        // a connection left unaccepted in the backlog. The watchdog's probe
        // is the exception: it does not compete with clients for a slot.
        context.isProbe = Self.isProbe(connection, token: probeToken)
        if !context.isProbe, readDeadlines.takeClientSlot(connection) > configuration.maxConnections {
            return refuse(handler.reject(.tooManyConnections(limit: configuration.maxConnections)))
        }
        let framing = Framing(connection)
        // The request line and headers live in the connection's memory pool,
        // and so must the answer's header: refuse while there is room to answer.
        let headerLimit = configuration.connectionMemoryLimit * 3 / 4
        if strlen(url) + framing.headerBytes > headerLimit {
            return refuse(handler.reject(.headersTooLarge(limit: headerLimit)))
        }
        if let problem = framing.problem {
            return refuse(handler.reject(.badFraming(problem)))
        }
        if let declared = framing.contentLength, declared > configuration.maxBodyBytes {
            // A client that waits for `100 Continue`, or one that declares more than we would
            // ever read, is answered now. Any other sends the body with the head (a proxy
            // such as nginx always does): it is read and dropped, and answered once in, so
            // that the connection never closes on unread bytes. Closing on them makes the
            // kernel reset the connection, which can destroy the answer before the client
            // reads it: nginx then said 502, not 413 (the contract tier through two instances).
            guard !framing.expectsContinue, declared <= discardLimit else {
                return refuse(handler.reject(.payloadTooLarge(limit: configuration.maxBodyBytes)), close: false)
            }
            context.tooLarge = true
            return .YES
        }
        // The accept policy closes connections over the per-address limit; two accepted at
        // once by two threads can both pass it, and the later one is refused here.
        if !context.isProbe, let limit = configuration.maxConnectionsPerAddress, readDeadlines.isOverAddressLimit(connection) {
            return refuse(handler.reject(.tooManyConnectionsFromAddress(limit: limit)))
        }
        let head = HTTPRequestHead(
            method: String(cString: method), path: String(cString: url),
            lowercasedHeaders: Self.firstValues(connection, named: Self.headFields), hasBody: framing.hasBody)
        switch handler.admit(head) {
        case .proceed(let admission):
            context.admission = admission
            context.head = head
            return .YES
        case .refuse(let response):
            // A body would follow: answer now, which closes the connection
            // after the answer instead of reading the body. Without one,
            // answer on the next call and keep the connection alive.
            guard head.hasBody else {
                context.phase = .refused(response)
                return .YES
            }
            return refuse(response)
        }
    }

    /// How much of a body over `maxBodyBytes` is read and dropped so that its sender gets
    /// the 413; past it the connection is cut.
    private var discardLimit: Int { max(16 << 20, 4 * configuration.maxBodyBytes) }

    /// A piece of the body: kept while the body fits `maxBodyBytes`, read and dropped
    /// beyond it (so the client gets its 413), and the connection cut past a margin.
    private func bodyArrived(_ data: UnsafePointer<CChar>?, size: Int, context: RequestContext) -> MHD_Result {
        if context.tooLarge {
            context.discarded += size
            // Past a generous margin, hang up instead of reading a body nobody wants.
            return context.discarded > discardLimit ? .NO : .YES
        }
        if context.body.count + size > configuration.maxBodyBytes {
            context.tooLarge = true
            context.body = []
            context.discarded = size
            return .YES
        }
        if let data {
            data.withMemoryRebound(to: UInt8.self, capacity: size) {
                context.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
            }
        }
        return .YES
    }

    /// The whole request is in: the handler answers now, or parks it (suspended).
    private func requestComplete(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>, context: RequestContext
    ) -> MHD_Result {
        // From here on the connection waits for us, not for the client.
        readDeadlines.requestRead(connection)
        if context.tooLarge {
            context.phase = .answered
            return queue(handler.reject(.payloadTooLarge(limit: configuration.maxBodyBytes)), on: connection, context: context)
        }
        let head = context.head
        context.head = nil  // so that appending below does not copy the array
        var headers = head?.headers ?? []
        Self.appendValues(connection, named: Self.bodyFields, to: &headers)
        let request = HTTPRequest(
            method: head?.method ?? String(cString: method),
            path: head?.path ?? String(cString: url),
            query: values(connection, .GET_ARGUMENT_KIND, collectArgument),
            lowercasedHeaders: headers,
            body: context.body,
            admission: context.admission
        )
        context.body = []
        let responder = Responder(connection: ConnectionHandle(pointer: connection), registry: suspended, loop: ConnectionLoop.current)
        handler.handle(request, responder: responder)
        if let response = responder.afterHandler() {
            context.phase = .answered
            return queue(response, on: connection, context: context)
        }
        context.phase = .parked(responder)
        return .YES
    }

    fileprivate func completed(_ connection: OpaquePointer?, _ contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        // Answered: the next request on this connection has its own time to arrive.
        if let connection { readDeadlines.answered(connection) }
        guard let contextSlot, let raw = contextSlot.pointee else { return }
        let context = Unmanaged<RequestContext>.fromOpaque(raw)
        contextSlot.pointee = nil
        let request = context.takeUnretainedValue()
        if request.answerBytes > 0 { bytesInFlight.subtract(request.answerBytes, ordering: .relaxed) }
        if let admission = request.admission { handler.finished(admission) }
        context.release()
        active.end()
    }

    /// libmicrohttpd's messages (mostly requests it refused as malformed), at most 20
    /// a minute; the next one after a full minute says how many were left out.
    fileprivate func log(_ message: String) {
        switch logThrottle.withLockedValue({ $0.admit(at: .now) }) {
        case .drop: return
        case .write(let dropped) where dropped > 0:
            logger.warning("libmicrohttpd", metadata: ["detail": "\(message)", "dropped_before": "\(dropped)"])
        case .write:
            logger.warning("libmicrohttpd", metadata: ["detail": "\(message)"])
        }
    }

    /// Queues an answer. It counts against `maxResponseBytesInFlight` until the
    /// request completes (``completed(_:_:)``): a large answer beyond it is
    /// replaced by a refusal. From here the client has `writeTimeoutSeconds` to take it.
    private func queue(_ response: HTTPResponse, on connection: OpaquePointer, context: RequestContext, close: Bool = false)
        -> MHD_Result
    {
        var response = response
        let limit = configuration.maxResponseBytesInFlight
        if response.body.count > Self.smallAnswerBytes,
            bytesInFlight.add(response.body.count, ordering: .relaxed).newValue > limit
        {
            bytesInFlight.subtract(response.body.count, ordering: .relaxed)
            response = handler.reject(.responseBytesInFlight(limit: limit))
            bytesInFlight.add(response.body.count, ordering: .relaxed)
        } else if response.body.count <= Self.smallAnswerBytes {
            bytesInFlight.add(response.body.count, ordering: .relaxed)
        }
        context.answerBytes = response.body.count
        let mhdResponse = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                .RESPMEM_MUST_COPY
            )
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for header in response.headers {
            // withCString hands over a native string's own bytes; passing the
            // strings directly would copy each into a new C array.
            _ = header.name.withCString { name in
                header.value.withCString { value in MHD_add_response_header(mhdResponse, name, value) }
            }
        }
        if close || draining.load(ordering: .relaxed) {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        let queued = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        if queued == .YES { readDeadlines.responding(connection) }
        return queued
    }

    // MARK: - Helpers

    private static func isProbe(_ connection: OpaquePointer, token: String) -> Bool {
        guard let value = MHD_lookup_connection_value(connection, .HEADER_KIND, probeHeader) else { return false }
        return strcmp(value, token) == 0
    }

    private func item(_ option: MHD_OPTION, _ value: Int) -> MHD_OptionItem {
        MHD_OptionItem(option: option, value: value, ptr_value: nil)
    }

    /// A header field's name as a C string literal (no conversion per lookup) and as a String.
    struct FieldName: Sendable {
        let c: StaticString
        let text: String
        init(_ c: StaticString) {
            self.c = c
            text = c.description
        }
        var pointer: UnsafePointer<CChar> { UnsafeRawPointer(c.utf8Start).assumingMemoryBound(to: CChar.self) }
    }

    /// The fields of a request's head (``HTTPRequestHead/fields``): the first value of each.
    static let headFields = [FieldName("host"), FieldName("origin"), FieldName("authorization"), FieldName("x-request-id")]
    /// The fields handlers read besides the head's, fetched by name (far fewer
    /// allocations than collecting every field of every request); a repeated
    /// field is kept repeated, for a handler to refuse.
    private static let bodyFields = [FieldName("content-type"), FieldName("idempotency-key"), FieldName("if-none-match")]

    /// The first value of each named field that came: one lookup each, no scan.
    private static func firstValues(_ connection: OpaquePointer, named names: [FieldName]) -> [(name: String, value: String)] {
        var found: [(name: String, value: String)] = []
        for name in names {
            if let value = MHD_lookup_connection_value(connection, .HEADER_KIND, name.pointer) {
                found.append((name: name.text, value: String(cString: value)))
            }
        }
        return found
    }

    /// Every value of each named field that came, repeated ones repeated.
    private static func appendValues(
        _ connection: OpaquePointer, named fields: [FieldName], to found: inout [(name: String, value: String)]
    ) {
        for field in fields where MHD_lookup_connection_value(connection, .HEADER_KIND, field.pointer) != nil {
            let name = field.text
            var scan = (name: name, values: [String]())
            withUnsafeMutablePointer(to: &scan) { pointer in
                _ = MHD_get_connection_values(connection, .HEADER_KIND, collectNamed, pointer)
            }
            for text in scan.values { found.append((name: name, value: text)) }
        }
    }

    private func values(
        _ connection: OpaquePointer, _ kind: MHD_ValueKind, _ iterator: MHD_KeyValueIterator
    ) -> [(name: String, value: String)] {
        var collected: [(name: String, value: String)] = []
        withUnsafeMutablePointer(to: &collected) { pointer in
            _ = MHD_get_connection_values(connection, kind, iterator, pointer)
        }
        return collected
    }
}

/// Per-request state, owned by the connection's MHD thread; retained in
/// `con_cls` from the first access-handler call until the request-completed
/// callback releases it.
private final class RequestContext {
    enum Phase {
        case reading
        case parked(Responder)
        /// Refused from its head; the answer goes out on the next call.
        case refused(HTTPResponse)
        case answered
    }
    var phase = Phase.reading
    /// What the handler admitted the head with, and the head.
    var admission: (any AnyObject & Sendable)?
    var head: HTTPRequestHead?
    var body: [UInt8] = []
    var tooLarge = false
    var discarded = 0
    /// The watchdog's own probe (``HTTPServer/probeToken``).
    var isProbe = false
    /// The queued answer's size, counted in the server's bytes in flight until completion.
    var answerBytes = 0
}

/// What a libmicrohttpd daemon's accept policy needs: the server, the daemon
/// once started, and how many connections from the network it may hold.
private final class AcceptGate: Sendable {
    unowned let server: HTTPServer
    /// The MHD daemon (its pointer's bits; 0 until it started).
    private let daemonBits = Atomic<Int>(0)
    /// Connections the daemon may hold besides the probe's reserve.
    let clientLimit: Int

    init(server: HTTPServer, clientLimit: Int) {
        self.server = server
        self.clientLimit = clientLimit
    }

    func started(_ daemon: OpaquePointer) { daemonBits.store(Int(bitPattern: UnsafeRawPointer(daemon)), ordering: .relaxed) }
    var daemon: OpaquePointer? { OpaquePointer(bitPattern: daemonBits.load(ordering: .relaxed)) }

    /// The address the watchdog's probe connections are added with: an abstract
    /// unix socket name no peer can have (socket pairs have no name at all).
    static let probeAddress: [UInt8] = {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("\0alertd-watchdog-probe".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in name.enumerated() { raw[index] = byte }
        }
        let length = MemoryLayout<sa_family_t>.size + name.count
        return withUnsafeBytes(of: &address) { Array($0.prefix(length)) }
    }()

    static func isProbe(_ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Bool {
        Int(length) == probeAddress.count && memcmp(address, probeAddress, probeAddress.count) == 0
    }

    /// An IPv4 or IPv6 address's bytes, as ``ReadDeadlines/peerAddress(of:)`` gives them; nil for anything else.
    static func ipBytes(_ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> [UInt8]? {
        let raw = UnsafeRawBufferPointer(start: address, count: Int(length))
        switch Int32(address.pointee.sa_family) {
        case AF_INET where raw.count >= 8: return Array(raw[4..<8])
        case AF_INET6 where raw.count >= 24: return Array(raw[8..<24])
        default: return nil
        }
    }
}

/// An MHD daemon and the loop that drives it. Guarantee relied on: the daemon is
/// called only on its loop's thread (``ConnectionLoop/perform(_:)`` for calls from
/// elsewhere), or after the loop stopped; the handle is cleared under the server's
/// lock before `MHD_stop_daemon` frees the daemon.
private struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let loop: ConnectionLoop
}

// Non-capturing C callbacks: the server travels in `cls`.

private let acceptPolicy: MHD_AcceptPolicyCallback = { cls, address, length in
    guard let cls, let address else { return .YES }
    let gate = Unmanaged<AcceptGate>.fromOpaque(cls).takeUnretainedValue()
    return gate.server.accepts(gate, address: address, length: length) ? .YES : .NO
}

private let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, contextSlot in
    guard let cls, let connection, let url, let method, let uploadDataSize, let contextSlot else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.access(
        connection: connection, url: url, method: method,
        uploadData: uploadData, uploadDataSize: uploadDataSize, contextSlot: contextSlot
    )
}

/// MHD_CONNECTION_NOTIFY_STARTED is 0, MHD_CONNECTION_NOTIFY_CLOSED 1 (microhttpd.h).
private let connectionNotified: MHD_NotifyConnectionCallback = { cls, connection, context, code in
    guard let cls, let connection, let context else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().connection(connection, opened: code.rawValue == 0, context: context)
}

private let requestCompleted: MHD_RequestCompletedCallback = { cls, connection, contextSlot, _ in
    guard let cls else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().completed(connection, contextSlot)
}

@_cdecl("alertd_http_log")
func alertdHTTPLog(_ cls: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let cls, let message else { return }
    let text = String(cString: message).trimmingCharacters(in: [" ", "\n"])
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().log(text)
}

/// Values of one header field (case-insensitive), in order.
private let collectNamed: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let scan = cls.assumingMemoryBound(to: (name: String, values: [String]).self)
    if strcasecmp(key, scan.pointee.name) == 0 {
        scan.pointee.values.append(value.map { String(cString: $0) } ?? "")
    }
    return .YES
}

/// Query arguments, names as sent (they are case-sensitive).
private let collectArgument: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let collected = cls.assumingMemoryBound(to: [(name: String, value: String)].self)
    collected.pointee.append((name: String(cString: key), value: value.map { String(cString: $0) } ?? ""))
    return .YES
}

/// What the header block says about the body's length, read on the first
/// handler call, before any of the body.
private struct Framing {
    var contentLength: Int?
    var problem: String?
    /// Whether a body follows: chunked, or a non-zero length.
    var hasBody = false
    /// Whether the client waits for `100 Continue` before it sends the body.
    var expectsContinue = false
    /// The header fields' size as sent, about (names, values, separators).
    var headerBytes = 0

    fileprivate struct Scan {
        var lengths: [String] = []
        /// The `Transfer-Encoding` headers' values, trimmed.
        var encodings: [String] = []
        var transferEncoding: Bool { !encodings.isEmpty }
        var expectsContinue = false
        var bytes = 0
    }

    init(_ connection: OpaquePointer) {
        var scan = Scan()
        withUnsafeMutablePointer(to: &scan) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, scanFraming, pointer)
        }
        headerBytes = scan.bytes
        expectsContinue = scan.expectsContinue
        // One Content-Length, its value digits only (RFC 9110 §8.6). libmicrohttpd reads the
        // first header and answers a value it cannot read itself; a second header, equal or
        // not, or one it never read (`Content-Length: 20` then `Content-Length: 0x14`),
        // would let two parsers disagree on where this request ends and the next begins:
        // refused, and the connection closed, so nothing after it is read as a request.
        let values = scan.lengths.map { $0.trimmingCharacters(in: [" ", "\t"]) }
        if values.count > 1 {
            problem =
                Set(values).count > 1
                ? "the request has conflicting Content-Length headers"
                : "the request has more than one Content-Length header"
        } else if let text = values.first, text.isEmpty || !text.utf8.allSatisfy({ (48...57).contains($0) }) {
            problem = "the request's Content-Length is not a decimal number"
        } else if scan.encodings.count > 1 || scan.encodings.contains(where: { $0.lowercased() != "chunked" }) {
            // libmicrohttpd knows `chunked` only: with anything else it waited for a body it
            // could not frame until the read timeout.
            problem = "the request's Transfer-Encoding is not chunked"
        } else if !scan.lengths.isEmpty, scan.transferEncoding {
            problem = "the request has both Content-Length and Transfer-Encoding"
        } else if let text = values.first {
            contentLength = Int(text)
        }
        hasBody = scan.transferEncoding || (contentLength ?? 0) > 0
    }
}

private let scanFraming: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let scan = cls.assumingMemoryBound(to: Framing.Scan.self)
    scan.pointee.bytes += strlen(key) + (value.map { strlen($0) } ?? 0) + 4
    if strcasecmp(key, "Content-Length") == 0 {
        scan.pointee.lengths.append(value.map { String(cString: $0) } ?? "")
    } else if strcasecmp(key, "Transfer-Encoding") == 0 {
        scan.pointee.encodings.append((value.map { String(cString: $0) } ?? "").trimmingCharacters(in: [" ", "\t"]))
    } else if strcasecmp(key, "Expect") == 0, let value, strcasecmp(value, "100-continue") == 0 {
        scan.pointee.expectsContinue = true
    }
    return .YES
}

private extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
