import AlertdCore
import AlertdDelivery
import AlertdStore
import AlertdWire
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Delivers callback events (§5): takes due deliveries, POSTs each signed
/// event over one shared `HTTPClient`, records every attempt through the group
/// committer and schedules the retries.
///
/// - Deliveries arrive from two places: the store's pending ones at start
///   (``start(restoring:)``), and new events once their transaction committed
///   (``enqueue(_:)``). Nothing uncommitted is ever sent.
/// - Each target (origin of its URL) has at most `maxInFlightPerTarget`
///   attempts in flight (``DeliveryQueue``), so a slow or dead receiver holds
///   its own slots and no one else's.
/// - Before each attempt the host is resolved and checked against
///   `callbacks.deny`. Plain-http attempts then connect to the checked address
///   (the URL is rewritten to it, `Host` keeps the name), so a name that
///   re-resolves elsewhere cannot slip past. https attempts connect by name:
///   the certificate must match the name, so a re-resolved name reaches
///   nothing it could talk to.
/// - Redirects are not followed: the receiver's answer is the outcome.
/// - Each attempt is signed at its own time with the event's one `webhook-id`.
///
/// Threads: one scheduling thread sleeps until the next due delivery or a
/// new one; attempts run on the HTTP client's event loops.
public final class DeliveryWorker: @unchecked Sendable {
    public struct Settings: Sendable {
        /// Seconds one attempt may take, connecting included.
        public var timeout: Double
        public var policy: RetryPolicy
        public var deny: DenyList
        /// Attempts in flight to one receiver at most.
        public var maxInFlightPerTarget: Int
        /// How long ``shutdown()`` lets attempts in flight finish, in seconds.
        public var shutdownGrace: Double
        /// How names are resolved: the system resolver, or a test's.
        public var lookUp: HostLookup

        public init(
            timeout: Double, policy: RetryPolicy, deny: DenyList, maxInFlightPerTarget: Int = 32, shutdownGrace: Double = 5,
            lookUp: @escaping HostLookup = HostResolver.addresses(of:port:)
        ) {
            self.timeout = timeout
            self.policy = policy
            self.deny = deny
            self.maxInFlightPerTarget = maxInFlightPerTarget
            self.shutdownGrace = shutdownGrace
            self.lookUp = lookUp
        }
    }

    // Guarded by `condition`.
    private var queue: DeliveryQueue
    private var stopping = false
    private var running = false
    /// When the scheduling thread wakes up next; nil while it is awake.
    private var sleepingUntil: Timestamp?
    private let condition = NSCondition()
    private let loopFinished = DispatchSemaphore(value: 0)

    private let client: HTTPClient
    private let resolver: CachingResolver
    private let keys = Mutex<[String: WebhookKey]>([:])
    /// Targets parsed and checked by name; see `check(_:)`.
    private let targets = Mutex<[String: CheckedTarget]>([:])
    private let committer: GroupCommitter
    private let clock: any WallClock
    private let settings: Settings
    private let logger: Logger
    private static let userAgent = "alertd"

    /// Told of every recorded attempt with its delivery (for metrics).
    private let observe: @Sendable (AttemptRecord, PendingDelivery) -> Void

    public init(
        settings: Settings, committer: GroupCommitter, clock: any WallClock, logger: Logger,
        observe: @escaping @Sendable (AttemptRecord, PendingDelivery) -> Void = { _, _ in }
    ) {
        self.observe = observe
        self.settings = settings
        self.committer = committer
        self.clock = clock
        self.logger = logger
        queue = DeliveryQueue(maxInFlightPerTarget: settings.maxInFlightPerTarget)
        resolver = CachingResolver(lookUp: settings.lookUp)
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .milliseconds(Int64(settings.timeout * 1000))),
            connectionPool: .init(idleTimeout: .seconds(60)),
            ignoreUncleanSSLShutdown: false,
            decompression: .disabled)
        // One pool per address the client connects to. Its default of 8
        // connections would cap a busy receiver below the in-flight bound, and
        // several receivers (names) may share one address (a reverse proxy):
        // room for a few of them, so none waits for another's connections.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = settings.maxInFlightPerTarget * 4
        // A refused connection ends the attempt (and is retried on alertd's
        // schedule), instead of being retried inside the pool until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.httpVersion = .http1Only
        // No distributed tracing of callback requests: a span per attempt costs
        // time at thousands of deliveries a second and nobody collects them.
        configuration.tracing.tracer = nil
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Starts the scheduling thread with the deliveries the store holds as pending.
    public func start(restoring pending: [PendingDelivery]) {
        condition.lock()
        for delivery in pending { queue.add(delivery) }
        running = true
        condition.unlock()
        if !pending.isEmpty { logger.info("resuming deliveries", metadata: ["pending": "\(pending.count)"]) }
        let thread = Thread { [self] in run() }
        thread.name = "alertd-deliveries"
        thread.start()
    }

    /// Hands over the deliveries of events that are committed.
    public func enqueue(_ deliveries: [PendingDelivery]) {
        guard !deliveries.isEmpty else { return }
        condition.lock()
        if !stopping {
            for delivery in deliveries { queue.add(delivery) }
            wakeIfSooner()
        }
        condition.unlock()
    }

    /// Deliveries waiting and attempts in flight.
    public var counts: (waiting: Int, inFlight: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (queue.waitingCount, queue.inFlightCount)
    }

    /// Stops taking deliveries, lets attempts in flight finish (for at most the
    /// grace period; the rest are cut off and stay pending), then closes the
    /// HTTP client. Call before the committer shuts down: finished attempts are
    /// recorded through it. Every delivery not delivered stays pending in the
    /// store and resumes at the next start.
    public func shutdown() {
        condition.lock()
        let wasRunning = running
        stopping = true
        condition.broadcast()
        condition.unlock()
        if wasRunning { loopFinished.wait() }
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: settings.shutdownGrace)
        while queue.inFlightCount > 0 && condition.wait(until: deadline) {}
        let cut = queue.inFlightCount
        condition.unlock()
        if cut > 0 { logger.notice("attempts cut off by shutdown; they stay pending", metadata: ["attempts": "\(cut)"]) }
        do {
            try client.syncShutdown()
        } catch {
            logger.warning("HTTP client shutdown", metadata: ["error": "\(error)"])
        }
        resolver.shutdown()
    }

    // MARK: - Scheduling

    private func run() {
        condition.lock()
        while !stopping {
            let now = clock.now()
            let due = queue.takeDue(now: now)
            if due.isEmpty {
                let next = queue.nextDue
                let seconds = next.map { Double(max(0, $0.milliseconds - now.milliseconds)) / 1000 } ?? 60
                // At most a minute: a wall-clock jump is caught up with.
                sleepingUntil = next ?? now.adding(seconds: 60)
                _ = condition.wait(until: Date(timeIntervalSinceNow: min(seconds, 60)))
                sleepingUntil = nil
                continue
            }
            condition.unlock()
            for delivery in due { attempt(delivery, on: client.eventLoopGroup.next()) }
            condition.lock()
        }
        running = false
        condition.unlock()
        loopFinished.signal()
    }

    /// Wakes the scheduling thread if it sleeps past what is due now. Under the lock.
    private func wakeIfSooner() {
        guard let sleepingUntil, let next = queue.nextDue, next < sleepingUntil else { return }
        self.sleepingUntil = nil
        condition.signal()
    }

    // MARK: - One attempt

    private func attempt(_ delivery: PendingDelivery, on eventLoop: any EventLoop) {
        let startedAt = clock.now()
        // The attempt's deadline covers resolving the name and connecting too.
        let deadline = NIODeadline.now() + .milliseconds(Int64(settings.timeout * 1000))
        let checked = check(delivery.target)
        guard let url = checked.url else {
            return settle(delivery, .failed(reason: "not an http or https URL"), at: startedAt, on: nil)
        }
        // A denied name (or address literal) is refused before anyone is asked to resolve it.
        if let refusal = checked.refusal {
            return settle(delivery, .failed(reason: "refused: " + refusal), at: startedAt, on: nil)
        }
        resolve(url, on: eventLoop, deadline: deadline).flatMap { [self] addresses -> EventLoopFuture<AttemptOutcome> in
            // A literal was checked with its address above; a name's addresses are checked now, every time.
            if url.address == nil, let refusal = settings.deny.refuses(host: url.host, addresses: addresses) {
                return eventLoop.makeSucceededFuture(.failed(reason: "refused: " + refusal))
            }
            return send(delivery, to: url, addresses: addresses[...], at: startedAt, deadline: deadline, on: eventLoop)
        }.whenComplete { [self] result in
            switch result {
            case .success(let outcome): settle(delivery, outcome, at: startedAt, on: eventLoop)
            case .failure(let error as HTTPClientError) where error == .deadlineExceeded:
                settle(delivery, .timedOut, at: startedAt, on: eventLoop)
            case .failure(let error): settle(delivery, .failed(reason: Self.describe(error)), at: startedAt, on: eventLoop)
            }
        }
    }

    /// The addresses of the URL's host: the literal itself, or the resolver's
    /// answer (one lookup per name at a time, answers kept for a second).
    private func resolve(_ url: TargetURL, on eventLoop: any EventLoop, deadline: NIODeadline) -> EventLoopFuture<[IPAddress]> {
        if let literal = url.address { return eventLoop.makeSucceededFuture([literal]) }
        let answer = resolver.addresses(of: url.host, port: url.port, on: eventLoop)
        // A name server that does not answer ends the attempt at its deadline.
        let promise = eventLoop.makePromise(of: [IPAddress].self)
        let timeout = eventLoop.scheduleTask(deadline: deadline) { promise.fail(HTTPClientError.deadlineExceeded) }
        answer.whenComplete { result in
            timeout.cancel()
            promise.completeWith(result)
        }
        return promise.futureResult
    }

    /// Sends to the first address; when a connection cannot be made, to the
    /// next one (a name with IPv6 and IPv4 addresses and a receiver on one of
    /// them), within the attempt's deadline.
    private func send(
        _ delivery: PendingDelivery, to url: TargetURL, addresses: ArraySlice<IPAddress>, at startedAt: Timestamp,
        deadline: NIODeadline, on eventLoop: any EventLoop
    ) -> EventLoopFuture<AttemptOutcome> {
        let key: WebhookKey
        do {
            key = try signingKey(delivery.secret)
        } catch {
            return eventLoop.makeSucceededFuture(.failed(reason: "bad signing secret: \(error)"))
        }
        let timestamp = startedAt.milliseconds / 1000
        var headers = HTTPHeaders()
        headers.reserveCapacity(7)
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "user-agent", value: Self.userAgent)
        headers.add(name: "webhook-id", value: delivery.eventID)
        headers.add(name: "webhook-timestamp", value: String(timestamp))
        headers.add(
            name: "webhook-signature",
            value: WebhookSignature.sign(id: delivery.eventID, timestamp: timestamp, body: delivery.body, key: key))
        // Plain http to a name connects to the address that was checked; an
        // address literal or https goes to the URL as it is.
        let rewrite = url.scheme == "http" && url.address == nil
        if rewrite { headers.add(name: "host", value: url.hostHeader) }
        let signed = headers

        @Sendable func post(_ remaining: ArraySlice<IPAddress>) -> EventLoopFuture<AttemptOutcome> {
            let target = rewrite ? (remaining.first.map { url.connecting(to: $0) } ?? delivery.target) : delivery.target
            let request: HTTPClient.Request
            do {
                request = try HTTPClient.Request(url: target, method: .POST, headers: signed, body: .bytes(delivery.body))
            } catch {
                return eventLoop.makeSucceededFuture(.failed(reason: Self.describe(error)))
            }
            return client.execute(
                request: request, delegate: StatusOnly(), eventLoop: .delegateAndChannel(on: eventLoop), deadline: deadline
            ).futureResult.map { head in
                AttemptOutcome.response(status: Int(head.status.code), retryAfter: head.headers.first(name: "retry-after"))
            }.flatMapError { error in
                if rewrite, remaining.count > 1, Self.couldNotConnect(error), NIODeadline.now() < deadline {
                    return post(remaining.dropFirst())
                }
                if let error = error as? HTTPClientError,
                    error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout || error == .writeTimeout
                {
                    return eventLoop.makeSucceededFuture(.timedOut)
                }
                return eventLoop.makeSucceededFuture(.failed(reason: Self.describe(error)))
            }
        }
        return post(addresses)
    }

    /// A target parsed and checked against the deny list (by name, and by address for a
    /// literal) once: the same few targets are attempted over and over. What a name
    /// resolves to is checked at every attempt, after resolution.
    private func check(_ target: String) -> CheckedTarget {
        if let hit = targets.withLock({ $0[target] }) { return hit }
        let url = TargetURL(target)
        let checked = CheckedTarget(url: url, refusal: url.flatMap { settings.deny.refuses(host: $0.host, addresses: []) })
        targets.withLock { targets in
            if targets.count >= 4096 { targets.removeAll(keepingCapacity: true) }
            targets[target] = checked
        }
        return checked
    }

    private struct CheckedTarget: Sendable {
        var url: TargetURL?
        var refusal: String?
    }

    /// The key of a secret, decoded once: a handful of secrets sign every attempt.
    private func signingKey(_ secret: String) throws -> WebhookKey {
        if let key = keys.withLock({ $0[secret] }) { return key }
        let key = try WebhookKey(secret: secret)
        keys.withLock { keys in
            if keys.count >= 1024 { keys.removeAll(keepingCapacity: true) }
            keys[secret] = key
        }
        return key
    }

    /// Whether no connection was made at all (so another address may be tried).
    static func couldNotConnect(_ error: any Error) -> Bool {
        if error is NIOConnectionError { return true }
        if let error = error as? IOError { return [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL].contains(error.errnoCode) }
        if let error = error as? ChannelError, case .connectTimeout = error { return true }
        return false
    }

    /// Records the attempt and schedules the retry, if any. On an event loop
    /// (the attempt's), it goes on at once with what is due, so a busy
    /// receiver's next delivery does not wait for the scheduling thread.
    private func settle(_ delivery: PendingDelivery, _ outcome: AttemptOutcome, at startedAt: Timestamp, on eventLoop: (any EventLoop)?) {
        var rng = SystemRandomNumberGenerator()
        let (record, retry) = settings.policy.settle(delivery, outcome: outcome, at: startedAt, now: clock.now(), using: &rng)
        condition.lock()
        let cutOff = stopping && record.state != .delivered
        condition.unlock()
        // Recorded before the retry can be taken, so the store sees a
        // delivery's attempts in order. An attempt that failed while alertd
        // stops (most likely cut off by it) is not recorded: the delivery
        // stays pending as it stood and resumes at the next start.
        if !cutOff {
            observe(record, delivery)
            committer.submit([.attempt(record)]) { [logger] result in
                if case .failure(let error) = result {
                    logger.error("delivery attempt not recorded", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
                }
            }
        }
        condition.lock()
        queue.finished(delivery)
        if let retry, !stopping { queue.retry(retry) }
        var next: [PendingDelivery] = []
        if stopping {
            condition.broadcast()  // shutdown waits for the last attempt
        } else if eventLoop != nil {
            next = queue.takeDue(now: clock.now(), limit: 4)
            wakeIfSooner()
        } else {
            wakeIfSooner()
        }
        condition.unlock()
        if let eventLoop { for delivery in next { attempt(delivery, on: eventLoop) } }
        if case .failed(let reason) = outcome, reason.hasPrefix("refused: ") {
            logger.warning(
                "callback target refused", metadata: ["delivery": "\(delivery.id)", "target": "\(delivery.target)", "reason": "\(reason)"])
        }
        logger.debug(
            "delivery attempt",
            metadata: [
                "delivery": "\(delivery.id)", "event": "\(delivery.eventID)", "attempt": "\(record.number)",
                "status": "\(record.attempt.statusCode.map(String.init) ?? record.attempt.error ?? "")",
                "state": "\(record.state.rawValue)",
            ])
    }

    /// A short reason for the deliveries API: what failed, without NIO's type names where they help nobody.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        if let error = error as? NIOConnectionError {
            let causes = error.connectionErrors.map { "\($0.target): \($0.error)" }
            if let dns = error.dnsAAAAError ?? error.dnsAError { return "name resolution failed: \(dns)" }
            return "could not connect" + (causes.isEmpty ? "" : " (" + causes.joined(separator: "; ") + ")")
        }
        if let error = error as? IOError { return "connection failed: \(error.description)" }
        if let error = error as? ChannelError { return "connection failed: \(error)" }
        return "\(error)"
    }
}

/// Keeps the response head and drops the body: a receiver's answer is its status.
private final class StatusOnly: HTTPClientResponseDelegate, @unchecked Sendable {
    // Touched only on the request's event loop, one callback at a time.
    private var head: HTTPResponseHead?

    func didReceiveHead(task: HTTPClient.Task<HTTPResponseHead>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        self.head = head
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<HTTPResponseHead>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<HTTPResponseHead>) throws -> HTTPResponseHead {
        guard let head else { throw HTTPClientError.remoteConnectionClosed }
        return head
    }
}
