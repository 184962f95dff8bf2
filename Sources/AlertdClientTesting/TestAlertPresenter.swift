public import AlertdClient
import AlertdCore
public import AlertdWire
import Foundation
import NIOConcurrencyHelpers
public import Testing

/// An alert as it was presented to a ``TestAlertPresenter``.
public struct PresentedAlert: Sendable, Hashable, CustomStringConvertible {
    /// The client it was presented on.
    public var client: String
    /// Everything the code under test posted.
    public var alert: NewAlert

    /// The alert's title.
    public var title: String { alert.title }
    /// The alert's message, if it has one.
    public var message: String? { alert.message }
    /// `alert` unless the code asked for an action sheet.
    public var style: AlertStyle { alert.style ?? .alert }
    /// The buttons in the order posted.
    public var buttons: [Button] { alert.buttons ?? [] }
    /// The buttons' titles, in order.
    public var buttonTitles: [String] { buttons.map(\.title) }
    /// How many different deciders must choose the same button: 1 unless the code asked for more.
    public var quorum: Int { alert.quorum ?? 1 }
    /// The values the code asked the person for (SPEC §13), as posted.
    public var fields: [AlertField] { alert.fields ?? [] }
    /// Who the code asked to be asked next when nobody answers (SPEC §12), as posted: nil
    /// leaves it to the client's policy in the daemon's config, `[]` turns it off.
    public var escalation: [EscalationStep]? { alert.escalation }

    public var description: String {
        let buttons = buttons.map { "\($0.title)(\($0.style.rawValue))" }.joined(separator: ", ")
        return "\"\(title)\" on \(client) [\(buttons)]"
    }
}

/// A stand-in for ``AlertdClient`` in tests of code that presents alerts: it records
/// every presented alert and answers it the way the test says, at once.
///
/// A presentation the test did not expect, an answer naming a button the alert does
/// not have, or an alert the daemon would refuse (§2) fails the test — recorded as a
/// Swift Testing issue and thrown as ``TestAlertPresenter/Failure`` to the code under test.
///
/// ```swift
/// @Test func deploysWhenTheOperatorSaysSo() async throws {
///     let alerts = TestAlertPresenter()
///     alerts.expect(title: "Deploy build 1234?", answer: .button("Deploy"))
///
///     let deployed = try await Deployer(alerts: alerts).run(build: 1234)
///
///     #expect(deployed)
///     #expect(alerts.presented.first?.buttonTitles == ["Deploy", "Cancel"])
///     alerts.verifyAllExpectationsMet()
/// }
/// ```
///
/// An alert that needs several people (`quorum` above 1) is answered by named deciders'
/// votes, ``Answer/votes(_:)``, counted as the daemon counts them (SPEC §10): it is decided
/// when `quorum` different deciders chose the same button, or at once by a vote for the
/// `cancel`-style button; votes that never get there leave it to expire.
///
/// An answer may carry a comment and the values of the alert's fields (SPEC §13), checked
/// as the daemon checks them (a required field of the button left out, a value too long, a
/// field the alert lacks or the button does not ask for, a comment over 1 000 characters
/// fail the test):
///
/// ```swift
/// alerts.expect(title: "Deploy build 1234?", answer: .button("Deploy", values: ["ticket": "OPS-123"]))
/// alerts.expect(title: "Drop db-3?", answer: .button("Keep", comment: "still in use by billing"))
/// ```
///
/// ```swift
/// alerts.expect(title: "Deploy build 1234?", answer: .votes([.init("alice", "Deploy"), .init("bob", "Deploy")]))
/// let decision = try await alerts.presentForDecision(question, on: "ops")
/// #expect(decision.outcome == .button("Deploy") && decision.chosenBy == ["alice", "bob"])
/// ```
public final class TestAlertPresenter: AlertPresenting, Sendable {
    /// How the test answers a presentation.
    public enum Answer: Sendable, Hashable {
        /// A person chose the button with this title (the cancel button gives ``AlertOutcome/cancel(_:)``),
        /// with a comment and the values of the alert's fields, if given (SPEC §13).
        case button(String, comment: String? = nil, values: [String: String] = [:])
        /// The buttonless alert was dismissed.
        case dismissed
        /// No one answered in time.
        case expired
        /// The alert was withdrawn.
        case withdrawn
        /// Named deciders chose, in this order, as people would on an alert with a `quorum`
        /// (any quorum: the first vote decides an alert of quorum 1). The double counts them
        /// as the daemon does (SPEC §10):
        /// - a vote for the `cancel`-style button answers the alert at once, cancelled;
        /// - `quorum` different deciders choosing the same button answer it with that button,
        ///   ``AlertDecision/decidedBy`` the one who completed it;
        /// - a decider's second ballot changes nothing (the same button again is a retry,
        ///   another one the daemon refuses with `already-voted`);
        /// - ballots that never reach a decision leave the alert to expire, with the votes
        ///   made: the outcome is ``AlertOutcome/expired``.
        ///
        /// A ballot after the one that decided the alert fails the test: no one could cast it.
        case votes([Ballot])
        /// Nobody answered in time, so the alert escalated (SPEC §12) to these clients, in
        /// order; then `answer` came (through any of them). The steps must be the alert's own
        /// `escalation`'s, taken in order (a client's policy from the daemon's config is not
        /// known here: give the alert its own); the decision carries them in
        /// ``AlertDecision/escalatedTo``.
        ///
        /// ```swift
        /// alerts.expect(title: "Deploy build 1234?", answer: .escalated(to: ["ops-lead"], then: .button("Deploy")))
        /// ```
        indirect case escalated(to: [String], then: Answer)
    }

    /// One decider's choice, for ``Answer/votes(_:)``: `Ballot("alice", "Deploy")`, with a
    /// comment and values if the decider gave them (SPEC §13).
    public struct Ballot: Sendable, Hashable, CustomStringConvertible {
        /// The decider: a token's name, as the daemon would record it.
        public var decider: String
        /// The title of the button chosen.
        public var button: String
        /// The reason the decider gave, if any.
        public var comment: String?
        /// The values of the alert's fields the decider gave, by name.
        public var values: [String: String]

        public init(_ decider: String, _ button: String, comment: String? = nil, values: [String: String] = [:]) {
            self.decider = decider
            self.button = button
            self.comment = comment
            self.values = values
        }

        public var description: String { "\(decider): \(button)" }
    }

    /// What the double reports to the code under test when a presentation goes wrong.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private struct Expectation: Sendable {
        var title: String
        var client: String?
        var answer: Answer
        var location: SourceLocation
    }

    private struct State: Sendable {
        var expectations: [Expectation] = []
        var presented: [PresentedAlert] = []
    }

    private let state = NIOLockedValueBox(State())
    private let handler: (@Sendable (PresentedAlert) throws -> Answer)?
    /// The name of the token the code under test posts with, as the daemon records it
    /// (`posted_by`, SPEC §10); nil: not said, nothing checked.
    private let poster: String?
    /// Where the double was made: failures of presentations no expectation covers point here.
    private let createdAt: SourceLocation

    /// A double that answers only presentations announced with ``expect(title:on:answer:sourceLocation:)``, in order.
    ///
    /// - Parameter poster: the name of the token the code under test posts with. Then a
    ///   ballot of that name for a non-cancel button of an alert with a `quorum` above 1
    ///   fails the test, as the daemon refuses it (403: the poster cannot approve its own alert).
    public init(poster: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        handler = nil
        self.poster = poster
        createdAt = sourceLocation
    }

    /// A double that answers every presentation by asking `answer` (after any ``expect(title:on:answer:sourceLocation:)``
    /// expectations are used up).
    ///
    /// ```swift
    /// let alerts = TestAlertPresenter { alert in alert.title.hasPrefix("Deploy") ? .button("Deploy") : .expired }
    /// ```
    public init(
        poster: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
        answering answer: @escaping @Sendable (PresentedAlert) throws -> Answer
    ) {
        handler = answer
        self.poster = poster
        createdAt = sourceLocation
    }

    /// Expects the next presentation to have `title` (and to be on `client`, when given) and answers it.
    public func expect(
        title: String, on client: String? = nil, answer: Answer, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        state.withLockedValue {
            $0.expectations.append(Expectation(title: title, client: client, answer: answer, location: sourceLocation))
        }
    }

    /// Every alert presented so far, in order.
    public var presented: [PresentedAlert] { state.withLockedValue { $0.presented } }

    /// Fails the test for every expected presentation that never came.
    public func verifyAllExpectationsMet() {
        let left = state.withLockedValue { $0.expectations }
        for expectation in left {
            Self.fail("expected an alert \"\(expectation.title)\" to be presented, but it was not", at: expectation.location)
        }
    }

    /// Records the presentation and answers it as the test said.
    public func present(_ alert: NewAlert, on client: String) async throws -> AlertOutcome {
        try await presentForDecision(alert, on: client).outcome
    }

    /// Records the presentation and answers it as the test said, with the votes: a
    /// ``Answer/votes(_:)`` answer's as counted, a ``Answer/button(_:)`` answer's one vote
    /// (without a decider's name, as a daemon without tokens records it).
    public func presentForDecision(_ alert: NewAlert, on client: String) async throws -> AlertDecision {
        let presented = PresentedAlert(client: client, alert: alert)
        let next: Expectation? = state.withLockedValue {
            $0.presented.append(presented)
            return $0.expectations.isEmpty ? nil : $0.expectations.removeFirst()
        }
        let location = next?.location ?? createdAt
        let fields: [AlertField]
        switch Self.validated(alert, on: client) {
        case .success(let valid): fields = valid.fields ?? []
        case .failure(let problem): throw Self.fail("the daemon would refuse \(presented): \(problem.description)", at: location)
        }
        let answer: Answer
        if let next {
            guard next.title == alert.title, next.client == nil || next.client == client else {
                let wanted = next.client.map { "\"\(next.title)\" on \($0)" } ?? "\"\(next.title)\""
                throw Self.fail("expected \(wanted) to be presented, but got \(presented)", at: location)
            }
            answer = next.answer
        } else if let handler {
            answer = try handler(presented)
        } else {
            throw Self.fail("an alert no test expected was presented: \(presented)", at: location)
        }
        return try decision(of: answer, for: presented, fields: fields, at: location)
    }

    private func decision(
        of answer: Answer, for presented: PresentedAlert, fields: [AlertField], at location: SourceLocation
    ) throws -> AlertDecision {
        switch answer {
        case .button(let title, let comment, let values):
            guard let index = presented.buttons.firstIndex(where: { $0.title == title }) else {
                throw Self.fail("answered with \"\(title)\", which \(presented) does not have", at: location)
            }
            guard presented.quorum == 1 else {
                throw Self.fail(
                    "answered with .button(\"\(title)\"), but \(presented) needs \(presented.quorum) deciders: "
                        + "say who chose with .votes([.init(\"alice\", \"\(title)\"), …])",
                    at: location)
            }
            let words = try Self.words(
                comment: comment, values: values, button: index, of: presented, fields: fields, who: "the answer", at: location)
            let outcome: AlertOutcome = presented.buttons[index].style == .cancel ? .cancel(title) : .button(title)
            let vote = Vote(
                decidedBy: nil, button: title, buttonIndex: index, at: Self.now(), comment: words.comment, values: words.values)
            return AlertDecision(outcome: outcome, votes: [vote], comment: words.comment, values: words.values)
        case .dismissed:
            guard presented.buttons.isEmpty else {
                throw Self.fail("answered .dismissed, but only buttonless alerts are dismissed: \(presented)", at: location)
            }
            return AlertDecision(outcome: .dismissed)
        case .expired: return AlertDecision(outcome: .expired)
        case .withdrawn: return AlertDecision(outcome: .withdrawn)
        case .votes(let ballots): return try count(ballots, for: presented, fields: fields, at: location)
        case .escalated(let clients, let then):
            let steps = presented.escalation ?? []
            guard !clients.isEmpty, clients.count <= steps.count, Array(steps.prefix(clients.count).map(\.to)) == clients else {
                throw Self.fail(
                    "answered .escalated(to: \(clients)), but \(presented) escalates to \(steps.map(\.to)) in that order"
                        + (presented.escalation == nil ? " (nothing of its own: give the alert its escalation)" : ""),
                    at: location)
            }
            let now = Self.now()
            var decision = try decision(of: then, for: presented, fields: fields, at: location)
            decision.escalatedTo = clients.map { EscalatedTo(client: $0, at: now) }
            return decision
        }
    }

    /// The words of an answer as the daemon keeps them (SPEC §13, AlertdCore's own check), or
    /// the test fails saying why the daemon would refuse them.
    private static func words(
        comment: String?, values: [String: String], button index: Int, of presented: PresentedAlert, fields: [AlertField],
        who: String, at location: SourceLocation
    ) throws -> ChoiceWords {
        switch ChoiceWords(comment: comment, values: values).checked(button: index, of: presented.buttons, fields: fields) {
        case .success(let kept): return kept
        case .failure(let invalid):
            throw fail("the daemon would refuse \(who) to \(presented) (invalid-answer): \(invalid.summary)", at: location)
        }
    }

    /// The ballots counted as the daemon counts votes (SPEC §10).
    private func count(
        _ ballots: [Ballot], for presented: PresentedAlert, fields: [AlertField], at location: SourceLocation
    ) throws -> AlertDecision {
        var votes: [Vote] = []
        for (number, ballot) in ballots.enumerated() {
            guard let index = presented.buttons.firstIndex(where: { $0.title == ballot.button }) else {
                throw Self.fail("\(ballot.decider) voted \"\(ballot.button)\", which \(presented) does not have", at: location)
            }
            // Four eyes means someone else's: the daemon refuses the poster's approval (403).
            if presented.quorum > 1, ballot.decider == poster, presented.buttons[index].style != .cancel {
                throw Self.fail(
                    "\(ballot): \(ballot.decider) posted \(presented), and the poster cannot approve its own alert "
                        + "(it may only cancel it)",
                    at: location)
            }
            // A decider votes once: the same button again changes nothing, another is refused.
            if votes.contains(where: { $0.decidedBy == ballot.decider }) { continue }
            let words = try Self.words(
                comment: ballot.comment, values: ballot.values, button: index, of: presented, fields: fields,
                who: "\(ballot.decider)'s vote", at: location)
            votes.append(
                Vote(
                    decidedBy: ballot.decider, button: ballot.button, buttonIndex: index, at: Self.now(), comment: words.comment,
                    values: words.values))
            let outcome: AlertOutcome
            if presented.buttons[index].style == .cancel {
                outcome = .cancel(ballot.button)
            } else if votes.filter({ $0.button == ballot.button }).count >= presented.quorum {
                outcome = .button(ballot.button)
            } else {
                continue
            }
            let after = ballots.dropFirst(number + 1)
            guard after.isEmpty else {
                throw Self.fail(
                    "\(ballot) decided \(presented) (\(outcome)), so no one could cast the ballots after it: "
                        + after.map(\.description).joined(separator: ", "),
                    at: location)
            }
            let deciding = votes[votes.count - 1]
            return AlertDecision(
                outcome: outcome, votes: votes, decidedBy: ballot.decider, comment: deciding.comment, values: deciding.values)
        }
        // Short of the quorum: the alert stays until it expires, with the votes made.
        return AlertDecision(outcome: .expired, votes: votes)
    }

    private static func now() -> Timestamp { Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))) }

    /// Why the daemon would refuse the alert, if it would: the daemon's own validation
    /// (AlertdCore's `NewAlert.validate`, SPEC §2, §10 and §13) of the body the SDK sends, with a
    /// daemon's default bounds and tokens on (so a quorum's deciders have names), and its
    /// client id rule. Not what depends on a daemon's config: `callbacks.deny`, a signing
    /// secret for `callback_url`, a `max_expires_in` other than the default week.
    static func violation(of alert: NewAlert, on client: String) -> String? {
        switch validated(alert, on: client) {
        case .success: nil
        case .failure(let problem): problem.description
        }
    }

    /// The alert as the daemon would take it (its fields' buttons resolved), or why it would not.
    static func validated(_ alert: NewAlert, on client: String) -> Result<NewAlert, Failure> {
        if !ClientID.isValid(client) { return .failure(Failure(description: "the client id \"\(client)\" is not valid")) }
        let body: JSONValue
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            body = try JSONParser.parse(Array(try encoder.encode(alert)))
        } catch {
            return .failure(Failure(description: "it cannot be sent as JSON: \(error)"))
        }
        switch NewAlert.validate(body, rules: AlertRules(), namedDeciders: true, client: client) {
        case .success(let valid): return .success(valid)
        case .failure(let invalid):
            return .failure(Failure(description: invalid.errors.map { "\($0.field): \($0.reason)" }.joined(separator: "; ")))
        }
    }

    @discardableResult
    private static func fail(_ message: String, at location: SourceLocation) -> Failure {
        Issue.record(Comment(rawValue: message), sourceLocation: location)
        return Failure(description: message)
    }

}
