import CMicroHTTPD
import Dispatch
import Glibc
import struct NIOConcurrencyHelpers.NIOLockedValueBox
public import ServiceLifecycle
import Synchronization

/// The read timeout of every open connection: a whole request must arrive within
/// `timeout` of the connection opening or of its previous answer.
///
/// libmicrohttpd 0.9.75 only has an idle timeout, which every trickled byte
/// resets, so a client sending one header byte a minute holds a connection
/// forever (slowloris). Here each connection has a deadline while the daemon
/// waits for the client; a sweeper shuts the socket down (`shutdown(2)`, which
/// leaves the descriptor to libmicrohttpd) once it passes, and libmicrohttpd
/// then closes the connection as if the client had hung up. While a request is
/// being answered, or parked in a long-poll, the connection has no deadline.
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
    /// One open connection.
    final class Entry: Sendable {
        let fd: Int32
        /// Uptime nanoseconds (`DispatchTime`); `.max` while the daemon, not the client, has the next move.
        let deadline: Atomic<UInt64>
        let cut = Atomic<Bool>(false)
        /// The client's address (its bytes), when connections are counted per address.
        let address: [UInt8]?
        /// It opened while its address already held the limit.
        let overLimit: Bool
        /// A client's request arrived on it: it holds one of `max_connections`' slots.
        let holdsClientSlot = Atomic<Bool>(false)

        init(fd: Int32, deadline: UInt64, address: [UInt8]? = nil, overLimit: Bool = false) {
            self.fd = fd
            self.deadline = Atomic(deadline)
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
    /// Connections one client address may hold open; nil: no limit.
    private let perAddressLimit: Int?
    private let registry = NIOLockedValueBox(Registry())
    /// Connections cut for being too slow, since start.
    private let cutCount = Atomic<Int>(0)
    /// Open connections that have carried a client's request (not the watchdog's probe).
    private let clientSlots = Atomic<Int>(0)

    init(timeout seconds: Double, perAddressLimit: Int? = nil) {
        timeout = UInt64(max(0.05, seconds) * 1e9)
        self.perAddressLimit = perAddressLimit
    }

    var connectionsCut: Int { cutCount.load(ordering: .relaxed) }

    /// A connection opened: its entry is kept in `context` (libmicrohttpd's socket context).
    func opened(fd: Int32, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard fd >= 0 else { return }
        let deadline = DispatchTime.now().uptimeNanoseconds + timeout
        let address = perAddressLimit == nil ? nil : Self.peerAddress(of: fd)
        let entry = registry.withLockedValue { registry -> Entry in
            var overLimit = false
            if let limit = perAddressLimit, let address {
                let open = registry.perAddress[address, default: 0] + 1
                registry.perAddress[address] = open
                overLimit = open > limit
            }
            let entry = Entry(fd: fd, deadline: deadline, address: address, overLimit: overLimit)
            registry.entries[ObjectIdentifier(entry)] = entry
            return entry
        }
        context.pointee = Unmanaged.passRetained(entry).toOpaque()
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
    /// by libmicrohttpd's own limit and cut by the read timeout.
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

    /// The answer went out: the client has `timeout` to send the next request.
    func answered(_ connection: OpaquePointer) {
        Self.entry(of: connection)?.deadline.store(DispatchTime.now().uptimeNanoseconds + timeout, ordering: .relaxed)
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
    @discardableResult
    func sweep(now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int {
        let cut = registry.withLockedValue { registry -> Int in
            var cut = 0
            for entry in registry.entries.values where entry.deadline.load(ordering: .relaxed) <= now {
                guard !entry.cut.exchange(true, ordering: .relaxed) else { continue }
                Glibc.shutdown(entry.fd, Int32(SHUT_RDWR))
                cut += 1
            }
            return cut
        }
        if cut > 0 { cutCount.add(cut, ordering: .relaxed) }
        return cut
    }

    /// The entry libmicrohttpd keeps for an open connection. It lives until the
    /// connection's close is reported, which comes after its last request.
    private static func entry(of connection: OpaquePointer) -> Entry? {
        alertd_connection_context(connection).map { Unmanaged<Entry>.fromOpaque($0).takeUnretainedValue() }
    }

    /// How often ``ReadDeadlineSweeper`` sweeps: ten times per timeout, at most once a second.
    var sweepInterval: Duration { .nanoseconds(Int64(min(1_000_000_000, max(1_000_000, timeout / 10)))) }
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
