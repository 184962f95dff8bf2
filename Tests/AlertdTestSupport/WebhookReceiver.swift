// A real HTTP/1.1 server for the daemon's webhook callbacks to land on.
//
// SwiftNIO (ServerBootstrap + the NIOHTTP1 server pipeline, keep-alive and pipelining
// included) on 127.0.0.1 (or another loopback address), over TLS when given a server
// configuration (NIOSSL). Each request is recorded once it has been fully received, then
// answered as scripted: a status at once, a status after a delay (scheduled on the event
// loop, never blocking it), no answer at all, or a closed connection. Tests await the
// requests they expect instead of sleeping.
//
// All receivers share NIO's singleton event loop group, which lives as long as the test
// process; `stop()` closes the listener and every connection, so nothing outlives it.

public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
public import NIOSSL
import NIOConcurrencyHelpers

/// A scripted webhook endpoint for end-to-end tests.
///
/// ```swift
/// let receiver = try await WebhookReceiver.listening()
/// defer { receiver.close() }
/// receiver.script([.status(503, headers: [("Retry-After", "1")]), .close])  // then the standing `.status(204)`
/// let daemon = try await Daemon.start(.init(config: "webhooks:\n  - { client: ops, url: \"\(receiver.url)\" }\n"))
/// let attempts = try await receiver.waitForRequests(count: 3, timeout: 20)
/// #expect(attempts.map { $0.header("webhook-id") } == Array(repeating: attempts[0].header("webhook-id"), count: 3))
/// ```
///
/// "Down for a while, then back": `stop()`, then `restart()` listens again on the same port
/// and keeps what was recorded and scripted; `WebhookReceiver.start(port: old.port)` makes a
/// fresh receiver there instead. The listener sets SO_REUSEADDR, so connections the receiver
/// closed (left in TIME_WAIT) do not keep the port from being bound again.
public final class WebhookReceiver: Sendable {
    /// How the receiver answers one request.
    public enum Behaviour: Sendable {
        /// Answers at once with this status, an empty body and these extra headers.
        case status(Int, headers: [(String, String)] = [])
        /// Answers with this status (no extra headers) after `seconds`.
        case delay(seconds: Double, status: Int)
        /// Never answers; the connection stays open until the client or `stop()` closes it.
        case hang
        /// Closes the connection without answering.
        case close
        /// Answers at once with this status and this body (its `Content-Length` given).
        case body(Int, [UInt8])
        /// Sends this status's head, announcing a body of `length` bytes, and never the body.
        case headThenHang(status: Int, length: Int)
    }

    /// One request, recorded once its body had been fully received.
    public struct Received: Sendable, CustomStringConvertible {
        public let method: String
        /// The request target as sent, query included.
        public let uri: String
        /// `uri` without its query.
        public let path: String
        /// In wire order, names lowercased.
        public let headers: [(String, String)]
        public let body: [UInt8]
        public let receivedAt: ContinuousClock.Instant
        /// `receivedAt` on the wall clock, to compare with timestamps the daemon writes.
        public let receivedAtDate: Date
        /// 1 for the first connection this receiver accepted, 2 for the next… (keep-alive checks).
        public let connection: Int

        /// The first header with this name, compared case-insensitively.
        public func header(_ name: String) -> String? {
            let lowered = name.lowercased()
            return headers.first { $0.0 == lowered }?.1
        }

        /// The body decoded as UTF-8; invalid sequences become U+FFFD.
        public var text: String { String(decoding: body, as: UTF8.self) }

        /// The body as a JSON object; throws when it is anything else.
        public func jsonObject() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                throw WebhookReceiverError(.notJSON, "body is not a JSON object: \(text.prefix(500))", received: [self])
            }
            return object
        }

        public var description: String {
            let id = header("webhook-id").map { " webhook-id=\($0)" } ?? ""
            return "\(method) \(uri)\(id) (\(body.count) bytes, connection \(connection))"
        }
    }

    private struct Waiter {
        let count: Int
        let continuation: CheckedContinuation<[Received], any Error>
        var timeout: Scheduled<Void>?
    }

    private struct State {
        var port = 0
        var listener: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        var connectionsAccepted = 0
        var behaviour = Behaviour.status(204)
        var script: [Behaviour] = []
        var requests: [Received] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())
    /// The address listened on.
    public let host: String
    /// Set for an https receiver.
    private let tls: NIOSSLContext?
    /// Broadcast after every recorded request, for `waitForRequestsBlocking`. The requests
    /// themselves live in `state`; this only wakes sleepers.
    private let doorbell = NSCondition()

    private static var group: MultiThreadedEventLoopGroup { .singleton }

    private init(host: String, tls: NIOSSLContext?) {
        self.host = host
        self.tls = tls
    }

    deinit {
        // Only reached once nothing holds the receiver; close without waiting.
        state.withLockedValue { state in
            state.listener?.close(promise: nil)
            state.connections.values.forEach { $0.close(promise: nil) }
        }
    }

    // MARK: Lifecycle

    /// Listens on `host`:`port` (a loopback address; 0 picks a free port), speaking
    /// HTTPS when given `tls` (a server configuration: certificate chain and key).
    public static func start(port: Int = 0, host: String = "127.0.0.1", tls: TLSConfiguration? = nil) throws -> WebhookReceiver {
        let context: NIOSSLContext?
        do {
            context = try tls.map { try NIOSSLContext(configuration: $0) }
        } catch {
            throw WebhookReceiverError(.bindFailed, "TLS configuration: \(error)", received: [])
        }
        let receiver = WebhookReceiver(host: host, tls: context)
        try receiver.listen(port: port)
        return receiver
    }

    /// `start` for async tests: the same, binding without blocking a thread. (Not an async
    /// overload of `start`: async tests that call the blocking one would then need `await`.)
    public static func listening(port: Int = 0, host: String = "127.0.0.1", tls: TLSConfiguration? = nil) async throws
        -> WebhookReceiver
    {
        let context: NIOSSLContext?
        do {
            context = try tls.map { try NIOSSLContext(configuration: $0) }
        } catch {
            throw WebhookReceiverError(.bindFailed, "TLS configuration: \(error)", received: [])
        }
        let receiver = WebhookReceiver(host: host, tls: context)
        let listener: any Channel
        do {
            listener = try await receiver.bootstrap().bind(host: host, port: port).get()
        } catch {
            throw WebhookReceiverError(.bindFailed, "binding \(host):\(port): \(error)", received: [])
        }
        receiver.adoptListener(listener, port: port)
        return receiver
    }

    /// The port listened on; stays the same across `stop()` and `restart()`.
    public var port: Int { state.withLockedValue { $0.port } }

    /// `http://127.0.0.1:PORT/hook` (`https://…` over TLS). Any path is accepted; this is the one to configure.
    public var url: String { "\(tls == nil ? "http" : "https")://\(host):\(port)/hook" }

    /// Whether the receiver is listening.
    public var isRunning: Bool { state.withLockedValue { $0.listener != nil } }

    /// Closes the listener and every open connection (a `.hang` or `.delay` request ends
    /// unanswered) and returns once all are closed, so the port can be bound again.
    /// Recorded requests, the script and pending waiters stay. Idempotent.
    public func stop() {
        let (listener, connections) = state.withLockedValue { state in
            defer {
                state.listener = nil
                state.connections = [:]
            }
            return (state.listener, Array(state.connections.values))
        }
        guard let listener else { return }
        let closed = ([listener] + connections).map { channel in
            channel.close(promise: nil)
            return channel.closeFuture
        }
        try? EventLoopFuture.andAllComplete(closed, on: Self.group.any()).wait()
    }

    /// `restart()` for async tests, binding without blocking a thread.
    public func relisten() async throws {
        guard !isRunning else {
            throw WebhookReceiverError(.alreadyRunning, "relisten() on a receiver that is listening on \(port)", received: [])
        }
        let port = port
        do {
            adoptListener(try await bootstrap().bind(host: host, port: port).get(), port: port)
        } catch {
            throw WebhookReceiverError(.bindFailed, "binding \(host):\(port): \(error)", received: [])
        }
    }

    /// `stop()` without waiting for the sockets to close: for the end of an async test.
    public func close() {
        let (listener, connections) = state.withLockedValue { state in
            defer {
                state.listener = nil
                state.connections = [:]
            }
            return (state.listener, Array(state.connections.values))
        }
        for channel in [listener].compactMap({ $0 }) + connections { channel.close(promise: nil) }
    }

    /// Listens again on the same port after `stop()`, keeping records, script and waiters.
    public func restart() throws {
        guard !isRunning else {
            throw WebhookReceiverError(.alreadyRunning, "restart() on a receiver that is listening on \(port)", received: [])
        }
        try listen(port: port)
    }

    // MARK: Behaviour

    /// Sets the standing behaviour, used whenever the script is empty (initially `.status(204)`).
    public func behave(_ behaviour: Behaviour) {
        state.withLockedValue { $0.behaviour = behaviour }
    }

    /// Replaces the script: one behaviour per request, in order, before the standing one again.
    public func script(_ behaviours: [Behaviour]) {
        state.withLockedValue { $0.script = behaviours }
    }

    // MARK: Records

    /// Every request recorded so far, in arrival order.
    public var requests: [Received] { state.withLockedValue { $0.requests } }

    /// TCP connections accepted so far, over all listening periods.
    public var connectionsAccepted: Int { state.withLockedValue { $0.connectionsAccepted } }

    /// `waitForRequests` calls currently suspended (for the receiver's own tests).
    public var pendingWaiters: Int { state.withLockedValue { $0.waiters.count } }

    /// Returns the requests recorded so far as soon as there are at least `count` of them.
    ///
    /// Resumed by the connection that records the `count`-th request; throws
    /// `WebhookReceiverError` (`.timedOut`, carrying what did arrive) after `timeout` seconds,
    /// and `CancellationError` when the task is cancelled.
    public func waitForRequests(count: Int, timeout: Double) async throws -> [Received] {
        let id = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Received], any Error>) in
                let ready: [Received]? = state.withLockedValue { state in
                    if state.requests.count >= count { return state.requests }
                    state.waiters[id] = Waiter(count: count, continuation: continuation)
                    return nil
                }
                if let ready { return continuation.resume(returning: ready) }
                let timer = Self.group.any().scheduleTask(in: .nanoseconds(Int64(max(timeout, 0) * 1e9))) {
                    self.expire(id, count: count, timeout: timeout)
                }
                let kept = state.withLockedValue { state in
                    state.waiters[id]?.timeout = timer
                    return state.waiters[id] != nil
                }
                if !kept { timer.cancel() }
                if Task.isCancelled { cancelWaiter(id) }
            }
        } onCancel: {
            cancelWaiter(id)
        }
    }

    /// `waitForRequests` for synchronous tests: blocks the calling thread on a condition
    /// that every recorded request signals.
    public func waitForRequestsBlocking(count: Int, timeout: Double) throws -> [Received] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        doorbell.lock()
        defer { doorbell.unlock() }
        while true {
            // Read under the doorbell's lock: a request recorded after this read rings only
            // once `wait` has released it, so no wake-up is lost.
            let received = requests
            if received.count >= count { return received }
            if !doorbell.wait(until: deadline) {
                let received = requests
                if received.count >= count { return received }
                throw Self.timedOut(count: count, timeout: timeout, received: received)
            }
        }
    }

    // MARK: Internals

    private func listen(port: Int) throws {
        let listener: any Channel
        do {
            listener = try bootstrap().bind(host: host, port: port).wait()
        } catch {
            throw WebhookReceiverError(.bindFailed, "binding \(host):\(port): \(error)", received: [])
        }
        adoptListener(listener, port: port)
    }

    private func adoptListener(_ listener: any Channel, port: Int) {
        state.withLockedValue { state in
            state.listener = listener
            state.port = listener.localAddress?.port ?? port
        }
    }

    private func bootstrap() -> ServerBootstrap {
        ServerBootstrap(group: Self.group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [weak self] channel in
                guard let self, let connection = self.adopt(channel) else {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    if let tls = self.tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(ReceiverHandler(receiver: self, connection: connection))
                }
            }
    }

    /// Registers a new connection; nil when the receiver has stopped meanwhile.
    private func adopt(_ channel: any Channel) -> Int? {
        let key = ObjectIdentifier(channel)
        let connection: Int? = state.withLockedValue { state in
            guard state.listener != nil else { return nil }
            state.connections[key] = channel
            state.connectionsAccepted += 1
            return state.connectionsAccepted
        }
        guard connection != nil else { return nil }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.state.withLockedValue { _ = $0.connections.removeValue(forKey: key) }
        }
        return connection
    }

    /// Records `request`, wakes whoever waits for it and returns how to answer it.
    fileprivate func record(_ request: Received) -> Behaviour {
        let (behaviour, satisfied) = state.withLockedValue { state in
            state.requests.append(request)
            let behaviour = state.script.isEmpty ? state.behaviour : state.script.removeFirst()
            let ids = state.waiters.filter { $0.value.count <= state.requests.count }.keys
            let satisfied = ids.compactMap { state.waiters.removeValue(forKey: $0) }
            return (behaviour, satisfied.map { ($0, state.requests) })
        }
        for (waiter, requests) in satisfied {
            waiter.timeout?.cancel()
            waiter.continuation.resume(returning: requests)
        }
        doorbell.lock()
        doorbell.broadcast()
        doorbell.unlock()
        return behaviour
    }

    private func expire(_ id: UInt64, count: Int, timeout: Double) {
        let expired = state.withLockedValue { state in
            state.waiters.removeValue(forKey: id).map { ($0, state.requests) }
        }
        guard let (waiter, received) = expired else { return }
        waiter.continuation.resume(throwing: Self.timedOut(count: count, timeout: timeout, received: received))
    }

    private func cancelWaiter(_ id: UInt64) {
        guard let waiter = state.withLockedValue({ $0.waiters.removeValue(forKey: id) }) else { return }
        waiter.timeout?.cancel()
        waiter.continuation.resume(throwing: CancellationError())
    }

    private static func timedOut(count: Int, timeout: Double, received: [Received]) -> WebhookReceiverError {
        let listed = received.isEmpty ? "" : ": " + received.map(\.description).joined(separator: "; ")
        return WebhookReceiverError(
            .timedOut, "waited \(timeout) s for \(count) requests, \(received.count) arrived\(listed)", received: received)
    }
}

/// What went wrong with a `WebhookReceiver`. Compare `code`; `detail` is for humans.
public struct WebhookReceiverError: Error, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Fewer requests than awaited arrived in time; `received` holds those that did.
        public static let timedOut = Code("timed-out")
        /// The port could not be bound (in use, or not a valid port).
        public static let bindFailed = Code("bind-failed")
        /// `restart()` while still listening.
        public static let alreadyRunning = Code("already-running")
        /// `Received.jsonObject()` on a body that is not a JSON object.
        public static let notJSON = Code("not-json")
    }

    public let code: Code
    public let detail: String
    /// The requests recorded when the error was thrown.
    public let received: [WebhookReceiver.Received]

    init(_ code: Code, _ detail: String, received: [WebhookReceiver.Received]) {
        self.code = code
        self.detail = detail
        self.received = received
    }

    public var description: String { "WebhookReceiverError(\(code)): \(detail)" }
}

/// One connection's handler, after the HTTP/1.1 server pipeline: gathers each request,
/// records it and answers as the receiver says. Pipelining is handled upstream, so at
/// most one request per connection is being answered at a time.
private final class ReceiverHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    // Weak: a `.hang` connection must not keep a receiver nobody references alive.
    private weak var receiver: WebhookReceiver?
    private let connection: Int
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    private var delayedAnswer: Scheduled<Void>?

    init(receiver: WebhookReceiver, connection: Int) {
        self.receiver = receiver
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch Self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            guard let head, let receiver else {
                context.close(promise: nil)
                return
            }
            self.head = nil
            let now = (ContinuousClock.now, Date())
            let request = WebhookReceiver.Received(
                method: head.method.rawValue,
                uri: head.uri,
                path: String(head.uri.prefix { $0 != "?" }),
                headers: head.headers.map { ($0.name.lowercased(), $0.value) },
                body: Array(body.readableBytesView),
                receivedAt: now.0,
                receivedAtDate: now.1,
                connection: connection)
            body.clear()
            answer(receiver.record(request), to: head, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        delayedAnswer?.cancel()
        delayedAnswer = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func answer(_ behaviour: WebhookReceiver.Behaviour, to head: HTTPRequestHead, context: ChannelHandlerContext) {
        switch behaviour {
        case .status(let status, let headers):
            respond(status, headers: headers, to: head, context: context)
        case .delay(let seconds, let status):
            let delay = TimeAmount.nanoseconds(Int64(max(seconds, 0) * 1e9))
            delayedAnswer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
                self.delayedAnswer = nil
                self.respond(status, headers: [], to: head, context: context)
            }
        case .hang:
            break
        case .close:
            context.close(promise: nil)
        case .body(let status, let bytes):
            respond(status, headers: [("content-length", String(bytes.count))], body: bytes, to: head, context: context)
        case .headThenHang(let status, let length):
            let response = HTTPResponseHead(
                version: head.version, status: .init(statusCode: status), headers: ["content-length": String(length)])
            context.writeAndFlush(Self.wrapOutboundOut(.head(response)), promise: nil)
        }
    }

    private func respond(
        _ status: Int, headers extra: [(String, String)], body: [UInt8] = [], to head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        var headers = HTTPHeaders(extra)
        // RFC 9110 §8.6: no Content-Length on 1xx or 204 (304 would describe the resource).
        let bodyless = (100..<200).contains(status) || status == 204 || status == 304
        if !bodyless && !headers.contains(name: "content-length") {
            headers.add(name: "content-length", value: "0")
        }
        if !head.isKeepAlive {
            headers.replaceOrAdd(name: "connection", value: "close")
        }
        let response = HTTPResponseHead(version: head.version, status: .init(statusCode: status), headers: headers)
        context.write(Self.wrapOutboundOut(.head(response)), promise: nil)
        if !body.isEmpty { context.write(Self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        let written = context.writeAndFlush(Self.wrapOutboundOut(.end(nil)))
        if !head.isKeepAlive {
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
