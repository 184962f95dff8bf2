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
func withTestClient<T>(
    _ mode: TestMode = .default, config: String = Contract.baseConfig, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (any TestClient) async throws -> T
) async throws -> T {
    switch mode {
    case .inProcess:
        let alertd = try InProcessAlertd(config: config)
        defer { alertd.shutdown() }
        return try await body(alertd)
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

/// Requests sent together that park (long-polls) and are answered later, each on a task
/// of its own: the test goes on while they wait, then awaits their answers.
///
/// ```swift
/// let waiters = Parked(count: 3) { try await api.get("/v1/clients/ops/alerts/current?wait=30") }
/// try await api.awaitWaiters(3)
/// _ = try await api.create("ops")
/// for answer in try await waiters.awaitAll() { #expect(answer.status == 200) }
/// ```
final class Parked: Sendable {
    let count: Int
    private let answers = Observed<[Result<TestResponse, TestFailure>]>([])

    init(count: Int, _ request: @escaping @Sendable () async throws -> TestResponse) {
        self.count = count
        for _ in 0..<count {
            Task { [answers] in
                let answer: Result<TestResponse, TestFailure>
                do {
                    answer = .success(try await request())
                } catch {
                    answer = .failure(TestFailure("\(error)"))
                }
                answers.update { $0.append(answer) }
            }
        }
    }

    /// Whether any request has been answered (or failed) yet.
    var anyAnswered: Bool { !answers.value.isEmpty }

    /// Every answer, in the order they came; throws after `timeout` or when one failed.
    func awaitAll(timeout: Duration = .seconds(15)) async throws -> [TestResponse] {
        let count = count
        guard let all = await answers.wait(timeout: timeout, until: { $0.count == count ? $0 : nil }) else {
            throw TestFailure("only \(answers.value.count) of \(count) parked requests were answered within \(timeout)")
        }
        return try all.map { try $0.get() }
    }
}
