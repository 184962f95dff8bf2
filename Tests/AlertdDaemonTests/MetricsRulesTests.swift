import CoreMetrics
import AlertdTestSupport
import AlertdCore
import Foundation
import Testing

@testable import AlertdDaemon

@Suite("docs/prometheus/alertd-rules.yml: valid rules over metrics alertd exposes")
struct MetricsRulesTests {
    static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/prometheus/alertd-rules.yml")

    @Test("promtool check rules accepts the file")
    func promtool() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool"), "install Debian's prometheus package")
        let run = try await Program.run("/usr/bin/promtool", ["check", "rules", Self.rules.path])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    }

    @Test("every metric a rule names is one alertd's /metrics exposes")
    func metricsExist() throws {
        let metrics = AlertdMetrics()
        // Give every family a sample, as a running daemon soon does.
        metrics.request(route: "healthz", status: 200, nanoseconds: 1000)
        metrics.alertsCreated.increment()
        metrics.terminal("answered")
        metrics.delivery("failed", kind: .callback)
        metrics.delivery("delivered", kind: .push)
        metrics.commitDuration.recordNanoseconds(1000)
        metrics.deliveriesWaiting.record(1)
        metrics.pending.record(1)
        let exposed = Set(
            String(decoding: metrics.render(), as: UTF8.self).split(separator: "\n")
                .filter { !$0.hasPrefix("#") }
                .compactMap { $0.split(whereSeparator: { $0 == "{" || $0 == " " }).first.map(String.init) })
        let text = try String(contentsOf: Self.rules, encoding: .utf8)
        let named = Set(
            text.split(separator: "\n").filter { $0.contains("expr:") }.flatMap { line in
                line.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).map(String.init)
                    .filter { $0.hasPrefix("alertd_") || $0.hasPrefix("process_") }
            })
        #expect(!named.isEmpty)
        #expect(named.subtracting(exposed).isEmpty, "named in rules but not exposed: \(named.subtracting(exposed).sorted())")
        // Deliveries are counted by kind too: a push is a delivery of its own kind (SPEC §11).
        let rendered = String(decoding: metrics.render(), as: UTF8.self)
        #expect(rendered.contains(#"alertd_deliveries_total{kind="callback",result="failed"} 1"#), "\(rendered)")
        #expect(rendered.contains(#"alertd_deliveries_total{kind="push",result="delivered"} 1"#), "\(rendered)")
    }
}
