import CMicroHTTPD
import Glibc
import struct NIOConcurrencyHelpers.NIOLockedValueBox

/// The thread that serves one libmicrohttpd daemon, and the task executor of the
/// requests it reads.
///
/// libmicrohttpd runs in external mode with epoll: this loop sleeps in `poll(2)` on
/// the daemon's epoll descriptor and on an eventfd of its own, runs `MHD_run` (never
/// blocking: libmicrohttpd's own blocking epoll loop can stall with exactly 128 events
/// ready, FIELD-NOTES), then the jobs enqueued on it. A request's task prefers this
/// executor, so a POST goes loop → store writer → loop, as the C floor's does (MHD
/// thread → writer → MHD thread), instead of hopping through the cooperative pool on
/// its way out and back (0.9 context switches a post, issue 46).
///
/// Jobs run only between `MHD_run` calls, never inside an access-handler call, so no
/// job can answer a request on its first call (which costs keep-alive in 0.9.75).
/// Once stopped, a job enqueued here runs on the global concurrent executor.
final class ConnectionLoop: TaskExecutor, Sendable {
    private struct Queue {
        var jobs: [UnownedJob] = []
        /// The loop is about to sleep, or sleeps, in `poll`: an enqueue must wake it.
        var sleeping = false
        /// libmicrohttpd has work it does not signal through its epoll descriptor (a
        /// connection resumed, one closed) since the last `MHD_run` began: run it again
        /// before sleeping (in external mode libmicrohttpd has no wake-up of its own).
        var runAgain = false
        var stopping = false
        /// The thread has returned: jobs go to the global executor.
        var stopped = false
    }

    private let queue = NIOLockedValueBox(Queue())
    private let wakeFD: Int32
    private let epollFD: Int32
    private let daemon: DaemonPointer
    private let thread = NIOLockedValueBox<pthread_t?>(nil)
    let name: String

    /// The loop running on this thread, if any.
    static var current: ConnectionLoop? {
        guard let raw = pthread_getspecific(currentLoopKey) else { return nil }
        return Unmanaged<ConnectionLoop>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Whether the calling thread is this loop's.
    var isCurrent: Bool { Self.current === self }

    init(daemon: OpaquePointer, name: String) throws {
        let epollFD = alertd_daemon_epoll_fd(daemon)
        guard epollFD >= 0 else { throw HTTPServerError(description: "libmicrohttpd gave no epoll descriptor") }
        let wakeFD = alertd_eventfd()
        guard wakeFD >= 0 else { throw HTTPServerError(description: "eventfd: \(String(cString: strerror(errno)))") }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        self.daemon = DaemonPointer(pointer: daemon)
        self.name = name
    }

    deinit { close(wakeFD) }

    /// Starts the thread, with SIGTERM, SIGINT and SIGHUP blocked (the daemon's signal
    /// handling owns them).
    func start() throws {
        var blocked = sigset_t()
        var previous = sigset_t()
        sigemptyset(&blocked)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&blocked, signal) }
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var handle = pthread_t()
        let retained = Unmanaged.passRetained(self)
        let status = pthread_create(
            &handle, nil,
            { raw in
                let loop = Unmanaged<ConnectionLoop>.fromOpaque(raw!).takeRetainedValue()
                loop.run()
                return nil
            }, retained.toOpaque())
        guard status == 0 else {
            retained.release()
            throw HTTPServerError(description: "pthread_create: \(String(cString: strerror(status)))")
        }
        thread.withLockedValue { $0 = handle }
    }

    /// Stops the loop and joins its thread (not from the loop itself). Jobs still queued,
    /// and any enqueued later, run on the global concurrent executor.
    func stop() {
        queue.withLockedValue { $0.stopping = true }
        signal()
        if let handle = thread.withLockedValue({ $0.take() }) { pthread_join(handle, nil) }
        let left = queue.withLockedValue { queue -> [UnownedJob] in
            queue.stopped = true
            defer { queue.jobs = [] }
            return queue.jobs
        }
        for job in left { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        enum Then { case none, wake, forward }
        let then = queue.withLockedValue { queue -> Then in
            if queue.stopped { return .forward }
            queue.jobs.append(job)
            guard queue.sleeping else { return .none }
            queue.sleeping = false
            return .wake
        }
        switch then {
        case .none: break
        case .wake: signal()
        case .forward: globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    /// Tells the loop that libmicrohttpd has work it will not signal: a connection of its
    /// daemon was resumed (`MHD_resume_connection`, from any thread), or one closed (its
    /// daemon may have taken the listening socket out of its epoll set at the connection
    /// limit, and puts it back only at the start of an `MHD_run`). The loop runs
    /// libmicrohttpd again before it sleeps.
    func runAgain() {
        let wake = queue.withLockedValue { queue -> Bool in
            queue.runAgain = true
            guard queue.sleeping else { return false }
            queue.sleeping = false
            return true
        }
        if wake { signal() }
    }

    /// Runs `body` on the loop's thread and returns its result; nil, without running it,
    /// once the loop has stopped (its daemon is stopped or being stopped): for
    /// libmicrohttpd calls that are not thread-safe in external mode (adding a connection,
    /// quiescing).
    func perform<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        await withCheckedContinuation { continuation in
            Task(executorPreference: self) { continuation.resume(returning: self.isCurrent ? body() : nil) }
        }
    }

    private func signal() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func run() {
        pthread_setspecific(currentLoopKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(currentLoopKey, nil) }
        alertd_name_thread(name)
        var fds = [pollfd(fd: epollFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        let executor = asUnownedTaskExecutor()
        while true {
            queue.withLockedValue { $0.runAgain = false }
            _ = MHD_run(daemon.pointer)
            // The jobs the handlers just made (requests' tasks), and the ones that woke us.
            let jobs = queue.withLockedValue { queue -> [UnownedJob] in
                defer { queue.jobs.removeAll(keepingCapacity: true) }
                return queue.jobs
            }
            for job in jobs { job.runSynchronously(on: executor) }
            let timeout = alertd_daemon_timeout(daemon.pointer)
            let sleep = queue.withLockedValue { queue -> Int32? in
                if queue.stopping { return nil }
                if !queue.jobs.isEmpty || queue.runAgain { return 0 }
                if timeout != 0 { queue.sleeping = true }
                return timeout
            }
            guard let sleep else { return }
            if sleep != 0 {
                fds[0].revents = 0
                fds[1].revents = 0
                _ = poll(&fds, 2, sleep)
                queue.withLockedValue { $0.sleeping = false }
                if fds[1].revents != 0 {
                    var count: UInt64 = 0
                    _ = read(wakeFD, &count, 8)
                }
            }
        }
    }
}

/// An MHD daemon pointer that crosses threads; libmicrohttpd is only called with it
/// on its loop's thread, or once the loop has stopped.
struct DaemonPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The thread-specific slot holding the loop of the thread it runs on.
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
    return key
}()
