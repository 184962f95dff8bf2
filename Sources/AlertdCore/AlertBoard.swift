public import AlertdWire

// Votes and quorum (SPEC §10) are in AlertBoard+Votes.swift. The rest stays over 400 lines
// on purpose: the queues, the deadline heap and the alert table share invariants (one
// displayed alert per client, a deadline per live alert) that one type keeps in one place,
// in private state a split would have to open to the whole module.

/// Every client's queue and every pending alert: the domain state machine.
///
/// Pure: operations take the time as an argument and return a ``BoardChange``
/// saying what to persist (with the version each write replaces), which displays
/// changed and what became terminal. The caller serialises access (one lock) and
/// writes changes in that order. The board knows nothing of stores: what a store
/// shows readers while writes are in flight is the store's to keep, from the
/// changes; a board that holds some clients only is told what it does not hold
/// (``hold(outside:sequences:)``, ``hold(only:)``).
///
/// Escalation (SPEC §12): an alert can be pending on several clients' queues at once, its
/// own and each it escalated to, placed in each by that queue's policy from the moment it
/// joined. It stays one alert: a decision through any of its clients decides it
/// everywhere and frees every display it held.
public struct AlertBoard: Sendable {
    public private(set) var settings: QueueSettings
    public let rules: AlertRules
    /// Pending alerts, plus decided ones until ``forgetDecided(_:)``.
    var alerts = AlertTable()
    private var queues: [String: ClientQueue] = [:]
    /// Every client's id, sorted: the order `GET /v1/clients` pages in.
    private var sortedClients: [String] = []
    /// Pending alerts in every queue.
    public private(set) var pendingTotal = 0
    /// Their ``Alert/footprint``s and ``Alert/renderedFootprint``s together
    /// (`limits.max_pending_bytes`): a displayed alert is also kept rendered, the copy
    /// `current` serves, and any queued one may be displayed next, so each is counted
    /// with that copy. (Counted for the displayed ones only, a poster could queue large
    /// alerts behind a small one and withdraw it: the memory would grow without a post.)
    public private(set) var pendingBytes = 0
    /// What this board does not hold, when it holds some clients only.
    public private(set) var outside = Outside()
    /// The queue order of the next posts (``hold(outside:sequences:)``); empty: 0, and ids give the order.
    private var sequences: [Int64] = []
    /// Clients posted to or decided on since the last ``beginIdleSweep()``.
    var touched = Set<String>()
    private var deadlines = Heap<Deadline>()
    private var ids: AlertIDGenerator
    /// The clients whose queues this board holds whole (nil: every client): a shared
    /// store's board holds those of one transaction. An alert pending on a client outside
    /// it (escalated, SPEC §12) is placed in the queues it holds only, and is neither
    /// decided nor escalated here: that is for a transaction that holds all its clients.
    public private(set) var scope: Set<String>?

    /// The pending alerts, clients and bytes of a board's clients that the board does
    /// not hold: a board that holds the clients of one transaction only (a store
    /// shared by several instances loads them) is told the others', as last counted,
    /// so `limits.max_pending_total`, `max_pending_bytes` and `max_clients` still bind.
    public struct Outside: Sendable, Equatable {
        public var pending: Int
        public var clients: Int
        public var bytes: Int

        public init(pending: Int = 0, clients: Int = 0, bytes: Int = 0) {
            self.pending = pending
            self.clients = clients
            self.bytes = bytes
        }
    }

    struct Deadline: Comparable, Sendable {
        enum Kind: Int, Sendable { case dismiss, expire, escalate }
        var at: Timestamp
        var id: AlertID
        var kind: Kind

        static func < (a: Deadline, b: Deadline) -> Bool {
            if a.at != b.at { return a.at < b.at }
            if a.id != b.id { return a.id < b.id }
            return a.kind.rawValue < b.kind.rawValue
        }
    }

    public init(settings: QueueSettings = QueueSettings(), rules: AlertRules = AlertRules(), lastID: AlertID? = nil) {
        self.settings = settings
        self.rules = rules
        self.ids = AlertIDGenerator(after: lastID)
    }

    // MARK: - Reading

    /// The latest version of an alert held in memory: pending, or decided and not
    /// forgotten yet (``forgetDecided(_:)``).
    public func alert(_ id: AlertID) -> Alert? { alerts[id] }

    /// Forgets decided alerts: their decision is durable, so repeats of it are
    /// answered from the store. Ids of alerts not decided are left alone. A store
    /// calls this once no write of the alert is in flight any more.
    public mutating func forgetDecided(_ ids: some Sequence<AlertID>) {
        for id in ids where alerts[id]?.state.isTerminal == true { alerts[id] = nil }
    }

    /// Takes what a board holding some clients only does not hold, and the queue
    /// order of its next posts (a shared store's database sequence, never an
    /// instance's clock): each post takes the next; with none left, 0, and ids give
    /// the order. For the next operations, until told again.
    public mutating func hold(outside: Outside, sequences: [Int64]) {
        self.outside = outside
        self.sequences = sequences
    }

    /// Holds these clients' queues whole, and only them (a shared store's transaction);
    /// nil: every client. Set before the board is restored.
    public mutating func hold(only clients: Set<String>?) {
        scope = clients
    }

    /// Whether this board holds every one of `clients` whole: an alert pending on them all
    /// may be decided or escalated here.
    public func holds(_ clients: [String]) -> Bool {
        guard let scope else { return true }
        return clients.allSatisfy(scope.contains)
    }

    private func inScope(_ client: String) -> Bool { scope?.contains(client) ?? true }

    /// 0 when displayed, n when n alerts are ahead, in its own client's queue; nil when not pending.
    public func position(of alert: Alert) -> Int? { position(of: alert, on: alert.client) }

    /// 0 when displayed on `client`, n when n alerts are ahead there; nil when not pending there.
    public func position(of alert: Alert, on client: String) -> Int? {
        guard alert.isPending, alert.isOn(client), let queue = queues[client] else { return nil }
        return queue.position(of: Self.entry(alert, on: client))
    }

    /// How many queued alerts of `client` come before `alert` in that client's order,
    /// whether or not `alert` is queued there itself.
    public func queuedAhead(of alert: Alert, on client: String) -> Int {
        queues[client]?.queuedAhead(of: Self.entry(alert, on: client)) ?? 0
    }

    /// Whether `a` comes before `b` in `client`'s order (its policy's); both are on it.
    public func precedes(_ a: Alert, _ b: Alert, on client: String) -> Bool {
        ClientQueue.precedes(Self.entry(a, on: client), Self.entry(b, on: client), policy: settings[client].policy)
    }

    /// The position (0 when displayed, n when n alerts are ahead) of pending `alert`
    /// among `queued`, the queued alerts of `client`, in `policy`'s order: a reader's
    /// answer from the client's rows, with the order of the queue itself. Each alert is
    /// as `client` holds it (``Alert/viewed(from:)``).
    public static func position(
        of alert: Alert, on client: String, amongQueued queued: [Alert], displayed: Bool, policy: QueuePolicy
    ) -> Int {
        if alert.isDisplayed(on: client) { return 0 }
        let me = entry(alert, on: client)
        let ahead = queued.count { other in
            other.id != alert.id && ClientQueue.precedes(entry(other, on: client), me, policy: policy)
        }
        return ahead + (displayed ? 1 : 0)
    }

    /// The alert `client` displays, as that client holds it (``Alert/viewed(from:)``).
    public func displayed(on client: String) -> Alert? {
        queues[client]?.displayed.flatMap { alerts[$0.id]?.viewed(from: client) }
    }

    /// Pending alerts of a client in display order, each as that client holds it.
    public func pending(on client: String) -> [Alert] {
        queues[client]?.inDisplayOrder.compactMap { alerts[$0.id]?.viewed(from: client) } ?? []
    }

    public func pendingCount(on client: String) -> Int { queues[client]?.pendingCount ?? 0 }

    /// Every client known (used, and not forgotten), sorted by id.
    public var clients: [String] { sortedClients }

    /// Up to `limit` clients after `after` (sorted by id) that `include` accepts,
    /// and whether more follow.
    public func clients(after: String?, limit: Int, where include: (String) -> Bool) -> (page: [String], more: Bool) {
        var index = 0
        if let after {
            // The first id greater than `after`.
            var (low, high) = (0, sortedClients.count)
            while low < high {
                let middle = (low + high) / 2
                if sortedClients[middle] <= after { low = middle + 1 } else { high = middle }
            }
            index = low
        }
        var page: [String] = []
        while index < sortedClients.count {
            let client = sortedClients[index]
            index += 1
            guard include(client) else { continue }
            if page.count == limit { return (page, true) }
            page.append(client)
        }
        return (page, false)
    }

    /// Starts a sweep for idle clients: the clients with nothing pending now.
    /// The caller checks the store for retained alerts of these (without the
    /// board's lock), then calls ``forget(idle:except:)``, which skips any client
    /// touched in between.
    public mutating func beginIdleSweep() -> [String] {
        touched = []
        return sortedClients.filter { queues[$0]?.pendingCount == 0 }
    }

    /// Forgets clients that hold nothing: no pending alert, not touched since
    /// ``beginIdleSweep()``, not in `busy` (a store's clients with a change still
    /// committing) and (the caller has checked the store) no retained terminal one.
    /// Returns those forgotten, for the caller to delete from the store.
    public mutating func forget(idle candidates: [String], except busy: Set<String> = []) -> [String] {
        var forgotten: [String] = []
        for client in candidates {
            guard let queue = queues[client], queue.pendingCount == 0, !touched.contains(client), !busy.contains(client)
            else { continue }
            queues[client] = nil
            forgotten.append(client)
        }
        if !forgotten.isEmpty {
            let gone = Set(forgotten)
            sortedClients.removeAll { gone.contains($0) }
        }
        return forgotten
    }

    public func knows(client: String) -> Bool { queues[client] != nil }

    /// The earliest stored deadline (a dismissal, an expiry or an escalation step), if any.
    public var nextDeadline: Timestamp? { deadlines.min?.at }

    // MARK: - Changing

    /// Posts a validated alert to a client's queue; `poster` is the posting token's name
    /// (nil without tokens), kept as the alert's ``Alert/postedBy``.
    public mutating func post(
        _ draft: NewAlert, to client: String, by poster: String? = nil, now: Timestamp
    ) throws(BoardError) -> (Alert, BoardChange) {
        var change = BoardChange()
        let clientSettings = settings[client]
        guard pendingTotal + outside.pending < settings.maxPendingTotal else {
            throw BoardError(
                .queueFull, "alertd holds its maximum of \(settings.maxPendingTotal) pending alerts (limits.max_pending_total)")
        }
        let metadata = draft.metadata.map(CompactJSON.init)
        let footprint = Alert.footprint(
            title: draft.title, message: draft.message, buttons: draft.buttons ?? [], callbackURL: draft.callbackURL, metadata: metadata,
            fields: draft.fields ?? [])
        // With its rendered copy: displayed, now or later, it is kept rendered too.
        let displayedFootprint =
            footprint
            + Alert.renderedFootprint(
                client: client, title: draft.title, message: draft.message, buttons: draft.buttons ?? [],
                callbackURL: draft.callbackURL, metadata: metadata, postedBy: poster, fields: draft.fields ?? [])
        guard pendingBytes + outside.bytes + displayedFootprint <= settings.maxPendingBytes else {
            throw BoardError(
                .queueFull,
                "alertd holds its maximum of \(settings.maxPendingBytes) bytes of pending alerts (limits.max_pending_bytes); "
                    + "this one takes \(displayedFootprint)")
        }
        if queues[client] == nil {
            guard queues.count + outside.clients < settings.maxClients else {
                throw BoardError(
                    .queueFull,
                    "alertd holds its maximum of \(settings.maxClients) clients (limits.max_clients); client \(client) is new")
            }
            queues[client] = ClientQueue(policy: clientSettings.policy)
            addSorted(client)
            change.newClients.append(client)
        }
        guard queues[client]!.pendingCount < clientSettings.maxPending else {
            throw BoardError(.queueFull, "client \(client) has \(clientSettings.maxPending) pending alerts, its limit")
        }
        touched.insert(client)
        let expiresIn = min(draft.expiresIn ?? rules.defaultExpiresIn, rules.maxExpiresIn)
        let dismissAfter = (draft.buttons ?? []).isEmpty ? (draft.dismissAfter ?? rules.defaultDismissAfter) : nil
        let escalation = EscalationRules.resolve(own: draft.escalation, client: client, settings: clientSettings, expiresIn: expiresIn)
        let alert = Alert(
            id: ids.next(at: now), client: client, title: draft.title, message: draft.message, style: draft.style ?? .alert,
            buttons: draft.buttons ?? [], priority: draft.priority ?? 0, callbackURL: draft.callbackURL,
            metadata: metadata,
            state: .queued, createdAt: now, expiresAt: now.adding(seconds: expiresIn),
            dismissAfterMilliseconds: dismissAfter.map { Int64(($0 * 1000).rounded()) },
            sequence: sequences.isEmpty ? 0 : sequences.removeFirst(), quorum: draft.quorum ?? 1, postedBy: poster,
            fields: draft.fields ?? [],
            escalation: escalation
        )
        var before = Before()
        set(alert, &before)
        deadlines.insert(Deadline(at: alert.expiresAt, id: alert.id, kind: .expire))
        if let next = alert.nextEscalation { deadlines.insert(Deadline(at: next.at, id: alert.id, kind: .escalate)) }
        let display = queues[client]!.insert(Self.entry(alert, on: client))
        pendingTotal += 1
        pendingBytes += footprint
        change.saved.append(alert)
        apply(display, on: client, now: now, into: &change, &before)
        finish(&change, before)
        return (alerts[alert.id]!, change)
    }

    /// Refuses to change an alert pending on a client this board does not hold whole: a
    /// transaction that holds them all must (the engine widens it first; never reached
    /// when it did).
    func requireHeld(_ alert: Alert) throws(BoardError) {
        guard holds(alert.clients) else {
            throw BoardError(
                .notFound,
                "alert \(alert.id) is pending on clients this transaction does not hold (\(alert.clients.joined(separator: ", ")))")
        }
    }

    /// Withdraws a pending alert, through its own client or one it escalated to.
    public mutating func withdraw(_ id: AlertID, on client: String, by decider: String?, now: Timestamp) throws(BoardError) -> (
        Alert, BoardChange
    ) {
        guard let alert = alerts[id], alert.isOn(client) else {
            throw BoardError(.notFound, "no alert \(id) on client \(client)")
        }
        try requireHeld(alert)
        var before = Before()
        var (decided, change) = try decide(alert, as: .withdrawn, button: nil, by: decider, via: client, now: now, &before)
        finish(&change, before)
        decided = alerts[decided.id] ?? decided
        return (decided, change)
    }

    /// Same as ``repeatChoice(_:on:)`` for withdrawal.
    public static func repeatWithdraw(on alert: Alert) throws(BoardError) -> Alert {
        if alert.state == .withdrawn { return alert }
        throw BoardError(.alreadyDecided, "alert \(alert.id) is already \(alert.state.rawValue)", alert: alert)
    }

    /// Fires every dismissal, expiry and escalation step (SPEC §12) due at `now`. A
    /// deadline of an alert pending on a client this board does not hold whole (or whose
    /// step goes to one) is left to a transaction that holds them all.
    public mutating func fireDeadlines(now: Timestamp) -> BoardChange {
        var change = BoardChange()
        var before = Before()
        while let next = deadlines.min, next.at <= now {
            deadlines.popMin()
            guard let alert = alerts[next.id], alert.isPending, holds(alert.clients) else { continue }
            // Each deadline takes effect at its own time, even when it fires late
            // (after a restart): what it displays next is displayed from then, and
            // a later deadline of that alert still applies in order.
            switch next.kind {
            case .expire where alert.expiresAt == next.at:
                if let (_, fired) = try? decide(alert, as: .expired, button: nil, by: nil, via: alert.client, now: next.at, &before) {
                    change.merge(fired)
                }
            case .dismiss where alert.dismissAt == next.at:
                if let (_, fired) = try? decide(alert, as: .dismissed, button: nil, by: nil, via: alert.client, now: next.at, &before) {
                    change.merge(fired)
                }
            case .escalate:
                guard let step = alert.nextEscalation, step.at == next.at, holds([step.step.to]) else { continue }
                escalate(alert, step: step.index, at: next.at, into: &change, &before)
            default:
                continue
            }
        }
        finish(&change, before)
        return change
    }

    /// Takes an escalation step (SPEC §12): the alert is also queued on the step's client,
    /// as if posted there at `at` (same id, priority, buttons and quorum), and displayed
    /// there when that queue's policy says so. It stays on its own client. A client new to
    /// the board is made (an escalation is no post: the client's `max_pending` does not
    /// refuse it).
    private mutating func escalate(_ alert: Alert, step index: Int, at: Timestamp, into change: inout BoardChange, _ before: inout Before) {
        let target = alert.escalation[index].to
        var escalated = alert
        // Its place among equal priorities there: the next of the shared store's sequence
        // (the last one drawn again if this transaction drew too few: the key orders them).
        let sequence = sequences.count > 1 ? sequences.removeFirst() : (sequences.first ?? 0)
        escalated.escalatedTo.append(Escalation(client: target, at: at, sequence: sequence))
        set(escalated, &before)
        change.saved.append(escalated)
        if queues[target] == nil {
            queues[target] = ClientQueue(policy: settings[target].policy)
            addSorted(target)
            change.newClients.append(target)
        }
        touched.insert(target)
        touched.insert(alert.client)
        let display = queues[target]!.insert(Self.entry(escalated, on: target))
        apply(display, on: target, now: at, into: &change, &before)
        change.escalated.append(EscalationTaken(id: alert.id, step: index, client: target, at: at))
        if let next = escalated.nextEscalation { deadlines.insert(Deadline(at: next.at, id: alert.id, kind: .escalate)) }
    }

    // MARK: - Restoring and reconfiguring

    /// Rebuilds the board from stored pending alerts and clients, then makes every
    /// queue follow its policy. Deadlines that passed fire on the next
    /// ``fireDeadlines(now:)``.
    public mutating func restore(clients: [String], pending: [Alert], now: Timestamp) -> BoardChange {
        for client in clients where queues[client] == nil && inScope(client) {
            queues[client] = ClientQueue(policy: settings[client].policy)
        }
        // In each queue's own order, so that every restored alert goes to the end of
        // its queue (in any other order each one shifts those behind it: quadratic,
        // seconds for a queue of ten thousand). Indices are sorted, not alerts. An alert
        // escalated to a queue (SPEC §12) takes its place there by binary search.
        let order = pending.indices.sorted { x, y in
            let a = pending[x], b = pending[y]
            if a.client != b.client { return a.client < b.client }
            if a.priority != b.priority { return a.priority > b.priority }
            let stack = settings[a.client].policy == .stack
            if a.sequence != b.sequence { return stack ? a.sequence > b.sequence : a.sequence < b.sequence }
            return stack ? a.id > b.id : a.id < b.id
        }
        for index in order { register(pending[index]) }
        // Displayed ones first, so that a queue never holds two displayed alerts.
        for displayedPass in [true, false] {
            for index in order { place(pending[index].id, displayed: displayedPass) }
        }
        sortedClients = queues.keys.sorted()
        return normalizeAll(now: now)
    }

    /// Takes what another process committed to `client`'s queue since this board
    /// last held it: each changed alert as it is committed now (pending: in its
    /// place; terminal: gone), in O(changed × log n) where restoring the queue whole
    /// is O(n log n). Then the display follows the policy, as after a restore (a
    /// change to commit, when it moves).
    public mutating func merge(committedElsewhere changed: [Alert], on client: String, now: Timestamp) -> BoardChange {
        if queues[client] == nil {
            queues[client] = ClientQueue(policy: settings[client].policy)
            addSorted(client)
        }
        var merged: [AlertID] = []
        for alert in changed where alert.isOn(client) || alerts[alert.id]?.isOn(client) == true {
            merged.append(alert.id)
            guard let old = alerts[alert.id], old.isPending else { continue }
            for held in old.clients where inScope(held) { queues[held]?.take(Self.entry(old, on: held)) }
            alerts[alert.id] = nil
            pendingTotal -= 1
            pendingBytes -= old.footprint + Self.displayBytes(old)
        }
        let mergedIDs = Set(merged)
        var restored: [AlertID] = []
        for alert in changed where mergedIDs.contains(alert.id) && alert.isPending && alerts[alert.id] == nil {
            register(alert)
            restored.append(alert.id)
        }
        // Displayed ones first, so that a queue never holds two displayed alerts.
        for displayedPass in [true, false] {
            for id in restored { place(id, displayed: displayedPass) }
        }
        var change = BoardChange()
        var before = Before()
        apply(queues[client]!.normalize(), on: client, now: now, into: &change, &before)
        finish(&change, before)
        return change
    }

    /// Holds a pending alert read from a store, with its deadlines; ``place(_:displayed:)`` queues it.
    private mutating func register(_ alert: Alert) {
        pendingTotal += 1
        pendingBytes += alert.footprint + Self.displayBytes(alert)
        alerts[alert.id] = alert
        insertDeadlines(of: alert)
    }

    private mutating func insertDeadlines(of alert: Alert) {
        deadlines.insert(Deadline(at: alert.expiresAt, id: alert.id, kind: .expire))
        if let dismissAt = alert.dismissAt { deadlines.insert(Deadline(at: dismissAt, id: alert.id, kind: .dismiss)) }
        if let next = alert.nextEscalation { deadlines.insert(Deadline(at: next.at, id: alert.id, kind: .escalate)) }
    }

    /// Queues a registered alert where the store had it, in every queue of this board it is
    /// on: this pass the places where it is displayed (`displayed`), or those where it is
    /// queued. A second displayed alert on one client (cannot happen, but never trust a
    /// store blindly) waits in the queue.
    private mutating func place(_ id: AlertID, displayed displayedPass: Bool) {
        guard var alert = alerts[id] else { return }
        var fixed = false
        for client in alert.clients where inScope(client) && alert.isDisplayed(on: client) == displayedPass {
            if queues[client] == nil {
                queues[client] = ClientQueue(policy: settings[client].policy)
                addSorted(client)
            }
            let shown = displayedPass && queues[client]!.displayed == nil
            if displayedPass, !shown {
                // Queued there: the pass of queued places takes it.
                alert.place(on: client, displayedAt: nil)
                fixed = true
                continue
            }
            queues[client]!.restore(Self.entry(alert, on: client), displayed: shown)
        }
        if fixed {
            alerts[id] = alert
            insertDeadlines(of: alert)
        }
    }

    /// Takes new client settings (a config reload). A limit applies from the next post;
    /// a queue whose policy changed is reordered the new policy's way, and when that
    /// policy displays another alert (stack: a newer one of at least equal priority),
    /// the change says so, like any other display change.
    public mutating func reconfigure(_ newSettings: QueueSettings, now: Timestamp) -> BoardChange {
        let old = settings
        settings = newSettings
        var change = BoardChange()
        var before = Before()
        for client in queues.keys.sorted() where old[client].policy != newSettings[client].policy {
            let queue = queues[client]!
            var rebuilt = ClientQueue(policy: newSettings[client].policy)
            if let displayed = queue.displayed { rebuilt.restore(displayed, displayed: true) }
            for entry in queue.inDisplayOrder where entry != queue.displayed { rebuilt.restore(entry, displayed: false) }
            let display = rebuilt.normalize()
            queues[client] = rebuilt
            apply(display, on: client, now: now, into: &change, &before)
        }
        finish(&change, before)
        return change
    }

    // MARK: - Internals

    private mutating func normalizeAll(now: Timestamp) -> BoardChange {
        var change = BoardChange()
        var before = Before()
        for client in queues.keys.sorted() {
            let display = queues[client]!.normalize()
            apply(display, on: client, now: now, into: &change, &before)
        }
        finish(&change, before)
        return change
    }

    /// Writes a new version of an alert, remembering the one before the operation; its
    /// rendered copy is counted from its first pending version to its last (votes grow it).
    mutating func set(_ alert: Alert, _ before: inout Before) {
        if before.versions[alert.id] == nil {
            before.versions[alert.id] = .some(alerts[alert.id])
        }
        pendingBytes += Self.displayBytes(alert) - (alerts[alert.id].map(Self.displayBytes) ?? 0)
        alerts[alert.id] = alert
    }

    /// What a pending alert's rendered copy holds, or will once displayed
    /// (``Alert/renderedFootprint``); 0 for a terminal one.
    private static func displayBytes(_ alert: Alert) -> Int {
        alert.isPending ? alert.renderedFootprint : 0
    }

    /// Whether a heap entry still describes a deadline of a pending alert.
    private func isLive(_ deadline: Deadline) -> Bool {
        guard let alert = alerts[deadline.id], alert.isPending else { return false }
        switch deadline.kind {
        case .expire: return alert.expiresAt == deadline.at
        case .dismiss: return alert.dismissAt == deadline.at
        case .escalate: return alert.nextEscalation?.at == deadline.at
        }
    }

    /// Drops dead entries (decided or re-displayed alerts) from the top, so
    /// ``nextDeadline`` is a live one; rebuilds the heap once dead entries
    /// outnumber live ones, so deciding alerts never leaves memory behind.
    private mutating func pruneDeadlines() {
        while let top = deadlines.min, !isLive(top) { deadlines.popMin() }
        guard deadlines.count > 2 * alerts.count + 1024 else { return }
        var rebuilt = Heap<Deadline>()
        for alert in alerts.all where alert.isPending {
            rebuilt.insert(Deadline(at: alert.expiresAt, id: alert.id, kind: .expire))
            if let dismissAt = alert.dismissAt { rebuilt.insert(Deadline(at: dismissAt, id: alert.id, kind: .dismiss)) }
            if let next = alert.nextEscalation { rebuilt.insert(Deadline(at: next.at, id: alert.id, kind: .escalate)) }
        }
        deadlines = rebuilt
    }

    /// Deduplicates the saved versions and gives each the version it replaces.
    mutating func finish(_ change: inout BoardChange, _ before: Before) {
        pruneDeadlines()
        change.saved = deduplicated(change.saved)
        change.replaced = change.saved.map { before.versions[$0.id] ?? nil }
    }

    /// Decides `alert` (its choice made through `client`): it leaves every queue it is on,
    /// and each display it held shows the next alert there.
    mutating func decide(
        _ alert: Alert, as outcome: AlertState, button: Int?, by decider: String?, via client: String, now: Timestamp,
        _ before: inout Before
    ) throws(BoardError) -> (Alert, BoardChange) {
        if alert.state.isTerminal {
            if outcome == .answered, alert.state == .answered, alert.result?.buttonIndex == button {
                return (alert, BoardChange())
            }
            // A retry of a vote committed before another decided the alert.
            if outcome == .answered, let button, alert.votes.contains(where: { $0.decidedBy == decider && $0.buttonIndex == button }) {
                return (alert, BoardChange())
            }
            if outcome == .withdrawn, alert.state == .withdrawn {
                return (alert, BoardChange())
            }
            throw BoardError(.alreadyDecided, "alert \(alert.id) is already \(alert.state.rawValue)", alert: alert)
        }
        if outcome == .answered, !alert.isDisplayed(on: client) {
            let elsewhere = alert.displayedOn
            throw BoardError(
                .notDisplayed,
                "alert \(alert.id) is queued at position \(position(of: alert, on: client) ?? 0) on client \(client); "
                    + "only the displayed alert can be answered"
                    + (elsewhere.isEmpty ? "" : " (it is displayed on \(elsewhere.joined(separator: ", ")): answer it there)"))
        }
        var decided = alert
        decided.state = outcome
        decided.decidedAt = now
        // The words of an answer are its deciding vote's, the last of `votes` (SPEC §13).
        decided.result = Alert.result(
            AlertResult(
                outcome: outcome,
                button: button.map { alert.buttons[$0].title },
                buttonIndex: button,
                cancelled: button.map { alert.buttons[$0].style == .cancel } ?? false,
                decidedBy: (outcome == .answered || outcome == .withdrawn) ? decider : nil
            ), votes: alert.votes)
        set(decided, &before)
        var change = BoardChange()
        change.saved.append(decided)
        change.decided.append(decided)
        pendingTotal -= 1
        pendingBytes -= alert.footprint
        // Out of every queue it was on (SPEC §12), each display it held freed.
        for held in alert.clients {
            guard queues[held] != nil, inScope(held) else { continue }
            let wasDisplayed = alert.isDisplayed(on: held)
            let display = queues[held]!.remove(Self.entry(alert, on: held))
            touched.insert(held)
            if wasDisplayed, !change.displayChanged.contains(held) { change.displayChanged.append(held) }
            apply(display, on: held, now: now, into: &change, &before)
        }
        return (decided, change)
    }

    /// Marks what a queue change shows and covers, and schedules dismissals.
    private mutating func apply(
        _ display: ClientQueue.DisplayChange, on client: String, now: Timestamp, into change: inout BoardChange,
        _ before: inout Before
    ) {
        if let covered = display.covered, var alert = alerts[covered.id] {
            alert.place(on: client, displayedAt: nil)
            set(alert, &before)
            change.saved.append(alert)
            // Still displayed elsewhere (escalated), its dismissal counts from that display now.
            if let dismissAt = alert.dismissAt {
                deadlines.insert(Deadline(at: dismissAt, id: alert.id, kind: .dismiss))
            }
        }
        if let shown = display.shown, var alert = alerts[shown.id] {
            alert.place(on: client, displayedAt: now)
            set(alert, &before)
            change.saved.append(alert)
            if let dismissAt = alert.dismissAt {
                deadlines.insert(Deadline(at: dismissAt, id: alert.id, kind: .dismiss))
            }
        }
        if display.shown != nil || display.covered != nil, !change.displayChanged.contains(client) {
            change.displayChanged.append(client)
        }
    }

    private mutating func addSorted(_ client: String) {
        var (low, high) = (0, sortedClients.count)
        while low < high {
            let middle = (low + high) / 2
            if sortedClients[middle] < client { low = middle + 1 } else { high = middle }
        }
        sortedClients.insert(client, at: low)
    }

    /// `alert`'s entry in `client`'s queue: its own, or the one of the step that took it
    /// there (SPEC §12), ordered as if posted there when it joined.
    static func entry(_ alert: Alert, on client: String) -> ClientQueue.Entry {
        if client != alert.client, let escalation = alert.escalatedTo.first(where: { $0.client == client }) {
            return ClientQueue.Entry(
                priority: alert.priority, sequence: escalation.sequence, id: alert.id, key: orderKey(alert.id, at: escalation.at))
        }
        return ClientQueue.Entry(priority: alert.priority, sequence: alert.sequence, id: alert.id)
    }

    /// The order of an alert in a queue it joined at `at` (SPEC §12): an id of that time
    /// (its 48 bits of milliseconds) with the alert's own random bits, so it sorts among
    /// the ids of that queue's posts as one posted then.
    public static func orderKey(_ id: AlertID, at: Timestamp) -> AlertID {
        let milliseconds = UInt64(max(0, at.milliseconds)) & 0xFFFF_FFFF_FFFF
        return AlertID(high: milliseconds << 16 | (id.high & 0xFFFF), low: id.low)
    }

    /// Keeps the last version of each alert, in first-seen order.
    private func deduplicated(_ saved: [Alert]) -> [Alert] {
        guard saved.count > 1 else { return saved }
        var latest: [AlertID: Alert] = [:]
        var order: [AlertID] = []
        for alert in saved {
            if latest.updateValue(alert, forKey: alert.id) == nil { order.append(alert.id) }
        }
        return order.map { latest[$0]! }
    }
}
