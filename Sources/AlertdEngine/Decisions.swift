public import AlertdCore
import AlertdWire
import Logging

extension Engine {
    /// Chooses a button of a displayed alert (§4's choice rules): repeating the
    /// same button for an answered alert returns it again (a safe retry). On an alert
    /// of several deciders (§10) the choice is a vote: committed, and answered with
    /// the alert still displayed until its quorum agrees; the same vote again is a safe
    /// retry, another button after voting `alreadyVoted`. `words` (SPEC §13): the choice's
    /// comment and values, kept in its vote; `invalidAnswer` when they do not fit the alert.
    public func choose(
        _ selection: ButtonSelection, words: ChoiceWords = .none, alert id: AlertID, on client: String, by decider: String?,
        requestID: String? = nil
    ) async throws(EngineError) -> PositionedAlert {
        try await decide(.choose(selection, words), id: id, client: client, by: decider, requestID: requestID)
    }

    /// Withdraws a pending alert; withdrawing a withdrawn one again returns it.
    public func withdraw(_ id: AlertID, on client: String, by decider: String?, requestID: String? = nil) async throws(EngineError)
        -> PositionedAlert
    {
        try await decide(.withdraw, id: id, client: client, by: decider, requestID: requestID)
    }

    private enum Decision: Sendable {
        case choose(ButtonSelection, ChoiceWords)
        case withdraw
    }

    private enum Outcome: Sendable {
        /// Decided now, or (a vote that decides nothing yet) voted.
        case decided(Alert)
        /// The same decision (or vote) again, on an alert whose decision (or vote) may
        /// still be committing.
        case repeated(Alert)
        /// Another decision came first and may still be committing.
        case alreadyDecided(String)
        /// The decider's vote for another button came first and may still be committing.
        case alreadyVoted(String)
        /// Not in the store's working set: decided and committed long ago, or never there.
        case stored
        /// Pending on clients the transaction did not hold (escalated, SPEC §12): to be made
        /// again in a transaction that holds them all.
        case widen([String])
    }

    private func decide(
        _ decision: Decision, id: AlertID, client: String, by decider: String?, requestID: String?
    ) async throws(EngineError) -> PositionedAlert {
        if let refusal = refusal() { throw refusal }
        var others: [String] = []
        // An alert pending on several clients (SPEC §12) is decided in a transaction that
        // holds them all; a step taken meanwhile adds one, each at most once.
        for _ in 0...EscalationStep.limit + 1 {
            let committed = try await decideOnce(decision, id: id, client: client, others: others, by: decider, requestID: requestID)
            if case .widen(let clients) = committed.value, Set(clients).subtracting([client]) != Set(others) {
                others = clients.filter { $0 != client }
                continue
            }
            return try await settle(committed, decision, id: id, client: client, by: decider, requestID: requestID)
        }
        throw EngineError(
            .unavailable, "alert \(id) kept moving to other clients while it was decided; retry", retryAfter: EngineError.storeRetrySeconds)
    }

    private func decideOnce(
        _ decision: Decision, id: AlertID, client: String, others: [String], by decider: String?, requestID: String?
    ) async throws(EngineError) -> Committed<Outcome> {
        let now = clock.now()
        return try await store.transact(client: client, others: others, now: now, idempotencyKey: nil, readingWebhooks: true) {
            [self] (board, context) throws(EngineError) -> Mutation<Outcome> in
            // The terminal event goes to the alert's own client's webhooks (§5), as committed.
            let webhooks = committedWebhooks(of: [client] + others, api: context.webhooks())
            switch board.alert(id) {
            case nil:
                return Mutation(.stored)
            case _ where !context.isCommitted(id):
                throw EngineError(.notFound, "no alert \(id) on client \(client)")
            case let alert? where !alert.isOn(client):
                throw EngineError(.notFound, "no alert \(id) on client \(client)")
            case let alert? where !board.holds(alert.clients):
                return Mutation(.widen(alert.clients))
            case _?:
                do throws(BoardError) {
                    let (alert, change) =
                        switch decision {
                        case .choose(let selection, let words):
                            try board.choose(selection, for: id, on: client, by: decider, words: words, now: now)
                        case .withdraw: try board.withdraw(id, on: client, by: decider, now: now)
                        }
                    // A safe retry of a decision that may still be committing: answered
                    // after it, and only if it did commit.
                    if change.saved.isEmpty { return Mutation(.repeated(alert), afterEarlierCommits: true) }
                    return Mutation(.decided(alert), change: change, events: events(for: change, requestID: requestID, webhooks: webhooks))
                } catch  where error.code == .alreadyDecided {
                    // The decision that came first may still be committing: answered
                    // once it is, with the alert as committed.
                    return Mutation(.alreadyDecided(error.detail), afterEarlierCommits: true)
                } catch  where error.code == .alreadyVoted {
                    // So may the vote that came first.
                    return Mutation(.alreadyVoted(error.detail), afterEarlierCommits: true)
                } catch {
                    throw EngineError(error)
                }
            }
        }
    }

    private func settle(
        _ committed: Committed<Outcome>, _ decision: Decision, id: AlertID, client: String, by decider: String?, requestID: String?
    ) async throws(EngineError) -> PositionedAlert {
        switch committed.value {
        case .widen:
            throw EngineError(
                .unavailable, "alert \(id) kept moving to other clients while it was decided; retry",
                retryAfter: EngineError.storeRetrySeconds)
        case .decided(let alert):
            published(committed)
            logDecision(alert, by: decider, requestID: requestID)
            // A vote that decided nothing yet leaves the alert displayed.
            return PositionedAlert(alert, position: alert.state == .displayed ? 0 : nil)
        case .repeated(let alert):
            guard let stored = try await lookup(id, on: client) else { throw notCommitted(id) }
            if alert.isPending {
                // A vote again: answered once the first is committed, in whatever state the alert is now.
                guard case .choose = decision, let vote = alert.votes.first(where: { $0.decidedBy == decider }),
                    stored.alert.votes.contains(vote)
                else { throw notCommitted(id) }
                return stored
            }
            guard stored.alert.state == alert.state else { throw notCommitted(id) }
            return stored
        case .alreadyDecided(let detail):
            guard let stored = try await lookup(id, on: client), stored.alert.state.isTerminal else { throw notCommitted(id) }
            throw EngineError(.alreadyDecided, detail, alert: stored.alert)
        case .alreadyVoted(let detail):
            guard let stored = try await lookup(id, on: client), stored.alert.votes.contains(where: { $0.decidedBy == decider }) else {
                throw notCommitted(id)
            }
            throw EngineError(.alreadyVoted, detail, alert: stored.alert)
        case .stored:
            guard let stored = try await lookup(id, on: client) else {
                throw EngineError(.notFound, "no alert \(id) on client \(client)")
            }
            // The repeat rules apply to the stored alert.
            do throws(BoardError) {
                switch decision {
                case .choose(let selection, _):
                    return PositionedAlert(try AlertBoard.repeatChoice(selection, on: stored.alert, by: decider), position: nil)
                case .withdraw: return PositionedAlert(try AlertBoard.repeatWithdraw(on: stored.alert), position: nil)
                }
            } catch {
                throw EngineError(error)
            }
        }
    }

    /// One info line per decision a person made, once committed: who chose what on which
    /// alert (a vote short of the quorum says how many agree so far), or who withdrew it.
    /// Repeats (safe retries) change nothing and log nothing.
    private func logDecision(_ alert: Alert, by decider: String?, requestID: String?) {
        var metadata: Logger.Metadata = [
            "client": "\(alert.client)", "alert": "\(alert.id)", "by": "\(decider ?? "anonymous")",
        ]
        if let requestID { metadata["request"] = "\(requestID)" }
        switch alert.state {
        case .answered:
            metadata["button"] = "\(alert.result?.button ?? "")"
            if alert.result?.cancelled == true { metadata["cancelled"] = "true" }
            if alert.quorum > 1 { metadata["votes"] = "\(alert.votes.count)" }
            logger.info("alert answered", metadata: metadata)
        case .withdrawn:
            logger.info("alert withdrawn", metadata: metadata)
        case .displayed, .queued:
            // A vote that decided nothing yet (§10).
            guard let vote = alert.votes.last(where: { $0.decidedBy == decider }) else { return }
            metadata["button"] = "\(vote.button)"
            metadata["agreeing"] = "\(alert.votes.filter { $0.button == vote.button }.count) of \(alert.quorum)"
            logger.info("vote recorded", metadata: metadata)
        default:
            break
        }
    }

    private func notCommitted(_ id: AlertID) -> EngineError {
        EngineError(
            .unavailable, "the decision on alert \(id) was not committed; retry later", retryAfter: EngineError.storeRetrySeconds)
    }
}
