public import AlertdCore
import AlertdPush
import AlertdWire

extension Engine {
    /// `POST /v1/answers/{token}` (SPEC §11): the choice of a push's `answer_url`, made as
    /// the subscription's decider (a vote under a quorum), without any `Authorization`.
    ///
    /// Refused, with nothing used up, when it cannot be made as asked: no such token (404,
    /// the same for one never made, one purged and one forged), a destructive button without
    /// `confirm` (409 `confirmation-required`), a button the alert lacks (422). A token once
    /// used, expired, or whose alert is terminal is 410 `answer-used`. Used atomically: of two
    /// uses at once, one decides and the other is 410.
    public func answer(token: Substring, _ selection: ButtonSelection, confirmed: Bool) async throws(EngineError) -> PositionedAlert {
        guard settings.push != nil else { throw Self.pushOff }
        let unknown = EngineError(.notFound, "no such answer link (it may have been purged; answer on the dashboard)")
        guard AnswerTokens.isWellFormed(token) else { throw unknown }
        let hash = AnswerTokens.hash(of: String(token))
        guard let stored = try await store.answerToken(hash: hash) else { throw unknown }
        let now = clock.now()
        if stored.usedAt != nil { throw EngineError(.answerUsed, "this answer link was used already") }
        if stored.expiresAt <= now { throw EngineError(.answerUsed, "this answer link expired at \(stored.expiresAt)") }
        // As the client it was pushed from holds it (the alert's own, or one it escalated to, SPEC §12).
        var found = try await store.alert(stored.alertID, on: stored.client)
        if found == nil { found = try await store.alert(stored.alertID) }
        guard let positioned = found else { throw unknown }
        let alert = positioned.alert
        if alert.state.isTerminal {
            throw EngineError(.answerUsed, "the alert is \(alert.state.rawValue) already", alert: alert)
        }
        let index: Int
        switch selection {
        case .title(let title):
            guard let found = alert.buttons.firstIndex(where: { $0.title == title }) else {
                throw EngineError(.unknownButton, "the alert has no button \(title)")
            }
            index = found
        case .index(let given):
            guard alert.buttons.indices.contains(given) else {
                throw EngineError(.unknownButton, "the alert has no button \(given) (it has \(alert.buttons.count))")
            }
            index = given
        }
        // A button that asks for values (SPEC §13) cannot be answered through a link, which
        // carries none: refused before the link is used up, so the dashboard can still answer.
        if case .failure(let invalid) = ChoiceWords.none.checked(button: index, of: alert.buttons, fields: alert.fields) {
            throw EngineError(
                .invalidAnswer, "\(alert.buttons[index].title) asks for values an answer link cannot give; answer on the dashboard",
                fieldErrors: invalid.errors)
        }
        if alert.buttons[index].style == .destructive, !confirmed {
            throw EngineError(
                .confirmationRequired, "\(alert.buttons[index].title) is destructive: send \"confirm\": true to choose it")
        }
        // Used up before the choice, atomically: of two uses at once only one gets here.
        guard try await store.useAnswerToken(hash: hash, now: now) else {
            throw EngineError(.answerUsed, "this answer link was used already")
        }
        return try await choose(.index(index), alert: alert.id, on: stored.client, by: stored.decider)
    }
}
