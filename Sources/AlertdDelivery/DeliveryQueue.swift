public import AlertdCore
public import AlertdWire

/// The deliveries waiting for their next attempt, by target, with a bound on
/// the attempts in flight to each target and on all of them together.
///
/// A target is a receiver's host: the host of the delivery's URL, lowercased,
/// without user info, port or trailing dot. URLs that differ by path, query,
/// scheme, port or user info (`http://u1@h/`, `https://u2@h:8443/`) share one
/// bound, so nobody can multiply a host's share by writing its URL another
/// way. A receiver that is slow or dead holds at most
/// ``maxInFlightPerTarget`` attempts; every other target's deliveries are
/// taken as soon as they are due, as long as fewer than ``maxInFlight``
/// attempts are in flight altogether (many names for one machine are many
/// targets: the global bound is what holds them). Within a target, deliveries
/// go in order of due time, then of arrival (so events due at once leave in
/// the order they were handed over).
///
/// Integration requests (Alertmanager silences) go in a lane of their own,
/// with their own global bound (``maxInFlightIntegrations``), taken first:
/// callbacks to slow receivers never delay a silence, nor silences callbacks.
/// The queue also counts each client's callback deliveries
/// (``backlog(of:)``): the engine refuses a client's posts while its backlog
/// is at `callbacks.max_pending_per_client`, so one client's dead receiver
/// cannot fill the outbox and memory for everyone.
///
/// Pure and single-threaded: the worker keeps it under its lock.
///
/// ```swift
/// var queue = DeliveryQueue(maxInFlightPerTarget: 32, maxInFlight: 256)
/// queue.add(delivery)
/// for job in queue.takeDue(now: clock.now()) { send(job) }   // now in flight
/// queue.finished(job)                                       // frees its slot
/// queue.add(retried)                                         // with its new due time
/// queue.nextDue  // when to wake up next
/// ```
public struct DeliveryQueue: Sendable {
    /// The most attempts in flight to one target at once.
    public let maxInFlightPerTarget: Int
    /// The most callback attempts in flight altogether.
    public let maxInFlight: Int
    /// The most integration requests (Alertmanager silences) in flight altogether: a lane of
    /// their own, so a flood of callbacks to slow receivers never holds up a silence an
    /// operator asked for, and integrations never take the callbacks' slots.
    public let maxInFlightIntegrations: Int

    /// A heap entry: small and cheap to move, compared without touching the delivery.
    fileprivate struct Entry: Comparable, Sendable {
        var due: Timestamp
        /// Order of arrival, for deliveries due at the same time.
        var sequence: UInt64
        var box: Box
        static func < (a: Entry, b: Entry) -> Bool { (a.due, a.sequence) < (b.due, b.sequence) }
        static func == (a: Entry, b: Entry) -> Bool { a.sequence == b.sequence }
    }

    fileprivate final class Box: Sendable {
        let delivery: PendingDelivery
        init(_ delivery: PendingDelivery) { self.delivery = delivery }
    }

    fileprivate struct Target: Sendable {
        var waiting = Heap<Entry>()
        var inFlight = 0
    }

    /// Targets with a global bound on their attempts in flight: callbacks, or integrations.
    fileprivate struct Lane: Sendable {
        let maxInFlight: Int
        var targets: [String: Target] = [:]
        var inFlightCount = 0
        /// Where ``take(now:limit:perTarget:)`` starts among the targets, moved on every
        /// call: when the global bound leaves room for only a few attempts, the same
        /// targets are not always first in line.
        var rotation = 0

        init(maxInFlight: Int) { self.maxInFlight = maxInFlight }
    }

    private var callbacks: Lane
    private var integrations: Lane
    /// Ids waiting or in flight: a delivery handed over twice (by a restore and
    /// by a commit racing it) is taken once.
    private var known: Set<String> = []
    private var sequence: UInt64 = 0
    /// Callback deliveries waiting or in flight, by the client of their alert.
    private var byClient: [String: Int] = [:]

    /// Deliveries waiting for an attempt.
    public private(set) var waitingCount = 0
    /// Attempts taken and not yet ``finished(_:)``.
    public var inFlightCount: Int { callbacks.inFlightCount + integrations.inFlightCount }

    /// - Precondition: every bound is above 0.
    public init(maxInFlightPerTarget: Int, maxInFlight: Int = .max, maxInFlightIntegrations: Int = 8) {
        precondition(maxInFlightPerTarget > 0, "at least one attempt per target must be allowed")
        precondition(maxInFlight > 0 && maxInFlightIntegrations > 0, "at least one attempt must be allowed")
        self.maxInFlightPerTarget = maxInFlightPerTarget
        self.maxInFlight = maxInFlight
        self.maxInFlightIntegrations = maxInFlightIntegrations
        callbacks = Lane(maxInFlight: maxInFlight)
        integrations = Lane(maxInFlight: maxInFlightIntegrations)
    }

    /// Callback and push deliveries of `client`'s alerts waiting or in flight (the
    /// integrations' requests are not counted: an operator's silence is never refused for a backlog).
    public func backlog(of client: String) -> Int { byClient[client] ?? 0 }

    /// Adds a delivery, due at `delivery.due`. False if it is already waiting or in flight.
    @discardableResult
    public mutating func add(_ delivery: PendingDelivery) -> Bool {
        guard known.insert(delivery.id).inserted else { return false }
        sequence &+= 1
        let entry = Entry(due: delivery.due, sequence: sequence, box: Box(delivery))
        let host = Self.host(of: delivery.target)
        switch delivery.kind {
        case .callback, .push:
            callbacks.targets[host, default: Target()].waiting.insert(entry)
            byClient[delivery.client, default: 0] += 1
        case .alertmanagerSilence:
            integrations.targets[host, default: Target()].waiting.insert(entry)
        }
        waitingCount += 1
        return true
    }

    /// Re-adds a delivery that was in flight (its attempt failed) with its next due time.
    /// Call ``finished(_:)`` for the attempt first.
    public mutating func retry(_ delivery: PendingDelivery) {
        add(delivery)
    }

    /// Takes every delivery due at `now` whose target has a free slot, at most
    /// `limit` and at most as many as the global bounds leave room for (the
    /// integrations' lane first), and counts them in flight.
    public mutating func takeDue(now: Timestamp, limit: Int = .max) -> [PendingDelivery] {
        var taken = integrations.take(now: now, limit: limit, perTarget: maxInFlightPerTarget)
        taken += callbacks.take(now: now, limit: limit - taken.count, perTarget: maxInFlightPerTarget)
        waitingCount -= taken.count
        return taken
    }

    /// The attempt of `delivery` is over: its slot is free again. The caller
    /// decides whether it comes back through ``retry(_:)``.
    public mutating func finished(_ delivery: PendingDelivery) {
        guard known.remove(delivery.id) != nil else { return }
        let key = Self.host(of: delivery.target)
        switch delivery.kind {
        case .callback, .push:
            if let count = byClient[delivery.client] { byClient[delivery.client] = count > 1 ? count - 1 : nil }
            callbacks.finished(key)
        case .alertmanagerSilence:
            integrations.finished(key)
        }
    }

    /// Takes the waiting deliveries among `ids` out of the queue (their webhook was removed,
    /// the store cancelled them) and returns how many. One in flight is not touched: its
    /// attempt ends as it ends, and the worker does not retry it.
    @discardableResult
    public mutating func cancel(_ ids: Set<String>) -> Int {
        guard !ids.isEmpty else { return 0 }
        var removed = 0
        for key in Array(callbacks.targets.keys) {
            let gone = callbacks.targets[key]!.waiting.removeAll { ids.contains($0.box.delivery.id) }
            for entry in gone {
                let delivery = entry.box.delivery
                known.remove(delivery.id)
                if let count = byClient[delivery.client] { byClient[delivery.client] = count > 1 ? count - 1 : nil }
            }
            removed += gone.count
            if callbacks.targets[key]!.inFlight == 0 && callbacks.targets[key]!.waiting.isEmpty { callbacks.targets[key] = nil }
        }
        waitingCount -= removed
        return removed
    }

    /// Whether `id` is waiting or in flight.
    public func holds(_ id: String) -> Bool { known.contains(id) }

    /// Makes the waiting callback deliveries among `ids` due at `now` (those the deny list
    /// refused, after a reload changed it), in the order they were due.
    public mutating func advance(_ ids: Set<String>, to now: Timestamp) {
        guard !ids.isEmpty else { return }
        for key in Array(callbacks.targets.keys) {
            let moved = callbacks.targets[key]!.waiting.removeAll { ids.contains($0.box.delivery.id) && $0.due > now }
            for entry in moved.sorted() {
                var delivery = entry.box.delivery
                delivery.due = now
                sequence &+= 1
                callbacks.targets[key]!.waiting.insert(Entry(due: now, sequence: sequence, box: Box(delivery)))
            }
        }
    }

    /// The earliest due time among targets with a free slot; nil if nothing
    /// can be taken (the global bounds are reached, or every due target is full).
    public var nextDue: Timestamp? {
        [callbacks.nextDue(perTarget: maxInFlightPerTarget), integrations.nextDue(perTarget: maxInFlightPerTarget)].compactMap { $0 }.min()
    }

    /// Callback attempts in flight to the target of `url`.
    public func inFlight(to url: String) -> Int { callbacks.targets[Self.host(of: url)]?.inFlight ?? 0 }

    /// The host of a URL, lowercased, without user info, port, the brackets
    /// of an IPv6 literal or a trailing dot: what counts as one receiver.
    ///
    /// ```swift
    /// DeliveryQueue.host(of: "https://u:p@Hooks.Example.:8443/x?y")  // "hooks.example"
    /// DeliveryQueue.host(of: "http://[::1]:9000/h")                  // "::1"
    /// ```
    public static func host(of url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            return url.lowercased()
        }
        let authorityStart = colon + 3
        let authorityEnd =
            bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        var hostPort = bytes[authorityStart..<authorityEnd]
        // The last `@` ends the user info, as the target parser (TargetURL) reads it.
        if let at = hostPort.lastIndex(of: UInt8(ascii: "@")) { hostPort = hostPort[(at + 1)...] }
        var host: ArraySlice<UInt8>
        if hostPort.first == UInt8(ascii: "["), let close = hostPort.firstIndex(of: UInt8(ascii: "]")) {
            host = hostPort[(hostPort.startIndex + 1)..<close]
        } else if let portColon = hostPort.lastIndex(of: UInt8(ascii: ":")) {
            host = hostPort[..<portColon]
        } else {
            host = hostPort
        }
        if host.last == UInt8(ascii: ".") { host = host.dropLast() }
        return String(decoding: host, as: UTF8.self).lowercased()
    }
}

extension DeliveryQueue.Lane {
    fileprivate mutating func take(now: Timestamp, limit: Int, perTarget: Int) -> [PendingDelivery] {
        let budget = min(limit, maxInFlight - inFlightCount)
        guard budget > 0, !targets.isEmpty else { return [] }
        var taken: [PendingDelivery] = []
        // A copy of the keys, not a view: a view would keep the storage shared
        // and make the first mutation below copy every target's heap.
        let keys = Array(targets.keys)
        let start = rotation % keys.count
        rotation = (rotation &+ 1) & Int.max
        for offset in 0..<keys.count {
            guard taken.count < budget else { break }
            let key = keys[(start + offset) % keys.count]
            targets[key]!.take(into: &taken, now: now, max: perTarget, limit: budget)
        }
        inFlightCount += taken.count
        return taken
    }

    fileprivate mutating func finished(_ key: String) {
        guard targets[key] != nil else { return }
        targets[key]!.inFlight -= 1
        inFlightCount -= 1
        if targets[key]!.inFlight == 0 && targets[key]!.waiting.isEmpty { targets[key] = nil }
    }

    fileprivate func nextDue(perTarget: Int) -> Timestamp? {
        guard inFlightCount < maxInFlight else { return nil }
        var next: Timestamp?
        for target in targets.values where target.inFlight < perTarget {
            if let due = target.waiting.min?.due, next == nil || due < next! { next = due }
        }
        return next
    }
}

extension DeliveryQueue.Target {
    fileprivate mutating func take(into taken: inout [PendingDelivery], now: Timestamp, max: Int, limit: Int) {
        while inFlight < max, taken.count < limit, let first = waiting.min, first.due <= now {
            waiting.popMin()
            inFlight += 1
            taken.append(first.box.delivery)
        }
    }
}
