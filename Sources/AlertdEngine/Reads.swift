public import AlertdCore
public import AlertdWire
import NIOConcurrencyHelpers

extension Engine {
    /// An alert of `client` as committed; nil when there is none.
    public func lookup(_ id: AlertID, on client: String) -> Result<Alert?, EngineError> {
        do throws(EngineError) {
            let alert = try store.alert(id)
            return .success(alert?.client == client ? alert : nil)
        } catch {
            return .failure(error)
        }
    }

    /// The position of a pending alert: 0 displayed, n when n alerts are ahead;
    /// nil when terminal. While a change ahead of it is still committing, that
    /// may count it a moment early; lists count exactly.
    public func position(of alert: Alert) -> Int? {
        guard alert.isPending else { return nil }
        if alert.state == .displayed { return 0 }
        return store.position(of: alert)
    }

    /// Pending alerts on every client.
    public var pendingTotal: Int { store.pendingTotal }

    /// The deliveries of an alert's events (§5), for an alert of `client`.
    public func deliveries(of id: AlertID, on client: String) -> Result<[DeliveryRecord], EngineError> {
        lookup(id, on: client).flatMap { found -> Result<[DeliveryRecord], EngineError> in
            guard found != nil else { return .failure(EngineError(.notFound, "no alert \(id) on client \(client)")) }
            do throws(EngineError) {
                return .success(try store.deliveries(of: id))
            } catch {
                return .failure(error)
            }
        }
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
    public func clients(after: String? = nil, limit: Int = .max, where include: (String) -> Bool = { _ in true }) -> (
        page: [ClientSummary], more: Bool
    ) {
        let (counts, more) = store.clients(after: after, limit: limit, where: include)
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

    /// Pending alerts in display order, then terminal ones newest first, in
    /// `states`, at most `limit`, after `cursor`; with their positions and the
    /// cursor of the next page.
    public func alerts(on client: String, states: Set<AlertState>, limit: Int, after cursor: ListCursor?) -> Result<
        (alerts: [(alert: Alert, position: Int?)], next: ListCursor?), EngineError
    > {
        var page: [(alert: Alert, position: Int?)] = []
        var next: ListCursor?
        let wantsPending = !states.isDisjoint(with: Self.pendingStates)
        let wantsTerminal = states.contains { $0.isTerminal }
        var pendingCursor: (priority: Int, id: AlertID)?
        var terminalCursor: AlertID?
        var inTerminalPart = false
        switch cursor {
        case .pending(let priority, let id): pendingCursor = (priority, id)
        case .terminal(let id):
            terminalCursor = id
            inTerminalPart = true
        case nil: break
        }

        if wantsPending, !inTerminalPart {
            var items = store.pending(on: client).enumerated().map { (alert: $0.element, position: Optional($0.offset)) }
            items.removeAll { !states.contains($0.alert.state) }
            if let (priority, id) = pendingCursor {
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
                page = Array(items.prefix(limit))
                let last = page[page.count - 1].alert
                next = .pending(priority: last.priority, id: last.id)
            } else {
                page = items
            }
        }
        if next == nil, wantsTerminal {
            let room = limit - page.count
            let decided: [Alert]
            do throws(EngineError) {
                decided = try store.decided(on: client, states: states, before: terminalCursor, limit: room + 1)
            } catch {
                return .failure(error)
            }
            page += decided.prefix(room).map { (alert: $0, position: nil) }
            if decided.count > room {
                // A full page: go on after its last terminal alert, or from the
                // start of the terminal part when the pending part filled it.
                next = .terminal(decided.prefix(room).last?.id)
            }
        }
        return .success((page, next))
    }
}
