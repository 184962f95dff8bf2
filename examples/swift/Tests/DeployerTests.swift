import AlertdClientTesting
import DeployApproval
import Synchronization
import Testing

/// The example program's tests: no daemon, the double answers as a person would.
@Suite("Deployer (the example): asks before deploying and does what the person chose")
struct DeployerTests {
    /// Records which builds were deployed and rolled back.
    final class Actions: Sendable {
        let log = Mutex<[String]>([])
        var entries: [String] { log.withLock { $0 } }

        func deployer(_ alerts: TestAlertPresenter) -> Deployer {
            Deployer(
                alerts: alerts,
                deploy: { build in self.log.withLock { $0.append("deploy \(build)") } },
                rollBack: { build in self.log.withLock { $0.append("roll back to \(build)") } })
        }
    }

    @Test("Deploy deploys; the alert says which build, with its changes, and offers the three buttons")
    func deploys() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy build 1234?", on: "ops", answer: .button("Deploy"))
        let actions = Actions()

        let decision = try await actions.deployer(alerts).run(build: 1234, changes: ["fix login", "faster search"])

        #expect(decision == .deployed)
        #expect(actions.entries == ["deploy 1234"])
        let shown = try #require(alerts.presented.first)
        #expect(shown.message == "• fix login\n• faster search")
        #expect(shown.buttons == [.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")])
        #expect(shown.alert.metadata == ["build": 1234])
        alerts.verifyAllExpectationsMet()
    }

    @Test("Roll back rolls back to the build before")
    func rollsBack() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy build 8?", answer: .button("Roll back"))
        let actions = Actions()
        #expect(try await actions.deployer(alerts).run(build: 8, changes: []) == .rolledBack)
        #expect(actions.entries == ["roll back to 7"])
    }

    @Test(
        "Cancel and an expiry do nothing, and an expiry is not reported as a no",
        arguments: [
            (TestAlertPresenter.Answer.button("Cancel"), "cancelled"),
            (.expired, "no one answered within an hour"),
        ])
    func doesNothing(answer: TestAlertPresenter.Answer, reason: String) async throws {
        let alerts = TestAlertPresenter { _ in answer }
        let actions = Actions()
        #expect(try await actions.deployer(alerts).run(build: 5, changes: []) == .skipped(reason: reason))
        #expect(actions.entries.isEmpty)
    }
}
