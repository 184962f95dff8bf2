public import AlertdCore
import AlertdWire

extension Engine {
    /// Chooses a button of a displayed alert (§4's choice rules): repeating the
    /// same button for an answered alert returns it again (a safe retry).
    public func choose(
        _ selection: ButtonSelection, alert id: AlertID, on client: String, by decider: String?, requestID: String? = nil,
        respond: @escaping @Sendable (Result<PositionedAlert, EngineError>) -> Void
    ) {
        decide(.choose(selection), id: id, client: client, by: decider, requestID: requestID, respond: respond)
    }

    /// Withdraws a pending alert; withdrawing a withdrawn one again returns it.
    public func withdraw(
        _ id: AlertID, on client: String, by decider: String?, requestID: String? = nil,
        respond: @escaping @Sendable (Result<PositionedAlert, EngineError>) -> Void
    ) {
        decide(.withdraw, id: id, client: client, by: decider, requestID: requestID, respond: respond)
    }

    private enum Decision: Sendable {
        case choose(ButtonSelection)
        case withdraw
    }

    private enum Outcome: Sendable {
        /// Decided now.
        case decided(Alert)
        /// The same decision again, on an alert whose decision may still be committing.
        case repeated(Alert)
        /// Another decision came first and may still be committing.
        case alreadyDecided(String)
        /// Not in the store's working set: decided and committed long ago, or never there.
        case stored
    }

    private func decide(
        _ decision: Decision, id: AlertID, client: String, by decider: String?, requestID: String?,
        respond: @escaping @Sendable (Result<PositionedAlert, EngineError>) -> Void
    ) {
        if let refusal = refusal() { return respond(.failure(refusal)) }
        committedWebhooks(of: client) { [self] webhooks in
            switch webhooks {
            case .failure(let error):
                respond(.failure(error))
            case .success(let webhooks):
                decide(decision, id: id, client: client, by: decider, requestID: requestID, webhooks: webhooks, respond: respond)
            }
        }
    }

    private func decide(
        _ decision: Decision, id: AlertID, client: String, by decider: String?, requestID: String?, webhooks: [Webhook]?,
        respond: @escaping @Sendable (Result<PositionedAlert, EngineError>) -> Void
    ) {
        let now = clock.now()
        store.transact(client: client, now: now, idempotencyKey: nil) { [self] (board, context) throws(EngineError) -> Mutation<Outcome> in
            switch board.alert(id) {
            case nil:
                return Mutation(.stored)
            case _ where !context.isCommitted(id):
                throw EngineError(.notFound, "no alert \(id) on client \(client)")
            case _?:
                do throws(BoardError) {
                    let (alert, change) =
                        switch decision {
                        case .choose(let selection): try board.choose(selection, for: id, on: client, by: decider, now: now)
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
                } catch {
                    throw EngineError(error)
                }
            }
        } completion: { [self] result in
            switch result {
            case .failure(let error):
                respond(.failure(error))
            case .success(let committed):
                switch committed.value {
                case .decided(let alert):
                    published(committed)
                    respond(.success(PositionedAlert(alert, position: nil)))
                case .repeated(let alert):
                    lookup(id, on: client) { [self] found in
                        respond(
                            found.flatMap { stored in
                                guard let stored, stored.alert.state == alert.state else { return .failure(notCommitted(id)) }
                                return .success(stored)
                            })
                    }
                case .alreadyDecided(let detail):
                    lookup(id, on: client) { [self] found in
                        respond(
                            found.flatMap { stored in
                                guard let stored, stored.alert.state.isTerminal else { return .failure(notCommitted(id)) }
                                return .failure(EngineError(.alreadyDecided, detail, alert: stored.alert))
                            })
                    }
                case .stored:
                    lookup(id, on: client) { found in
                        respond(
                            found.flatMap { stored in
                                guard let stored else { return .failure(EngineError(.notFound, "no alert \(id) on client \(client)")) }
                                // The repeat rules apply to the stored alert.
                                do throws(BoardError) {
                                    switch decision {
                                    case .choose(let selection):
                                        return .success(
                                            PositionedAlert(try AlertBoard.repeatChoice(selection, on: stored.alert), position: nil))
                                    case .withdraw:
                                        return .success(PositionedAlert(try AlertBoard.repeatWithdraw(on: stored.alert), position: nil))
                                    }
                                } catch {
                                    return .failure(EngineError(error))
                                }
                            })
                    }
                }
            }
        }
    }

    private func notCommitted(_ id: AlertID) -> EngineError {
        EngineError(
            .unavailable, "the decision on alert \(id) was not committed; retry later", retryAfter: EngineError.storeRetrySeconds)
    }
}
