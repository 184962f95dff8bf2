import AlertdCore
import AlertdWire

/// The deliveries waiting for their next attempt, by target, with a bound on
/// the attempts in flight to each target.
///
/// A target is a receiver: the origin (`scheme://host:port`) of the delivery's
/// URL, so callback URLs that differ only by path or query share one bound. A
/// receiver that is slow or dead holds at most ``maxInFlightPerTarget``
/// attempts; every other target's deliveries are taken as soon as they are
/// due. Within a target, deliveries go in order of due time, then of arrival
/// (so events due at once leave in the order they were handed over).
///
/// Pure and single-threaded: the worker keeps it under its lock.
///
/// ```swift
/// var queue = DeliveryQueue(maxInFlightPerTarget: 32)
/// queue.add(delivery)
/// for job in queue.takeDue(now: clock.now()) { send(job) }   // now in flight
/// queue.finished(job)                                       // frees its slot
/// queue.add(retried)                                         // with its new due time
/// queue.nextDue  // when to wake up next
/// ```
public struct DeliveryQueue: Sendable {
    /// The most attempts in flight to one target at once.
    public let maxInFlightPerTarget: Int

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

    private var targets: [String: Target] = [:]
    /// Ids waiting or in flight: a delivery handed over twice (by a restore and
    /// by a commit racing it) is taken once.
    private var known: Set<String> = []
    private var sequence: UInt64 = 0

    /// Deliveries waiting for an attempt.
    public private(set) var waitingCount = 0
    /// Attempts taken and not yet ``finished(_:)``.
    public private(set) var inFlightCount = 0

    /// - Precondition: `maxInFlightPerTarget > 0`.
    public init(maxInFlightPerTarget: Int) {
        precondition(maxInFlightPerTarget > 0, "at least one attempt per target must be allowed")
        self.maxInFlightPerTarget = maxInFlightPerTarget
    }

    /// Adds a delivery, due at `delivery.due`. False if it is already waiting or in flight.
    @discardableResult
    public mutating func add(_ delivery: PendingDelivery) -> Bool {
        guard known.insert(delivery.id).inserted else { return false }
        sequence &+= 1
        targets[Self.origin(of: delivery.target), default: Target()].waiting.insert(
            Entry(due: delivery.due, sequence: sequence, box: Box(delivery)))
        waitingCount += 1
        return true
    }

    /// Re-adds a delivery that was in flight (its attempt failed) with its next due time.
    /// Call ``finished(_:)`` for the attempt first.
    public mutating func retry(_ delivery: PendingDelivery) {
        add(delivery)
    }

    /// Takes every delivery due at `now` whose target has a free slot, at most
    /// `limit`, and counts them in flight.
    public mutating func takeDue(now: Timestamp, limit: Int = .max) -> [PendingDelivery] {
        var taken: [PendingDelivery] = []
        // A copy of the keys, not a view: a view would keep the storage shared
        // and make the first mutation below copy every target's heap.
        for key in Array(targets.keys) {
            guard taken.count < limit else { break }
            targets[key]!.take(into: &taken, now: now, max: maxInFlightPerTarget, limit: limit)
        }
        waitingCount -= taken.count
        inFlightCount += taken.count
        return taken
    }

    /// The attempt of `delivery` is over: its slot is free again. The caller
    /// decides whether it comes back through ``retry(_:)``.
    public mutating func finished(_ delivery: PendingDelivery) {
        guard known.remove(delivery.id) != nil else { return }
        let key = Self.origin(of: delivery.target)
        guard targets[key] != nil else { return }
        targets[key]!.inFlight -= 1
        inFlightCount -= 1
        if targets[key]!.inFlight == 0 && targets[key]!.waiting.isEmpty { targets[key] = nil }
    }

    /// The earliest due time among targets with a free slot; nil if nothing can be taken.
    public var nextDue: Timestamp? {
        var next: Timestamp?
        for target in targets.values where target.inFlight < maxInFlightPerTarget {
            if let due = target.waiting.min?.due, next == nil || due < next! { next = due }
        }
        return next
    }

    /// Attempts in flight to the target of `url`.
    public func inFlight(to url: String) -> Int { targets[Self.origin(of: url)]?.inFlight ?? 0 }

    /// `scheme://authority` of a URL, lowercased: what counts as one receiver.
    public static func origin(of url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            return url.lowercased()
        }
        let authorityStart = colon + 3
        let end =
            bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        return String(decoding: bytes[..<end], as: UTF8.self).lowercased()
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
