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

/// The store every body runs on: the embedded SQLite store, unless
/// `ALERTD_TEST_STORE=postgres` asks for a new database on this test process's
/// throwaway PostgreSQL server (``TestPostgres``) for each body.
enum TestStore: String, Sendable {
    case sqlite, postgres

    static let current: TestStore =
        ProcessInfo.processInfo.environment["ALERTD_TEST_STORE"] == "postgres" || TestMode.isBalancedPass ? .postgres : .sqlite

    /// How many bodies run on PostgreSQL at once: each is an alertd with its pool
    /// and its listener on a database of its own, and a whole tier of them at once
    /// (hundreds) left a 2-core machine too loaded for the tests' timings. In the
    /// balanced pass a body is two processes and nginx: half as many.
    static let bodies = Gate(width: (TestMode.isBalancedPass ? 2 : 4) * max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// Runs `body` with `config` plus the store section this run asks for: with
    /// PostgreSQL, on a database borrowed for the body and emptied after it.
    func run<T>(_ config: String, _ body: (String) async throws -> T) async throws -> T {
        switch self {
        case .sqlite:
            return try await body(config)
        case .postgres:
            await Self.bodies.enter()
            defer { Task { await Self.bodies.leave() } }
            let server = try await TestPostgres.shared()
            let url = try await server.borrowDatabase()
            let separated = config.isEmpty || config.hasSuffix("\n") ? config : config + "\n"
            do {
                let result = try await body(separated + "store:\n  backend: postgres\n  postgres:\n    url: \(url)\n    pool_size: 4\n")
                await server.giveBack(url)
                return result
            } catch {
                await server.giveBack(url)
                throw error
            }
        }
    }
}

/// Runs `body` against a new alertd built from `config`, in process or live, and stops it
/// afterwards (as HummingbirdTesting's `app.test(.router)` / `app.test(.live)` do).
@discardableResult
func withTestClient<T>(
    _ mode: TestMode = .default, config: String = Contract.baseConfig, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (any TestClient) async throws -> T
) async throws -> T {
    try await TestStore.current.run(config) { config in
        try await withTestClient(mode, storeConfig: config, sourceLocation: sourceLocation, body)
    }
}

private func withTestClient<T>(
    _ mode: TestMode, storeConfig config: String, sourceLocation: SourceLocation, _ body: (any TestClient) async throws -> T
) async throws -> T {
    switch mode.resolved {
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
    case .balanced:
        // Two instances share a store only on PostgreSQL (the pass itself implies it).
        guard TestStore.current == .postgres else { throw TestFailure("two instances need ALERTD_TEST_STORE=postgres") }
        let pair = try await BalancedAlertd.start(config: config)
        defer { pair.cleanup() }
        let result = try await body(pair.client(timeout: .seconds(40)))
        #expect(pair.exited == nil, "\(pair.exited ?? "")", sourceLocation: sourceLocation)
        #expect(pair.unbalanced == nil, "\(pair.unbalanced ?? "")", sourceLocation: sourceLocation)
        return result
    }
}
