import AlertdCore
import AlertdWire

/// `GET /v1/clients/{client}/alerts`: pending alerts in display order, then
/// terminal ones newest first, filtered by `state`, paged by `limit` and `cursor`.
///
/// A cursor names the last alert of the page it ended (`p.<priority>.<id>` in
/// the pending part, `t.<id>` in the terminal part), so paging goes on from the
/// right place when alerts ahead of it leave the queue.
struct AlertListing {
    enum Cursor: Equatable {
        case pending(priority: Int, id: AlertID)
        /// The terminal part, after the given alert (nil: from its start).
        case terminal(AlertID?)

        var text: String {
            switch self {
            case .pending(let priority, let id): "p.\(priority).\(id)"
            case .terminal(let id?): "t.\(id)"
            case .terminal(nil): "t"
            }
        }

        init?(_ text: String) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            if parts.count == 3, parts[0] == "p", let priority = Int(parts[1]), AlertDraft.priorityRange.contains(priority),
                let id = AlertID(parts[2])
            {
                self = .pending(priority: priority, id: id)
            } else if parts.count == 2, parts[0] == "t", let id = AlertID(parts[1]) {
                self = .terminal(id)
            } else if text == "t" {
                self = .terminal(nil)
            } else {
                return nil
            }
        }
    }

    static let pendingStates: Set<AlertState> = [.queued, .displayed]

    var states: Set<AlertState> = pendingStates
    var limit = 100
    var cursor: Cursor?

    init(query: Query) throws {
        if let text = query["state"] {
            var states: Set<AlertState> = []
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let state = AlertState(rawValue: String(name)) else {
                    throw Problem(
                        .badRequest, "unknown state \"\(name)\"; states are \(AlertState.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                states.insert(state)
            }
            self.states = states
        }
        limit = try query.limit()
        if let text = query["cursor"] {
            guard let cursor = Cursor(text) else {
                throw Problem(.badRequest, "cursor \"\(text)\" was not issued by this daemon")
            }
            self.cursor = cursor
        }
    }

    func render(client: String, service: AlertService) throws -> [UInt8] {
        var page: [(Alert, Int?)] = []
        var next: Cursor?
        let wantsPending = !states.isDisjoint(with: Self.pendingStates)
        let wantsTerminal = states.contains { $0.isTerminal }

        if wantsPending, cursor == nil || isPendingCursor {
            var items = service.pendingAlerts(on: client).filter { states.contains($0.0.state) }
            if case .pending(let priority, let id) = cursor {
                if let index = items.firstIndex(where: { $0.0.id == id }) {
                    items.removeFirst(index + 1)
                } else {
                    // The alert left the queue: go on after its place in the order.
                    let stack = service.policy(of: client) == .stack
                    items.removeAll { item in
                        let a = item.0
                        if a.priority != priority { return a.priority > priority }
                        return stack ? a.id >= id : a.id <= id
                    }
                }
            }
            if items.count > limit {
                page = Array(items.prefix(limit))
                let last = page[page.count - 1].0
                next = .pending(priority: last.priority, id: last.id)
            } else {
                page = items
            }
        }
        if next == nil, wantsTerminal {
            var before: AlertID?
            if case .terminal(let id) = cursor { before = id }
            let room = limit - page.count
            let decided: [Alert]
            do {
                decided = try service.store.decided(on: client, states: states, before: before, limit: room + 1)
            } catch {
                throw Problem(.unavailable, "the store cannot be read: \(error)")
            }
            page += decided.prefix(room).map { ($0, nil) }
            if decided.count > room {
                // A full page: go on after its last terminal alert, or from the
                // start of the terminal part when the pending part filled it.
                next = .terminal(decided.prefix(room).last?.id)
            }
        }

        var json = JSONWriter(capacity: 256 + page.count * 512)
        json.beginObject()
        json.key("alerts")
        json.beginArray()
        for (alert, position) in page { Rendering.write(alert, position: position, into: &json) }
        json.endArray()
        json.key("next_cursor")
        json.string(next?.text)
        json.endObject()
        return json.bytes
    }

    private var isPendingCursor: Bool {
        if case .pending = cursor { return true }
        return false
    }
}
