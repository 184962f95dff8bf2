import AlertdTestSupport
import Foundation
import Testing

/// Where a test body's requests go.
enum TestMode: String, Sendable, CustomTestStringConvertible {
    /// alertd built in this process, its HTTP handler called without sockets.
    case inProcess = "in process"
    /// The real `alertd` binary, started for the test, over AsyncHTTPClient.
    case live

    var testDescription: String { rawValue }

    /// In process, unless `ALERTD_TEST_MODE=live` asks for every body to run live.
    static let `default`: TestMode = ProcessInfo.processInfo.environment["ALERTD_TEST_MODE"] == "live" ? .live : .inProcess

    /// Both, for the tests that prove the two ways agree.
    static let both: [TestMode] = [.inProcess, .live]
}

/// Runs `body` against a new alertd built from `config`, in process or live, and stops it
/// afterwards (as HummingbirdTesting's `app.test(.router)` / `app.test(.live)` do).
@discardableResult
func withTestClient<T>(
    _ mode: TestMode = .default, config: String = Contract.baseConfig, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (any TestClient) async throws -> T
) async throws -> T {
    switch mode {
    case .inProcess:
        let alertd = try await InProcessAlertd.start(config: config)
        do {
            let result = try await body(alertd)
            await alertd.shutdown()
            return result
        } catch {
            await alertd.shutdown()
            throw error
        }
    case .live:
        let daemon = try await Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        let result = try await body(daemon.client(timeout: .seconds(40)))
        #expect(
            daemon.isRunning,
            "alertd exited during the test (status \(daemon.exitStatus.map(String.init) ?? "?"))\n\(daemon.stderrText.suffix(4000))",
            sourceLocation: sourceLocation)
        return result
    }
}
