import AlertdCore
import AlertdEngine
import AlertdWire

// The port's calls as a test uses them.

extension AlertStore {
    /// Runs one transaction and returns what it committed, or why not.
    func commit<Value: Sendable>(
        _ client: String, now: Timestamp, key: String? = nil,
        _ body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>
    ) async -> Result<Committed<Value>, EngineError> {
        do throws(EngineError) {
            return .success(try await transact(client: client, now: now, idempotencyKey: key, body))
        } catch {
            return .failure(error)
        }
    }

    /// Posts `draft` to `client` in a transaction of its own; with `key`, records the key with it.
    func post(
        _ draft: NewAlert, to client: String, now: Timestamp, key: String? = nil, posted: (@Sendable (Alert) -> Void)? = nil
    ) async -> Result<Alert, EngineError> {
        await commit(client, now: now, key: key) { board, _ throws(EngineError) in
            do throws(BoardError) {
                let (alert, change) = try board.post(draft, to: client, now: now)
                posted?(alert)
                let record = key.map { IdempotencyRecord(client: client, key: $0, alertID: alert.id, bodyDigest: [1], createdAt: now) }
                return Mutation(alert, change: change, idempotency: record)
            } catch {
                throw EngineError(error)
            }
        }.map(\.value)
    }

    /// Chooses the displayed alert `id`'s button `index`.
    /// With `delivery`, the decision's terminal event goes with it, with one delivery of that id.
    func choose(
        _ index: Int, of id: AlertID, on client: String, now: Timestamp, delivery: String? = nil, ran: (@Sendable () -> Void)? = nil
    ) async -> Result<Committed<Alert>, EngineError> {
        await commit(client, now: now) { board, _ throws(EngineError) in
            do throws(BoardError) {
                let (alert, change) = try board.choose(.index(index), for: id, on: client, by: "tester", now: now)
                ran?()
                return Mutation(alert, change: change, events: delivery.map { [event(for: alert, delivery: $0)] } ?? [])
            } catch {
                throw EngineError(error)
            }
        }
    }

    func read(_ id: AlertID) async throws -> PositionedAlert? { try await alert(id) }

    func readPending(_ client: String) async throws -> [PositionedAlert] { try await pending(on: client) }

    func readClients(after: String? = nil, limit: Int = 100) async throws -> [(client: String, pending: Int)] {
        try await clients(after: after, limit: limit, where: { _ in true }).page
    }

    func readDisplays(_ clients: [String]) async throws -> [(client: String, alert: Alert?)] {
        try await displays(of: clients).map { (client: $0.client, alert: $0.alert) }
    }

    func readDecided(_ client: String) async throws -> [Alert] {
        try await decided(on: client, states: Set(AlertState.allCases.filter(\.isTerminal)), before: nil, limit: 100)
    }

    func readDeliveries(of id: AlertID) async throws -> [DeliveryRecord] { try await deliveries(of: id) }

    func recordAttempt(_ attempt: AttemptRecord) async throws {
        try await record(attempt)
    }

    /// Claims delivery `id` as the worker does, with no attempt of its own made: the attempts
    /// the store counts, or nil when it may not be attempted here.
    func claimDelivery(_ id: String, until: Timestamp) async throws -> Int? {
        let delivery = PendingDelivery(
            id: id, eventID: "", target: "", secret: "", body: [], eventCreatedAt: until, attemptsMade: 0, due: until)
        return try await claim(delivery, until: until)?.attemptsMade
    }

    /// The due deliveries no instance holds; nil when the outbox is this process's alone.
    func takeDue(now: Timestamp, until: Timestamp) async throws -> [PendingDelivery]? {
        try await takeOrphans(now: now, until: until, limit: 100)
    }

    func purgeDecided(before: Timestamp, keepPerClient: Int = .max, keysBefore: Timestamp) async throws -> [String] {
        try await purge(decidedBefore: before, keepPerClient: keepPerClient, keysBefore: keysBefore)
    }
}

/// An alert with buttons, as a test posts it.
func draft(_ title: String, priority: Int = 0, expiresIn: Double? = nil) -> NewAlert {
    NewAlert(title: title, buttons: [Button(title: "OK")], priority: priority, expiresIn: expiresIn)
}

/// The terminal event of `alert` with one delivery: what the engine writes with a decision.
func event(for alert: Alert, delivery: String) -> OutboxEvent {
    OutboxEvent(
        id: "msg_\(delivery)", alertID: alert.id, client: alert.client, type: "alert.\(alert.state.rawValue)",
        createdAt: alert.decidedAt ?? alert.createdAt, body: Array(#"{"n":1}"#.utf8),
        deliveries: [OutboxDelivery(id: delivery, target: "http://receiver.invalid/hook", webhookID: nil, secret: "secret")])
}
