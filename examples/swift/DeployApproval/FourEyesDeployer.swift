import AlertdClient

/// A production deploy that two people must approve ("four eyes", SPEC §10): the question is
/// posted with `quorum: 2`, so it is answered only when two different deciders — two
/// tokens' names — chose Deploy. Any one of them can stop it alone with Cancel.
///
/// Like ``Deployer``, it takes an `any AlertPresenting`: an ``AlertdClient`` against a daemon
/// with tokens in production, a `TestAlertPresenter` simulating the deciders in tests.
public struct FourEyesDeployer: Sendable {
    public enum Decision: Sendable, Equatable {
        /// Deployed; who approved it, in the order they did.
        case deployed(approvedBy: [String])
        /// Someone pressed Cancel: one person is enough to stop it.
        case stopped(by: String?)
        /// No decision: it expired (with the approvals it had, too few) or was withdrawn.
        case skipped(reason: String)
    }

    let alerts: any AlertPresenting
    let client: String
    let approvals: Int
    let deploy: @Sendable (Int) async throws -> Void

    /// - Parameters:
    ///   - alerts: an ``AlertdClient`` (with a token that may post) in production, a
    ///     `TestAlertPresenter` in tests.
    ///   - client: the dashboard the approvers watch.
    ///   - approvals: how many different people must choose Deploy (2–10).
    public init(
        alerts: any AlertPresenting, client: String = "ops", approvals: Int = 2,
        deploy: @escaping @Sendable (Int) async throws -> Void
    ) {
        self.alerts = alerts
        self.client = client
        self.approvals = approvals
        self.deploy = deploy
    }

    /// Asks until `approvals` people chose Deploy, one chose Cancel, or an hour passed; deploys
    /// only in the first case.
    public func run(build: Int, changes: [String]) async throws -> Decision {
        let lines = changes.map { "• \($0)" } + ["Needs \(approvals) approvals; any one Cancel stops it."]
        let decision = try await alerts.present(
            on: client, title: "Deploy build \(build) to production?", message: lines.joined(separator: "\n"),
            buttons: [.default("Deploy"), .cancel("Cancel")], expiresIn: 3600, metadata: ["build": .number(.init(build))],
            quorum: approvals)
        switch decision.outcome {
        case .button("Deploy"):
            try await deploy(build)
            return .deployed(approvedBy: decision.chosenBy)
        case .button(let other):
            return .skipped(reason: "unexpected button \(other)")
        case .cancel:
            return .stopped(by: decision.decidedBy)
        case .expired:
            // Approvals short of the quorum stay on the expired alert: say whose they were.
            let approvedBy = decision.votes.compactMap(\.decidedBy)
            if approvedBy.isEmpty { return .skipped(reason: "no one answered within an hour") }
            return .skipped(
                reason: "only \(approvedBy.joined(separator: ", ")) approved within an hour; it needs \(approvals)")
        case .dismissed, .withdrawn:
            return .skipped(reason: "\(decision.outcome)")
        }
    }
}
