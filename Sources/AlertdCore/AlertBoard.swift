public import AlertdWire

// Over 400 lines on purpose: the queues, the deadline heap and the alert table share
// invariants (one displayed alert per client, a deadline per live alert) that one type
// keeps in one place.

/// Every client's queue and every pending alert: the domain state machine.
///
/// Pure: operations take the time as an argument and return a ``BoardChange``
/// saying what to persist (with the version each write replaces), which displays
/// changed and what became terminal. The caller serialises access (one lock) and
/// writes changes in that order. The board knows nothing of stores: what a store
/// shows readers while writes are in flight is the store's to keep, from the
/// changes; a board that holds some clients only is told what it does not hold
/// (``hold(outside:sequences:)``).
public struct AlertBoard: Sendable {
    public private(set) var settings: QueueSettings
    public let rules: AlertRules
    /// Pending alerts, plus decided ones until ``forgetDecided(_:)``.
    private var alerts = AlertTable()
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
    private var touched = Set<String>()
    private var deadlines = Heap<Deadline>()
    private var ids: AlertIDGenerator

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
        enum Kind: Int, Sendable { case dismiss, expire }
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

    /// 0 when displayed, n when n alerts are ahead; nil when not pending.
    public func position(of alert: Alert) -> Int? {
        guard alert.isPending, let queue = queues[alert.client] else { return nil }
        return queue.position(of: entry(alert))
    }

    /// How many queued alerts of `alert`'s client come before it in its client's
    /// order, whether or not `alert` is queued there itself.
    public func queuedAhead(of alert: Alert) -> Int {
        queues[alert.client]?.queuedAhead(of: entry(alert)) ?? 0
    }

    /// Whether `a` comes before `b` in their client's order (its policy's).
    public func precedes(_ a: Alert, _ b: Alert) -> Bool {
        ClientQueue.precedes(entry(a), entry(b), policy: settings[a.client].policy)
    }

    /// The position (0 when displayed, n when n alerts are ahead) of pending `alert`
    /// among `queued`, the queued alerts of its client, in `policy`'s order: a reader's
    /// answer from the client's rows, with the order of the queue itself.
    public static func position(of alert: Alert, amongQueued queued: [Alert], displayed: Bool, policy: QueuePolicy) -> Int {
        if alert.state == .displayed { return 0 }
        let me = ClientQueue.Entry(priority: alert.priority, sequence: alert.sequence, id: alert.id)
        let ahead = queued.count { other in
            other.id != alert.id
                && ClientQueue.precedes(
                    ClientQueue.Entry(priority: other.priority, sequence: other.sequence, id: other.id), me, policy: policy)
        }
        return ahead + (displayed ? 1 : 0)
    }

    public func displayed(on client: String) -> Alert? {
        queues[client]?.displayed.flatMap { alerts[$0.id] }
    }

    /// Pending alerts of a client in display order.
    public func pending(on client: String) -> [Alert] {
        queues[client]?.inDisplayOrder.compactMap { alerts[$0.id] } ?? []
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

    /// The earliest stored deadline (a dismissal or an expiry), if any.
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
        let alert = Alert(
            id: ids.next(at: now), client: client, title: draft.title, message: draft.message, style: draft.style ?? .alert,
            buttons: draft.buttons ?? [], priority: draft.priority ?? 0, callbackURL: draft.callbackURL,
            metadata: metadata,
            state: .queued, createdAt: now, expiresAt: now.adding(seconds: expiresIn),
            dismissAfterMilliseconds: dismissAfter.map { Int64(($0 * 1000).rounded()) },
            sequence: sequences.isEmpty ? 0 : sequences.removeFirst(), quorum: draft.quorum ?? 1, postedBy: poster,
            fields: draft.fields ?? []
        )
        var before = Before()
        set(alert, &before)
        deadlines.insert(Deadline(at: alert.expiresAt, id: alert.id, kind: .expire))
        let display = queues[client]!.insert(entry(alert))
        pendingTotal += 1
        pendingBytes += footprint
        change.saved.append(alert)
        apply(display, on: client, now: now, into: &change, &before)
        finish(&change, before)
        return (alerts[alert.id]!, change)
    }

    /// Chooses a button of a displayed alert (§4 choice rules): a vote (§10).
    ///
    /// Every choice is a vote, appended to the alert's ``Alert/votes``. The alert is
    /// answered, with the vote's button, by the vote that makes `quorum` different
    /// deciders agree on one button (at once for `quorum` 1), or by a vote for its
    /// `cancel`-style button, whatever the quorum (one person can stop it). Until then
    /// it stays displayed, and the change saves it and names its client among the
    /// displays changed: its representation did, and `current` readers learn of it. A
    /// vote decides nothing, so it has no outbox event and wakes no alert waiter.
    ///
    /// The same decider choosing the same button again changes nothing (an empty
    /// change: a safe retry, whatever words it carries); choosing another button after
    /// voting is `already-voted`. A decider is a token's name; nil (no tokens) is one
    /// decider like any other.
    ///
    /// `words` (SPEC §13), the comment and the values of the alert's fields, are kept in
    /// the vote (and the result of the vote that decides it); words that do not fit the
    /// alert are `invalid-answer`, checked once the choice would be made (after the rules
    /// of the button and of the alert's state), and nothing is changed.
    public mutating func choose(
        _ selection: ButtonSelection, for id: AlertID, on client: String, by decider: String?, words: ChoiceWords = .none,
        now: Timestamp
    ) throws(BoardError) -> (Alert, BoardChange) {
        guard let alert = alerts[id], alert.client == client else {
            throw BoardError(.notFound, "no alert \(id) on client \(client)")
        }
        let index: Int? =
            switch selection {
            case .title(let title): alert.buttons.firstIndex { $0.title == title }
            case .index(let index): alert.buttons.indices.contains(index) ? index : nil
            }
        guard let index else {
            let detail =
                alert.buttons.isEmpty
                ? "alert \(id) has no buttons"
                : "alert \(id) has no button \(selection.description); it has \(alert.buttons.map { "\"\($0.title)\"" }.joined(separator: ", "))"
            throw BoardError(.unknownButton, detail)
        }
        var before = Before()
        var (chosen, change) = try vote(index, on: alert, by: decider, words: words, now: now, &before)
        finish(&change, before)
        chosen = alerts[chosen.id] ?? chosen
        return (chosen, change)
    }

    /// Same for an alert that is no longer in memory (decided and committed): the
    /// caller passes the stored alert so the idempotency rules apply — the button it
    /// was answered with again, or `decider`'s own vote again, is the alert as it is.
    public static func repeatChoice(_ selection: ButtonSelection, on alert: Alert, by decider: String?) throws(BoardError) -> Alert {
        let index: Int? =
            switch selection {
            case .title(let title): alert.buttons.firstIndex { $0.title == title }
            case .index(let index): alert.buttons.indices.contains(index) ? index : nil
            }
        guard let index else {
            throw BoardError(
                .unknownButton,
                alert.buttons.isEmpty ? "alert \(alert.id) has no buttons" : "alert \(alert.id) has no button \(selection.description)")
        }
        if alert.state == .answered, alert.result?.buttonIndex == index { return alert }
        if alert.state.isTerminal, alert.votes.contains(where: { $0.decidedBy == decider && $0.buttonIndex == index }) { return alert }
        throw BoardError(.alreadyDecided, "alert \(alert.id) is already \(alert.state.rawValue)", alert: alert)
    }

    /// Withdraws a pending alert.
    public mutating func withdraw(_ id: AlertID, on client: String, by decider: String?, now: Timestamp) throws(BoardError) -> (
        Alert, BoardChange
    ) {
        guard let alert = alerts[id], alert.client == client else {
            throw BoardError(.notFound, "no alert \(id) on client \(client)")
        }
        var before = Before()
        var (decided, change) = try decide(alert, as: .withdrawn, button: nil, by: decider, now: now, &before)
        finish(&change, before)
        decided = alerts[decided.id] ?? decided
        return (decided, change)
    }

    /// Same as ``repeatChoice(_:on:)`` for withdrawal.
    public static func repeatWithdraw(on alert: Alert) throws(BoardError) -> Alert {
        if alert.state == .withdrawn { return alert }
        throw BoardError(.alreadyDecided, "alert \(alert.id) is already \(alert.state.rawValue)", alert: alert)
    }

    /// Fires every dismissal and expiry due at `now`.
    public mutating func fireDeadlines(now: Timestamp) -> BoardChange {
        var change = BoardChange()
        var before = Before()
        while let next = deadlines.min, next.at <= now {
            deadlines.popMin()
            guard let alert = alerts[next.id], alert.isPending else { continue }
            // Each deadline takes effect at its own time, even when it fires late
            // (after a restart): what it displays next is displayed from then, and
            // a later deadline of that alert still applies in order.
            switch next.kind {
            case .expire where alert.expiresAt == next.at:
                if let (_, fired) = try? decide(alert, as: .expired, button: nil, by: nil, now: next.at, &before) {
                    change.merge(fired)
                }
            case .dismiss where alert.dismissAt == next.at:
                if let (_, fired) = try? decide(alert, as: .dismissed, button: nil, by: nil, now: next.at, &before) {
                    change.merge(fired)
                }
            default:
                continue
            }
        }
        finish(&change, before)
        return change
    }

    // MARK: - Restoring and reconfiguring

    /// Rebuilds the board from stored pending alerts and clients, then makes every
    /// queue follow its policy. Deadlines that passed fire on the next
    /// ``fireDeadlines(now:)``.
    public mutating func restore(clients: [String], pending: [Alert], now: Timestamp) -> BoardChange {
        for client in clients where queues[client] == nil {
            queues[client] = ClientQueue(policy: settings[client].policy)
        }
        sortedClients = queues.keys.sorted()
        // In each queue's own order, so that every restored alert goes to the end of
        // its queue (in any other order each one shifts those behind it: quadratic,
        // seconds for a queue of ten thousand). Indices are sorted, not alerts.
        let order = pending.indices.sorted { x, y in
            let a = pending[x], b = pending[y]
            if a.client != b.client { return a.client < b.client }
            if a.priority != b.priority { return a.priority > b.priority }
            let stack = settings[a.client].policy == .stack
            if a.sequence != b.sequence { return stack ? a.sequence > b.sequence : a.sequence < b.sequence }
            return stack ? a.id > b.id : a.id < b.id
        }
        // Displayed ones first, so that a queue never holds two displayed alerts.
        for displayedPass in [true, false] {
            for index in order where (pending[index].state == .displayed) == displayedPass {
                restoreOne(pending[index])
            }
        }
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
        for alert in changed where alert.client == client {
            guard let old = alerts[alert.id], old.isPending, old.client == client else { continue }
            queues[client]!.take(entry(old))
            alerts[alert.id] = nil
            pendingTotal -= 1
            pendingBytes -= old.footprint + Self.displayBytes(old)
        }
        // Displayed ones first, so that a queue never holds two displayed alerts.
        for displayedPass in [true, false] {
            for alert in changed where alert.client == client && alert.isPending && (alert.state == .displayed) == displayedPass {
                restoreOne(alert)
            }
        }
        var change = BoardChange()
        var before = Before()
        apply(queues[client]!.normalize(), on: client, now: now, into: &change, &before)
        finish(&change, before)
        return change
    }

    private mutating func restoreOne(_ alert: Alert) {
        if queues[alert.client] == nil {
            queues[alert.client] = ClientQueue(policy: settings[alert.client].policy)
            addSorted(alert.client)
        }
        pendingTotal += 1
        pendingBytes += alert.footprint
        var restored = alert
        let shown = alert.state == .displayed && queues[alert.client]!.displayed == nil
        if !shown, alert.state == .displayed {
            // A second displayed alert on one client (cannot happen, but never trust a
            // store blindly): it waits in the queue.
            restored.state = .queued
            restored.displayedAt = nil
        }
        alerts[alert.id] = restored
        pendingBytes += Self.displayBytes(restored)
        queues[alert.client]!.restore(entry(alert), displayed: shown)
        deadlines.insert(Deadline(at: alert.expiresAt, id: alert.id, kind: .expire))
        if let dismissAt = restored.dismissAt {
            deadlines.insert(Deadline(at: dismissAt, id: alert.id, kind: .dismiss))
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
    private mutating func set(_ alert: Alert, _ before: inout Before) {
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
        }
        deadlines = rebuilt
    }

    /// Deduplicates the saved versions and gives each the version it replaces.
    private mutating func finish(_ change: inout BoardChange, _ before: Before) {
        pruneDeadlines()
        change.saved = deduplicated(change.saved)
        change.replaced = change.saved.map { before.versions[$0.id] ?? nil }
    }

    /// A vote for button `index` of `alert` by `decider` (``choose(_:for:on:by:words:now:)``).
    private mutating func vote(
        _ index: Int, on alert: Alert, by decider: String?, words: ChoiceWords, now: Timestamp, _ before: inout Before
    ) throws(BoardError) -> (Alert, BoardChange) {
        // Terminal or queued: the rules of a decision (a repeat, already-decided, not-displayed).
        guard alert.state == .displayed else {
            return try decide(alert, as: .answered, button: index, by: decider, now: now, &before)
        }
        // Four eyes means someone else's (§10): the poster may stop its alert, never approve it.
        if alert.quorum > 1, let decider, decider == alert.postedBy, alert.buttons[index].style != .cancel {
            throw BoardError(
                .forbidden,
                "the poster cannot approve its own alert: \(decider) posted alert \(alert.id), which needs \(alert.quorum) "
                    + "different deciders; it may still press its cancel button or withdraw it")
        }
        if let mine = alert.votes.first(where: { $0.decidedBy == decider }) {
            if mine.buttonIndex == index { return (alert, BoardChange()) }
            throw BoardError(
                .alreadyVoted,
                "\(decider.map { "decider \($0)" } ?? "the anonymous decider") already voted \"\(mine.button)\" on alert \(alert.id); "
                    + "a vote is not changed",
                alert: alert)
        }
        let kept: ChoiceWords
        switch words.checked(button: index, of: alert.buttons, fields: alert.fields) {
        case .success(let checked): kept = checked
        case .failure(let invalid):
            throw BoardError(
                .invalidAnswer,
                invalid.errors.count == 1 ? "1 part of the answer is invalid" : "\(invalid.errors.count) parts of the answer are invalid",
                errors: invalid.errors)
        }
        var voted = alert
        voted.votes.append(
            Vote(
                decidedBy: decider, button: alert.buttons[index].title, buttonIndex: index, at: now, comment: kept.comment,
                values: kept.values))
        // One vote per decider (above), so the votes for a button are its different deciders.
        let agreeing = voted.votes.count { $0.buttonIndex == index }
        if agreeing >= alert.quorum || alert.buttons[index].style == .cancel {
            return try decide(voted, as: .answered, button: index, by: decider, now: now, &before)
        }
        set(voted, &before)
        touched.insert(alert.client)
        var change = BoardChange()
        change.saved.append(voted)
        change.displayChanged.append(alert.client)
        return (voted, change)
    }

    private mutating func decide(
        _ alert: Alert, as outcome: AlertState, button: Int?, by decider: String?, now: Timestamp,
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
        if outcome == .answered, alert.state != .displayed {
            throw BoardError(
                .notDisplayed,
                "alert \(alert.id) is queued at position \(position(of: alert) ?? 0); only the displayed alert can be answered")
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
        let wasDisplayed = alert.state == .displayed
        let display = queues[alert.client]!.remove(entry(alert))
        pendingTotal -= 1
        pendingBytes -= alert.footprint
        touched.insert(alert.client)
        if wasDisplayed { change.displayChanged.append(alert.client) }
        apply(display, on: alert.client, now: now, into: &change, &before)
        return (decided, change)
    }

    /// Marks what a queue change shows and covers, and schedules dismissals.
    private mutating func apply(
        _ display: ClientQueue.DisplayChange, on client: String, now: Timestamp, into change: inout BoardChange,
        _ before: inout Before
    ) {
        if let covered = display.covered, var alert = alerts[covered.id] {
            alert.state = .queued
            alert.displayedAt = nil
            set(alert, &before)
            change.saved.append(alert)
        }
        if let shown = display.shown, var alert = alerts[shown.id] {
            alert.state = .displayed
            alert.displayedAt = now
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

    private func entry(_ alert: Alert) -> ClientQueue.Entry {
        ClientQueue.Entry(priority: alert.priority, sequence: alert.sequence, id: alert.id)
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
