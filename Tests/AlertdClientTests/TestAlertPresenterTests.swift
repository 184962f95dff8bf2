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
        ])
    func refusedByTheDaemon(alert: NewAlert) async throws {
        let alerts = TestAlertPresenter { _ in .expired }
        try await withKnownIssue {
            _ = try await alerts.present(alert, on: "ops")
        } matching: {
            "\($0)".contains("the daemon would refuse")
        }
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
