import CMicroHTTPD
import Dispatch
import Glibc
import struct NIOConcurrencyHelpers.NIOLockedValueBox
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

        init(fd: Int32, deadline: UInt64) {
            self.fd = fd
            self.deadline = Atomic(deadline)
        }
    }

    private let timeout: UInt64
    private let entries = NIOLockedValueBox<[ObjectIdentifier: Entry]>([:])
    /// Dispatch sources are thread-safe (resume, cancel, handlers), though not marked Sendable.
    private nonisolated(unsafe) let timer: any DispatchSourceTimer
    private let started = Atomic<Bool>(false)
    /// Connections cut for being too slow, since start.
    private let cutCount = Atomic<Int>(0)

    init(timeout seconds: Double) {
        timeout = UInt64(max(0.05, seconds) * 1e9)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "alertd.read-deadlines"))
    }

    var connectionsCut: Int { cutCount.load(ordering: .relaxed) }

    /// A connection opened: its entry is kept in `context` (libmicrohttpd's socket context).
    func opened(fd: Int32, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard fd >= 0 else { return }
        let entry = Entry(fd: fd, deadline: DispatchTime.now().uptimeNanoseconds + timeout)
        entries.withLockedValue { $0[ObjectIdentifier(entry)] = entry }
        context.pointee = Unmanaged.passRetained(entry).toOpaque()
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
        _ = entries.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(entry)) }
    }

    /// Shuts down every connection past its deadline; returns how many.
    @discardableResult
    func sweep(now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int {
        let cut = entries.withLockedValue { entries -> Int in
            var cut = 0
            for entry in entries.values where entry.deadline.load(ordering: .relaxed) <= now {
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

    /// Sweeps on a timer: ten times per timeout, at most once a second.
    func start() {
        let milliseconds = max(1, Int(min(1_000_000_000, timeout / 10) / 1_000_000))
        timer.schedule(deadline: .now() + .milliseconds(milliseconds), repeating: .milliseconds(milliseconds))
        timer.setEventHandler { [weak self] in self?.sweep() }
        started.store(true, ordering: .relaxed)
        timer.resume()
    }

    func stop() {
        timer.cancel()
    }

    deinit {
        // libdispatch traps on releasing a source that was never resumed.
        if !started.load(ordering: .relaxed) { timer.resume() }
        timer.cancel()
    }
}
