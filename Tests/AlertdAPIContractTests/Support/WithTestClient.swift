import AlertdInProcess
import AlertdTestSupport
import Foundation
import Testing

/// Where a test body's requests go.
enum TestMode: String, Sendable, CustomTestStringConvertible {
    /// alertd built in this process, its HTTP handler called without sockets.
    case inProcess = "in process"
    /// The real `alertd` binary, started for the test, over AsyncHTTPClient.
    case live
    /// Two real `alertd` processes on one PostgreSQL database behind nginx round-robin
    /// (``BalancedAlertd``): SPEC §9's "every instance answers as one alertd would".
    case balanced = "two instances behind nginx"

    var testDescription: String { rawValue }

    /// In process, unless `ALERTD_TEST_MODE=live` asks for every body to run live, or
    /// `ALERTD_TEST_MODE=balanced` through two instances (on PostgreSQL, whatever
    /// `ALERTD_TEST_STORE` says).
    static let `default`: TestMode =
        switch ProcessInfo.processInfo.environment["ALERTD_TEST_MODE"] {
        case "live": .live
        case "balanced": .balanced
        default: .inProcess
        }

    /// Both, for the tests that prove the two ways agree; in the balanced pass, that one way.
    static let both: [TestMode] = Self.default == .balanced ? [.balanced] : [.inProcess, .live]

    /// Where a body that asks for `self` runs: in the balanced pass every body goes through
    /// the two instances, whichever way it names (the pass is the whole contract through them).
    var resolved: TestMode { Self.default == .balanced ? .balanced : self }

    /// For `.disabled(if: TestMode.isBalancedPass, "why")` beside a test that cannot hold
    /// through two instances, the reason written there.
    static let isBalancedPass = Self.default == .balanced
}

/// Runs `body` against a new alertd built from `config`, in process or live, and stops it
/// afterwards (as HummingbirdTesting's `app.test(.router)` / `app.test(.live)` do).
@discardableResult
func withTestClient<T>(
    _ mode: TestMode = .default, config: String = Contract.baseConfig, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (any TestClient) async throws -> T
) async throws -> T {
    let test = Test.current.map { $0.displayName ?? $0.name } ?? "a test"
    return try await HangTrace.test("\(test) (\(mode.resolved))") {
        try await TestStore.current.run(config) { config in
            try await withTestClient(mode, storeConfig: config, sourceLocation: sourceLocation, body)
        }
    }
}

private func withTestClient<T>(
    _ mode: TestMode, storeConfig config: String, sourceLocation: SourceLocation, _ body: (any TestClient) async throws -> T
) async throws -> T {
    switch mode.resolved {
    case .inProcess:
        return try await withInProcessAlertd(config: config) { alertd in try await body(alertd) }
    case .live:
        HangTrace.mark("starting alertd")
        let daemon = try await Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        HangTrace.mark("the body, live")
        let result = try await body(daemon.client(timeout: .seconds(40)))
        HangTrace.mark("the body ended, live")
        #expect(
            daemon.isRunning,
            "alertd exited during the test (status \(daemon.exitStatus.map(String.init) ?? "?"))\n\(daemon.stderrText.suffix(4000))",
            sourceLocation: sourceLocation)
        return result
    case .balanced:
        // Two instances share a store only on PostgreSQL (the pass itself implies it).
        guard TestStore.current == .postgres else { throw TestFailure("two instances need ALERTD_TEST_STORE=postgres") }
        HangTrace.mark("starting two instances and nginx")
        let pair = try await BalancedAlertd.start(config: config)
        defer { pair.cleanup() }
        HangTrace.mark("the body, through two instances")
        let result = try await body(pair.client(timeout: .seconds(40)))
        HangTrace.mark("the body ended, through two instances")
        #expect(pair.exited == nil, "\(pair.exited ?? "")", sourceLocation: sourceLocation)
        #expect(pair.unbalanced == nil, "\(pair.unbalanced ?? "")", sourceLocation: sourceLocation)
        return result
    }
}
