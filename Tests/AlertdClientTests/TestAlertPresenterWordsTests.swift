import AlertdClient
import AlertdClientTesting
import AlertdWire
import Testing

/// The double and answers with words (SPEC §13): it returns what the test said the person
/// wrote, and refuses (failing the test) what the daemon would refuse, by the daemon's own rules.
@Suite("TestAlertPresenter: comments and values")
struct TestAlertPresenterWordsTests {
    let ticket = AlertField(name: "ticket", label: "Change ticket", required: true, maxLength: 12)

    @Test("present(…, fields:) returns the values and the comment the answer carries")
    func valuesAndComment() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy?", answer: .button("Deploy", comment: "window agreed", values: ["ticket": "OPS-1"]))
        let decision = try await alerts.present(
            on: "ops", title: "Deploy?", buttons: [.default("Deploy"), .cancel("Cancel")], fields: [ticket])
        #expect(decision.outcome == .button("Deploy"))
        #expect(decision.values == ["ticket": "OPS-1"] && decision.comment == "window agreed")
        #expect(decision.votes.first?.values == ["ticket": "OPS-1"])
        #expect(alerts.presented.first?.fields.map(\.name) == ["ticket"])
        alerts.verifyAllExpectationsMet()
    }

    @Test("the cancel button needs no required field of the others; a comment says why")
    func cancelWithComment() async throws {
        let alerts = TestAlertPresenter { _ in .button("Cancel", comment: "freeze") }
        let decision = try await alerts.present(
            on: "ops", title: "Deploy?", buttons: [.default("Deploy"), .cancel("Cancel")], fields: [ticket])
        #expect(decision.outcome == .cancel("Cancel") && decision.comment == "freeze" && decision.values.isEmpty)
    }

    @Test(
        "an answer the daemon would refuse fails the test, named as the daemon names it",
        arguments: [
            (TestAlertPresenter.Answer.button("Deploy"), "values.ticket: is required for button \"Deploy\""),
            (.button("Deploy", values: ["ticket": "OPS-1234567890"]), "values.ticket: must be at most 12 characters"),
            (.button("Deploy", values: ["ticket": "OPS-1", "tikcet": "x"]), "values.tikcet: the alert has no field tikcet"),
            (.button("Deploy", comment: String(repeating: "c", count: 1001), values: ["ticket": "OPS-1"]), "comment: must be at most 1000"),
            (.button("Cancel", values: ["ticket": "OPS-1"]), "values.ticket: is not asked for button \"Cancel\""),
        ])
    func refused(answer: TestAlertPresenter.Answer, reason: String) async throws {
        let alerts = TestAlertPresenter { _ in answer }
        try await withKnownIssue {
            _ = try await alerts.present(on: "ops", title: "Deploy?", buttons: [.default("Deploy"), .cancel("Cancel")], fields: [ticket])
        } matching: { issue in
            "\(issue)".contains("invalid-answer") && "\(issue)".contains(reason)
        }
    }

    @Test("fields the daemon would refuse fail the test: six of them, a bad name, a button the alert lacks")
    func refusedFields() async throws {
        for fields in [
            (1...6).map { AlertField(name: "f\($0)") }, [AlertField(name: "Ticket")], [AlertField(name: "a", buttons: ["Nope"])],
        ] {
            let alerts = TestAlertPresenter { _ in .button("OK") }
            try await withKnownIssue {
                _ = try await alerts.present(on: "ops", title: "Q?", buttons: [.default("OK")], fields: fields)
            } matching: { issue in
                "\(issue)".contains("the daemon would refuse") && "\(issue)".contains("fields")
            }
        }
    }

    @Test("under a quorum each ballot carries its words; the decision has the deciding one's")
    func ballots() async throws {
        let alerts = TestAlertPresenter { _ in
            .votes([
                .init("alice", "Deploy", comment: "LGTM", values: ["ticket": "OPS-1"]),
                .init("bob", "Deploy", values: ["ticket": "OPS-2"]),
            ])
        }
        let decision = try await alerts.present(
            on: "ops", title: "Deploy?", buttons: [.default("Deploy"), .cancel("Cancel")], fields: [ticket], quorum: 2)
        #expect(decision.chosenBy == ["alice", "bob"])
        #expect(decision.votes.map(\.comment) == ["LGTM", nil])
        #expect(decision.values == ["ticket": "OPS-2"] && decision.comment == nil)
        let refused = TestAlertPresenter { _ in .votes([.init("alice", "Deploy"), .init("bob", "Deploy", values: ["ticket": "OPS-2"])]) }
        try await withKnownIssue {
            _ = try await refused.present(
                on: "ops", title: "Deploy?", buttons: [.default("Deploy"), .cancel("Cancel")], fields: [ticket], quorum: 2)
        } matching: { issue in
            "\(issue)".contains("alice's vote") && "\(issue)".contains("values.ticket")
        }
    }
}
