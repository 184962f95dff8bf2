import AlertdClient
import AlertdClientTesting
import AlertdWire
import Testing

@Suite("TestAlertPresenter: the SDK's double records, answers, and fails loudly")
struct TestAlertPresenterTests {
    @Test("it records every presentation and answers in order; the cancel button gives .cancel")
    func recordsAndAnswers() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "First?", answer: .button("Yes"))
        alerts.expect(title: "Second?", on: "ops", answer: .button("No"))
        alerts.expect(title: "Third?", answer: .expired)
        let presenter: any AlertPresenting = alerts
        #expect(try await presenter.present(on: "a", title: "First?", buttons: [.default("Yes")]) == .button("Yes"))
        #expect(
            try await presenter.present(on: "ops", title: "Second?", style: .actionSheet, buttons: [.default("Yes"), .cancel("No")])
                == .cancel("No"))
        #expect(try await presenter.present(on: "a", title: "Third?", buttons: [.default("Yes")]) == .expired)
        #expect(alerts.presented.map(\.title) == ["First?", "Second?", "Third?"])
        #expect(alerts.presented[1].style == .actionSheet && alerts.presented[1].client == "ops")
        #expect(alerts.presented[1].buttonTitles == ["Yes", "No"])
        alerts.verifyAllExpectationsMet()
    }

    @Test("a presentation no test expected fails the test and throws to the code under test")
    func unexpected() async throws {
        let alerts = TestAlertPresenter()
        try await withKnownIssue {
            _ = try await alerts.present(on: "ops", title: "Surprise", buttons: [.default("OK")])
        } matching: { issue in
            "\(issue)".contains("no test expected")
        }
        #expect(alerts.presented.count == 1)
    }

    @Test("a different title or client than expected fails the test")
    func mismatch() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy?", on: "ops", answer: .button("Go"))
        try await withKnownIssue {
            _ = try await alerts.present(on: "staging", title: "Deploy?", buttons: [.default("Go")])
        } matching: {
            "\($0)".contains("expected \"Deploy?\" on ops")
        }
    }

    @Test("an answer naming a button the alert lacks fails the test")
    func unknownButton() async throws {
        let alerts = TestAlertPresenter { _ in .button("Maybe") }
        try await withKnownIssue {
            _ = try await alerts.present(on: "ops", title: "Q", buttons: [.default("Yes")])
        } matching: {
            "\($0)".contains("does not have")
        }
    }

    @Test(
        "an alert the daemon would refuse fails the test",
        arguments: [
            NewAlert(title: ""),
            NewAlert(title: "x", buttons: [.default("A"), .default("A")]),
            NewAlert(title: "x", buttons: [.cancel("A"), .cancel("B")]),
            NewAlert(title: "x", buttons: [.default("A")], dismissAfter: 2),
            NewAlert(title: "x", priority: 101),
            // What the double's own copy of the rules missed (issue 48): it now runs the daemon's.
            NewAlert(title: "x", metadata: ["note": .string(String(repeating: "n", count: 4100))]),
            NewAlert(title: "x", callbackURL: "ftp://ci.example/hook"),
            NewAlert(title: "x", callbackURL: "/relative/hook"),
            NewAlert(title: "x", expiresIn: 604_801),
            NewAlert(title: String(repeating: "t", count: 257)),
        ])
    func refusedByTheDaemon(alert: NewAlert) async throws {
        let alerts = TestAlertPresenter { _ in .expired }
        try await withKnownIssue {
            _ = try await alerts.present(alert, on: "ops")
        } matching: {
            "\($0)".contains("the daemon would refuse")
        }
    }

    @Test("an alert the daemon would refuse for its quorum fails the test", arguments: [0, 11])
    func refusedQuorum(quorum: Int) async throws {
        let alerts = TestAlertPresenter { _ in .expired }
        try await withKnownIssue {
            _ = try await alerts.present(NewAlert(title: "x", buttons: [.default("A")], quorum: quorum), on: "ops")
        } matching: {
            "\($0)".contains("quorum: must be between 1 and 10")
        }
        try await withKnownIssue {
            _ = try await alerts.present(NewAlert(title: "notice", quorum: 2), on: "ops")
        } matching: {
            "\($0)".contains("quorum: above 1 needs buttons to choose")
        }
    }

    @Test("the double takes what the daemon takes: every optional member, at its bounds")
    func acceptedByTheDaemon() async throws {
        let alerts = TestAlertPresenter { _ in .button("A") }
        let alert = NewAlert(
            title: String(repeating: "t", count: 256), message: String(repeating: "m", count: 4096), style: .actionSheet,
            buttons: [.default("A"), .destructive("B"), .cancel("C")], priority: 100, expiresIn: 604_800,
            callbackURL: "https://ci.example/hook?build=1", metadata: ["note": .string(String(repeating: "n", count: 4000))],
            quorum: 1)
        #expect(try await alerts.present(alert, on: "team-a.b_c") == .button("A"))
    }

    @Test("an expectation never met fails verifyAllExpectationsMet")
    func unmet() {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Never shown", answer: .dismissed)
        withKnownIssue {
            alerts.verifyAllExpectationsMet()
        } matching: {
            "\($0)".contains("Never shown")
        }
    }
}

/// The double simulating several deciders (SPEC §10): votes by name, counted as the daemon counts them.
@Suite("TestAlertPresenter: several deciders vote on an alert with a quorum")
struct TestAlertPresenterVoteTests {
    static let deploy = [Button.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")]
    typealias Ballot = TestAlertPresenter.Ballot

    /// `decider:button` of each vote, in order.
    static func ballot(_ decision: AlertDecision) -> [String] {
        decision.votes.map { "\($0.decidedBy ?? "-"):\($0.button)" }
    }

    @Test("two deciders choosing the same button answer it: the decision names both, decided by the second")
    func quorumReached() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy build 7?", answer: .votes([Ballot("alice", "Deploy"), Ballot("bob", "Deploy")]))
        let decision = try await alerts.present(on: "ops", title: "Deploy build 7?", buttons: Self.deploy, quorum: 2)
        #expect(decision.outcome == .button("Deploy"))
        #expect(decision.decidedBy == "bob")
        #expect(decision.chosenBy == ["alice", "bob"])
        #expect(Self.ballot(decision) == ["alice:Deploy", "bob:Deploy"])
        #expect(decision.votes.map(\.buttonIndex) == [0, 0])
        #expect(alerts.presented.first?.quorum == 2 && alerts.presented.first?.alert.quorum == 2)
        alerts.verifyAllExpectationsMet()
    }

    @Test("votes for other buttons count for those buttons; the third decider completes the one with two")
    func splitVotes() async throws {
        let alerts = TestAlertPresenter { _ in
            .votes([Ballot("alice", "Deploy"), Ballot("bob", "Roll back"), Ballot("carol", "Roll back")])
        }
        let decision = try await alerts.present(on: "ops", title: "Deploy build 8?", buttons: Self.deploy, quorum: 2)
        #expect(decision.outcome == .button("Roll back") && decision.decidedBy == "carol")
        #expect(decision.chosenBy == ["bob", "carol"])
        #expect(Self.ballot(decision) == ["alice:Deploy", "bob:Roll back", "carol:Roll back"])
    }

    @Test("one vote for the cancel-style button stops it at once, whatever the quorum and the votes before")
    func veto() async throws {
        let alerts = TestAlertPresenter { _ in .votes([Ballot("alice", "Deploy"), Ballot("carol", "Cancel")]) }
        let decision = try await alerts.present(on: "ops", title: "Deploy build 9?", buttons: Self.deploy, quorum: 3)
        #expect(decision.outcome == .cancel("Cancel") && decision.decidedBy == "carol")
        #expect(decision.chosenBy == ["carol"])
        #expect(Self.ballot(decision) == ["alice:Deploy", "carol:Cancel"])
        // present alone gives the outcome, as for any alert.
        let outcome = try await alerts.present(NewAlert(title: "Again?", buttons: Self.deploy, quorum: 3), on: "ops")
        #expect(outcome == .cancel("Cancel"))
    }

    @Test("a decider votes once: the same decider again counts once, and cannot then veto; short of the quorum it expires with the votes")
    func oneVoteEach() async throws {
        let alerts = TestAlertPresenter { _ in
            .votes([Ballot("alice", "Deploy"), Ballot("alice", "Deploy"), Ballot("alice", "Cancel")])
        }
        let decision = try await alerts.present(on: "ops", title: "Deploy build 10?", buttons: Self.deploy, quorum: 2)
        #expect(decision.outcome == .expired && decision.decidedBy == nil)
        #expect(Self.ballot(decision) == ["alice:Deploy"])
        #expect(decision.chosenBy.isEmpty)
    }

    @Test("for quorum 1 the first vote decides, and a plain button answer carries its one unnamed vote")
    func quorumOne() async throws {
        let named = TestAlertPresenter { _ in .votes([Ballot("alice", "Deploy")]) }
        let decision = try await named.presentForDecision(NewAlert(title: "Deploy?", buttons: Self.deploy), on: "ops")
        #expect(decision.outcome == .button("Deploy") && decision.decidedBy == "alice" && decision.chosenBy == ["alice"])
        let plain = TestAlertPresenter { _ in .button("Deploy") }
        let answered = try await plain.presentForDecision(NewAlert(title: "Deploy?", buttons: Self.deploy), on: "ops")
        #expect(answered.outcome == .button("Deploy") && answered.decidedBy == nil)
        #expect(Self.ballot(answered) == ["-:Deploy"])
    }

    @Test("a plain button answer for an alert of several deciders fails the test: say who voted")
    func buttonForQuorum() async throws {
        let alerts = TestAlertPresenter { _ in .button("Deploy") }
        try await withKnownIssue {
            _ = try await alerts.present(on: "ops", title: "Deploy?", buttons: Self.deploy, quorum: 2)
        } matching: {
            "\($0)".contains("needs 2 deciders") && "\($0)".contains(".votes(")
        }
    }

    @Test("told the poster's name, a ballot of it for a non-cancel button fails the test, as the daemon refuses it; its cancel stops it")
    func posterCannotApprove() async throws {
        let approving = TestAlertPresenter(poster: "deployer") { _ in .votes([Ballot("alice", "Deploy"), Ballot("deployer", "Deploy")]) }
        try await withKnownIssue {
            _ = try await approving.present(on: "ops", title: "Deploy?", buttons: Self.deploy, quorum: 2)
        } matching: {
            "\($0)".contains("the poster cannot approve its own alert")
        }
        let cancelling = TestAlertPresenter(poster: "deployer") { _ in .votes([Ballot("deployer", "Cancel")]) }
        let decision = try await cancelling.present(on: "ops", title: "Deploy?", buttons: Self.deploy, quorum: 2)
        #expect(decision.outcome == .cancel("Cancel") && decision.decidedBy == "deployer")
        // Quorum 1 asks for no four eyes.
        let single = TestAlertPresenter(poster: "deployer") { _ in .votes([Ballot("deployer", "Deploy")]) }
        #expect(try await single.present(on: "ops", title: "Deploy?", buttons: Self.deploy, quorum: 1).outcome == .button("Deploy"))
    }

    @Test("a ballot after the decision, or for a button the alert lacks, fails the test")
    func impossibleBallots() async throws {
        let late = TestAlertPresenter { _ in .votes([Ballot("carol", "Cancel"), Ballot("alice", "Deploy")]) }
        try await withKnownIssue {
            _ = try await late.present(on: "ops", title: "Deploy?", buttons: Self.deploy, quorum: 2)
        } matching: {
            "\($0)".contains("no one could cast the ballots after it: alice: Deploy")
        }
        let unknown = TestAlertPresenter { _ in .votes([Ballot("alice", "Maybe")]) }
        try await withKnownIssue {
            _ = try await unknown.present(on: "ops", title: "Deploy?", buttons: Self.deploy, quorum: 2)
        } matching: {
            "\($0)".contains("alice voted \"Maybe\", which") && "\($0)".contains("does not have")
        }
    }
}
