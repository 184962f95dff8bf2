import CMicroHTTPD
import struct NIOConcurrencyHelpers.NIOLockedValueBox

/// The one-shot answer channel of a request.
///
/// A handler calls ``respond(_:)`` exactly once, on any thread. When it does so
/// before returning, the server queues the answer inline. Otherwise the server
/// suspends the connection (no thread, no task is held while it waits) and the
/// later `respond` resumes it. Both sides decide under one lock, so a response that
/// races with the suspension can never resume a connection that was not suspended.
public final class Responder: Sendable {
    enum State {
        /// The handler is running on the connection's loop.
        case handling
        /// The connection is suspended, waiting for `respond`.
        case suspended
        /// An answer is waiting for the connection's loop to build (if lazy) and queue it.
        case ready(@Sendable () -> HTTPResponse)
        /// The answer was queued.
        case done
    }

    private let state = NIOLockedValueBox(State.handling)
    private let connection: ConnectionHandle?
    /// Where the connection is registered while suspended; nil in process.
    private let registry: SuspendedConnections?

    /// Where work answering this request should run: the loop serving its connection
    /// (nil in process). A task that prefers it starts and ends on the connection's own
    /// thread, without a hop through the cooperative pool.
    public var executor: (any TaskExecutor)? { loop }
    /// The loop serving the connection: told when the connection is resumed.
    let loop: ConnectionLoop?

    /// - Parameters:
    ///   - connection: the MHD connection, or nil for an in-process responder (tests).
    ///   - registry: suspends and resumes the connection, keeping the list of suspended ones.
    ///   - loop: the loop serving the connection.
    init(connection: ConnectionHandle?, registry: SuspendedConnections?, loop: ConnectionLoop? = nil) {
        self.connection = connection
        self.registry = registry
        self.loop = loop
        self.inProcessSink = nil
    }

    private init(sink: @escaping @Sendable (HTTPResponse) -> Void) {
        self.connection = nil
        self.registry = nil
        self.loop = nil
        self.inProcessSink = sink
    }

    /// A responder with no connection behind it, for driving handlers in process.
    /// Its answer is delivered to `onResponse` on the thread that responds.
    public static func inProcess(_ onResponse: @escaping @Sendable (HTTPResponse) -> Void) -> Responder {
        Responder(sink: onResponse)
    }

    private let inProcessSink: (@Sendable (HTTPResponse) -> Void)?

    /// Answers the request. Calls after the first are ignored.
    public func respond(_ response: HTTPResponse) {
        respond { response }
    }

    /// Answers the request with a response built on the connection's own thread
    /// when it is sent: work a waking thread (the store writer) should not do.
    public func respond(building make: @escaping @Sendable () -> HTTPResponse) {
        if let sink = inProcessSink {
            let first = state.withLockedValue { state -> Bool in
                if case .handling = state { state = .done; return true }
                return false
            }
            if first { sink(make()) }
            return
        }
        let resume = state.withLockedValue { state -> Bool in
            switch state {
            case .handling:
                state = .ready(make)
                return false
            case .suspended:
                state = .ready(make)
                return true
            case .ready, .done:
                return false
            }
        }
        if resume, let connection, let registry {
            registry.resume(self, connection)
            loop?.runAgain()
        }
    }

    /// Called on the connection's loop once the handler returned: the answer to queue now,
    /// or nil after suspending the connection.
    func afterHandler() -> HTTPResponse? {
        let make = state.withLockedValue { state -> (@Sendable () -> HTTPResponse)? in
            switch state {
            case .ready(let make):
                state = .done
                return make
            case .handling:
                if let connection, let registry { registry.suspend(self, connection) }
                state = .suspended
                return nil
            case .suspended, .done:
                return nil
            }
        }
        return make?()
    }

    /// Called on the connection's loop when a resumed connection comes back.
    func takeResumedResponse() -> HTTPResponse? {
        let make = state.withLockedValue { state -> (@Sendable () -> HTTPResponse)? in
            if case .ready(let make) = state {
                state = .done
                return make
            }
            return nil
        }
        return make?()
    }
}

/// An MHD connection pointer that crosses threads.
///
/// Guarantee relied on: libmicrohttpd keeps a connection alive until its
/// request-completed callback ran, which cannot happen while it is suspended;
/// the pointer is only passed to `MHD_resume_connection` (thread-safe with
/// ALLOW_SUSPEND_RESUME: it takes the daemon's cleanup mutex) off the connection's
/// loop, which is then told (``ConnectionLoop/runAgain()``): in external
/// mode libmicrohttpd has no wake-up of its own.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The requests whose connection is suspended, and the only place that
/// suspends and resumes connections.
///
/// Each libmicrohttpd call happens under the same lock as the list's update —
/// a connection is listed before it is suspended and unlisted only after it is
/// resumed — so ``isEmpty``, which the server checks before `MHD_stop_daemon`,
/// is never true while a resume is still under way (libmicrohttpd
/// would then stop, or free, a connection being resumed).
final class SuspendedConnections: Sendable {
    private let list = NIOLockedValueBox<[ObjectIdentifier: Responder]>([:])
    private let suspendCall: @Sendable (ConnectionHandle) -> Void
    private let resumeCall: @Sendable (ConnectionHandle) -> Void

    /// The calls default to libmicrohttpd's; tests pass their own.
    init(
        suspend: @escaping @Sendable (ConnectionHandle) -> Void = { MHD_suspend_connection($0.pointer) },
        resume: @escaping @Sendable (ConnectionHandle) -> Void = { MHD_resume_connection($0.pointer) }
    ) {
        suspendCall = suspend
        resumeCall = resume
    }

    var count: Int { list.withLockedValue { $0.count } }
    /// No connection is suspended, nor being resumed (the resume happens under the lock).
    var isEmpty: Bool { count == 0 }
    var all: [Responder] { list.withLockedValue { Array($0.values) } }

    /// On the connection's loop, from inside the access handler.
    func suspend(_ responder: Responder, _ connection: ConnectionHandle) {
        list.withLockedValue { list in
            list[ObjectIdentifier(responder)] = responder
            suspendCall(connection)
        }
    }

    /// From any thread, once the answer is ready.
    func resume(_ responder: Responder, _ connection: ConnectionHandle) {
        list.withLockedValue { list in
            resumeCall(connection)
            list[ObjectIdentifier(responder)] = nil
        }
    }
}
