import AlertdClient
import DeployApproval
import Foundation

// deploy-approval BUILD [CHANGE…]: asks the "ops" dashboard before deploying.
// ALERTD_URL and ALERTD_TOKEN say where alertd is and who is asking.
let arguments = CommandLine.arguments.dropFirst()
guard let build = arguments.first.flatMap({ Int($0) }) else {
    FileHandle.standardError.write(Data("usage: deploy-approval BUILD [CHANGE…]\n".utf8))
    exit(64)
}
let environment = ProcessInfo.processInfo.environment
let alerts = try AlertdClient(url: environment["ALERTD_URL"] ?? "http://127.0.0.1:8080", token: environment["ALERTD_TOKEN"])
let deployer = Deployer(
    alerts: alerts,
    deploy: { build in print("deploying build \(build)…") },
    rollBack: { build in print("rolling back to build \(build)…") })
let decision = try await deployer.run(build: build, changes: Array(arguments.dropFirst()))
print(decision)
exit(decision == .deployed || decision == .rolledBack ? 0 : 1)
