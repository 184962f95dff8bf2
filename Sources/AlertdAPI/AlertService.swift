import AlertdCore
import AlertdDelivery
import AlertdHTTP
import AlertdStore
import AlertdWire
import CoreMetrics
import Crypto
import Foundation
import Logging
import struct NIOConcurrencyHelpers.NIOLockedValueBox

/// The daemon's live state and every operation on it.
///
/// Order and visibility, the two rules everything here keeps:
/// - A mutation happens on the board under its lock and its writes are submitted
///   to the group committer under the same lock, so the store applies them in
///   board order. The request is answered from the commit's completion.
/// - Readers see committed state only: the board keeps the last committed version
///   of alerts whose writes are in flight, and the displayed alert of each client
///   (what `current` and its waiters see) is published from commit completions.
final class AlertService: Sendable {
    struct Settings: Sendable {
        var maxWaitSeconds: Int
        var maxWaiters: Int
        /// Waiters one token may have parked at once.
        var maxWaitersPerToken: Int = .max
        var retentionSeconds: Double
        /// Signs deliveries to an alert's `callback_url`; without it no alert may have one.
        var signingSecret: String? = nil
    }

    /// The board and the idempotency keys whose alert is not committed yet.
    struct State: Sendable {
        var board: AlertBoard
        var pendingKeys: [KeyRef: (alertID: AlertID, digest: [UInt8])] = [:]
        var draining = false
        /// Registered webhooks by client, config ones first.
        var webhooks: [String: [Webhook]] = [:]
        var webhookIDs = AlertIDGenerator()
        var eventIDs = CallbackEventIDGenerator()
        var deliveryIDs = AlertIDGenerator()
    }

    struct KeyRef: Hashable, Sendable {
        var client: String
        var key: String
    }

    /// The locks every request takes are NIO's pthread-mutex boxes, not Synchronization's
    /// `Mutex`: on Linux that is a priority-inheritance futex which hands ownership to a
    /// sleeping waiter, and with more busy threads than CPUs (a CPU quota) requests queued
    /// behind preempted owners — 8 HTTP threads on 2 vCPUs served a third of 2 threads.
    let state: NIOLockedValueBox<State>
    let hub: NIOLockedValueBox<Hub>
    let committer: GroupCommitter
    let store: any AlertStore
    let clock: any WallClock
    private let _settings: NIOLockedValueBox<Settings>
    /// Waiter limits and retention change on reload; read them fresh each time.
    var settings: Settings { _settings.withLockedValue { $0 } }
    /// The board's validation rules; fixed once alertd runs, so posts read them without the lock.
    let rules: AlertRules
    let logger: Logger
    let timer: DeadlineTimer
    /// Counts created and decided alerts.
    let metrics: AlertdMetrics?
    /// Takes the deliveries of committed events (the delivery worker's queue).
    let outbox: @Sendable ([PendingDelivery]) -> Void
    /// Set when a commit failed: memory may then hold changes the store lacks,
    /// so no change is taken until ``recover()`` rebuilt memory from the store.
    let failure: FailureFlag
    private let ticker = Ticker()

    init(
        board: AlertBoard, store: any AlertStore, committer: GroupCommitter, clock: any WallClock, settings: Settings,
        failure: FailureFlag, webhooks: [Webhook] = [], logger: Logger,
        outbox: @escaping @Sendable ([PendingDelivery]) -> Void = { _ in }, metrics: AlertdMetrics? = nil
    ) {
        self.metrics = metrics
        self.failure = failure
        self.outbox = outbox
        self.rules = board.rules
        var state = State(board: board)
        state.webhooks = Self.byClient(webhooks)
        self.state = NIOLockedValueBox(state)
        self.hub = NIOLockedValueBox(Hub())
        self.store = store
        self.committer = committer
        self.clock = clock
        self._settings = NIOLockedValueBox(settings)
        self.logger = logger
        self.timer = DeadlineTimer(name: "alertd-waiters")
    }

    // MARK: - Start and stop

    /// Publishes every client's displayed alert (the board holds committed state
    /// after a restore) and starts the deadline ticker.
    func start() {
        let displays = state.withLockedValue { state in
            state.board.clients.map { ($0, state.board.displayed(on: $0)) }
        }
        hub.withLockedValue { hub in
            for (client, alert) in displays { _ = hub.publish(client: client, alert: alert) }
        }
        let thread = Thread { [self] in runTicker() }
        thread.name = "alertd-deadlines"
        thread.start()
    }

    /// Stops taking changes and answers every parked waiter with the state it waits on.
    func drain() {
        state.withLockedValue { $0.draining = true }
        ticker.stop()
        let parked = hub.withLockedValue { $0.takeAll() }
        for waiter in parked { answer(waiter) }
    }

    func stopTimers() { timer.stop() }

    var isDraining: Bool { state.withLockedValue { $0.draining } }

    // MARK: - Posting

    func post(
        client: String, body: [UInt8], idempotencyKey: String?,
        respond: @escaping @Sendable (Result<(Alert, created: Bool), Problem>) -> Void
    ) {
        let value: JSONValue
        do {
            value = try APIHandler.parseJSON(body)
        } catch {
            return respond(.failure(error))
        }
        let draft: AlertDraft
        switch AlertDraft.validate(value, rules: rules) {
        case .success(let valid): draft = valid
        case .failure(let invalid):
            var problem = Problem(
                .invalidAlert, invalid.errors.count == 1 ? "1 field is invalid" : "\(invalid.errors.count) fields are invalid")
            problem.errors = invalid.errors
            return respond(.failure(problem))
        }
        if draft.callbackURL != nil, settings.signingSecret == nil {
            var problem = Problem(.invalidAlert, "1 field is invalid")
            problem.errors = [
                FieldError(field: "callback_url", reason: "this daemon has no callbacks.signing_secret to sign callbacks with")
            ]
            return respond(.failure(problem))
        }
        let digest = idempotencyKey.map { _ in Array(SHA256.hash(data: body)) }
        let now = clock.now()

        // Everything, the store lookup of a key included, under the board lock:
        // two posts with one key can never both create. Writes are submitted
        // under it too, so the store applies them in board order.
        let failure: Problem? = state.withLockedValue { state in
            if let refusal = refusal(state) { return refusal }
            var keyRef: KeyRef?
            if let idempotencyKey, let digest {
                let ref = KeyRef(client: client, key: idempotencyKey)
                var existing = state.pendingKeys[ref]
                if existing == nil {
                    do {
                        if let record = try store.idempotency(client: client, key: idempotencyKey),
                            record.createdAt.milliseconds > now.milliseconds - 86_400_000
                        {
                            existing = (record.alertID, record.bodyDigest)
                        }
                    } catch {
                        return Problem(.unavailable, "the store cannot be read: \(error)")
                    }
                }
                if let existing {
                    guard existing.digest == digest else {
                        return Problem(.idempotencyMismatch, "Idempotency-Key \(idempotencyKey) was used for a different body")
                    }
                    // Answered once everything before it, the original post included, is committed.
                    committer.submit([]) { [self] result in
                        if case .failure(let error) = result { return respond(.failure(Self.storeProblem(error))) }
                        switch lookup(existing.alertID, client: client) {
                        case .success(let alert?): respond(.success((alert, created: false)))
                        case .success(nil): respond(.failure(Problem(.notFound, "the alert of this Idempotency-Key is gone (purged)")))
                        case .failure(let problem): respond(.failure(problem))
                        }
                    }
                    return nil
                }
                keyRef = ref
            }
            let alert: Alert
            let change: BoardChange
            do throws(BoardError) {
                (alert, change) = try state.board.post(draft, to: client, now: now)
            } catch {
                return Problem(error)
            }
            var writes: [StoreWrite] = change.newClients.map { .client($0, createdAt: now) }
            writes += change.saved.map { .alert($0) }
            if let keyRef, let digest {
                writes.append(
                    .idempotency(IdempotencyRecord(client: client, key: keyRef.key, alertID: alert.id, bodyDigest: digest, createdAt: now)))
                state.pendingKeys[keyRef] = (alert.id, digest)
            }
            if let next = state.board.nextDeadline { ticker.poke(at: next) }
            let displays = Self.displays(change, state.board)
            committer.submit(writes) { [self, keyRef] result in
                if case .failure(let error) = result { return respond(.failure(Self.storeProblem(error))) }
                let visible = finish(change, displays: displays) { state in
                    if let keyRef { state.pendingKeys[keyRef] = nil }
                    return state.board.alert(alert.id) ?? alert
                }
                metrics?.alertsCreated.increment()
                respond(.success((visible, created: true)))
            }
            return nil
        }
        if let failure { respond(.failure(failure)) }
    }

    // MARK: - Choosing and withdrawing

    enum Decision: Sendable {
        case choose(ButtonSelection)
        case withdraw
    }

    func decide(
        _ decision: Decision, id: AlertID, client: String, by decider: String?, requestID: String? = nil,
        respond: @escaping @Sendable (Result<Alert, Problem>) -> Void
    ) {
        let now = clock.now()
        enum Outcome {
            case done
            case failed(Problem)
            case stored
        }
        // Writes (and barriers) are submitted under the board lock: store order is board order.
        let outcome: Outcome = state.withLockedValue { state in
            if let refusal = refusal(state) { return .failed(refusal) }
            switch state.board.visible(id) {
            case .notYetCommitted:
                return .failed(Problem(.notFound, "no alert \(id) on client \(client)"))
            case .unknown:
                return .stored
            case .alert:
                do throws(BoardError) {
                    let alert: Alert
                    let change: BoardChange
                    switch decision {
                    case .choose(let selection):
                        (alert, change) = try state.board.choose(selection, for: id, on: client, by: decider, now: now)
                    case .withdraw:
                        (alert, change) = try state.board.withdraw(id, on: client, by: decider, now: now)
                    }
                    if change.saved.isEmpty {
                        // A safe retry of a decision that may still be committing: answer
                        // after it, and only if it did commit.
                        committer.submit([]) { [self] result in
                            if case .failure(let error) = result { return respond(.failure(Self.storeProblem(error))) }
                            if let refusal = storeRefusal { return respond(.failure(refusal)) }
                            switch lookup(id, client: client) {
                            case .success(let stored?) where stored.state == alert.state: respond(.success(stored))
                            case .success: respond(.failure(Problem(.unavailable, "the decision on alert \(id) was not committed")))
                            case .failure(let problem): respond(.failure(problem))
                            }
                        }
                        return .done
                    }
                    if let next = state.board.nextDeadline { ticker.poke(at: next) }
                    let displays = Self.displays(change, state.board)
                    submitDecision(writes(for: change, &state, now: now, requestID: requestID)) { [self] result in
                        if case .failure(let error) = result { return respond(.failure(Self.storeProblem(error))) }
                        finish(change, displays: displays) { _ in () }
                        respond(.success(alert))
                    }
                    return .done
                } catch  where error.code == .alreadyDecided {
                    // The decision that came first may still be committing: answer
                    // once it is, with the alert as committed (or 503 if it failed).
                    committer.submit([]) { [self] result in
                        if case .failure(let failed) = result { return respond(.failure(Self.storeProblem(failed))) }
                        if let refusal = storeRefusal { return respond(.failure(refusal)) }
                        switch lookup(id, client: client) {
                        case .success(let stored?) where stored.state.isTerminal:
                            respond(.failure(Problem(BoardError(.alreadyDecided, error.detail, alert: stored))))
                        case .success: respond(.failure(Problem(.unavailable, "the decision on alert \(id) was not committed")))
                        case .failure(let problem): respond(.failure(problem))
                        }
                    }
                    return .done
                } catch {
                    return .failed(Problem(error))
                }
            }
        }
        switch outcome {
        case .done:
            break
        case .failed(let problem):
            respond(.failure(problem))
        case .stored:
            // Decided and committed long ago: the repeat rules apply to the stored alert.
            switch lookup(id, client: client) {
            case .failure(let problem): respond(.failure(problem))
            case .success(nil): respond(.failure(Problem(.notFound, "no alert \(id) on client \(client)")))
            case .success(let alert?):
                do throws(BoardError) {
                    switch decision {
                    case .choose(let selection): respond(.success(try AlertBoard.repeatChoice(selection, on: alert)))
                    case .withdraw: respond(.success(try AlertBoard.repeatWithdraw(on: alert)))
                    }
                } catch {
                    respond(.failure(Problem(error)))
                }
            }
        }
    }

    // MARK: - Deadlines

    /// Fires due dismissals and expiries; returns when the next one is due.
    func fireDeadlines() -> Timestamp? {
        let now = clock.now()
        let (change, next): (BoardChange, Timestamp?) = state.withLockedValue { state in
            if refusal(state) != nil { return (BoardChange(), nil) }
            let change = state.board.fireDeadlines(now: now)
            let displays = Self.displays(change, state.board)
            if !change.saved.isEmpty {
                submitDecision(writes(for: change, &state, now: now)) { [self] result in
                    if case .failure = result { return }
                    finish(change, displays: displays) { _ in () }
                }
            }
            return (change, state.board.nextDeadline)
        }
        if !change.decided.isEmpty {
            logger.debug("deadlines fired", metadata: ["alerts": "\(change.decided.count)"])
        }
        return next
    }

    /// New client settings from a reload: limits apply from the next post; a changed
    /// policy reorders its queue and, when it displays another alert, that change is
    /// committed and published like any other.
    func reconfigure(_ settings: QueueSettings) {
        let now = clock.now()
        state.withLockedValue { state in
            let change = state.board.reconfigure(settings, now: now)
            let displays = Self.displays(change, state.board)
            guard !change.saved.isEmpty else { return }
            submitDecision(writes(for: change, &state, now: now)) { [self] result in
                if case .failure = result { return }
                finish(change, displays: displays) { _ in () }
            }
        }
    }

    private func runTicker() {
        while ticker.sleep(until: fireDeadlines(), clock: clock) {}
    }

    /// Deletes terminal alerts past retention and keys past 24 h; then forgets
    /// the clients left with nothing.
    func purge() async {
        let now = clock.now()
        let writes: [StoreWrite] = [
            .purge(decidedBefore: now.adding(seconds: -settings.retentionSeconds), keysBefore: now.adding(seconds: -86_400))
        ]
        let committed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            state.withLockedValue { state in
                guard refusal(state) == nil else { return continuation.resume(returning: false) }
                committer.submit(writes) { result in
                    if case .success = result { continuation.resume(returning: true) } else { continuation.resume(returning: false) }
                }
            }
        }
        if committed { forgetIdleClients() }
    }

    // MARK: - Reading

    /// An alert as readers may see it: memory first, then the store.
    func lookup(_ id: AlertID, client: String) -> Result<Alert?, Problem> {
        let visible = state.withLockedValue { $0.board.visible(id) }
        switch visible {
        case .alert(let alert):
            return .success(alert.client == client ? alert : nil)
        case .notYetCommitted:
            return .success(nil)
        case .unknown:
            do {
                let alert = try store.alert(id)
                return .success(alert?.client == client ? alert : nil)
            } catch {
                return .failure(Problem(.unavailable, "the store cannot be read: \(error)"))
            }
        }
    }

    /// The position of one alert: 0 for the (committed) displayed alert, else
    /// its place in the live queue, O(log n). While a change ahead of it is still
    /// committing, that may count it a moment early; lists count exactly.
    func position(of alert: Alert) -> Int? {
        guard alert.isPending else { return nil }
        if alert.state == .displayed { return 0 }
        return state.withLockedValue { $0.board.position(of: alert) }
    }

    func render(_ alert: Alert) -> [UInt8] {
        Rendering.alert(alert, position: alert.isPending ? position(of: alert) : nil)
    }

    /// `GET .../alerts/{id}?wait=N`.
    func awaitAlert(
        _ id: AlertID, client: String, wait: Int, owner: String? = nil, respond: @escaping @Sendable (Result<Alert, Problem>) -> Void
    ) {
        let waitSeconds = min(wait, _settings.withLockedValue { $0.maxWaitSeconds })
        enum Outcome {
            case now(Result<Alert, Problem>)
            case stored
            case parked
            /// Kept small (no Problem inside): this enum is built on every read.
            case tooMany(perToken: Bool)
        }
        let outcome: Outcome = hub.withLockedValue { hub in
            let visible = state.withLockedValue { $0.board.visible(id) }
            let alert: Alert
            switch visible {
            case .alert(let found) where found.client == client:
                alert = found
            case .alert, .notYetCommitted:
                return .now(.failure(Problem(.notFound, "no alert \(id) on client \(client)")))
            case .unknown:
                // Not in memory: decided and committed (it cannot change any more), or unknown.
                return .stored
            }
            if alert.state.isTerminal || waitSeconds == 0 || hub.draining { return .now(.success(alert)) }
            if let perToken = Self.waitersFull(hub, owner: owner, self.settings) { return .tooMany(perToken: perToken) }
            let waiterID = hub.nextID()
            let token = timer.schedule(after: Double(waitSeconds)) { [self] in
                if let waiter = self.hub.withLockedValue({ $0.removeAlertWaiter(id, waiterID) }) { answer(waiter) }
            }
            hub.addAlertWaiter(
                id, Hub.AlertWaiter(id: waiterID, alertID: id, client: client, owner: owner, token: token, respond: respond))
            return .parked
        }
        switch outcome {
        case .now(let result): respond(result)
        case .stored:
            respond(
                lookup(id, client: client).flatMap { found in
                    found.map { .success($0) } ?? .failure(Problem(.notFound, "no alert \(id) on client \(client)"))
                })
        case .parked: break
        case .tooMany(let perToken): respond(.failure(Self.tooManyWaiters(perToken: perToken, owner: owner, settings)))
        }
    }

    /// `GET .../alerts/current?wait=N&after=ID`: the published displayed alert
    /// (encoded once per display change), or a parked waiter.
    func awaitCurrent(
        client: String, wait: Int, after: AlertID?, owner: String? = nil,
        respond: @escaping @Sendable (Result<[UInt8]?, Problem>) -> Void
    ) {
        let waitSeconds = min(wait, _settings.withLockedValue { $0.maxWaitSeconds })
        enum Outcome {
            case now([UInt8]?)
            case parked
            /// Kept small (no Problem inside): this enum is built on every read.
            case tooMany(perToken: Bool)
        }
        let outcome: Outcome = hub.withLockedValue { hub in
            let display = hub.display(client)
            if waitSeconds == 0 || display.id != after || hub.draining { return .now(display.body) }
            if let perToken = Self.waitersFull(hub, owner: owner, self.settings) { return .tooMany(perToken: perToken) }
            let waiterID = hub.nextID()
            let token = timer.schedule(after: Double(waitSeconds)) { [self] in
                if let waiter = self.hub.withLockedValue({ $0.removeCurrentWaiter(client, waiterID) }) { answer(waiter) }
            }
            hub.addCurrentWaiter(
                client, Hub.CurrentWaiter(id: waiterID, client: client, owner: owner, after: after, token: token, respond: respond))
            return .parked
        }
        switch outcome {
        case .now(let body): respond(.success(body))
        case .parked: break
        case .tooMany(let perToken): respond(.failure(Self.tooManyWaiters(perToken: perToken, owner: owner, settings)))
        }
    }

    /// nil while a waiter may park; else whether the token's share (true) or
    /// every waiter slot (false) is taken.
    private static func waitersFull(_ hub: Hub, owner: String?, _ settings: Settings) -> Bool? {
        if hub.count >= settings.maxWaiters { return false }
        if let owner, hub.count(of: owner) >= settings.maxWaitersPerToken { return true }
        return nil
    }

    /// 503 too-many-waiters, for every slot taken or the token's share.
    private static func tooManyWaiters(perToken: Bool, owner: String?, _ settings: Settings) -> Problem {
        guard perToken, let owner else { return tooManyWaiters(settings.maxWaiters) }
        var problem = Problem(
            .tooManyWaiters,
            "token \(owner) has \(settings.maxWaitersPerToken) requests waiting, its limit (limits.max_waiters_per_token); retry later")
        problem.headers = [("Retry-After", "1")]
        return problem
    }

    struct ClientSummary {
        var client: String
        var pending: Int
        var displayed: AlertID?
    }

    /// One page of clients, by id, after `after`, among those `include` accepts;
    /// and whether more follow. Pending counts are those readers see (committed
    /// versions), kept by the board: no alert is walked.
    func clients(after: String? = nil, limit: Int = .max, where include: (String) -> Bool = { _ in true }) -> (
        page: [ClientSummary], more: Bool
    ) {
        let (counts, more) = state.withLockedValue { state in
            let (page, more) = state.board.clients(after: after, limit: limit, where: include)
            return (page.map { ($0, state.board.visiblePendingCount(on: $0)) }, more)
        }
        let page = hub.withLockedValue { hub in
            counts.map { ClientSummary(client: $0.0, pending: $0.1, displayed: hub.display($0.0).id) }
        }
        return (page, more)
    }

    /// Forgets clients that hold nothing any more (nothing pending, nothing
    /// retained): `GET /v1/clients` stops listing them and they no longer count
    /// against `limits.max_clients`. A later post creates the client again.
    func forgetIdleClients() {
        let candidates = state.withLockedValue { $0.board.beginIdleSweep() }
        guard !candidates.isEmpty else { return }
        let idle: [String]
        do {
            idle = try store.clientsWithoutDecidedAlerts(among: candidates)
        } catch {
            logger.warning("idle clients not checked: the store cannot be read", metadata: ["error": "\(error)"])
            return
        }
        let forgotten = state.withLockedValue { state -> [String] in
            guard refusal(state) == nil else { return [] }
            let forgotten = state.board.forget(idle: idle)
            if !forgotten.isEmpty { committer.submit([.deleteClients(forgotten)]) { _ in } }
            return forgotten
        }
        guard !forgotten.isEmpty else { return }
        hub.withLockedValue { $0.forget(forgotten) }
        logger.debug("idle clients forgotten", metadata: ["clients": "\(forgotten.count)"])
    }

    /// Pending alerts on every client.
    var pendingTotal: Int { state.withLockedValue { $0.board.pendingTotal } }
    /// Requests parked right now.
    var waiterCount: Int { hub.withLockedValue { $0.count } }

    func policy(of client: String) -> QueuePolicy {
        state.withLockedValue { $0.board.settings[client].policy }
    }

    /// Pending alerts (visible versions, with positions) in display order.
    func pendingAlerts(on client: String) -> [(Alert, Int?)] {
        state.withLockedValue { state in
            var visible: [(Alert, Int?)] = []
            for latest in state.board.pending(on: client) {
                guard case .alert(let alert) = state.board.visible(latest.id), alert.isPending else { continue }
                visible.append((alert, visible.count))
            }
            return visible
        }
    }

    // MARK: - Webhooks

    /// Registers a webhook; `secret` nil: a new `whsec_` secret is generated.
    func createWebhook(client: String, url: String, secret: String?, respond: @escaping @Sendable (Result<Webhook, Problem>) -> Void) {
        if let problem = CallbackURL.problem(url) {
            return respond(.failure(Problem(.badRequest, "url \(problem)")))
        }
        if let secret {
            do {
                _ = try WebhookKey(secret: secret)
            } catch {
                return respond(.failure(Problem(.badRequest, "secret: \(error)")))
            }
        }
        let now = clock.now()
        let outcome: Result<Webhook, Problem> = state.withLockedValue { state in
            if let refusal = refusal(state) { return .failure(refusal) }
            let webhook = Webhook(
                id: Webhook.newID(&state.webhookIDs, at: now), client: client, url: url,
                secret: secret ?? WebhookSignature.generateSecret(), createdAt: now, source: .api)
            state.webhooks[client, default: []].append(webhook)
            committer.submit([.webhook(webhook)]) { result in
                switch result {
                case .success: respond(.success(webhook))
                case .failure(let error): respond(.failure(Self.storeProblem(error)))
                }
            }
            return .success(webhook)
        }
        if case .failure(let problem) = outcome { respond(.failure(problem)) }
    }

    func webhooks(of client: String) -> [Webhook] {
        state.withLockedValue { $0.webhooks[client] ?? [] }
    }

    /// Removes an API webhook; config ones stay (403), unknown ones are 404.
    func deleteWebhook(client: String, id: String, respond: @escaping @Sendable (Result<Void, Problem>) -> Void) {
        let outcome: Problem? = state.withLockedValue { state in
            if let refusal = refusal(state) { return refusal }
            guard let index = state.webhooks[client]?.firstIndex(where: { $0.id == id }) else {
                return Problem(.notFound, "no webhook \(id) on client \(client)")
            }
            guard state.webhooks[client]![index].source == .api else {
                return Problem(.forbidden, "webhook \(id) is defined in the config file; remove it there")
            }
            state.webhooks[client]!.remove(at: index)
            committer.submit([.deleteWebhook(id: id)]) { result in
                switch result {
                case .success: respond(.success(()))
                case .failure(let error): respond(.failure(Self.storeProblem(error)))
                }
            }
            return nil
        }
        if let outcome { respond(.failure(outcome)) }
    }

    // MARK: - Reload

    /// Applies a reloaded config's waiter limits and retention (the signing
    /// secret is kept: events already written were signed for their targets).
    func update(maxWaitSeconds: Int, maxWaiters: Int, maxWaitersPerToken: Int = .max, retentionSeconds: Double) {
        _settings.withLockedValue {
            $0.maxWaitSeconds = maxWaitSeconds
            $0.maxWaiters = maxWaiters
            $0.maxWaitersPerToken = maxWaitersPerToken
            $0.retentionSeconds = retentionSeconds
        }
    }

    /// Replaces the webhooks of the config file with `webhooks`; those registered
    /// through the API stay. Events already written keep their targets.
    func replaceConfigWebhooks(with webhooks: [Webhook]) {
        state.withLockedValue { state in
            state.webhooks = Self.byClient(webhooks + state.webhooks.values.joined().filter { $0.source == .api })
        }
    }

    /// Webhooks by client, in the order given (config ones first, as everywhere).
    static func byClient(_ webhooks: [Webhook]) -> [String: [Webhook]] {
        var byClient: [String: [Webhook]] = [:]
        for webhook in webhooks { byClient[webhook.client, default: []].append(webhook) }
        return byClient
    }

    // MARK: - Internals

    /// Why changes are refused right now, if they are.
    private func refusal(_ state: State) -> Problem? {
        if state.draining { return Problem(.unavailable, "alertd is shutting down") }
        return storeRefusal
    }

    /// Set while commits fail.
    private var storeRefusal: Problem? {
        failure.failure.map { reason in
            var problem = Problem(.unavailable, "the store takes no writes now (\(reason)); nothing was changed, retry later")
            problem.headers = [("Retry-After", "\(Self.storeRetrySeconds)")]
            return problem
        }
    }

    /// Seconds a client is told to wait after a failed commit.
    static let storeRetrySeconds = 2

    static func storeProblem(_ error: any Error) -> Problem {
        var problem = Problem(.unavailable, "the change could not be committed and was not made: \(error); retry later")
        problem.headers = [("Retry-After", "\(storeRetrySeconds)")]
        return problem
    }

    /// After failed commits, once the store takes a commit again: rebuilds the
    /// board, idempotency keys in flight and the API's webhooks from the store
    /// (memory may hold changes whose commit failed), then takes changes again.
    /// Everything submitted before this fails with the earlier failure.
    func recover() {
        let stored: StoredState
        let storedWebhooks: [Webhook]
        do {
            stored = try store.load()
            storedWebhooks = try store.webhooks()
        } catch {
            logger.error("the store cannot be read back after a failed commit", metadata: ["error": "\(error)"])
            return
        }
        let now = clock.now()
        let displays = state.withLockedValue { state -> [(String, Alert?)]? in
            guard failure.failure != nil else { return nil }
            var board = AlertBoard(settings: state.board.settings, rules: rules, lastID: stored.lastID)
            let normalized = board.restore(clients: stored.clients, pending: stored.pending, now: now)
            state.board = board
            state.pendingKeys = [:]
            let configured = state.webhooks.values.joined().filter { $0.source == .config }
            state.webhooks = Self.byClient(configured + storedWebhooks)
            // From here on submissions are computed on memory that matches the store.
            committer.resume()
            failure.clear()
            if !normalized.saved.isEmpty {
                committer.submit(normalized.saved.map { .alert($0) }) { [self] result in
                    if case .success = result { self.state.withLockedValue { $0.board.committed(normalized) } }
                }
            }
            if let next = state.board.nextDeadline { ticker.poke(at: next) }
            return state.board.clients.map { ($0, state.board.displayed(on: $0)) }
        }
        guard let displays else { return }
        logger.info("commits succeed again: changes are taken", metadata: ["pending": "\(stored.pending.count)"])
        let woken = hub.withLockedValue { hub in displays.flatMap { hub.publish(client: $0.0, alert: $0.1) } }
        for waiter in woken { answer(.current(waiter)) }
    }

    static func tooManyWaiters(_ max: Int) -> Problem {
        var problem = Problem(.tooManyWaiters, "\(max) requests are already waiting; retry later")
        problem.headers = [("Retry-After", "1")]
        return problem
    }

    /// The writes of a change: its alerts, and for each alert it decided, the
    /// event with one delivery per target (§5) — in the same write set, so in
    /// the same transaction as the terminal state.
    private func writes(for change: BoardChange, _ state: inout State, now: Timestamp, requestID: String? = nil) -> [StoreWrite] {
        var writes: [StoreWrite] = change.saved.map { .alert($0) }
        for alert in change.decided {
            var deliveries: [OutboxDelivery] = []
            if let url = alert.callbackURL {
                if let secret = settings.signingSecret {
                    deliveries.append(
                        OutboxDelivery(id: "dl_" + state.deliveryIDs.next(at: now).description, target: url, webhookID: nil, secret: secret)
                    )
                } else {
                    var metadata: Logger.Metadata = ["alert": "\(alert.id)", "client": "\(alert.client)"]
                    if let requestID { metadata["request_id"] = "\(requestID)" }
                    logger.warning("callback_url not called: callbacks.signing_secret is not set", metadata: metadata)
                }
            }
            for webhook in state.webhooks[alert.client] ?? [] {
                deliveries.append(
                    OutboxDelivery(
                        id: "dl_" + state.deliveryIDs.next(at: now).description, target: webhook.url, webhookID: webhook.id,
                        secret: webhook.secret))
            }
            guard !deliveries.isEmpty else { continue }
            let event = CallbackEvent(
                id: state.eventIDs.next(at: now), state: alert.state, timestamp: alert.decidedAt ?? now,
                renderedAlert: Rendering.alert(alert, position: nil))
            writes.append(
                .event(
                    OutboxEvent(
                        id: event.id.description, alertID: alert.id, client: alert.client, type: event.type, createdAt: now,
                        body: event.body, deliveries: deliveries)))
        }
        return writes
    }

    /// Submits the writes of a decision; once they are committed, and before
    /// `completion`, hands the deliveries of their events to the worker.
    private func submitDecision(_ writes: [StoreWrite], completion: @escaping GroupCommitter.Completion) {
        var found: [PendingDelivery] = []
        for case .event(let event) in writes { found += event.pendingDeliveries }
        if found.isEmpty { return committer.submit(writes, completion: completion) }
        committer.submit(writes) { [outbox, deliveries = found] result in
            if case .success = result { outbox(deliveries) }
            completion(result)
        }
    }

    /// The displayed alert of each client whose display the change touched, as of the change.
    private static func displays(_ change: BoardChange, _ board: AlertBoard) -> [(String, Alert?)] {
        change.displayChanged.map { ($0, board.displayed(on: $0)) }
    }

    /// After a commit: make the change visible, publish displays, wake waiters.
    @discardableResult
    private func finish<T>(_ change: BoardChange, displays: [(String, Alert?)], _ also: (inout State) -> T) -> T {
        let value = state.withLockedValue { state -> T in
            state.board.committed(change)
            return also(&state)
        }
        if let metrics { for alert in change.decided { metrics.terminal(alert.state.rawValue) } }
        let woken: [Hub.Parked] = hub.withLockedValue { hub in
            var woken: [Hub.Parked] = []
            for (client, alert) in displays {
                woken += hub.publish(client: client, alert: alert).map(Hub.Parked.current)
            }
            for alert in change.decided {
                woken += hub.takeAlertWaiters(alert.id).map { Hub.Parked.alert($0, alert) }
            }
            return woken
        }
        for waiter in woken { answer(waiter) }
        return value
    }

    /// Answers a parked waiter with what it waited on.
    private func answer(_ waiter: Hub.Parked) {
        switch waiter {
        case .current(let current):
            timer.cancel(current.token)
            let body = hub.withLockedValue { $0.display(current.client).body }
            current.respond(.success(body))
        case .alert(let waiting, let decided):
            timer.cancel(waiting.token)
            if let decided {
                waiting.respond(.success(decided))
            } else {
                waiting.respond(
                    lookup(waiting.alertID, client: waiting.client).flatMap { found in
                        found.map { .success($0) }
                            ?? .failure(Problem(.notFound, "no alert \(waiting.alertID) on client \(waiting.client)"))
                    })
            }
        }
    }
}

/// Sleeps until the board's next deadline; woken early when a sooner one appears.
final class Ticker: @unchecked Sendable {
    // Guarded by `condition`.
    private var wakeAt: Timestamp?
    private var poked = false
    private var stopped = false
    private let condition = NSCondition()

    /// Sleeps until `next` (at most a minute: wall-clock jumps are caught up
    /// with) or a sooner poke. False once stopped.
    func sleep(until next: Timestamp?, clock: any WallClock) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if stopped { return false }
        wakeAt = next
        if !poked {
            let now = clock.now()
            let seconds = next.map { Double(max(0, $0.milliseconds - now.milliseconds)) / 1000 } ?? 60
            _ = condition.wait(until: Date(timeIntervalSinceNow: min(seconds, 60)))
        }
        poked = false
        // Awake and about to fire: any deadline added from now on must make the
        // next sleep short, whatever the last planned wake-up was.
        wakeAt = nil
        return !stopped
    }

    /// A deadline at `time` was added: wake up if it is sooner than the planned wake-up.
    func poke(at time: Timestamp) {
        condition.lock()
        if wakeAt == nil || time < wakeAt! {
            poked = true
            wakeAt = time
            condition.signal()
        }
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }
}
