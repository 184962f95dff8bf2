import CMicroHTTPD
import Dispatch
import Glibc
import struct NIOConcurrencyHelpers.NIOLockedValueBox
public import ServiceLifecycle
import Synchronization

/// The deadlines of every open connection: its first byte within `firstByteTimeout`
/// of opening; a whole request within `timeout` of the connection opening or of its
/// previous answer; an answer taken by the client within `writeTimeout` of being queued.
///
/// libmicrohttpd 0.9.75 only has an idle timeout, which every trickled byte
/// resets, so a client sending one header byte a minute holds a connection
/// forever (slowloris). Here each connection has a deadline while the daemon
/// waits for the client; a sweeper shuts the socket down (`shutdown(2)`, which
/// leaves the descriptor to libmicrohttpd) once it passes, and libmicrohttpd
/// then closes the connection as if the client had hung up. While a request is
/// being answered, or parked in a long-poll, the connection has no deadline.
/// Whether a new connection sent anything is the kernel's count of bytes it
/// received (`TCP_INFO`), since libmicrohttpd says nothing before a whole head.
///
/// With a per-address limit, the registry also counts the open connections of
/// each client address; a connection that opens over the limit is marked, and the
/// server answers its first request with a refusal and closes it.
///
/// Descriptor reuse: libmicrohttpd reports a connection closed before it closes
/// the socket, and both that report and the sweep hold the registry's lock, so the
/// sweep never shuts down a descriptor that belongs to a newer connection.
///
/// The two calls every request makes (``requestRead(_:)``, ``answered(_:)``) take
/// no lock: each connection's entry travels in libmicrohttpd's socket context and
/// its deadline is an atomic. Only opening, closing and the sweep lock the registry.
final class ReadDeadlines: Sendable {
    /// What a connection's deadline waits for; packed into the low two bits of
    /// the deadline (nanoseconds, so the bits cost nothing), so that one atomic
    /// holds both and the sweep can replace them together or not at all.
    enum Wait: UInt64, CaseIterable {
        /// The first byte of a new connection (``ReadDeadlines/firstByteTimeout``).
        case firstByte = 0
        /// The rest of a request (``ReadDeadlines/timeout``).
        case request = 1
        /// The client to take an answer (``ReadDeadlines/writeTimeout``).
        case answer = 2
        /// The daemon: answering, or parked. Never cut.
        case daemon = 3
    }

    /// One open connection.
    final class Entry: Sendable {
        let fd: Int32
        /// Uptime nanoseconds (`DispatchTime`) with a ``Wait`` in the low two bits; `.max` while the daemon has the next move.
        let deadline: Atomic<UInt64>
        /// When it opened (uptime nanoseconds): a request's time is counted from then.
        let openedAt: UInt64
        let cut = Atomic<Bool>(false)
        /// The client's address (its bytes), when connections are counted per address.
        let address: [UInt8]?
        /// It opened while its address already held the limit.
        let overLimit: Bool
        /// A client's request arrived on it: it holds one of `max_connections`' slots.
        let holdsClientSlot = Atomic<Bool>(false)

        init(fd: Int32, deadline: UInt64, openedAt: UInt64 = 0, address: [UInt8]? = nil, overLimit: Bool = false) {
            self.fd = fd
            self.deadline = Atomic(deadline)
            self.openedAt = openedAt
            self.address = address
            self.overLimit = overLimit
        }
    }

    private struct Registry {
        var entries: [ObjectIdentifier: Entry] = [:]
        /// Open connections per client address; only with a per-address limit.
        var perAddress: [[UInt8]: Int] = [:]
    }

    private let timeout: UInt64
    private let firstByteTimeout: UInt64
    private let writeTimeout: UInt64
    /// Connections one client address may hold open; nil: no limit.
    let perAddressLimit: Int?
    private let registry = NIOLockedValueBox(Registry())
    /// Connections cut since start, by what they were waiting for (``Wait``'s raw value).
    private let cutWaitingFirstByte = Atomic<Int>(0)
    private let cutWaitingRequest = Atomic<Int>(0)
    private let cutWaitingAnswer = Atomic<Int>(0)
    /// Open connections that have carried a client's request (not the watchdog's probe).
    private let clientSlots = Atomic<Int>(0)
    /// Reads the bytes a peer sent so far (-1: unknown); tests pass their own.
    private let bytesReceived: @Sendable (Int32) -> Int64

    init(
        timeout seconds: Double, firstByteTimeout firstByte: Double? = nil, writeTimeout write: Double? = nil,
        perAddressLimit: Int? = nil, bytesReceived: @escaping @Sendable (Int32) -> Int64 = { Int64(alertd_tcp_bytes_received($0)) }
    ) {
        timeout = Self.nanoseconds(seconds)
        firstByteTimeout = min(timeout, Self.nanoseconds(firstByte ?? seconds))
        writeTimeout = Self.nanoseconds(write ?? seconds)
        self.perAddressLimit = perAddressLimit
        self.bytesReceived = bytesReceived
    }

    private static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(max(0.05, seconds) * 1e9) }

    private static func pack(_ deadline: UInt64, _ wait: Wait) -> UInt64 { wait == .daemon ? .max : (deadline & ~3) | wait.rawValue }

    /// Connections cut since start, waiting for the client's first byte, the rest of a request, or to take an answer.
    var connectionsCut: Int { Wait.allCases.reduce(0) { $0 + connectionsCut(waiting: $1) } }
    func connectionsCut(waiting wait: Wait) -> Int {
        switch wait {
        case .firstByte: cutWaitingFirstByte.load(ordering: .relaxed)
        case .request: cutWaitingRequest.load(ordering: .relaxed)
        case .answer: cutWaitingAnswer.load(ordering: .relaxed)
        case .daemon: 0
        }
    }

    /// A connection opened: its entry is kept in `context` (libmicrohttpd's socket context).
    func opened(fd: Int32, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard fd >= 0 else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let deadline = Self.pack(now + firstByteTimeout, .firstByte)
        let address = perAddressLimit == nil ? nil : Self.peerAddress(of: fd)
        let entry = registry.withLockedValue { registry -> Entry in
            var overLimit = false
            if let limit = perAddressLimit, let address {
                let open = registry.perAddress[address, default: 0] + 1
                registry.perAddress[address] = open
                overLimit = open > limit
            }
            let entry = Entry(fd: fd, deadline: deadline, openedAt: now, address: address, overLimit: overLimit)
            registry.entries[ObjectIdentifier(entry)] = entry
            return entry
        }
        context.pointee = Unmanaged.passRetained(entry).toOpaque()
    }

    /// Whether a connection from `address` (the peer's IP bytes) may be accepted:
    /// its address holds fewer open connections than the per-address limit.
    func admits(address: [UInt8]) -> Bool {
        guard let limit = perAddressLimit else { return true }
        return registry.withLockedValue { $0.perAddress[address, default: 0] < limit }
    }

    /// Whether the connection opened while its address held the per-address limit.
    func isOverAddressLimit(_ connection: OpaquePointer) -> Bool {
        Self.entry(of: connection)?.overLimit ?? false
    }

    /// A client's request arrived on `connection`: it takes a slot (once per
    /// connection) and this returns how many connections hold one now.
    ///
    /// Counting only connections that carried a client's request keeps the
    /// watchdog's probe out of the count for its whole life — accepted but not
    /// yet read, answered but not yet closed — so it never takes a client's slot
    /// and a client never takes its. Connections that send nothing are bounded
    /// by libmicrohttpd's own limit and cut by the first-byte timeout.
    func takeClientSlot(_ connection: OpaquePointer) -> Int {
        guard let entry = Self.entry(of: connection) else { return clientSlots.load(ordering: .relaxed) }
        if entry.holdsClientSlot.exchange(true, ordering: .relaxed) { return clientSlots.load(ordering: .relaxed) }
        return clientSlots.add(1, ordering: .relaxed).newValue
    }

    /// The peer's IP address bytes (4 or 16); nil for anything else.
    static func peerAddress(of fd: Int32) -> [UInt8]? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard status == 0 else { return nil }
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: &storage) { raw -> [UInt8]? in
            switch family {
            case AF_INET: Array(raw[4..<8])  // sin_family, sin_port, then sin_addr
            case AF_INET6: Array(raw[8..<24])  // sin6_family, sin6_port, sin6_flowinfo, then sin6_addr
            default: nil
            }
        }
    }

    /// The request is complete: the daemon has the next move.
    func requestRead(_ connection: OpaquePointer) {
        Self.entry(of: connection)?.deadline.store(.max, ordering: .relaxed)
    }

    /// An answer was queued: the client has `writeTimeout` to take all of it.
    func responding(_ connection: OpaquePointer) {
        Self.entry(of: connection)?.deadline.store(
            Self.pack(DispatchTime.now().uptimeNanoseconds + writeTimeout, .answer), ordering: .relaxed)
    }

    /// The answer went out: the client has `timeout` to send the next request.
    func answered(_ connection: OpaquePointer) {
        Self.entry(of: connection)?.deadline.store(
            Self.pack(DispatchTime.now().uptimeNanoseconds + timeout, .request), ordering: .relaxed)
    }

    func closed(context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let raw = context.pointee else { return }
        context.pointee = nil
        let entry = Unmanaged<Entry>.fromOpaque(raw).takeRetainedValue()
        if entry.holdsClientSlot.load(ordering: .relaxed) { clientSlots.subtract(1, ordering: .relaxed) }
        registry.withLockedValue { registry in
            registry.entries.removeValue(forKey: ObjectIdentifier(entry))
            if let address = entry.address, let open = registry.perAddress[address] {
                registry.perAddress[address] = open > 1 ? open - 1 : nil
            }
        }
    }

    /// Shuts down every connection past its deadline; returns how many.
    ///
    /// A new connection past its first-byte deadline that did send something (a
    /// request head still on its way) is not cut: it gets the rest of the read
    /// timeout, counted from when it opened.
    @discardableResult
    func sweep(now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int {
        var cut = [0, 0, 0]
        registry.withLockedValue { registry in
            for entry in registry.entries.values {
                let deadline = entry.deadline.load(ordering: .relaxed)
                guard deadline <= now, let wait = Wait(rawValue: deadline & 3), wait != .daemon else { continue }
                if wait == .firstByte, bytesReceived(entry.fd) != 0 {
                    // Only if nothing moved meanwhile (the request came in: `.max`).
                    _ = entry.deadline.compareExchange(
                        expected: deadline, desired: Self.pack(entry.openedAt + timeout, .request), ordering: .relaxed)
                    continue
                }
                guard !entry.cut.exchange(true, ordering: .relaxed) else { continue }
                Glibc.shutdown(entry.fd, Int32(SHUT_RDWR))
                cut[Int(wait.rawValue)] += 1
            }
        }
        if cut[0] > 0 { cutWaitingFirstByte.add(cut[0], ordering: .relaxed) }
        if cut[1] > 0 { cutWaitingRequest.add(cut[1], ordering: .relaxed) }
        if cut[2] > 0 { cutWaitingAnswer.add(cut[2], ordering: .relaxed) }
        return cut.reduce(0, +)
    }

    /// The entry libmicrohttpd keeps for an open connection. It lives until the
    /// connection's close is reported, which comes after its last request.
    private static func entry(of connection: OpaquePointer) -> Entry? {
        alertd_connection_context(connection).map { Unmanaged<Entry>.fromOpaque($0).takeUnretainedValue() }
    }

    /// How often ``ReadDeadlineSweeper`` sweeps: ten times per shortest timeout, at most once a second.
    var sweepInterval: Duration {
        .nanoseconds(Int64(min(1_000_000_000, max(1_000_000, min(timeout, firstByteTimeout, writeTimeout) / 10))))
    }
}

/// Cuts connections past their read deadline (``ReadDeadlines``), on a loop of
/// its own until the service group shuts down.
public struct ReadDeadlineSweeper: Service {
    let server: HTTPServer

    public init(server: HTTPServer) { self.server = server }

    public func run() async throws {
        let deadlines = server.readDeadlines
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: deadlines.sweepInterval)
                deadlines.sweep()
            }
        }
    }
}
