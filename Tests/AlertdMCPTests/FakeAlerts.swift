import AlertdMCP
import AlertdWire
import NIOConcurrencyHelpers

/// alertd as the tools see it, in memory: posts keyed by their `Idempotency-Key` as alertd
/// keeps them, long-polls that park until the test decides the alert or the call is
/// cancelled, and every call recorded. It fails loudly on an id it never gave out.
final class FakeAlerts: AlertsAPI, Sendable {
    enum Event: Sendable, Equatable {
        case posted(id: String, key: String?)
        case polling(id: String, wait: Int?)
        case withdrew(id: String)
    }

    private struct State {
        var alerts: [String: AlertResource] = [:]
        var byKey: [String: String] = [:]
        var parked: [CheckedContinuation<Void, Never>] = []
        var count = 0
    }

    private let state = NIOLockedValueBox(State())
    let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation

    init() {
        (events, sink) = AsyncStream.makeStream()
    }

    struct Unknown: Error { let id: String }

    func post(_ alert: NewAlert, to client: String, idempotencyKey: String?) async throws -> AlertResource {
        let posted = state.withLockedValue { state in
            if let key = idempotencyKey, let id = state.byKey[key] { return state.alerts[id]! }
            state.count += 1
            let id = "A\(state.count)"
            let resource = AlertResource(
                id: id, client: client, state: .displayed, position: 0, title: alert.title, message: alert.message,
                style: .alert, buttons: alert.buttons ?? [], priority: alert.priority ?? 0, expiresIn: 86_400,
                dismissAfter: alert.dismissAfter, callbackURL: nil, metadata: alert.metadata,
                createdAt: Timestamp(milliseconds: 1_000), displayedAt: Timestamp(milliseconds: 1_000), decidedAt: nil,
                expiresAt: Timestamp(milliseconds: 86_401_000), result: nil)
            state.alerts[id] = resource
            if let key = idempotencyKey { state.byKey[key] = id }
            return resource
        }
        sink.yield(.posted(id: posted.id, key: idempotencyKey))
        return posted
    }

    func alert(on client: String, id: String, wait: Int?) async throws -> AlertResource {
        let current = try self[id]
        if current.isTerminal || (wait ?? 0) == 0 { return current }
        sink.yield(.polling(id: id, wait: wait))
        // Parked until the test decides an alert or the call is cancelled, never on a timer.
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelled = state.withLockedValue { state in
                    if Task.isCancelled { return true }
                    state.parked.append(continuation)
                    return false
                }
                if cancelled { continuation.resume() }
            }
        } onCancel: {
            resumeParked()
        }
        try Task.checkCancellation()
        return try self[id]
    }

    func withdraw(on client: String, id: String) async throws -> AlertResource {
        let alert = try decide(id, state: .withdrawn, result: AlertResult(outcome: .withdrawn, decidedBy: "agent"))
        sink.yield(.withdrew(id: id))
        return alert
    }

    /// A person chooses `button` (its index in the alert's buttons).
    @discardableResult
    func choose(_ id: String, button: String) throws -> AlertResource {
        let alert = try self[id]
        let index = alert.buttons.firstIndex { $0.title == button }!
        return try decide(
            id, state: .answered,
            result: AlertResult(
                outcome: .answered, button: button, buttonIndex: index, cancelled: alert.buttons[index].style == .cancel,
                decidedBy: "alice"))
    }

    subscript(id: String) -> AlertResource {
        get throws {
            guard let alert = state.withLockedValue({ $0.alerts[id] }) else { throw Unknown(id: id) }
            return alert
        }
    }

    var postCount: Int { state.withLockedValue { $0.count } }

    private func decide(_ id: String, state new: AlertState, result: AlertResult) throws -> AlertResource {
        let alert = try state.withLockedValue { state in
            guard var alert = state.alerts[id] else { throw Unknown(id: id) }
            if !alert.isTerminal {
                alert.state = new
                alert.position = nil
                alert.result = result
                alert.decidedAt = Timestamp(milliseconds: 2_000)
                state.alerts[id] = alert
            }
            return alert
        }
        resumeParked()
        return alert
    }

    private func resumeParked() {
        for continuation in state.withLockedValue({ state in
            defer { state.parked = [] }; return state.parked
        }) {
            continuation.resume()
        }
    }
}
