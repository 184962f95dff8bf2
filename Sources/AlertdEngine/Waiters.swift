import AlertdCore

/// What readers of `current` see, and who is parked waiting for a change.
///
/// Lives behind one lock in ``Engine``: a waiter checks the published state and
/// parks under that lock, and a publication updates the state and takes the
/// waiters to wake under it too, so no wake-up is ever lost.
struct Waiters: Sendable {
    /// A client's published displayed alert, encoded once per change.
    ///
    /// Its representation changes without its id only by votes (§10): they are only ever
    /// added while it is displayed, so their number tells an older representation of the
    /// same alert from a newer one, and a reader that names it (`current?votes=N`) from
    /// one that has not seen the last vote.
    struct Display: Sendable {
        var id: AlertID?
        var body: [UInt8]?
        /// A shared store's version of the client this display belongs to; nil: not known.
        var version: Int64?
        /// The displayed alert's votes (0 when none, or none displayed).
        var votes: Int = 0
    }

    struct CurrentWaiter: Sendable {
        var id: UInt64
        var client: String
        /// The token's name that parked it; nil without tokens.
        var owner: String?
        var after: AlertID?
        /// The votes of `after` the reader has seen: as it said (`votes=N`), or as published
        /// when it parked. A display of `after` with another number wakes it.
        var votes: Int
        var timeout: Timers.Token
        var respond: @Sendable ([UInt8]?) -> Void
    }

    struct AlertWaiter: Sendable {
        var id: UInt64
        var alertID: AlertID
        var client: String
        /// The token's name that parked it; nil without tokens.
        var owner: String?
        var timeout: Timers.Token
        /// With the decided alert, and its receipt when the commit that decided it is this
        /// process's (SPEC §14); nil: timed out (or alertd stopping), the alert is read as committed.
        var respond: @Sendable (Alert?, ReceiptRecord?) -> Void
    }

    /// A waiter to answer; an alert waiter may come with the decided alert (and its receipt).
    enum Parked: Sendable {
        case current(CurrentWaiter)
        case alert(AlertWaiter, Alert?, ReceiptRecord?)
    }

    private var displays: [String: Display] = [:]
    private var currentWaiters: [String: [UInt64: CurrentWaiter]] = [:]
    private var alertWaiters: [AlertID: [UInt64: AlertWaiter]] = [:]
    private var lastID: UInt64 = 0
    /// Parked waiters right now.
    private(set) var count = 0
    /// Parked waiters per token name.
    private var perOwner: [String: Int] = [:]
    /// Once set, nobody parks any more.
    private(set) var draining = false

    /// The clients `current` waiters wait on.
    var clientsWaitedOn: [String] { Array(currentWaiters.keys) }
    /// The alerts alert waiters wait for.
    var alertsWaitedFor: [AlertID] { Array(alertWaiters.keys) }
    /// Whether a request waits here for this alert to become terminal.
    func isWaitedFor(_ alertID: AlertID) -> Bool { alertWaiters[alertID] != nil }

    /// Waiters parked by one token now.
    func count(of owner: String) -> Int { perOwner[owner] ?? 0 }

    private mutating func counted(_ owner: String?, _ delta: Int) {
        count += delta
        guard let owner else { return }
        let now = perOwner[owner, default: 0] + delta
        perOwner[owner] = now > 0 ? now : nil
    }

    /// Drops the published display of clients that are gone (nothing is parked on them).
    mutating func forget(_ clients: [String]) {
        for client in clients where currentWaiters[client] == nil { displays[client] = nil }
    }

    mutating func nextID() -> UInt64 {
        lastID += 1
        return lastID
    }

    func display(_ client: String) -> Display { displays[client] ?? Display() }

    /// A shared store's commit moved `client` from version `from` to `to` without
    /// changing its display: the published one is of `to` too, if it was of `from`.
    mutating func advance(client: String, from: Int64?, to: Int64) {
        guard let from, var display = displays[client], display.version == from else { return }
        display.version = to
        displays[client] = display
    }

    /// Publishes a client's displayed alert; returns the waiters it wakes. A display
    /// of an older version than the one published is stale: it changes nothing.
    /// Publishes a client's display unless an older one than what is published: a lower
    /// version, or none where a version is known (a shared store's read without one, such
    /// as a resync's, may have begun before the commit that published the newer one);
    /// without versions (the embedded store, whose commits may be published in another
    /// order than they committed), the same alert with fewer votes.
    ///
    /// Wakes the `current` waiters whose `after` it is not, and those of `after` whose
    /// number of votes it changes (a vote counts as a change of the display, §10).
    mutating func publish(client: String, _ display: Display) -> [CurrentWaiter] {
        if let newer = displays[client]?.version {
            guard let version = display.version, version >= newer else { return [] }
        } else if display.version == nil, let shown = displays[client], shown.id != nil, shown.id == display.id,
            display.votes < shown.votes
        {
            return []
        }
        displays[client] = display
        guard let parked = currentWaiters[client] else { return [] }
        let woken = parked.values.filter { $0.after != display.id || $0.votes != display.votes }
        guard !woken.isEmpty else { return [] }
        if woken.count == parked.count {
            currentWaiters[client] = nil
        } else {
            for waiter in woken { currentWaiters[client]![waiter.id] = nil }
        }
        for waiter in woken { counted(waiter.owner, -1) }
        return woken
    }

    mutating func addCurrentWaiter(_ waiter: CurrentWaiter) {
        currentWaiters[waiter.client, default: [:]][waiter.id] = waiter
        counted(waiter.owner, 1)
    }

    mutating func removeCurrentWaiter(_ client: String, _ id: UInt64) -> Parked? {
        guard let waiter = currentWaiters[client]?.removeValue(forKey: id) else { return nil }
        if currentWaiters[client]?.isEmpty == true { currentWaiters[client] = nil }
        counted(waiter.owner, -1)
        return .current(waiter)
    }

    mutating func addAlertWaiter(_ waiter: AlertWaiter) {
        alertWaiters[waiter.alertID, default: [:]][waiter.id] = waiter
        counted(waiter.owner, 1)
    }

    mutating func removeAlertWaiter(_ alertID: AlertID, _ id: UInt64) -> AlertWaiter? {
        guard let waiter = alertWaiters[alertID]?.removeValue(forKey: id) else { return nil }
        if alertWaiters[alertID]?.isEmpty == true { alertWaiters[alertID] = nil }
        counted(waiter.owner, -1)
        return waiter
    }

    mutating func takeAlertWaiters(_ alertID: AlertID) -> [AlertWaiter] {
        guard let parked = alertWaiters.removeValue(forKey: alertID) else { return [] }
        for waiter in parked.values { counted(waiter.owner, -1) }
        return Array(parked.values)
    }

    /// nil while a waiter of `owner` may park; else whether the token's share
    /// (true) or every waiter slot (false) is taken.
    func isFull(owner: String?, maxWaiters: Int, maxPerOwner: Int) -> Bool? {
        if count >= maxWaiters { return false }
        if let owner, count(of: owner) >= maxPerOwner { return true }
        return nil
    }

    /// Takes every parked waiter and stops parking new ones.
    mutating func takeAll() -> [Parked] {
        draining = true
        var all: [Parked] = currentWaiters.values.flatMap { $0.values.map(Parked.current) }
        all += alertWaiters.values.flatMap { $0.values.map { Parked.alert($0, nil, nil) } }
        currentWaiters = [:]
        alertWaiters = [:]
        count = 0
        perOwner = [:]
        return all
    }
}
