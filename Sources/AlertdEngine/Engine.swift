public import AlertdAlertmanager
public import AlertdCore
public import AlertdDelivery
public import AlertdWire
public import Logging
import AlertdPush
import NIOConcurrencyHelpers
import Synchronization

/// Resolves a callback target's host for the check at post and registration: every address
/// it resolves to for TCP, or nil when it could not be resolved (in time). Runs off
/// libmicrohttpd's threads and bounds its own wait.
public typealias TargetLookup = @Sendable (_ host: String, _ port: Int) async -> [IPAddress]?

/// alertd's behaviour between the HTTP API and the store: posting with
/// idempotency, decisions, reads, deadlines, long-poll waiters, the webhook
/// registry and the outbox. It speaks domain values and ``EngineError``,
/// never HTTP; its only view of persistence is the ``AlertStore`` port.
///
/// Each job has a file: `Posting`, `Decisions`, `Reads`, `Waiting`,
/// `Deadlines`, `Webhooks`, `Outbox`, `Upkeep`.
///
/// Visibility, the rule everything here keeps: readers see committed state
/// only. A change is published — waiters woken, displays updated, deliveries
/// handed over — from its transaction's completion, never before.
///
/// Every call that reads or changes the store is `async throws(EngineError)`.
/// One that needs no commit and no database answers without suspending, on
/// its caller's thread; one that waits (a commit, a long-poll) suspends its
/// task, and libmicrohttpd's connection with it (the API's one bridge,
/// `Call.answer`): no thread waits.
public final class Engine: Sendable {
    public struct Settings: Sendable {
        public var maxWaitSeconds: Int
        public var maxWaiters: Int
        /// Waiters one token may have parked at once.
        public var maxWaitersPerToken: Int
        /// Seconds terminal alerts stay readable.
        public var retentionSeconds: Double
        /// Terminal alerts kept per client at most (`alerts.retention_max`): the oldest go first.
        public var retentionMax: Int
        /// Bytes of terminal alerts kept per client at most (`alerts.retention_max_bytes_per_client`): the oldest go first.
        public var retentionMaxBytesPerClient: Int
        /// Bytes of terminal alerts kept in all at most (`alerts.retention_max_bytes`): the oldest decided go first.
        public var retentionMaxBytes: Int
        /// Callback deliveries a client may have waiting or in flight
        /// (`callbacks.max_pending_per_client`): at it, the client's posts are 429 queue-full.
        public var maxPendingDeliveriesPerClient: Int
        /// Signs deliveries to an alert's `callback_url`; without it no alert may have one.
        public var signingSecret: String?
        /// `integrations.alertmanager`: nil, the receiver is off (docs/alertmanager.md).
        public var alertmanager: AlertmanagerSettings?
        /// `callbacks.deny` and `callbacks.allow`, checked when a `callback_url` is posted or
        /// a webhook registered (``Engine/refusedTarget(_:)``); nil: checked at delivery only.
        public var callbackDeny: DenyList?
        /// `push:` (SPEC §11); nil: Web Push is off.
        public var push: PushSettings?
        /// `receipts.retention` (SPEC §14): seconds receipts are kept after their decision,
        /// apart from the alerts' own retention.
        public var receiptRetentionSeconds: Double

        public init(
            maxWaitSeconds: Int = 60, maxWaiters: Int = 20_000, maxWaitersPerToken: Int = .max, retentionSeconds: Double = 604_800,
            signingSecret: String? = nil, alertmanager: AlertmanagerSettings? = nil, callbackDeny: DenyList? = nil,
            retentionMax: Int = Engine.Settings.defaultRetentionMax, maxPendingDeliveriesPerClient: Int = 10_000,
            retentionMaxBytesPerClient: Int = Engine.Settings.defaultRetentionMaxBytesPerClient,
            retentionMaxBytes: Int = Engine.Settings.defaultRetentionMaxBytes,
            push: PushSettings? = nil, receiptRetentionSeconds: Double = Engine.Settings.defaultReceiptRetentionSeconds
        ) {
            self.push = push
            self.receiptRetentionSeconds = receiptRetentionSeconds
            self.retentionMaxBytesPerClient = retentionMaxBytesPerClient
            self.retentionMaxBytes = retentionMaxBytes
            self.maxPendingDeliveriesPerClient = maxPendingDeliveriesPerClient
            self.maxWaitSeconds = maxWaitSeconds
            self.maxWaiters = maxWaiters
            self.maxWaitersPerToken = maxWaitersPerToken
            self.retentionSeconds = retentionSeconds
            self.retentionMax = retentionMax
            self.signingSecret = signingSecret
            self.alertmanager = alertmanager
            self.callbackDeny = callbackDeny
        }

        /// The default of `alerts.retention_max`: 100 000 terminal alerts per client, about
        /// 100 MB of store for alerts of a few hundred bytes (bench/RESULTS.md, issue 27).
        public static let defaultRetentionMax = 100_000
        /// The default of `alerts.retention_max_bytes_per_client`: 256 MiB, above what
        /// `retention_max` alerts of a few hundred bytes take (so it binds only clients of
        /// large alerts: about 4 400 of the largest the API allows, with their events).
        public static let defaultRetentionMaxBytesPerClient = 256 << 20
        /// The default of `alerts.retention_max_bytes`: 2 GiB for every client together, a
        /// week of one ordinary alert a second with a callback each, and a disk that a
        /// small VM's state directory holds.
        public static let defaultRetentionMaxBytes = 2 << 30
        /// The default of `receipts.retention`: 400 days, a year and a margin for the audit
        /// that looks at it.
        public static let defaultReceiptRetentionSeconds: Double = 400 * 86_400
    }

    /// What the engine tells the metrics (counts only; no client id is ever a label).
    public struct Observer: Sendable {
        public var created: @Sendable () -> Void
        public var decided: @Sendable (AlertState) -> Void
        /// An escalation step committed (SPEC §12): the alert's client, and the client it was also queued on.
        public var escalated: @Sendable (_ client: String, _ to: String) -> Void

        public init(
            created: @escaping @Sendable () -> Void = {}, decided: @escaping @Sendable (AlertState) -> Void = { _ in },
            escalated: @escaping @Sendable (_ client: String, _ to: String) -> Void = { _, _ in }
        ) {
            self.created = created
            self.decided = decided
            self.escalated = escalated
        }
    }

    let store: any AlertStore
    let clock: any WallClock
    /// The validation rules; fixed once alertd runs.
    public let rules: AlertRules
    let logger: Logger
    let observer: Observer

    // The locks every request takes are NIO's pthread-mutex boxes, not
    // Synchronization's `Mutex`: on Linux that is a priority-inheritance futex
    // which hands ownership to a sleeping waiter, and with more busy threads than
    // CPUs (a CPU quota) requests queued behind preempted owners. The kernel's
    // handover is also invisible to ThreadSanitizer, which then reports a race on
    // every contended `Mutex`; alertd uses no `Mutex` anywhere.
    let waiters = NIOLockedValueBox(Waiters())
    let registry: NIOLockedValueBox<WebhookRegistry>
    /// Re-reads of the API's webhooks that other instances' changes ask for: whether one
    /// runs, and whether another must follow it (`Changes.swift`).
    let webhookRereads = NIOLockedValueBox((running: false, again: false))
    let outbox: Outbox
    /// Push subscriptions by client (SPEC §11), and the VAPID key once read from the store.
    let pushRegistry = NIOLockedValueBox(PushRegistry())
    let vapid = NIOLockedValueBox<VAPID?>(nil)
    /// VAPID `Authorization`s by push service origin, and when each was signed (``preparePush``).
    let vapidTokens = NIOLockedValueBox<[String: (authorization: String, madeAt: Int64)]>([:])
    /// Looks up a callback host for the check at post and registration (``refusedTarget(_:)``).
    let lookUp: TargetLookup?
    /// A client's callback deliveries not yet made (``Settings/maxPendingDeliveriesPerClient``).
    let backlog: @Sendable (String) -> Int
    /// Takes cancelled deliveries (by id) out of the delivery worker's queue.
    let cancelDeliveries: @Sendable ([String]) -> Void
    let alarm = Alarm()
    /// The rounds of the store's deadlines, one at a time (``fireDeadlines()``, ``fireDue()``).
    let deadlineRounds = RoundGate()
    let timers: Timers
    /// Work started here and not waited for, run by ``EngineJobsService``.
    let jobs = Jobs()
    private let _settings: NIOLockedValueBox<Settings>
    private let draining = Atomic<Bool>(false)

    /// Waiter limits, retention and the signing secret; read fresh each time (a reload changes them).
    var settings: Settings { _settings.withLockedValue { $0 } }

    /// - Parameters:
    ///   - webhooks: the config file's webhooks; the API's are read from the store.
    ///   - deliver: takes the deliveries of committed events (the delivery worker's queue).
    ///   - backlog: a client's callback deliveries waiting or in flight (the worker's count).
    ///   - lookUp: resolves a callback host for the check at post and registration; nil:
    ///     names are judged at delivery only.
    ///   - cancel: takes back deliveries the store cancelled (a webhook removed) from the worker's queue.
    public init(
        store: any AlertStore, clock: any WallClock, rules: AlertRules, settings: Settings, configWebhooks: [Webhook] = [],
        logger: Logger, observer: Observer = Observer(), deliver: @escaping @Sendable ([PendingDelivery]) -> Void = { _ in },
        backlog: @escaping @Sendable (String) -> Int = { _ in 0 }, lookUp: TargetLookup? = nil,
        cancel: @escaping @Sendable ([String]) -> Void = { _ in }
    ) {
        self.lookUp = lookUp
        self.cancelDeliveries = cancel
        self.backlog = backlog
        self.store = store
        self.clock = clock
        self.rules = rules
        self.logger = logger
        self.observer = observer
        self._settings = NIOLockedValueBox(settings)
        self.timers = Timers(alarm: alarm)
        self.outbox = Outbox(deliver: deliver)
        self.registry = NIOLockedValueBox(WebhookRegistry(config: configWebhooks, api: []))
    }

    /// Reads what the engine keeps at hand — the API's webhooks, every client's
    /// displayed alert. Call once, before serving; the changes other processes make
    /// meanwhile are followed once ``EngineJobsService`` runs (``followChanges()``).
    public func start() async throws(EngineError) {
        let api = try await store.webhooks()
        registry.withLockedValue { $0.replaceAPIWebhooks(with: api) }
        try await startPush()
        try await republish(nil)
    }

    // MARK: - Lifecycle

    /// Stops taking changes and answers every parked waiter with the state it waits on.
    public func drain() {
        draining.store(true, ordering: .relaxed)
        let parked = waiters.withLockedValue { $0.takeAll() }
        for waiter in parked { answer(waiter) }
        timers.cancelAll()
    }

    public var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// Ready: not shutting down, and the store's last probe found it writable.
    public var isReady: Bool { !isDraining && store.isHealthy }

    /// Probes the store (the readiness service calls this every few seconds).
    /// After failed commits, once the store takes writes again and rebuilt its
    /// state, the API's webhooks and every display are read back and published.
    public func checkStore() async {
        guard await store.checkHealth() == .recovered else { return }
        await reread()
    }

    /// Reads back the API's webhooks and every display (after a failed commit, or
    /// notifications missed), and wakes the deadline loop.
    func reread() async {
        do {
            let api = try await store.webhooks()
            registry.withLockedValue { $0.replaceAPIWebhooks(with: api) }
            try await republish(nil)
        } catch {
            logger.error("the store cannot be read back", metadata: ["error": "\(error)"])
        }
        alarm.ring(ifBefore: 0)
    }

    /// The engine's clock.
    public func now() -> Timestamp { clock.now() }

    /// Why changes are refused right now, if they are (the store refuses its own).
    func refusal() -> EngineError? {
        isDraining ? EngineError.stopping : nil
    }

    // MARK: - Settings (a reload)

    /// Applies a reloaded config's waiter limits and retention. The signing
    /// secret is kept: events already written were signed for their targets.
    public func update(
        maxWaitSeconds: Int, maxWaiters: Int, maxWaitersPerToken: Int, retentionSeconds: Double,
        retentionMax: Int = Engine.Settings.defaultRetentionMax, maxPendingDeliveriesPerClient: Int = 10_000,
        retentionMaxBytesPerClient: Int = Engine.Settings.defaultRetentionMaxBytesPerClient,
        retentionMaxBytes: Int = Engine.Settings.defaultRetentionMaxBytes
    ) {
        _settings.withLockedValue {
            $0.retentionMax = retentionMax
            $0.retentionMaxBytesPerClient = retentionMaxBytesPerClient
            $0.retentionMaxBytes = retentionMaxBytes
            $0.maxPendingDeliveriesPerClient = maxPendingDeliveriesPerClient
            $0.maxWaitSeconds = maxWaitSeconds
            $0.maxWaiters = maxWaiters
            $0.maxWaitersPerToken = maxWaitersPerToken
            $0.retentionSeconds = retentionSeconds
        }
    }

    /// A reloaded `callbacks.deny` and `callbacks.allow`, checked from the next post or
    /// registration on (the delivery worker takes its own copy).
    public func update(callbackDeny: DenyList) {
        _settings.withLockedValue { $0.callbackDeny = callbackDeny }
    }

    /// New per-client settings from a reload: limits apply from the next post; a
    /// changed policy reorders its queue and, when that displays another alert,
    /// the change is committed and published like any other. Returns once it was.
    public func reconfigure(_ settings: QueueSettings) async {
        for result in await store.reconfigure(settings, now: clock.now(), events: { [self] in events(for: $0) }) {
            switch result {
            case .success(let committed): published(committed)
            case .failure(let error):
                logger.warning("a queue reordered for its new policy was not committed", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: - Publishing

    /// After a commit: publish displays, wake waiters, hand deliveries over, count.
    func published<Value>(_ committed: Committed<Value>) {
        outbox.hand(committed.deliveries)
        // A new display (a dismissal) or a new alert (an expiry) may be due sooner than the loop sleeps.
        if !committed.change.saved.isEmpty { deadlineAdded() }
        for alert in committed.change.decided { observer.decided(alert.state) }
        for taken in committed.change.escalated {
            guard let alert = committed.change.saved.last(where: { $0.id == taken.id }) else { continue }
            observer.escalated(alert.client, taken.client)
            logger.info(
                "alert escalated",
                metadata: ["alert": "\(alert.id)", "client": "\(alert.client)", "to": "\(taken.client)", "step": "\(taken.step)"])
        }
        let displays = committed.displays.map {
            (client: $0.client, display: display(of: $0.alert, version: committed.versions[$0.client]?.to))
        }
        let woken: [Waiters.Parked] = waiters.withLockedValue { waiters in
            var woken: [Waiters.Parked] = []
            for (client, display) in displays {
                woken += waiters.publish(client: client, display).map(Waiters.Parked.current)
            }
            for (client, step) in committed.versions where !displays.contains(where: { $0.client == client }) {
                waiters.advance(client: client, from: step.from, to: step.to)
            }
            for alert in committed.change.decided {
                woken += waiters.takeAlertWaiters(alert.id).map { Waiters.Parked.alert($0, alert, committed.receipts[alert.id]) }
            }
            return woken
        }
        for waiter in woken { answer(waiter) }
    }

    /// Reads the displayed alert of `clients` (nil: every client) and publishes them.
    func republish(_ clients: [String]?) async throws(EngineError) {
        publish(try await store.displays(of: clients))
    }

    /// Publishes displays a shared store read with their versions (older ones than published change nothing).
    func publish(_ displays: [VersionedDisplay]) {
        publish(encoded: displays.map { (client: $0.client, display: display(of: $0.alert, version: $0.version)) })
    }

    /// Publishes encoded displays and answers the `current` waiters they wake.
    func publish(encoded displays: [(client: String, display: Waiters.Display)]) {
        guard !displays.isEmpty else { return }
        let woken = waiters.withLockedValue { waiters in displays.flatMap { waiters.publish(client: $0.client, $0.display) } }
        for waiter in woken { answer(.current(waiter)) }
    }

    /// Makes the published displays of `clients` current (SPEC §9): with a shared store,
    /// those whose version the database has moved past are read again and published, in
    /// one round trip. A store that publishes every commit has nothing to read.
    func synchronize(_ clients: [String]) async throws(EngineError) {
        guard !store.publishesEveryCommit, !clients.isEmpty else { return }
        let known = waiters.withLockedValue { waiters in clients.map { (client: $0, version: waiters.display($0).version) } }
        publish(try await store.refreshDisplays(known))
    }

    private func display(of alert: Alert?, version: Int64?) -> Waiters.Display {
        Waiters.Display(id: alert?.id, body: alert?.json(position: 0), version: version, votes: alert?.votes.count ?? 0)
    }
}
