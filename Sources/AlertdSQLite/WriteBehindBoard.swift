public import AlertdCore
import AlertdWire

/// The embedded store's board: the live queues, on which changes are made as they
/// come, and what readers see of them while their writes are in flight.
///
/// The embedded store writes behind: a change is made on the board at once and
/// committed by the writer thread later, with others (group commit). Readers see
/// committed state only (SPEC §9), so for every alert with writes in flight this
/// keeps its last committed version (nil: its creation is not committed), from
/// the versions each change replaced (``BoardChange/replaced``), until the
/// change's commit is reported (``committed(_:)``). The board itself knows
/// nothing of this.
///
/// Every change made on the board goes through ``update(_:change:)`` (or is
/// passed to ``began(_:)``), and every such change is committed, then passed to
/// ``committed(_:)``, in order.
public struct WriteBehindBoard: Sendable {
    /// The live queues.
    public private(set) var board: AlertBoard
    /// Alerts with writes in flight.
    private var flights: [AlertID: Flight] = [:]
    /// Per client, the pending alerts readers see.
    private var visiblePending: [String: Int] = [:]

    struct Flight: Sendable {
        /// The last committed version (nil: not committed yet).
        var committed: Alert?
        /// Uncommitted changes writing the alert.
        var writes: Int
    }

    /// Readers' view of an alert.
    public enum Visibility: Sendable {
        case alert(Alert)
        /// Posted, but its creation is not committed yet: it does not exist for readers.
        case notYetCommitted
        /// Not on the board: decided and committed, or never there (look in the store).
        case unknown
    }

    /// A board whose every change is committed (just restored from the store).
    public init(_ board: AlertBoard) {
        self.board = board
        for client in board.clients {
            let count = board.pendingCount(on: client)
            if count > 0 { visiblePending[client] = count }
        }
    }

    // MARK: - Changing

    /// Runs `operation` on the board and marks the writes of its change in flight.
    public mutating func update<T, Failure: Error>(
        _ operation: (inout AlertBoard) throws(Failure) -> T, change: (T) -> BoardChange
    ) throws(Failure) -> T {
        try update({ board, _ throws(Failure) in try operation(&board) }, change: change)
    }

    /// Runs `operation` on the board, telling it which alerts' creations are committed,
    /// and marks the writes of its change in flight.
    public mutating func update<T, Failure: Error>(
        _ operation: (inout AlertBoard, CommittedCreations) throws(Failure) -> T, change: (T) -> BoardChange
    ) throws(Failure) -> T {
        // The view holds the flights, not the board: the board's tables are changed in
        // place while it is held (a copy of the board held meanwhile made every change
        // copy every pending alert's entry: posts fell from ~8,000/s to ~1,500/s).
        let result = try Self.run(operation, on: &board, CommittedCreations(flights: flights))
        began(change(result))
        return result
    }

    /// A call of its own, so the view is released before ``began(_:)`` changes the flights.
    private static func run<T, Failure: Error>(
        _ operation: (inout AlertBoard, CommittedCreations) throws(Failure) -> T, on board: inout AlertBoard,
        _ view: CommittedCreations
    ) throws(Failure) -> T {
        try operation(&board, view)
    }

    /// Which alerts on the board have their creation committed, as a
    /// transaction's body asks while the board changes.
    public struct CommittedCreations: Sendable {
        fileprivate let flights: [AlertID: Flight]

        /// Whether alert `id`, on the board, has its creation committed.
        public func contains(_ id: AlertID) -> Bool {
            guard let flight = flights[id] else { return true }
            return flight.committed != nil
        }
    }

    /// Marks the writes of a change made on the board in flight (for a change not
    /// made through ``update(_:change:)``: one restored into a new board).
    public mutating func began(_ change: BoardChange) {
        for (alert, replaced) in zip(change.saved, change.replaced) {
            if var flight = flights[alert.id] {
                flight.writes += 1
                flights[alert.id] = flight
            } else {
                flights[alert.id] = Flight(committed: replaced, writes: 1)
            }
        }
    }

    /// Records that a change's writes are committed: its versions become visible,
    /// and decided alerts with no further writes in flight leave the board.
    public mutating func committed(_ change: BoardChange) {
        for alert in change.saved {
            guard var flight = flights[alert.id] else { continue }
            let before = flight.committed
            flight.writes -= 1
            if flight.writes > 0 {
                flight.committed = alert
                flights[alert.id] = flight
            } else {
                flights[alert.id] = nil
                board.forgetDecided(CollectionOfOne(alert.id))
            }
            // Per client it is on: its own, and each it escalated to (SPEC §12).
            let now = alert.isPending ? alert.clients : []
            let was = before?.isPending == true ? before!.clients : []
            for client in Set(now + was) {
                let delta = (now.contains(client) ? 1 : 0) - (was.contains(client) ? 1 : 0)
                if delta != 0 { visiblePending[client, default: 0] += delta }
            }
        }
    }

    /// Starts a sweep for idle clients (``AlertBoard/beginIdleSweep()``): a client
    /// with a change still committing is no candidate, as the store the caller
    /// reads next may not show that change yet.
    public mutating func beginIdleSweep() -> [String] {
        let committing = clientsCommitting()
        return board.beginIdleSweep().filter { !committing.contains($0) }
    }

    /// Forgets the idle clients among `candidates` (``AlertBoard/forget(idle:except:)``),
    /// none with a change still committing.
    public mutating func forget(idle candidates: [String]) -> [String] {
        let forgotten = board.forget(idle: candidates, except: clientsCommitting())
        for client in forgotten { visiblePending[client] = nil }
        return forgotten
    }

    private func clientsCommitting() -> Set<String> {
        var clients = Set<String>()
        for id in flights.keys { if let alert = board.alert(id) { clients.formUnion(alert.clients) } }
        return clients
    }

    // MARK: - Reading what is committed

    /// The version of an alert readers may see: the last committed one.
    public func visible(_ id: AlertID) -> Visibility {
        if let flight = flights[id] {
            return flight.committed.map(Visibility.alert) ?? .notYetCommitted
        }
        return board.alert(id).map(Visibility.alert) ?? .unknown
    }

    /// The position readers see (0 when displayed, n when n alerts are ahead; nil when not
    /// pending) of `alert` as readers see it (``visible(_:)``): counted among the committed
    /// versions of its client's pending alerts, so a post, a decision or a display change
    /// still committing is not counted yet. The live queue counts the alerts ahead in
    /// O(log n); then each alert with writes in flight counts as committed instead of as it
    /// is now. Agrees with the alert's index in ``visiblePending(on:)``.
    public func visiblePosition(of alert: Alert) -> Int? { visiblePosition(of: alert, on: alert.client) }

    /// The same in `client`'s queue: the alert's own or one it escalated to (SPEC §12).
    public func visiblePosition(of alert: Alert, on client: String) -> Int? {
        guard alert.isPending, alert.isOn(client), board.knows(client: client) else { return nil }
        if alert.isDisplayed(on: client) { return 0 }
        var ahead = board.queuedAhead(of: alert, on: client)
        if let shown = board.displayed(on: client), shown.id != alert.id, flights[shown.id] == nil { ahead += 1 }
        for (id, flight) in flights where id != alert.id {
            guard let latest = board.alert(id), latest.isOn(client) else { continue }
            // Counted above as it is now (queued, ahead) ...
            if latest.isPending, !latest.isDisplayed(on: client), board.precedes(latest, alert, on: client) { ahead -= 1 }
            // ... counted again as readers see it.
            if let committed = flight.committed, committed.isPending, committed.isOn(client),
                committed.isDisplayed(on: client) || board.precedes(committed, alert, on: client)
            {
                ahead += 1
            }
        }
        return ahead
    }

    /// The pending alerts of a client as readers see them, in display order: the committed
    /// versions only, including an alert whose decision is still committing, and without
    /// posts still committing.
    /// Each as `client` holds it (``Alert/viewed(from:)``): escalated ones too (SPEC §12).
    public func visiblePending(on client: String) -> [Alert] {
        let live = board.pending(on: client)
        var shown: Alert?
        var queued: [Alert] = []
        var inOrder = true
        for current in live {
            guard case .alert(let alert) = visible(current.id), alert.isPending, alert.isOn(client) else { continue }
            if alert.isDisplayed(on: client) {
                shown = alert.viewed(from: client)
            } else {
                // The live displayed alert, its display still committing: its place among the queued is to be found.
                if current.state == .displayed { inOrder = false }
                queued.append(alert.viewed(from: client))
            }
        }
        // Decided alerts whose decision is still committing (out of the live queue, still
        // pending for readers), and steps still committing (not on the queue for readers yet).
        for (id, flight) in flights {
            guard let committed = flight.committed, committed.isOn(client), committed.isPending,
                board.alert(id).map({ !$0.isPending || !$0.isOn(client) }) ?? false
            else { continue }
            if committed.isDisplayed(on: client) {
                shown = committed.viewed(from: client)
            } else {
                queued.append(committed.viewed(from: client))
                inOrder = false
            }
        }
        if !inOrder { queued.sort { board.precedes($0, $1, on: client) } }
        return (shown.map { [$0] } ?? []) + queued
    }

    /// The displayed alert of a client as readers see it: the committed version, as that
    /// client holds it. While a display change commits (a decision, a covering post), the
    /// alert displayed before it.
    public func visibleDisplayed(on client: String) -> Alert? {
        if let live = board.displayed(on: client) {
            if case .alert(let alert) = visible(live.id), alert.isDisplayed(on: client) { return alert.viewed(from: client) }
        } else if flights.isEmpty {
            return nil
        }
        // The live display is not committed yet: the one committed, if any, has writes in flight too.
        for flight in flights.values {
            if let committed = flight.committed, committed.isDisplayed(on: client) { return committed.viewed(from: client) }
        }
        return nil
    }

    /// How many pending alerts of a client readers see.
    public func visiblePendingCount(on client: String) -> Int { visiblePending[client] ?? 0 }
}
