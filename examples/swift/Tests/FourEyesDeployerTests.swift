import AlertdClientTesting
import DeployApproval
import Synchronization
import Testing

/// The two-person example's tests: no daemon, the double simulating the deciders' votes.
@Suite("FourEyesDeployer (the example): deploys only when two people approve; one Cancel stops it")
struct FourEyesDeployerTests {
    typealias Ballot = TestAlertPresenter.Ballot

    /// The builds deployed, in order.
    final class Deployed: Sendable {
        let builds = Mutex<[Int]>([])
        var all: [Int] { builds.withLock { $0 } }

        func deployer(_ alerts: TestAlertPresenter, approvals: Int = 2) -> FourEyesDeployer {
            FourEyesDeployer(alerts: alerts, approvals: approvals, deploy: { build in self.builds.withLock { $0.append(build) } })
        }
    }

    @Test("alice and bob approve: it deploys and says who approved; the alert asked for a quorum of 2")
    func twoApprovals() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(
            title: "Deploy build 1234 to production?", on: "ops",
            answer: .votes([Ballot("alice", "Deploy"), Ballot("bob", "Deploy")]))
        let deployed = Deployed()

        let decision = try await deployed.deployer(alerts).run(build: 1234, changes: ["fix login"])

        #expect(decision == .deployed(approvedBy: ["alice", "bob"]))
        #expect(deployed.all == [1234])
        let shown = try #require(alerts.presented.first)
        #expect(shown.quorum == 2)
        #expect(shown.buttons == [.default("Deploy"), .cancel("Cancel")])
        #expect(shown.message == "• fix login\nNeeds 2 approvals; any one Cancel stops it.")
        alerts.verifyAllExpectationsMet()
    }

    @Test("one approval and one Cancel: stopped by the one who cancelled, nothing deployed")
    func oneCancelStopsIt() async throws {
        let alerts = TestAlertPresenter { _ in .votes([Ballot("alice", "Deploy"), Ballot("carol", "Cancel")]) }
        let deployed = Deployed()
        #expect(try await deployed.deployer(alerts).run(build: 5, changes: []) == .stopped(by: "carol"))
        #expect(deployed.all.isEmpty)
    }

    @Test("the same person approving twice is one approval: it expires, and the reason says whose approval it had")
    func onePersonTwiceIsNotTwo() async throws {
        let alerts = TestAlertPresenter { _ in .votes([Ballot("alice", "Deploy"), Ballot("alice", "Deploy")]) }
        let deployed = Deployed()
        let decision = try await deployed.deployer(alerts).run(build: 6, changes: [])
        #expect(decision == .skipped(reason: "only alice approved within an hour; it needs 2"))
        #expect(deployed.all.isEmpty)
    }

    @Test("three approvals when asked for three: two are not enough")
    func threeOfThree() async throws {
        let alerts = TestAlertPresenter()
        alerts.expect(title: "Deploy build 7 to production?", answer: .votes([Ballot("alice", "Deploy"), Ballot("bob", "Deploy")]))
        alerts.expect(
            title: "Deploy build 7 to production?",
            answer: .votes([Ballot("alice", "Deploy"), Ballot("bob", "Deploy"), Ballot("carol", "Deploy")]))
        let deployed = Deployed()
        let deployer = deployed.deployer(alerts, approvals: 3)
        #expect(try await deployer.run(build: 7, changes: []) == .skipped(reason: "only alice, bob approved within an hour; it needs 3"))
        #expect(try await deployer.run(build: 7, changes: []) == .deployed(approvedBy: ["alice", "bob", "carol"]))
        #expect(deployed.all == [7])
        alerts.verifyAllExpectationsMet()
    }
}
