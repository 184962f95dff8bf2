public import AlertdCore
import AlertdWire
import NIOConcurrencyHelpers

extension Engine {
    /// `GET .../alerts/current?wait=N&after=ID`: the published displayed alert
    /// (encoded once per display change; nil: none), at once when its id differs
    /// from `after`, else once it does or `wait` seconds passed.
    ///
    /// - Parameter owner: the token's name, for its share of the waiter slots.
    ///
    /// With a shared store the published display is first made current (one round
    /// trip, shared by the reads that arrive together): a read through any instance
    /// reflects every change committed before it arrived (SPEC §9).
    public func awaitCurrent(
        client: String, wait: Int, after: AlertID?, owner: String? = nil,
        respond: @escaping @Sendable (Result<[UInt8]?, EngineError>) -> Void
    ) {
        guard store.isShared else { return awaitPublished(client: client, wait: wait, after: after, owner: owner, respond: respond) }
        synchronize([client]) { [self] result in
            if case .failure(let error) = result { return respond(.failure(error)) }
            awaitPublished(client: client, wait: wait, after: after, owner: owner, respond: respond)
        }
    }

    /// ``awaitCurrent(client:wait:after:owner:respond:)`` on what is published.
    private func awaitPublished(
        client: String, wait: Int, after: AlertID?, owner: String?, respond: @escaping @Sendable (Result<[UInt8]?, EngineError>) -> Void
    ) {
        let settings = self.settings
        let seconds = min(wait, settings.maxWaitSeconds)
        enum Outcome {
            case now([UInt8]?)
            case parked
            /// Kept small (no error inside): this enum is built on every read.
            case full(perToken: Bool)
        }
        let outcome: Outcome = waiters.withLockedValue { waiters in
            let display = waiters.display(client)
            if seconds == 0 || display.id != after || waiters.draining { return .now(display.body) }
            if let perToken = waiters.isFull(owner: owner, maxWaiters: settings.maxWaiters, maxPerOwner: settings.maxWaitersPerToken) {
                return .full(perToken: perToken)
            }
            let id = waiters.nextID()
            let timeout = timers.schedule(after: Double(seconds)) { [self] in
                if let waiter = self.waiters.withLockedValue({ $0.removeCurrentWaiter(client, id) }) { answer(waiter) }
            }
            waiters.addCurrentWaiter(
                Waiters.CurrentWaiter(id: id, client: client, owner: owner, after: after, timeout: timeout) { respond(.success($0)) })
            return .parked
        }
        switch outcome {
        case .now(let body): respond(.success(body))
        case .parked: break
        case .full(let perToken): respond(.failure(tooManyWaiters(perToken: perToken, owner: owner, settings)))
        }
    }

    /// `GET .../alerts/{id}?wait=N`: the alert as committed, at once when it is
    /// terminal, else once it is or `wait` seconds passed.
    ///
    /// The waiter parks before the alert is read, so a decision committed at any
    /// moment is seen: by the read, or by the publication that takes the waiter
    /// (whichever answers first; the other finds it gone).
    public func awaitAlert(
        _ id: AlertID, on client: String, wait: Int, owner: String? = nil,
        respond: @escaping @Sendable (Result<PositionedAlert, EngineError>) -> Void
    ) {
        let settings = self.settings
        let seconds = min(wait, settings.maxWaitSeconds)
        let found: @Sendable (Result<PositionedAlert?, EngineError>) -> Result<PositionedAlert, EngineError> = { result in
            result.flatMap { $0.map { .success($0) } ?? .failure(EngineError(.notFound, "no alert \(id) on client \(client)")) }
        }
        if seconds == 0 { return lookup(id, on: client) { respond(found($0)) } }
        enum Outcome {
            case parked(UInt64)
            case now
            case full(perToken: Bool)
        }
        let outcome: Outcome = waiters.withLockedValue { waiters in
            if waiters.draining { return .now }
            if let perToken = waiters.isFull(owner: owner, maxWaiters: settings.maxWaiters, maxPerOwner: settings.maxWaitersPerToken) {
                return .full(perToken: perToken)
            }
            let waiterID = waiters.nextID()
            let timeout = timers.schedule(after: Double(seconds)) { [self] in
                if let waiter = self.waiters.withLockedValue({ $0.removeAlertWaiter(id, waiterID) }) { answer(.alert(waiter, nil)) }
            }
            waiters.addAlertWaiter(
                Waiters.AlertWaiter(id: waiterID, alertID: id, client: client, owner: owner, timeout: timeout, respond: respond))
            return .parked(waiterID)
        }
        switch outcome {
        case .now:
            lookup(id, on: client) { respond(found($0)) }
        case .full(let perToken):
            // No slot to wait in: a decided (or unknown) alert is still answered.
            lookup(id, on: client) { [self] current in
                if case .success(let alert?) = current, alert.alert.isPending {
                    return respond(.failure(tooManyWaiters(perToken: perToken, owner: owner, settings)))
                }
                respond(found(current))
            }
        case .parked(let waiterID):
            lookup(id, on: client) { [self] current in
                if case .success(let alert?) = current, alert.alert.isPending { return }  // parked until decided or timed out
                // Terminal, unknown or unreadable: answered now, unless a publication took the waiter first.
                guard let waiter = waiters.withLockedValue({ $0.removeAlertWaiter(id, waiterID) }) else { return }
                timers.cancel(waiter.timeout)
                respond(found(current))
            }
        }
    }

    /// Answers a parked waiter with what it waited on.
    func answer(_ waiter: Waiters.Parked) {
        switch waiter {
        case .current(let current):
            timers.cancel(current.timeout)
            let body = waiters.withLockedValue { $0.display(current.client).body }
            current.respond(body)
        case .alert(let waiting, let decided):
            timers.cancel(waiting.timeout)
            if let decided { return waiting.respond(.success(PositionedAlert(decided, position: nil))) }
            lookup(waiting.alertID, on: waiting.client) { found in
                waiting.respond(
                    found.flatMap { found in
                        found.map { .success($0) }
                            ?? .failure(EngineError(.notFound, "no alert \(waiting.alertID) on client \(waiting.client)"))
                    })
            }
        }
    }

    /// Requests parked right now.
    public var waiterCount: Int { waiters.withLockedValue { $0.count } }

    private func tooManyWaiters(perToken: Bool, owner: String?, _ settings: Settings) -> EngineError {
        guard perToken, let owner else {
            return EngineError(.tooManyWaiters, "\(settings.maxWaiters) requests are already waiting; retry later", retryAfter: 1)
        }
        return EngineError(
            .tooManyWaiters,
            "token \(owner) has \(settings.maxWaitersPerToken) requests waiting, its limit (limits.max_waiters_per_token); retry later",
            retryAfter: 1)
    }
}
