import AlertdClient
import DeployApproval
import Foundation

// deploy-approval [--approvals N] BUILD [CHANGE…]: asks the "ops" dashboard before deploying.
// With --approvals 2 (or more), N different people must choose Deploy (alertd needs tokens,
// one per approver); any one of them can stop it with Cancel.
// ALERTD_URL and ALERTD_TOKEN say where alertd is and who is asking.
var arguments = CommandLine.arguments.dropFirst()
var approvals = 1
if arguments.first == "--approvals" {
    arguments = arguments.dropFirst()
    approvals = arguments.first.flatMap { Int($0) } ?? 0
    arguments = arguments.dropFirst()
}
guard let build = arguments.first.flatMap({ Int($0) }), (1...10).contains(approvals) else {
    FileHandle.standardError.write(Data("usage: deploy-approval [--approvals 1-10] BUILD [CHANGE…]\n".utf8))
    exit(64)
}
let changes = Array(arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
let alerts = try AlertdClient(url: environment["ALERTD_URL"] ?? "http://127.0.0.1:8080", token: environment["ALERTD_TOKEN"])
if approvals > 1 {
    let deployer = FourEyesDeployer(alerts: alerts, approvals: approvals, deploy: { build in print("deploying build \(build)…") })
    let decision = try await deployer.run(build: build, changes: changes)
    print(decision)
    if case .deployed = decision { exit(0) }
    exit(1)
}
let deployer = Deployer(
    alerts: alerts,
    deploy: { build in print("deploying build \(build)…") },
    rollBack: { build in print("rolling back to build \(build)…") })
let decision = try await deployer.run(build: build, changes: changes)
print(decision)
exit(decision == .deployed || decision == .rolledBack ? 0 : 1)
