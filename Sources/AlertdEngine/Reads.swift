public import AlertdCore
public import AlertdWire
import NIOConcurrencyHelpers

extension Engine {
    /// An alert of `client` as committed, with its position while pending; nil when there is none.
    /// An alert escalated to `client` (SPEC §12) is one of its alerts too: as that client
    /// holds it, with its position there.
    public func lookup(_ id: AlertID, on client: String) async throws(EngineError) -> PositionedAlert? {
        let found = try await store.alert(id, on: client)
        return found?.alert.isOn(client) == true ? found : nil
    }

    /// Pending alerts on every client.
    public var pendingTotal: Int { store.pendingTotal }

    /// The bytes the store takes (for `/metrics`); nil: not known yet.
    public var storeBytes: Int? { store.storeBytes }
    /// The bytes of every terminal alert, as retention counts them, at the last purge (nil: none yet).
    public var retainedBytes: Int? { store.retainedBytes }
    /// `alerts.retention_max_bytes`: what ``retainedBytes`` is bounded by.
    public var retentionMaxBytes: Int { settings.retentionMaxBytes }

    /// The deliveries of an alert's events (§5), for an alert of `client`.
    public func deliveries(of id: AlertID, on client: String) async throws(EngineError) -> [DeliveryRecord] {
        guard try await lookup(id, on: client) != nil else { throw EngineError(.notFound, "no alert \(id) on client \(client)") }
        return try await store.deliveries(of: id)
    }

    // MARK: - Clients

    /// A client in `GET /v1/clients`.
    public struct ClientSummary: Sendable, Hashable {
        public var client: String
        /// Pending alerts as committed.
        public var pending: Int
        public var displayed: AlertID?
    }

    /// One page of clients by id, after `after`, among those `include` accepts;
    /// and whether more follow. Counts are kept by the store: no alert is walked.
    public func clients(
        after: String? = nil, limit: Int = .max, where include: @escaping @Sendable (String) -> Bool = { _ in true }
    ) async throws(EngineError) -> (page: [ClientSummary], more: Bool) {
        let (counts, more) = try await store.clients(after: after, limit: limit, where: include)
        // The displays as committed now, not as last published (a shared store).
        try await synchronize(counts.map(\.client))
        let page = waiters.withLockedValue { waiters in
            counts.map { ClientSummary(client: $0.client, pending: $0.pending, displayed: waiters.display($0.client).id) }
        }
        return (page, more)
    }

    // MARK: - Listing alerts

    /// Where a page of `GET .../alerts` ended: it names the last alert of the
    /// page, so paging goes on from the right place when alerts ahead of it
    /// leave the queue.
    public enum ListCursor: Sendable, Hashable {
        /// In the pending part, after this alert's place in the queue's order.
        case pending(priority: Int, id: AlertID)
        /// The terminal part, after the given alert (nil: from its start).
        case terminal(AlertID?)
    }

    public static let pendingStates: Set<AlertState> = [.queued, .displayed]

    /// A page of alerts and the cursor of the next one.
    public struct AlertPage: Sendable {
        public var alerts: [PositionedAlert]
        public var next: ListCursor?
    }

    /// Pending alerts in display order, then terminal ones newest first, in
    /// `states`, at most `limit`, after `cursor`; with their positions and the
    /// cursor of the next page.
    public func alerts(on client: String, states: Set<AlertState>, limit: Int, after cursor: ListCursor?) async throws(EngineError)
        -> AlertPage
    {
        let wantsPending = !states.isDisjoint(with: Self.pendingStates)
        let (terminalCursor, inTerminalPart): (AlertID?, Bool) =
            switch cursor {
            case .terminal(let id): (id, true)
            default: (nil, false)
            }
        var items: [PositionedAlert] = []
        if wantsPending, !inTerminalPart {
            items = try await store.pending(on: client).filter { states.contains($0.alert.state) }
            if case .pending(let priority, let id) = cursor {
                if let index = items.firstIndex(where: { $0.alert.id == id }) {
                    items.removeFirst(index + 1)
                } else {
                    // The alert left the queue: go on after its place in the order.
                    let stack = store.policy(of: client) == .stack
                    items.removeAll { item in
                        let a = item.alert
                        if a.priority != priority { return a.priority > priority }
                        return stack ? a.id >= id : a.id <= id
                    }
                }
            }
            if items.count > limit {
                let page = Array(items.prefix(limit))
                let last = page[page.count - 1].alert
                return AlertPage(alerts: page, next: .pending(priority: last.priority, id: last.id))
            }
        }
        guard states.contains(where: \.isTerminal) else { return AlertPage(alerts: items, next: nil) }
        let room = limit - items.count
        let decided = try await store.decided(on: client, states: states, before: terminalCursor, limit: room + 1)
        // A full page: go on after its last terminal alert, or from the start of the
        // terminal part when the pending part filled it.
        let next: ListCursor? = decided.count > room ? .terminal(decided.prefix(room).last?.id) : nil
        return AlertPage(alerts: items + decided.prefix(room).map { PositionedAlert($0, position: nil) }, next: next)
    }
}
