import AlertdAlertmanager
public import AlertdCore
public import AlertdDelivery
public import AlertdEngine
import AlertdWire
import AsyncHTTPClient
import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import NIOSSL
import NIOConcurrencyHelpers

// Over 400 lines on purpose: one attempt's path (check, resolve, pin, sign, send,
// settle) is one sequence; its error words live in AttemptErrors.swift.

/// Delivers callback events (§5): takes due deliveries, POSTs each signed
/// event over one shared `HTTPClient`, records every attempt in the store's
/// outbox (``DeliveryLog``) and schedules the retries.
///
/// - Deliveries arrive from two places: the store's pending ones at start
///   (``start(restoring:)``), and new events once their transaction committed
///   (``enqueue(_:)``). Nothing uncommitted is ever sent.
/// - Each target (the host of its URL, whatever the user info or port) has at
///   most `maxInFlightPerTarget` attempts in flight, and all targets together
///   `maxInFlight` (``DeliveryQueue``), so a slow or dead receiver holds its
///   own slots and no one else's, and many names cannot add up without bound.
/// - Before each attempt the host is resolved and checked against
///   `callbacks.deny`, and the attempt connects to an address that was
///   checked, never to what a second lookup might say (DNS rebinding):
///   - plain http to a name: the URL is rewritten to the address, `Host`
///     keeps the name;
///   - https to a name: through a client pinned to (name, address)
///     (``PinnedClients``, AsyncHTTPClient's `dnsOverride`): the connection
///     goes to the address, SNI and certificate verification use the name;
///   - an address literal: as it is (it was checked itself).
///   When a connection to one address cannot be made, the next checked
///   address is tried, within the attempt's deadline.
/// - A delivery of an integration (``DeliveryKind/alertmanagerSilence``: a silence
///   for Alertmanager, docs/alertmanager.md) is Alertmanager's API request, not a
///   signed event: to a target of ``Settings/trustedTargets`` it carries that
///   target's `Authorization` and skips `callbacks.deny` (the admin's own URL);
///   its answer's silence id is recorded with the attempt; it is given up once
///   the silence would have ended, or on a 400 or 422.
/// - Redirects are not followed: the receiver's answer is the outcome.
/// - Each attempt is signed at its own time with the event's one `webhook-id`.
/// - What an attempt records (and the deliveries API shows) says what failed
///   in words — "connection refused", "timed out", "TLS handshake failed:
///   certificate not trusted" — never an address a name resolved to or a
///   port probed (``describe(_:)``); the full error goes to the debug log.
///
/// Scheduling: ``run()`` (a service's loop) sleeps until the next due
/// delivery or a new one; each attempt is a child task of its task group, sent
/// through AsyncHTTPClient's async API (`HTTPClientRequest`, `execute(_:deadline:)`).
public final class DeliveryWorker: @unchecked Sendable {
    public struct Settings: Sendable {
        /// Seconds one attempt may take, connecting included.
        public var timeout: Double
        public var policy: RetryPolicy
        public var deny: DenyList
        /// Attempts in flight to one receiver (host) at most.
        public var maxInFlightPerTarget: Int
        /// Attempts in flight to all receivers together at most.
        public var maxInFlight: Int
        /// How long ``shutdown()`` lets attempts in flight finish, in seconds.
        public var shutdownGrace: Double
        /// How names are resolved: the system resolver, or a test's.
        public var lookUp: HostLookup
        /// TLS for https targets; nil: AsyncHTTPClient's default (the system's
        /// trust roots, full verification). Tests give one that trusts their CA.
        public var tlsConfiguration: TLSConfiguration?
        /// https-to-a-name clients kept (one per name and address; see ``PinnedClients``).
        public var pinnedClients: Int
        /// Integration targets the config names (Alertmanager's silences URL), by URL:
        /// trusted as the admin wrote them, so `deny` does not apply to them (the
        /// usual Alertmanager is on 127.0.0.1), and each with the `Authorization`
        /// header value sent to it, if any. A delivery of an integration to any other
        /// URL (the config changed since it was written) is checked and sent without auth.
        public var trustedTargets: [String: TrustedTarget]
        /// When a receiver whose attempts keep failing is logged (once): failing for this many
        /// seconds, and this many attempts in a row (``ReceiverHealth``).
        public var receiverFailing: (seconds: Double, attempts: Int) = (60, 3)

        public init(
            timeout: Double, policy: RetryPolicy, deny: DenyList, maxInFlightPerTarget: Int = 32, maxInFlight: Int = 256,
            shutdownGrace: Double = 5, lookUp: @escaping HostLookup = HostResolver.addresses(of:port:),
            tlsConfiguration: TLSConfiguration? = nil, pinnedClients: Int = 64, trustedTargets: [String: TrustedTarget] = [:]
        ) {
            self.timeout = timeout
            self.policy = policy
            self.deny = deny
            self.maxInFlightPerTarget = maxInFlightPerTarget
            self.maxInFlight = maxInFlight
            self.shutdownGrace = shutdownGrace
            self.lookUp = lookUp
            self.tlsConfiguration = tlsConfiguration
            self.pinnedClients = pinnedClients
            self.trustedTargets = trustedTargets
        }
    }

    /// A URL of the admin's config that integration deliveries are sent to.
    public struct TrustedTarget: Sendable, Hashable {
        /// The `Authorization` header value; nil: none.
        public var authorization: String?

        public init(authorization: String?) { self.authorization = authorization }
    }

    private struct State: Sendable {
        var queue: DeliveryQueue
        var stopping = false
        /// ``shutdown()`` or ``shutdownNow()`` closed the HTTP clients: a second call does nothing.
        var shutDown = false
        /// Deliveries whose last attempt the deny list refused: a reload that changes the
        /// list makes them due at once (``update(deny:)``).
        var refused: Set<String> = []
        /// Deliveries the store cancelled while their attempt was in flight: not retried.
        var cancelled: Set<String> = []
        /// Receivers failing since a time, by host (``ReceiverHealth``).
        var receivers = ReceiverHealth()
    }

    // Taken per delivery and per attempt: NIO's plain pthread mutex.
    private let state: NIOLockedValueBox<State>
    /// Wakes the scheduling loop for a delivery due sooner than it sleeps.
    private let alarm = Alarm()
    /// The attempt tasks alive; ``shutdown()`` waits for the last one to end.
    private let running = Running()

    /// Plain http (connecting to checked addresses) and address literals.
    private let client: HTTPClient
    /// https to a name, one client per (name, checked address).
    private let pinned: PinnedClients
    private let resolver: CachingResolver
    private let keys = NIOLockedValueBox<[String: WebhookKey]>([:])
    /// Refused targets already warned about.
    private let refusals = NIOLockedValueBox(RefusalLog())
    /// Targets parsed and checked by name; see `check(_:)`.
    private let targets = NIOLockedValueBox<[String: CheckedTarget]>([:])
    private let log: any DeliveryLog
    private let clock: any WallClock
    private let settings: Settings
    /// `callbacks.deny` and `callbacks.allow`, replaced by a reload (``update(deny:)``).
    private let deny: NIOLockedValueBox<DenyList>
    private let logger: Logger
    private static let userAgent = "alertd"

    /// Told of every recorded attempt with its delivery (for metrics).
    private let observe: @Sendable (AttemptRecord, PendingDelivery) -> Void

    /// Makes each push's request (SPEC §11): the engine, which holds the subscriptions and
    /// the VAPID key, attached once it exists (``attach(_:)``); held weakly, since the engine
    /// holds the worker. None: pushes are not sent (they fail, saying so).
    private let preparer = NIOLockedValueBox(WeakPreparer())
    private var push: (any PushPreparing)? { preparer.withLockedValue { $0.preparer } }

    private struct WeakPreparer: @unchecked Sendable {
        // Read and written under the box's lock only; the engine it points to is Sendable.
        weak var preparer: (any PushPreparing)?
    }

    /// Attaches what makes pushes' requests (the engine).
    public func attach(_ preparer: any PushPreparing) {
        self.preparer.withLockedValue { $0.preparer = preparer }
    }

    public init(
        settings: Settings, log: any DeliveryLog, clock: any WallClock, logger: Logger,
        observe: @escaping @Sendable (AttemptRecord, PendingDelivery) -> Void = { _, _ in }
    ) {
        self.observe = observe
        self.settings = settings
        self.deny = NIOLockedValueBox(settings.deny)
        self.log = log
        self.clock = clock
        self.logger = logger
        state = NIOLockedValueBox(
            State(
                queue: DeliveryQueue(maxInFlightPerTarget: settings.maxInFlightPerTarget, maxInFlight: settings.maxInFlight),
                receivers: ReceiverHealth(
                    minimumSeconds: settings.receiverFailing.seconds, minimumFailures: settings.receiverFailing.attempts)))
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
        if let tls = settings.tlsConfiguration { configuration.tlsConfiguration = tls }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        pinned = PinnedClients(capacity: settings.pinnedClients, configuration: configuration, logger: logger)
    }

    /// Takes the deliveries the store holds as pending (at start, before anything can decide an alert).
    public func restore(_ pending: [PendingDelivery]) {
        guard !pending.isEmpty else { return }
        state.withLockedValue { state in for delivery in pending { state.queue.add(delivery) } }
        logger.info("resuming deliveries", metadata: ["pending": "\(pending.count)"])
    }

    /// Hands over the deliveries of events that are committed.
    public func enqueue(_ deliveries: [PendingDelivery]) {
        guard !deliveries.isEmpty else { return }
        let next = state.withLockedValue { state -> Timestamp? in
            guard !state.stopping else { return nil }
            for delivery in deliveries { state.queue.add(delivery) }
            return state.queue.nextDue
        }
        if let next { wake(for: next) }
    }

    /// Takes deliveries the store cancelled (their webhook was removed) out of the queue;
    /// one whose attempt is in flight finishes it and is not retried.
    public func cancel(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        let set = Set(ids)
        state.withLockedValue { state in
            state.queue.cancel(set)
            state.refused.subtract(set)
            // What is still held is in flight: its attempt's end must not retry it. (Ids this
            // instance does not hold, another's with a shared outbox, are not kept.)
            state.cancelled.formUnion(set.filter { state.queue.holds($0) })
        }
    }

    /// A reloaded `callbacks.deny` and `callbacks.allow`: checked from the next attempt on. The
    /// deliveries the old list refused are due at once, so a receiver the change lets through
    /// gets its events now rather than at the end of their backoff; a refusal is warned about
    /// again (``RefusalLog``).
    public func update(deny new: DenyList) {
        deny.withLockedValue { $0 = new }
        targets.withLockedValue { $0.removeAll() }
        refusals.withLockedValue { $0 = RefusalLog() }
        let now = clock.now()
        let next = state.withLockedValue { state -> Timestamp? in
            state.queue.advance(state.refused, to: now)
            state.refused.removeAll()
            return state.queue.nextDue
        }
        if let next { wake(for: next) }
    }

    /// Every address `host` resolves to, through the worker's resolver (one lookup per name
    /// at a time, answers kept for a second), for the check at post and registration
    /// (``Engine/refusedTarget(_:)``); nil when it cannot be resolved within `seconds`. The
    /// lookup blocks a thread of the resolver's own pool, never the caller's.
    public func addresses(of host: String, port: Int, within seconds: Double) async -> [IPAddress]? {
        if let literal = IPAddress(host) { return [literal] }
        let eventLoop = client.eventLoopGroup.next()
        let answer = resolver.addresses(of: host, port: port, on: eventLoop)
        let promise = eventLoop.makePromise(of: [IPAddress]?.self)
        let timeout = eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { promise.succeed(nil) }
        answer.whenComplete { result in
            timeout.cancel()
            promise.succeed(try? result.get())
        }
        return try? await promise.futureResult.get()
    }

    /// Callback deliveries of `client`'s alerts waiting or in flight (``DeliveryQueue/backlog(of:)``).
    public func backlog(of client: String) -> Int {
        state.withLockedValue { $0.queue.backlog(of: client) }
    }

    /// Deliveries waiting and attempts in flight.
    public var counts: (waiting: Int, inFlight: Int) {
        state.withLockedValue { ($0.queue.waitingCount, $0.queue.inFlightCount) }
    }

    /// The scheduling loop: starts each delivery when it is due, each attempt a
    /// child task of this loop's task group, and sleeps until the next one or a
    /// new one. Once ``shutdown()`` began, it takes nothing more and returns when
    /// the attempts in flight have ended (finished, or cut off when the grace
    /// period ran out); when cancelled, it cancels them and returns.
    public func run() async {
        await withDiscardingTaskGroup { attempts in
            await withDiscardingTaskGroup { loops in
                // Deliveries nobody holds are taken over (an outbox shared by several instances).
                loops.addTask { await self.takeOrphans() }
                await schedule(into: &attempts)
                loops.cancelAll()
            }
        }
    }

    /// How long a claim on a delivery lasts: an attempt, and some.
    private var lease: Double { settings.timeout + 5 }

    /// Every second, the due deliveries no instance holds (a dead one's, or one whose lease
    /// ran out): at once when this instance starts, and again within 250 ms while the
    /// outbox cannot be read (a database not migrated yet, or away), so that a killed
    /// instance's deliveries, or a restarted deployment's, go out within a second or two
    /// (issue 44 item 12). One statement a second per instance, on the index of due deliveries.
    private func takeOrphans() async {
        while !Task.isCancelled {
            let now = clock.now()
            var wait = Duration.seconds(1)
            do {
                // nil: this outbox is this instance's alone; no delivery ever lacks a holder.
                guard let taken = try await log.takeOrphans(now: now, until: now.adding(seconds: lease), limit: 256) else { return }
                if !taken.isEmpty {
                    logger.info("taking over deliveries no instance holds", metadata: ["deliveries": "\(taken.count)"])
                    enqueue(taken)
                }
            } catch {
                wait = .milliseconds(250)
            }
            try? await Task.sleep(for: wait)
        }
    }

    private func schedule(into attempts: inout DiscardingTaskGroup) async {
        while !Task.isCancelled {
            let now = clock.now()
            let (due, next, stopping) = state.withLockedValue { state in
                (state.stopping ? [] : state.queue.takeDue(now: now), state.queue.nextDue, state.stopping)
            }
            if stopping { return }
            if !due.isEmpty {
                for delivery in due { start(delivery, in: &attempts) }
                continue
            }
            // At most a minute: a wall-clock jump is caught up with.
            let milliseconds = min(60_000, next.map { max(0, $0.milliseconds - now.milliseconds) } ?? 60_000)
            await alarm.sleep(until: DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000)
        }
    }

    /// Starts a child task for `delivery`'s attempt. When it is over, the task goes on
    /// at once with the next due delivery the queue's bounds allow, so a busy
    /// receiver's next delivery does not wait for the scheduling loop to wake.
    private func start(_ first: PendingDelivery, in attempts: inout DiscardingTaskGroup) {
        running.enter()
        attempts.addTask { [self] in
            defer { running.leave() }
            var next: PendingDelivery? = first
            while let delivery = next {
                await attempt(delivery)
                next = state.withLockedValue { state in
                    state.stopping || Task.isCancelled ? nil : state.queue.takeDue(now: clock.now(), limit: 1).first
                }
            }
        }
    }

    /// Stops taking deliveries, lets attempts in flight finish (for at most the
    /// grace period; the rest are cut off and stay pending), then closes the
    /// HTTP clients. Call before the store stops: finished attempts are recorded
    /// through it. Every delivery not delivered stays pending in the store and
    /// resumes at the next start.
    public func shutdown() async {
        beginShutdown()
        // The last attempt's end, or the grace period's, whichever comes first.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.running.none() }
            group.addTask { [grace = settings.shutdownGrace] in try? await Task.sleep(for: .seconds(grace)) }
            _ = await group.next()
            group.cancelAll()
        }
        let cut = running.count
        if cut > 0 { logger.notice("attempts cut off by shutdown; they stay pending", metadata: ["attempts": "\(cut)"]) }
        // Once: a failed start (a busy port) shuts down here after the service did.
        guard takeShutdown() else { return }
        do {
            try await client.shutdown()
        } catch {
            logger.warning("HTTP client shutdown", metadata: ["error": "\(error)"])
        }
        pinned.shutdown()
        resolver.shutdown()
    }

    /// Stops at once, without a grace period (no service group to wait in):
    /// attempts in flight are cut off and stay pending.
    public func shutdownNow() {
        beginShutdown()
        guard takeShutdown() else { return }
        try? client.syncShutdown()
        pinned.shutdown()
        resolver.shutdown()
    }

    /// True for the first caller only: the HTTP clients are shut down once.
    private func takeShutdown() -> Bool {
        state.withLockedValue { state in
            defer { state.shutDown = true }
            return !state.shutDown
        }
    }

    private func beginShutdown() {
        state.withLockedValue { $0.stopping = true }
        // Wakes the loop whatever it sleeps until (the loop is not cancelled: see `run()`).
        alarm.ring(ifBefore: 0)
    }

    /// Wakes the scheduling loop if it sleeps past `due`.
    private func wake(for due: Timestamp) {
        let milliseconds = max(0, due.milliseconds - clock.now().milliseconds)
        alarm.ring(ifBefore: DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000)
    }

    // MARK: - One attempt

    /// One attempt; in a shared outbox, only once this instance holds the delivery.
    private func attempt(_ delivery: PendingDelivery) async {
        let now = clock.now()
        do {
            guard let claimed = try await log.claim(delivery, until: now.adding(seconds: lease)) else {
                // Another instance holds it, or it is settled: not ours to attempt.
                state.withLockedValue { $0.queue.finished(delivery) }
                return
            }
            await send(claimed)
        } catch {
            // The outbox cannot be reached: try again in a moment, nothing recorded.
            var later = delivery
            later.due = clock.now().adding(seconds: 2)
            let next = state.withLockedValue { state -> Timestamp? in
                state.queue.finished(delivery)
                if !state.stopping { state.queue.add(later) }
                return state.queue.nextDue
            }
            if let next { wake(for: next) }
        }
    }

    private func send(_ delivery: PendingDelivery) async {
        let startedAt = clock.now()
        // The attempt's deadline covers resolving the name and connecting too.
        let deadline = NIODeadline.now() + .milliseconds(Int64(settings.timeout * 1000))
        let checked = check(delivery.target)
        // The config's own integration targets are trusted; a push endpoint, like a callback, never.
        let trusted = delivery.kind == .alertmanagerSilence ? settings.trustedTargets[delivery.target] : nil
        guard let url = checked.url else {
            return await settle(delivery, .failed(reason: "not an http or https URL"), at: startedAt)
        }
        if delivery.kind == .alertmanagerSilence, let ends = AlertmanagerSilence.endsAt(of: delivery.body), startedAt >= ends {
            return await settle(delivery, .failed(reason: "not sent: the silence would have ended at \(ends)"), at: startedAt)
        }
        // A denied name (or address literal) is refused before anyone is asked to
        // resolve it. The reason names the URL's own host and the entry: nothing
        // the URL does not show already. The config's own integration targets are not checked.
        if trusted == nil, let refusal = checked.refusal {
            refused(delivery, because: refusal)
            return await settle(delivery, .failed(reason: "refused: " + refusal), at: startedAt, refusedByDenyList: true)
        }
        let addresses: [IPAddress]
        do {
            addresses = try await resolve(url, deadline: deadline)
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            return await settle(delivery, .timedOut, at: startedAt)
        } catch {
            return await settle(delivery, failed(delivery, error), at: startedAt)
        }
        // A literal was checked with its address above; a name's addresses are checked now, every time.
        if trusted == nil, url.address == nil, let refusal = deny.withLockedValue({ $0 }).refuses(host: url.host, addresses: addresses) {
            // Recorded without the address or the entry it matched: they
            // would tell whoever reads deliveries what the name resolves to.
            refused(delivery, because: refusal)
            return await settle(
                delivery, .failed(reason: "refused: \(url.host) resolves to an address denied by callbacks.deny"), at: startedAt,
                refusedByDenyList: true)
        }
        var prepared: PreparedPush?
        if delivery.kind == .push {
            // Made for this attempt: encrypted for the subscription as it is now, signed now.
            guard let push else {
                return await settle(delivery, .failed(reason: "not sent: push is off"), at: startedAt, stop: true)
            }
            do {
                switch try await push.preparePush(delivery, now: startedAt) {
                case .send(let request): prepared = request
                case .end(let reason): return await settle(delivery, .failed(reason: reason), at: startedAt, stop: true)
                }
            } catch {
                return await settle(delivery, .failed(reason: "the push could not be made: \(error.detail)"), at: startedAt)
            }
        }
        let (outcome, produced) = await send(
            delivery, to: url, addresses: addresses[...], at: startedAt, deadline: deadline, trusted: trusted, push: prepared)
        if delivery.kind == .push, case .response(let status, _) = outcome, status == 404 || status == 410 {
            // The device unsubscribed (RFC 8030 §6.4 / §7.3): its subscription ends, nothing more is sent to it.
            await push?.pushSubscriptionGone(delivery)
        }
        await settle(delivery, outcome, at: startedAt, result: produced, giveUpAt: prepared?.giveUpAt, repeatAt: prepared?.repeatAt)
    }

    /// Logs a refusal with its whole reason (the recorded one may say less): a warning the
    /// first time for its target and reason, a debug line at every retry after (``RefusalLog``).
    private func refused(_ delivery: PendingDelivery, because reason: String) {
        // The target without its user info, path or query values: secrets a URL carries stay out of the log.
        let metadata: Logger.Metadata = [
            "delivery": "\(delivery.id)", "target": "\(URLRedaction.redacted(delivery.target))", "reason": "\(reason)",
        ]
        if refusals.withLockedValue({ $0.isFirst(target: delivery.target, reason: reason) }) {
            logger.warning("callback target refused (its retries are logged at debug)", metadata: metadata)
        } else {
            logger.debug("callback target refused", metadata: metadata)
        }
    }

    /// The outcome of an attempt that ended in `error`: described in words for
    /// the record, in full in the debug log.
    private func failed(_ delivery: PendingDelivery, _ error: any Error) -> AttemptOutcome {
        let reason = Self.describe(error)
        logger.debug("delivery attempt failed", metadata: ["delivery": "\(delivery.id)", "reason": "\(reason)", "error": "\(error)"])
        return .failed(reason: reason)
    }

    /// The addresses of the URL's host: the literal itself, or the resolver's
    /// answer (one lookup per name at a time, answers kept for a second).
    private func resolve(_ url: TargetURL, deadline: NIODeadline) async throws -> [IPAddress] {
        if let literal = url.address { return [literal] }
        let eventLoop = client.eventLoopGroup.next()
        let answer = resolver.addresses(of: url.host, port: url.port, on: eventLoop).flatMapErrorThrowing { error in
            throw ResolutionFailure(error)
        }
        // A name server that does not answer ends the attempt at its deadline.
        let promise = eventLoop.makePromise(of: [IPAddress].self)
        let timeout = eventLoop.scheduleTask(deadline: deadline) { promise.fail(HTTPClientError.deadlineExceeded) }
        answer.whenComplete { result in
            timeout.cancel()
            promise.completeWith(result)
        }
        return try await promise.futureResult.get()
    }

    /// Sends to the first address; when a connection cannot be made, to the
    /// next one (a name with IPv6 and IPv4 addresses and a receiver on one of
    /// them), within the attempt's deadline. Every connection goes to one of
    /// `addresses`, which passed the deny list.
    ///
    /// A callback is signed (Standard Webhooks headers) and its answer's body
    /// dropped; a request of an integration carries the `Authorization` of its
    /// trusted target, and what its answer produced (a silence id) is returned with the outcome.
    private func send(
        _ delivery: PendingDelivery, to url: TargetURL, addresses: ArraySlice<IPAddress>, at startedAt: Timestamp,
        deadline: NIODeadline, trusted: TrustedTarget?, push: PreparedPush?
    ) async -> (AttemptOutcome, produced: String?) {
        var headers = HTTPHeaders()
        headers.reserveCapacity(8)
        if delivery.kind != .push { headers.add(name: "content-type", value: "application/json") }
        headers.add(name: "user-agent", value: Self.userAgent)
        switch delivery.kind {
        case .callback:
            let key: WebhookKey
            do {
                key = try signingKey(delivery.secret)
            } catch {
                return (.failed(reason: "bad signing secret: \(error)"), nil)
            }
            let timestamp = startedAt.milliseconds / 1000
            headers.add(name: "webhook-id", value: delivery.eventID)
            headers.add(name: "webhook-timestamp", value: String(timestamp))
            headers.add(
                name: "webhook-signature",
                value: WebhookSignature.sign(id: delivery.eventID, timestamp: timestamp, body: delivery.body, key: key))
        case .alertmanagerSilence:
            headers.add(name: "accept", value: "application/json")
            if let authorization = trusted?.authorization { headers.add(name: "authorization", value: authorization) }
        case .push:
            for (name, value) in push?.headers ?? [] { headers.add(name: name, value: value) }
        }
        let route = Route(url)
        if route == .rewrite { headers.add(name: "host", value: url.hostHeader) }

        var remaining = addresses
        while let address = remaining.first {
            let target = route == .rewrite ? url.connecting(to: address) : delivery.target
            // The host the HTTP client reads from the URL must be the one that
            // was checked (the address itself when rewritten): a URL two
            // parsers read differently must not reach an unchecked host.
            // `HTTPClient.Request` reads a URL as `HTTPClientRequest` does.
            let host: String
            do {
                host = try HTTPClient.Request(url: target, method: .POST).host
            } catch {
                return (failed(delivery, error), nil)
            }
            let expected = route == .rewrite ? address.description : url.host
            guard Self.sameHost(host, expected) else {
                refused(delivery, because: "the HTTP client reads host \(host), the deny list checked \(expected)")
                return (.failed(reason: "refused: the URL's host is ambiguous"), nil)
            }
            var request = HTTPClientRequest(url: target)
            request.method = .POST
            request.headers = headers
            request.body = .bytes(push?.body ?? delivery.body)
            let lease: PinnedClients.Lease?
            do {
                lease = route == .pinned ? try pinned.lease(host: host, address: address) : nil
            } catch {
                return (failed(delivery, error), nil)
            }
            // Kept: an integration's answer (a silence id); a callback's answer is its status.
            let keep = delivery.kind == .alertmanagerSilence ? 65_536 : 0
            let answer = await Self.post(request, over: lease?.client ?? client, keeping: keep, deadline: deadline)
            if let lease { pinned.giveBack(lease) }
            switch answer {
            case .success(let answer):
                var produced: String?
                if delivery.kind == .alertmanagerSilence, (200...299).contains(answer.status) {
                    produced = AlertmanagerSilence.silenceID(fromResponse: answer.body)
                }
                return (.response(status: answer.status, retryAfter: answer.retryAfter), produced)
            case .failure(let error):
                if route != .asIs, remaining.count > 1, Self.couldNotConnect(error), NIODeadline.now() < deadline {
                    remaining = remaining.dropFirst()
                    continue
                }
                if let error = error as? HTTPClientError,
                    error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout || error == .writeTimeout
                {
                    return (.timedOut, nil)
                }
                return (failed(delivery, error), nil)
            }
        }
        return (.failed(reason: "name resolution failed: no addresses"), nil)
    }

    /// A receiver's answer: its status, its `Retry-After`, and the first bytes of its body that were asked for.
    struct Answer: Sendable {
        var status: Int
        var retryAfter: String?
        var body: [UInt8]
    }

    /// The most bytes of an answer's body read (and dropped past what is kept), so that
    /// its connection can serve the next attempt; a longer body is left unread, and
    /// AsyncHTTPClient closes the connection instead of returning it to its pool.
    static let answerReadLimit = 1 << 20

    /// POSTs `request` and reads its answer, the body included (AsyncHTTPClient returns
    /// a connection to its pool only once the body was read to its end; a response
    /// dropped unread cancels its request and closes the connection), all by `deadline`:
    /// AsyncHTTPClient's deadline ends with the answer's head, so the body's read is
    /// raced against the deadline here. Past it, the request is cancelled and the
    /// outcome is `HTTPClientError.deadlineExceeded`.
    static func post(_ request: HTTPClientRequest, over client: HTTPClient, keeping keep: Int, deadline: NIODeadline) async
        -> Result<Answer, any Error>
    {
        await withTaskGroup(of: Result<Answer, any Error>?.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(request, deadline: deadline)
                    var body: [UInt8] = []
                    var read = 0
                    for try await buffer in response.body {
                        let room = keep - body.count
                        if room > 0 { body += buffer.readableBytesView.prefix(room) }
                        read += buffer.readableBytes
                        if read > Self.answerReadLimit { break }
                    }
                    return .success(
                        Answer(status: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"), body: body))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                await Self.sleep(until: deadline, on: client.eventLoopGroup.next())
                return Task.isCancelled ? nil : .failure(HTTPClientError.deadlineExceeded)
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(HTTPClientError.cancelled)
        }
    }

    /// Returns at `deadline`, or at once when the task is cancelled. On an event loop's
    /// timer, which a cancellation takes off the loop's schedule at once: an attempt's
    /// timer is nearly always cancelled (the answer comes first), thousands of times a second.
    static func sleep(until deadline: NIODeadline, on eventLoop: any EventLoop) async {
        let wakeup = Wakeup()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                wakeup.start(continuation, eventLoop.scheduleTask(deadline: deadline) { wakeup.fire() })
            }
        } onCancel: {
            wakeup.fire()
        }
    }

    /// One sleep's continuation and scheduled task: resumed exactly once, by the timer or a cancellation.
    private final class Wakeup: Sendable {
        private struct State: Sendable {
            var continuation: CheckedContinuation<Void, Never>?
            var scheduled: Scheduled<Void>?
            var fired = false
        }
        private let state = NIOLockedValueBox(State())

        func start(_ continuation: CheckedContinuation<Void, Never>, _ scheduled: Scheduled<Void>) {
            let firedAlready = state.withLockedValue { state in
                if !state.fired {
                    state.continuation = continuation
                    state.scheduled = scheduled
                }
                return state.fired
            }
            if firedAlready {
                scheduled.cancel()
                continuation.resume()
            }
        }

        func fire() {
            let (continuation, scheduled) = state.withLockedValue { state in
                state.fired = true
                defer {
                    state.continuation = nil
                    state.scheduled = nil
                }
                return (state.continuation, state.scheduled)
            }
            scheduled?.cancel()
            continuation?.resume()
        }
    }

    /// How an attempt reaches the address it checked.
    private enum Route: Sendable {
        /// An address literal: the URL as it is.
        case asIs
        /// Plain http to a name: the URL rewritten to the address, `Host` keeps the name.
        case rewrite
        /// https to a name: the URL as it is, over a client pinned to (name, address).
        case pinned

        init(_ url: TargetURL) {
            self = url.address != nil ? .asIs : url.scheme == "http" ? .rewrite : .pinned
        }
    }

    /// Whether two hosts are the same: equal addresses, or names equal without regard to case.
    static func sameHost(_ a: String, _ b: String) -> Bool {
        if let address = IPAddress(a) { return address == IPAddress(b) }
        return a.lowercased() == b.lowercased()
    }

    /// A target parsed and checked against the deny list (by name, and by address for a
    /// literal) once: the same few targets are attempted over and over. What a name
    /// resolves to is checked at every attempt, after resolution.
    private func check(_ target: String) -> CheckedTarget {
        if let hit = targets.withLockedValue({ $0[target] }) { return hit }
        let url = TargetURL(target)
        let list = deny.withLockedValue { $0 }
        let checked = CheckedTarget(url: url, refusal: url.flatMap { list.refuses(host: $0.host, addresses: []) })
        targets.withLockedValue { targets in
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
        if let key = keys.withLockedValue({ $0[secret] }) { return key }
        let key = try WebhookKey(secret: secret)
        keys.withLockedValue { keys in
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

    /// Records the attempt and schedules the retry, if any.
    ///
    /// A silence for Alertmanager is given up once it would have ended, and at once
    /// when Alertmanager refuses it as malformed (400, 422: the same bytes never pass).
    ///
    /// A push is given up when its alert expires (`giveUpAt`), and at once when its push
    /// service says the subscription is gone (404, 410) or the request is malformed (400,
    /// 413: the same bytes never pass); `stop` ends it without another attempt. A delivery
    /// cancelled while its attempt was in flight (its webhook removed) is not retried; the
    /// store, which settled it as cancelled, keeps no attempt of it. A refusal by the deny
    /// list is remembered, for a reload that changes the list (``update(deny:)``).
    private func settle(
        _ delivery: PendingDelivery, _ outcome: AttemptOutcome, at startedAt: Timestamp, result: String? = nil,
        giveUpAt: Timestamp? = nil, stop: Bool = false, refusedByDenyList: Bool = false, repeatAt: Timestamp? = nil
    ) async {
        var rng = SystemRandom()  // not SystemRandomNumberGenerator: see SystemRandom
        let silence = delivery.kind == .alertmanagerSilence
        let stopping: Set<Int> =
            switch delivery.kind {
            case .alertmanagerSilence: [400, 422]
            case .push: [400, 404, 410, 413]
            case .callback: []
            }
        var (record, retry) = settings.policy.settle(
            delivery, outcome: outcome, at: startedAt, now: clock.now(),
            giveUpAt: silence ? AlertmanagerSilence.endsAt(of: delivery.body) : giveUpAt, stoppingStatuses: stopping,
            result: result, using: &rng)
        if stop, retry != nil {
            retry = nil
            record.state = .failed
            record.nextAttemptAt = nil
        }
        // A reminder sent stays pending until its next time (push.remind_every): the same
        // delivery, attempted again while its alert waits; it ends when the alert does.
        if let repeatAt, record.state == .delivered {
            record.state = .pending
            record.nextAttemptAt = repeatAt
            var next = delivery
            next.attemptsMade = record.number
            next.due = repeatAt
            retry = next
        }
        if silence { logSilence(record, delivery) }
        // An attempt that failed while alertd stops (most likely cut off by it) is
        // not recorded: the delivery stays pending as it stood and resumes at the
        // next start.
        let cutOff = (state.withLockedValue { $0.stopping } || Task.isCancelled) && record.state != .delivered
        if !cutOff { observe(record, delivery) }
        // The slot is freed (and the retry queued) before the record commits, so that
        // the receiver's next delivery does not wait for the store. The retry cannot
        // overtake this record: it is due a back-off later, and this task hands the
        // record to the store (whose writer keeps the order it is given) right below.
        let (nextDue, health) = state.withLockedValue { state -> (Timestamp?, ReceiverHealth.Report?) in
            state.queue.finished(delivery)
            let cancelled = state.cancelled.remove(delivery.id) != nil
            if let retry, !state.stopping, !cancelled { state.queue.retry(retry) }
            if refusedByDenyList, retry != nil, !cancelled {
                state.refused.insert(delivery.id)
            } else {
                state.refused.remove(delivery.id)
            }
            var health: ReceiverHealth.Report?
            if delivery.kind == .callback, !refusedByDenyList, !cutOff {
                health = state.receivers.record(
                    host: DeliveryQueue.host(of: delivery.target), answered: ReceiverHealth.answered(record.attempt), at: record.attempt.at)
            }
            return (state.queue.nextDue, health)
        }
        if let nextDue { wake(for: nextDue) }
        if let health { logHealth(health, delivery, record) }
        logger.debug(
            "delivery attempt",
            metadata: [
                "delivery": "\(delivery.id)", "event": "\(delivery.eventID)", "attempt": "\(record.number)",
                "status": "\(record.attempt.statusCode.map(String.init) ?? record.attempt.error ?? "")",
                "state": "\(record.state.rawValue)",
            ])
        guard !cutOff else { return }
        do {
            try await log.record(record)
        } catch {
            logger.error("delivery attempt not recorded", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
        }
    }
}

extension DeliveryWorker {
    /// The attempt tasks alive: ``shutdown()`` waits for none to be left.
    final class Running: Sendable {
        private struct State: Sendable {
            var count = 0
            var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
            var nextWaiter: UInt64 = 0
        }
        private let state = NIOLockedValueBox(State())

        var count: Int { state.withLockedValue { $0.count } }

        func enter() { state.withLockedValue { $0.count += 1 } }

        func leave() {
            let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.count -= 1
                guard state.count == 0 else { return [] }
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Returns once no attempt task is alive, or at once when cancelled.
        func none() async {
            let id = state.withLockedValue { state in
                defer { state.nextWaiter += 1 }
                return state.nextWaiter
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let now = state.withLockedValue { state -> Bool in
                        guard state.count > 0, !Task.isCancelled else { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }

    /// A receiver that keeps failing, once per run of failures, and its recovery.
    private func logHealth(_ report: ReceiverHealth.Report, _ delivery: PendingDelivery, _ record: AttemptRecord) {
        switch report {
        case .failing(let host, let since, let failures):
            logger.warning(
                "callback receiver keeps failing; its deliveries are retried until callbacks.max_age (said once until it answers)",
                metadata: [
                    "receiver": "\(host)", "client": "\(delivery.client)", "failing_since": "\(since.rfc3339)",
                    "attempts_failed": "\(failures)",
                    "last": "\(record.attempt.statusCode.map { "HTTP \($0)" } ?? record.attempt.error ?? "")",
                ])
        case .recovered(let host, let failures):
            logger.info("callback receiver answers again", metadata: ["receiver": "\(host)", "attempts_failed": "\(failures)"])
        }
    }

    /// A silence created, or given up on: said at info and warning, the rest at debug.
    private func logSilence(_ record: AttemptRecord, _ delivery: PendingDelivery) {
        switch record.state {
        case .delivered:
            logger.info(
                "alertmanager silence created",
                metadata: ["delivery": "\(delivery.id)", "silence": "\(record.result ?? "?")", "attempt": "\(record.number)"])
        case .failed:
            logger.warning(
                "alertmanager silence not created",
                metadata: [
                    "delivery": "\(delivery.id)", "attempt": "\(record.number)",
                    "status": "\(record.attempt.statusCode.map(String.init) ?? record.attempt.error ?? "")",
                ])
        case .pending, .cancelled:
            break
        }
    }
}
