import AlertdInProcess
import AlertdTestSupport
import Foundation
import Testing

/// `alerts.retention_max` on the store this tier runs on (SQLite; PostgreSQL with
/// `ALERTD_TEST_STORE=postgres`): terminal alerts are bounded by count per client,
/// not only by age, and `/metrics` shows the store's size.
@Suite("Terminal alerts kept per client at most")
struct RetentionLimitTests {
    @Test("the purge keeps each client's newest retention_max terminal alerts, deletes older ones, never a pending one")
    func keepsTheNewest() async throws {
        let config = Contract.baseConfig + "alerts:\n  retention_max: 3\n"
        try await withInProcessAlertd(config: config, store: .current) { alertd in
            let busy = Contract.uniqueClient("busy")
            let quiet = Contract.uniqueClient("quiet")
            var answered: [String] = []
            for index in 0..<7 {
                let id = Contract.id(try await alertd.create(busy, Contract.alert("q\(index)")))
                #expect(try await alertd.choose(busy, id, ["button": "Yes"]).status == 200)
                answered.append(id)
            }
            let pending = Contract.id(try await alertd.create(busy, Contract.alert("still waiting")))
            let kept = Contract.id(try await alertd.create(quiet, Contract.alert("alone")))
            #expect(try await alertd.delete("/v1/clients/\(quiet)/alerts/\(kept)").status == 200)

            await alertd.purge()

            let left = Set(try await alertd.allAlerts(busy).map(Contract.id))
            #expect(left == Set([pending] + answered.suffix(3)), "the pending one and the newest three terminal ones")
            for id in answered.prefix(4) {
                #expect(try await alertd.get("/v1/clients/\(busy)/alerts/\(id)").status == 404)
            }
            #expect(try await alertd.allAlerts(quiet).map(Contract.id) == [kept], "another client's own count")

            let metrics = try await alertd.get("/metrics").text
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("alertd_store_bytes ") }
            let bytes = line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            #expect(bytes > 0, "alertd_store_bytes: \(line ?? "missing")")
        }
    }
}
