import AlertdClient
import AlertdClientTesting
import AlertdWire
import Testing

@Suite("TestAlertPresenter: escalation (SPEC §12)")
struct TestAlertPresenterEscalationTests {
    private let question = NewAlert(
        title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")],
        escalation: [EscalationStep(after: 300, to: "ops-lead"), EscalationStep(after: 900, to: "cto")])

    @Test("it records the alert's escalation, and an answer after steps carries them in the decision")
    func escalatedAnswer() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy build 1234?", answer: .escalated(to: ["ops-lead"], then: .button("Deploy")))
        let decision = try await alerts.presentForDecision(question, on: "ops")
        #expect(decision.outcome == .button("Deploy"))
        #expect(decision.escalatedTo.map(\.client) == ["ops-lead"])
        #expect(alerts.presented.first?.escalation?.map(\.to) == ["ops-lead", "cto"])
        alerts.verifyAllExpectationsMet()
    }

    @Test("the SDK's present(on:…escalation:) posts the policy and returns the decision with the steps")
    func convenience() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Fail over?", on: "sre", answer: .escalated(to: ["sre-lead"], then: .button("Fail over")))
        let presenter: any AlertPresenting = alerts
        let decision = try await presenter.present(
            on: "sre", title: "Fail over?", buttons: [.destructive("Fail over"), .cancel("Wait")],
            escalation: [EscalationStep(after: 120, to: "sre-lead")])
        #expect(decision.outcome == .button("Fail over") && decision.escalatedTo.map(\.client) == ["sre-lead"])
        #expect(alerts.presented.first?.escalation == [EscalationStep(after: 120, to: "sre-lead")])
    }

    @Test(
        "steps the alert would not take fail the test: out of order, not its own, or with no policy of its own",
        arguments: [["cto"], ["ops-lead", "cto", "ceo"], ["sre"]])
    func wrongSteps(clients: [String]) async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy build 1234?", answer: .escalated(to: clients, then: .expired))
        try await withKnownIssue {
            _ = try await alerts.present(question, on: "ops")
        } matching: { issue in
            "\(issue)".contains("escalates to")
        }
    }

    @Test("an alert whose own escalation the daemon would refuse fails the test")
    func refusedPolicy() async throws {
        let alerts = TestAlertPresenter { _ in .expired }
        try await withKnownIssue {
            _ = try await alerts.present(
                NewAlert(title: "q", buttons: [.default("OK")], escalation: [EscalationStep(after: 60, to: "ops")]), on: "ops")
        } matching: { issue in
            "\(issue)".contains("escalation[0].to")
        }
    }

    @Test("a decision read from a terminal resource carries its escalated_to")
    func decisionFromResource() throws {
        let now = Timestamp(milliseconds: 1_795_000_000_000)
        let resource = AlertResource(
            id: "01M7Q5CQG1ME0R4ZH6RDPV2QJA", client: "ops", state: .answered, position: nil, title: "q", message: nil, style: .alert,
            buttons: [.default("OK")], priority: 0, expiresIn: 60, dismissAfter: nil, callbackURL: nil, metadata: nil, createdAt: now,
            displayedAt: now, decidedAt: now, expiresAt: now,
            result: AlertResult(outcome: .answered, button: "OK", buttonIndex: 0, decidedBy: "lead"),
            escalation: [EscalationStep(after: 30, to: "ops-lead")], escalatedTo: [EscalatedTo(client: "ops-lead", at: now)])
        let decision = try #require(AlertDecision(resource))
        #expect(decision.escalatedTo == [EscalatedTo(client: "ops-lead", at: now)])
        #expect(decision.description.contains("escalated to ops-lead"))
    }
}
