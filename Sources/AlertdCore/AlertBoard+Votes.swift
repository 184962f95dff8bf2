public import AlertdWire

// Votes and quorum (SPEC §10), an extension of the board: every choice of a displayed
// alert is a vote, and the vote that makes `quorum` different deciders agree on one button
// (or any vote for its cancel button) decides it.

extension AlertBoard {
    /// Chooses a button of a displayed alert (§4 choice rules): a vote (§10).
    ///
    /// Every choice is a vote, appended to the alert's ``Alert/votes``. The alert is
    /// answered, with the vote's button, by the vote that makes `quorum` different
    /// deciders agree on one button (at once for `quorum` 1), or by a vote for its
    /// `cancel`-style button, whatever the quorum (one person can stop it). Until then
    /// it stays displayed, and the change saves it and names its client among the
    /// displays changed: its representation did, and `current` readers learn of it. A
    /// vote decides nothing, so it has no outbox event and wakes no alert waiter.
    ///
    /// The same decider choosing the same button again changes nothing (an empty
    /// change: a safe retry, whatever words it carries); choosing another button after
    /// voting is `already-voted`. A decider is a token's name; nil (no tokens) is one
    /// decider like any other.
    ///
    /// `words` (SPEC §13), the comment and the values of the alert's fields, are kept in
    /// the vote (and the result of the vote that decides it); words that do not fit the
    /// alert are `invalid-answer`, checked once the choice would be made (after the rules
    /// of the button and of the alert's state), and nothing is changed.
    ///
    /// `client` is the one the choice is made through: the alert's own or one it escalated
    /// to (SPEC §12), where it must be displayed. The alert returned is as `client` holds it.
    public mutating func choose(
        _ selection: ButtonSelection, for id: AlertID, on client: String, by decider: String?, words: ChoiceWords = .none,
        now: Timestamp
    ) throws(BoardError) -> (Alert, BoardChange) {
        guard let alert = alerts[id], alert.isOn(client) else {
            throw BoardError(.notFound, "no alert \(id) on client \(client)")
        }
        try requireHeld(alert)
        let index: Int? =
            switch selection {
            case .title(let title): alert.buttons.firstIndex { $0.title == title }
            case .index(let index): alert.buttons.indices.contains(index) ? index : nil
            }
        guard let index else {
            let detail =
                alert.buttons.isEmpty
                ? "alert \(id) has no buttons"
                : "alert \(id) has no button \(selection.description); it has \(alert.buttons.map { "\"\($0.title)\"" }.joined(separator: ", "))"
            throw BoardError(.unknownButton, detail)
        }
        var before = Before()
        var (chosen, change) = try vote(index, on: alert, via: client, by: decider, words: words, now: now, &before)
        finish(&change, before)
        chosen = (alerts[chosen.id] ?? chosen).viewed(from: client)
        return (chosen, change)
    }

    /// Same for an alert that is no longer in memory (decided and committed): the
    /// caller passes the stored alert so the idempotency rules apply — the button it
    /// was answered with again, or `decider`'s own vote again, is the alert as it is.
    public static func repeatChoice(_ selection: ButtonSelection, on alert: Alert, by decider: String?) throws(BoardError) -> Alert {
        let index: Int? =
            switch selection {
            case .title(let title): alert.buttons.firstIndex { $0.title == title }
            case .index(let index): alert.buttons.indices.contains(index) ? index : nil
            }
        guard let index else {
            throw BoardError(
                .unknownButton,
                alert.buttons.isEmpty ? "alert \(alert.id) has no buttons" : "alert \(alert.id) has no button \(selection.description)")
        }
        if alert.state == .answered, alert.result?.buttonIndex == index { return alert }
        if alert.state.isTerminal, alert.votes.contains(where: { $0.decidedBy == decider && $0.buttonIndex == index }) { return alert }
        throw BoardError(.alreadyDecided, "alert \(alert.id) is already \(alert.state.rawValue)", alert: alert)
    }

    /// A vote for button `index` of `alert` by `decider` through `client` (``choose(_:for:on:by:words:now:)``).
    private mutating func vote(
        _ index: Int, on alert: Alert, via client: String, by decider: String?, words: ChoiceWords, now: Timestamp,
        _ before: inout Before
    ) throws(BoardError) -> (Alert, BoardChange) {
        // Terminal, or queued where it is chosen: the rules of a decision (a repeat, already-decided, not-displayed).
        guard alert.isDisplayed(on: client) else {
            return try decide(alert, as: .answered, button: index, by: decider, via: client, now: now, &before)
        }
        // Four eyes means someone else's (§10): the poster may stop its alert, never approve it.
        if alert.quorum > 1, let decider, decider == alert.postedBy, alert.buttons[index].style != .cancel {
            throw BoardError(
                .forbidden,
                "the poster cannot approve its own alert: \(decider) posted alert \(alert.id), which needs \(alert.quorum) "
                    + "different deciders; it may still press its cancel button or withdraw it")
        }
        if let mine = alert.votes.first(where: { $0.decidedBy == decider }) {
            if mine.buttonIndex == index { return (alert, BoardChange()) }
            throw BoardError(
                .alreadyVoted,
                "\(decider.map { "decider \($0)" } ?? "the anonymous decider") already voted \"\(mine.button)\" on alert \(alert.id); "
                    + "a vote is not changed",
                alert: alert)
        }
        let kept: ChoiceWords
        switch words.checked(button: index, of: alert.buttons, fields: alert.fields) {
        case .success(let checked): kept = checked
        case .failure(let invalid):
            throw BoardError(
                .invalidAnswer,
                invalid.errors.count == 1 ? "1 part of the answer is invalid" : "\(invalid.errors.count) parts of the answer are invalid",
                errors: invalid.errors)
        }
        var voted = alert
        voted.votes.append(
            Vote(
                decidedBy: decider, button: alert.buttons[index].title, buttonIndex: index, at: now, comment: kept.comment,
                values: kept.values))
        // One vote per decider (above), so the votes for a button are its different deciders.
        let agreeing = voted.votes.count { $0.buttonIndex == index }
        if agreeing >= alert.quorum || alert.buttons[index].style == .cancel {
            return try decide(voted, as: .answered, button: index, by: decider, via: client, now: now, &before)
        }
        set(voted, &before)
        touched.insert(alert.client)
        var change = BoardChange()
        change.saved.append(voted)
        // Every client that displays it shows the vote (one alert, one list of votes).
        change.displayChanged += voted.displayedOn
        return (voted, change)
    }
}
