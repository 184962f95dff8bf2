import CMicroHTTPD
import Dispatch
import Glibc
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
/// the socket, and both that report and the sweep hold `entries`' lock, so the
/// sweep never shuts down a descriptor that belongs to a newer connection.
final class ReadDeadlines: Sendable {
    private struct Entry {
        var fd: Int32
        /// nil while the daemon, not the client, has the next move.
        var deadline: ContinuousClock.Instant?
        var cut = false
    }

    private let timeout: Duration
    private let entries = Mutex<[UInt: Entry]>([:])
    /// Dispatch sources are thread-safe (resume, cancel, handlers), though not marked Sendable.
    private nonisolated(unsafe) let timer: any DispatchSourceTimer
    private let started = Atomic<Bool>(false)
    /// Connections cut for being too slow, since start.
    private let cutCount = Atomic<Int>(0)

    init(timeout seconds: Double) {
        timeout = .milliseconds(Int64(max(0.05, seconds) * 1000))
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "alertd.read-deadlines"))
    }

    var connectionsCut: Int { cutCount.load(ordering: .relaxed) }

    func opened(_ connection: OpaquePointer, fd: Int32) {
        guard fd >= 0 else { return }
        let deadline = ContinuousClock.now + timeout
        entries.withLock { $0[Self.key(connection)] = Entry(fd: fd, deadline: deadline) }
    }

    /// The request is complete: the daemon has the next move.
    func requestRead(_ connection: OpaquePointer) {
        entries.withLock { $0[Self.key(connection)]?.deadline = nil }
    }

    /// The answer went out: the client has `timeout` to send the next request.
    func answered(_ connection: OpaquePointer) {
        let deadline = ContinuousClock.now + timeout
        entries.withLock { $0[Self.key(connection)]?.deadline = deadline }
    }

    func closed(_ connection: OpaquePointer) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(connection)) }
    }

    /// Shuts down every connection past its deadline; returns how many.
    @discardableResult
    func sweep(now: ContinuousClock.Instant = .now) -> Int {
        let cut = entries.withLock { entries -> Int in
            var cut = 0
            for (key, entry) in entries where !entry.cut {
                guard let deadline = entry.deadline, deadline <= now else { continue }
                Glibc.shutdown(entry.fd, Int32(SHUT_RDWR))
                entries[key]?.cut = true
                cut += 1
            }
            return cut
        }
        if cut > 0 { cutCount.add(cut, ordering: .relaxed) }
        return cut
    }

    /// Sweeps on a timer: ten times per timeout, at most once a second.
    func start() {
        let milliseconds = max(1, Int(min(Duration.seconds(1), timeout / 10) / .milliseconds(1)))
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

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }
}
