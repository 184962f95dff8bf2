public import AlertdCore
import AlertdWire
import NIOConcurrencyHelpers

extension Engine {
    /// `GET .../alerts/current?wait=N&after=ID&votes=V`: the published displayed alert
    /// (encoded once per display change; nil: none), at once when its id differs
    /// from `after`, else once it does or `wait` seconds passed.
    ///
    /// A vote (§10) changes the displayed alert's representation, not its id: it counts
    /// as a change too. A waiter parked on `after` is answered when a vote is published
    /// for that alert; and with `votes` (the number of votes of `after` the reader shows)
    /// the call answers at once when the displayed alert has another number, so a vote
    /// committed between two polls is not missed.
    ///
    /// - Parameter owner: the token's name, for its share of the waiter slots.
    ///
    /// With a shared store the published display is first made current (one round
    /// trip, shared by the reads that arrive together): a read through any instance
    /// reflects every change committed before it arrived (SPEC §9).
    ///
    /// Returns the display to answer at once, or nil once the read is parked: `respond`
    /// answers it later, once (a change, its timeout, alertd draining). A parked read is
    /// its waiter only, no task: a task suspended for each parked read kept ~8 KiB more a
    /// waiter (14.4 KiB against 6.6, bench/RESULTS.md, issue 28), and a long-poll is
    /// what alertd holds by the ten thousand.
    public func currentOrPark(
        client: String, wait: Int, after: AlertID?, votes: Int? = nil, owner: String? = nil,
        respond: @escaping @Sendable ([UInt8]?) -> Void
    ) async throws(EngineError) -> Published? {
        if let now = currentNow(client: client, wait: wait, after: after, votes: votes) { return now }
        try await synchronize([client])
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
            if seconds == 0 || display.id != after || votes.map({ $0 != display.votes }) == true || waiters.draining {
                return .now(display.body)
            }
            if let perToken = waiters.isFull(owner: owner, maxWaiters: settings.maxWaiters, maxPerOwner: settings.maxWaitersPerToken) {
                return .full(perToken: perToken)
            }
            let id = waiters.nextID()
            let timeout = timers.schedule(after: Double(seconds)) { [self] in
                if let waiter = self.waiters.withLockedValue({ $0.removeCurrentWaiter(client, id) }) { answer(waiter) }
            }
            waiters.addCurrentWaiter(
                Waiters.CurrentWaiter(
                    id: id, client: client, owner: owner, after: after, votes: display.votes, timeout: timeout, respond: respond))
            return .parked
        }
        switch outcome {
        case .now(let body): return Published(body: body)
        case .parked: return nil
        case .full(let perToken): throw tooManyWaiters(perToken: perToken, owner: owner, settings)
        }
    }

    /// What ``currentOrPark(client:wait:after:votes:owner:respond:)`` answers when it answers at once
    /// from what is published, found without a task: with an embedded store (whose
    /// commits are all published as they commit), the published display when no wait
    /// is asked, or it is not `after`. nil: the call may wait, or the store is shared
    /// (a read checks the database first). The API's `current` takes this path first:
    /// it is alertd's most frequent request, and starting a task for it cost a fifth of
    /// its rate (bench/RESULTS.md, issue 28).
    public func currentNow(client: String, wait: Int, after: AlertID?, votes: Int? = nil) -> Published? {
        guard store.publishesEveryCommit else { return nil }
        let seconds = min(wait, settings.maxWaitSeconds)
        return waiters.withLockedValue { waiters in
            let display = waiters.display(client)
            guard seconds == 0 || display.id != after || votes.map({ $0 != display.votes }) == true || waiters.draining else {
                return nil
            }
            return Published(body: display.body)
        }
    }

    /// A client's published display: the body `GET …/current` answers (nil: none displayed).
    public struct Published: Sendable {
        public var body: [UInt8]?

        public init(body: [UInt8]?) { self.body = body }
    }

    /// `GET .../alerts/{id}?wait=N`: the alert as committed, at once when it is
    /// terminal, else once it is or `wait` seconds passed.
    ///
    /// The waiter parks before the alert is read, so a decision committed at any
    /// moment is seen: by the read, or by the publication that takes the waiter
    /// (whichever answers first; the other finds it gone).
    ///
    /// Returns the alert to answer at once, or nil once the read is parked: `respond`
    /// is then called once, with the decided alert (and its receipt when this process
    /// committed the decision; else ``receipt(of:on:)`` reads it), or with nil when the wait ended
    /// undecided (timed out, alertd draining: read it again, ``settledAlert(_:on:)``).
    /// A parked read holds no task (see ``currentOrPark(client:wait:after:votes:owner:respond:)``).
    public func alertOrPark(
        _ id: AlertID, on client: String, wait: Int, owner: String? = nil, respond: @escaping @Sendable (Alert?, ReceiptRecord?) -> Void
    ) async throws(EngineError) -> PositionedAlert? {
        let settings = self.settings
        let seconds = min(wait, settings.maxWaitSeconds)
        if seconds == 0 { return try found(await lookup(id, on: client), id, client) }
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
                if let waiter = self.waiters.withLockedValue({ $0.removeAlertWaiter(id, waiterID) }) { answer(.alert(waiter, nil, nil)) }
            }
            waiters.addAlertWaiter(
                Waiters.AlertWaiter(id: waiterID, alertID: id, client: client, owner: owner, timeout: timeout, respond: respond))
            return .parked(waiterID)
        }
        switch outcome {
        case .now:
            return try found(await lookup(id, on: client), id, client)
        case .full(let perToken):
            // No slot to wait in: a decided (or unknown) alert is still answered.
            let current = try await lookup(id, on: client)
            if let current, current.alert.isPending { throw tooManyWaiters(perToken: perToken, owner: owner, settings) }
            return try found(current, id, client)
        case .parked(let waiterID):
            let current: Result<PositionedAlert?, EngineError>
            do throws(EngineError) {
                current = .success(try await lookup(id, on: client))
            } catch {
                current = .failure(error)
            }
            // Pending: parked until decided or timed out.
            if case .success(let alert?) = current, alert.alert.isPending { return nil }
            // Terminal, unknown or unreadable: answered now, unless a publication took the
            // waiter first (and answers it).
            guard let waiter = waiters.withLockedValue({ $0.removeAlertWaiter(id, waiterID) }) else { return nil }
            timers.cancel(waiter.timeout)
            return try found(current.get(), id, client)
        }
    }

    /// What a parked alert waiter woken undecided (timed out, or alertd stopping) is
    /// answered: the alert as committed now.
    public func settledAlert(_ id: AlertID, on client: String) async throws(EngineError) -> PositionedAlert {
        try found(await lookup(id, on: client), id, client)
    }

    private func found(_ alert: PositionedAlert?, _ id: AlertID, _ client: String) throws(EngineError) -> PositionedAlert {
        guard let alert else { throw EngineError(.notFound, "no alert \(id) on client \(client)") }
        return alert
    }

    /// Answers a parked waiter with what it waited on.
    func answer(_ waiter: Waiters.Parked) {
        switch waiter {
        case .current(let current):
            timers.cancel(current.timeout)
            let body = waiters.withLockedValue { $0.display(current.client).body }
            current.respond(body)
        case .alert(let waiting, let decided, let receipt):
            timers.cancel(waiting.timeout)
            waiting.respond(decided, receipt)
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
