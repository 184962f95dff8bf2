import Foundation
import NIOConcurrencyHelpers

/// Where each test of a tier is, for the report a hang needs: the test's harness marks its
/// phases (the store borrowed, alertd started, the body run, alertd stopping…). With
/// `ALERTD_TEST_HANG_REPORT=FILE` and `ALERTD_TEST_HANG_AFTER=SECONDS` in the environment,
/// the process writes every test still in flight, its last phase and how long it has been
/// there, to FILE that many seconds after its first traced test began, and again every 30 s.
/// `scripts/swift-test-nonempty.sh --limit` sets both and prints the file when a tier runs
/// out of time, so a hang names the test and the step it is stuck in even when nothing is
/// left of it but a suspended task.
///
/// ```swift
/// try await HangTrace.test("a new alert is 201") {
///     HangTrace.mark("alertd started")
///     …
/// }
/// ```
public enum HangTrace {
    private struct Entry {
        var test: String
        var phase: String
        var since: ContinuousClock.Instant
        let began: ContinuousClock.Instant
    }

    private static let entries = NIOLockedValueBox<[UInt64: Entry]>([:])
    private static let nextID = NIOLockedValueBox<UInt64>(0)
    @TaskLocal private static var current: UInt64?

    /// Runs `body` as the test `name`, traced until it returns.
    public static func test<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        _ = reporterStarted
        let id = nextID.withLockedValue { id in
            id += 1
            return id
        }
        let now = ContinuousClock.now
        entries.withLockedValue { $0[id] = Entry(test: name, phase: "began", since: now, began: now) }
        defer { entries.withLockedValue { _ = $0.removeValue(forKey: id) } }
        return try await $current.withValue(id) { try await body() }
    }

    /// Marks the traced test's new phase (nothing outside ``test(_:_:)``).
    public static func mark(_ phase: String) {
        guard let id = current else { return }
        entries.withLockedValue {
            $0[id]?.phase = phase; $0[id]?.since = .now
        }
    }

    /// The tests in flight, for a log's tail: those waiting for a place among the PostgreSQL
    /// bodies counted on one line first, then the others, the one longest in its step last
    /// ("name: step (for 12 s; the test began 80 s ago)").
    public static var report: [String] {
        let now = ContinuousClock.now
        let all = entries.withLockedValue { Array($0.values) }
        let waiting = all.filter { $0.phase.hasPrefix(waitingPhase) }
        let others = all.filter { !$0.phase.hasPrefix(waitingPhase) }.sorted { $0.since > $1.since }
        return (waiting.isEmpty ? [] : ["\(waiting.count) tests \(waitingPhase)"])
            + others.map { entry in
                "\(entry.test): \(entry.phase) (for \(seconds(now - entry.since)) s; the test began \(seconds(now - entry.began)) s ago)"
            }
    }

    /// The step of a test that has not begun its body yet (``TestStore/run(_:_:)``).
    static let waitingPhase = "waiting for a place among the PostgreSQL bodies"

    private static func seconds(_ duration: Duration) -> Int { Int(duration.components.seconds) }

    /// Whether the thread that writes the report was started (with the first traced test, when asked for).
    private static let reporterStarted = startReporter()

    private static func startReporter() -> Bool {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment["ALERTD_TEST_HANG_REPORT"], let after = environment["ALERTD_TEST_HANG_AFTER"].flatMap(UInt32.init)
        else { return false }
        Thread.detachNewThread {
            sleep(after)
            while true {
                let lines = report
                let text = (lines.isEmpty ? ["(no traced test in flight)"] : lines).joined(separator: "\n") + "\n"
                try? text.write(toFile: path, atomically: true, encoding: .utf8)
                sleep(30)
            }
        }
        return true
    }
}
