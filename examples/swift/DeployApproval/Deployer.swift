import AlertdClient

/// A deploy step that asks a person first: the code that asks and the code that
/// handles the answer sit together, and its tests need no daemon.
public struct Deployer: Sendable {
    public enum Decision: Sendable, Equatable {
        case deployed
        case rolledBack
        case skipped(reason: String)
    }

    let alerts: any AlertPresenting
    let client: String
    let deploy: @Sendable (Int) async throws -> Void
    let rollBack: @Sendable (Int) async throws -> Void

    /// - Parameters:
    ///   - alerts: an ``AlertdClient`` in production, a `TestAlertPresenter` in tests.
    ///   - client: the dashboard that approves deploys.
    public init(
        alerts: any AlertPresenting, client: String = "ops",
        deploy: @escaping @Sendable (Int) async throws -> Void, rollBack: @escaping @Sendable (Int) async throws -> Void
    ) {
        self.alerts = alerts
        self.client = client
        self.deploy = deploy
        self.rollBack = rollBack
    }

    /// Asks whether to deploy `build`; deploys, rolls back or does nothing as the person chose.
    public func run(build: Int, changes: [String]) async throws -> Decision {
        let answer = try await alerts.present(
            on: client, title: "Deploy build \(build)?",
            message: changes.isEmpty ? nil : changes.map { "• \($0)" }.joined(separator: "\n"),
            buttons: [.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")],
            expiresIn: 3600, metadata: ["build": .number(.init(build))])
        switch answer {
        case .button("Deploy"):
            try await deploy(build)
            return .deployed
        case .button("Roll back"):
            try await rollBack(build - 1)
            return .rolledBack
        case .button(let other):
            return .skipped(reason: "unexpected button \(other)")
        case .cancel:
            return .skipped(reason: "cancelled")
        case .expired:
            // A timeout is not a "no": say so, so the pipeline can page someone.
            return .skipped(reason: "no one answered within an hour")
        case .dismissed, .withdrawn:
            return .skipped(reason: "\(answer)")
        }
    }
}
