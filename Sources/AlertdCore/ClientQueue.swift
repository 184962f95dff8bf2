/// How a client chooses its displayed alert (§3).
public enum QueuePolicy: String, Sendable, Hashable {
    /// The displayed alert stays until it is terminal; then the highest priority, oldest first.
    case fifo
    /// Highest priority, newest first, is always the displayed one.
    case stack
}

/// One client's pending alerts: the displayed one and the queued ones in display order.
struct ClientQueue: Sendable {
    struct Entry: Hashable, Sendable {
        var priority: Int
        /// Order among equal priorities: a shared store's database sequence; 0 in
        /// the embedded store, where ``key``s (counting up in one process) give the order.
        var sequence: Int64
        /// Order among equal priorities and sequences: the alert's id in its own queue; in a
        /// queue it escalated to (SPEC §12), an id-like key of the time it joined that queue
        /// (``AlertBoard/orderKey(_:at:)``), as if posted there then.
        var key: AlertID
        /// The alert's id.
        var id: AlertID

        init(priority: Int, sequence: Int64, id: AlertID, key: AlertID? = nil) {
            self.priority = priority
            self.sequence = sequence
            self.id = id
            self.key = key ?? id
        }
    }

    let policy: QueuePolicy
    private(set) var displayed: Entry?
    /// Sorted: `queued[0]` is displayed next.
    private(set) var queued: [Entry] = []

    init(policy: QueuePolicy) { self.policy = policy }

    var pendingCount: Int { queued.count + (displayed == nil ? 0 : 1) }

    /// Whether `a` comes before `b` in this policy's order.
    func precedes(_ a: Entry, _ b: Entry) -> Bool { Self.precedes(a, b, policy: policy) }

    /// Whether `a` comes before `b` in `policy`'s order: higher priority first; then
    /// fifo oldest first, stack newest first.
    static func precedes(_ a: Entry, _ b: Entry, policy: QueuePolicy) -> Bool {
        if a.priority != b.priority { return a.priority > b.priority }
        if a.sequence != b.sequence { return policy == .fifo ? a.sequence < b.sequence : a.sequence > b.sequence }
        if a.key != b.key { return policy == .fifo ? a.key < b.key : a.key > b.key }
        return policy == .fifo ? a.id < b.id : a.id > b.id
    }

    /// What an insertion or removal did to the display.
    struct DisplayChange: Equatable {
        /// Now displayed (nil: nothing changed, or nothing left to display).
        var shown: Entry?
        /// Was displayed, now queued again (stack only).
        var covered: Entry?
    }

    /// Adds a pending alert.
    mutating func insert(_ entry: Entry) -> DisplayChange {
        guard let current = displayed else {
            displayed = entry
            return DisplayChange(shown: entry)
        }
        if policy == .stack, precedes(entry, current) {
            insertQueued(current)
            displayed = entry
            return DisplayChange(shown: entry, covered: current)
        }
        insertQueued(entry)
        return DisplayChange()
    }

    /// Adds an alert restored as displayed or queued, exactly where the store had it.
    mutating func restore(_ entry: Entry, displayed isDisplayed: Bool) {
        if isDisplayed, displayed == nil {
            displayed = entry
        } else {
            insertQueued(entry)
        }
    }

    /// Removes a pending alert; when it was displayed, the next one is shown.
    mutating func remove(_ entry: Entry) -> DisplayChange {
        if displayed == entry {
            displayed = nil
            return DisplayChange(shown: promote())
        }
        if let index = indexOf(entry) { queued.remove(at: index) }
        return DisplayChange()
    }

    /// Removes a pending alert without showing another in its place (a merge of
    /// changes committed elsewhere: what is displayed comes from them, then ``normalize()``).
    mutating func take(_ entry: Entry) {
        if displayed == entry {
            displayed = nil
        } else if let index = indexOf(entry) {
            queued.remove(at: index)
        }
    }

    /// Brings the display in line with the policy (after a restore or a policy change).
    mutating func normalize() -> DisplayChange {
        if displayed == nil { return DisplayChange(shown: promote()) }
        if policy == .stack, let current = displayed, let first = queued.first, precedes(first, current) {
            queued.removeFirst()
            insertQueued(current)
            displayed = first
            return DisplayChange(shown: first, covered: current)
        }
        return DisplayChange()
    }

    /// 0 when displayed, n when n alerts are ahead; nil when not pending here.
    func position(of entry: Entry) -> Int? {
        if displayed == entry { return 0 }
        guard let index = indexOf(entry) else { return nil }
        return index + (displayed == nil ? 0 : 1)
    }

    /// How many queued entries come before `entry` in this policy's order, whether or not
    /// `entry` itself is queued here.
    func queuedAhead(of entry: Entry) -> Int { insertionIndex(entry) }

    /// Pending entries in display order.
    var inDisplayOrder: [Entry] {
        (displayed.map { [$0] } ?? []) + queued
    }

    private mutating func promote() -> Entry? {
        guard !queued.isEmpty else { return nil }
        let next = queued.removeFirst()
        displayed = next
        return next
    }

    private mutating func insertQueued(_ entry: Entry) {
        queued.insert(entry, at: insertionIndex(entry))
    }

    /// The first index whose entry does not precede `entry`.
    private func insertionIndex(_ entry: Entry) -> Int {
        var low = 0, high = queued.count
        while low < high {
            let mid = (low + high) / 2
            if precedes(queued[mid], entry) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func indexOf(_ entry: Entry) -> Int? {
        let index = insertionIndex(entry)
        return index < queued.count && queued[index] == entry ? index : nil
    }
}
