import AlertdEngine

/// A change a flush can take: the clients it holds whole while it runs, and how many
/// flushes left it (found one of its clients held by another instance).
protocol FlushQueueable: Sendable {
    /// Every client it holds, its own first.
    var clients: [String] { get }
    var deferrals: Int { get }
}

/// Which changes of a PostgreSQL store go in which flush, and when: ``Flushes``' take rules,
/// without locks, connections or tasks, so each rule is tested on its own (``Batcher`` runs them).
///
/// - At most ``flights`` flushes at once, on disjoint clients: a client in a flush waits
///   for the next one, so a client's changes commit in arrival order.
/// - A flush takes the waiting changes of free clients in arrival order, at most ``batch``;
///   a change that cannot go keeps every later change of its clients behind it.
/// - A change of several clients (an alert pending on several, SPEC §12) goes when all of
///   them are free.
/// - Changes a flush left (their client was held elsewhere) go back first, and go in a flush
///   of their own clients only (it waits for their locks and holds no other client meanwhile).
struct FlushQueue<Change: FlushQueueable>: Sendable {
    /// Flushes in flight at once.
    let flights: Int
    /// Changes in one flush at most.
    let batch: Int

    /// Changes in no flush yet, in arrival order (left changes first).
    private(set) var waiting: [Change] = []
    /// Clients in a flush now.
    private(set) var busy = Set<String>()
    /// Flushes in flight.
    private(set) var inFlight = 0

    init(flights: Int, batch: Int) {
        precondition(flights >= 1 && batch >= 1)
        self.flights = flights
        self.batch = batch
    }

    /// Queues `change`; the flush to start now, if one may.
    mutating func enqueue(_ change: Change) -> [Change]? {
        waiting.append(change)
        return take()
    }

    /// A flush ended: its clients and its flight are free, the changes it `left` wait first
    /// (before any later change of their clients, which waited behind them). The flushes
    /// that may start now, in order.
    mutating func finished(_ flush: [Change], left: [Change]) -> [[Change]] {
        waiting.insert(contentsOf: left, at: 0)
        busy.subtract(flush.lazy.flatMap(\.clients))
        inFlight -= 1
        var next: [[Change]] = []
        while let flush = take() { next.append(flush) }
        return next
    }

    /// The next flush, when one may start (see the type's rules); the rest stay waiting, in order.
    private mutating func take() -> [Change]? {
        guard inFlight < flights, !waiting.isEmpty else { return nil }
        let busy = self.busy
        let contended = Set(
            waiting.lazy.filter { $0.deferrals > 0 && $0.clients.allSatisfy { !busy.contains($0) } }.flatMap(\.clients))
        var taken: [Change] = []
        var kept: [Change] = []
        var claimed = Set<String>()
        var cut = Set<String>()
        for change in waiting {
            let clients = change.clients
            let mine = clients.contains(where: claimed.contains)
            let eligible = contended.isEmpty || clients.contains(where: contended.contains)
            let free = clients.allSatisfy { !busy.contains($0) }
            if (mine || eligible) && free && taken.count < batch && !clients.contains(where: cut.contains) {
                claimed.formUnion(clients)
                taken.append(change)
            } else {
                cut.formUnion(clients)
                kept.append(change)
            }
        }
        guard !taken.isEmpty else { return nil }
        waiting = kept
        self.busy.formUnion(claimed)
        inFlight += 1
        return taken
    }
}

/// ``Batcher`` runs the flushes by these rules.
extension FlushQueue: BatchRules {}
