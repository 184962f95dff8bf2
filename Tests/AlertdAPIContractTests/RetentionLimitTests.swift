import AlertdCore
import AlertdInProcess
import AlertdTestSupport
import Foundation
import Testing

/// `alerts.retention_max`, `retention_max_bytes_per_client` and `retention_max_bytes` on
/// the store this tier runs on (SQLite; PostgreSQL with `ALERTD_TEST_STORE=postgres`):
/// terminal alerts are bounded by count and bytes per client and by bytes in all, not
/// only by age, and `/metrics` shows the store's size against the bound.
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

    /// An alert of about 17 KB as rendered (4096 four-byte characters of message).
    static func large(_ title: String) -> [String: Any] {
        ["title": title, "message": String(repeating: "📟", count: 4096), "buttons": [["title": "Yes"]]]
    }

    /// `name value` lines of `/metrics`: the value of the series `name`.
    static func metric(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test(
        "the purge keeps each client's newest retention_max_bytes_per_client bytes of terminal alerts; another client's and pending ones stay (issue 44 item 5)"
    )
    func keepsTheNewestBytesPerClient() async throws {
        // Four of the large alerts take ~68 KB: three fit in 64 KiB, the fourth does not.
        let config = Contract.baseConfig + "alerts:\n  retention_max_bytes_per_client: 65536\n"
        try await withInProcessAlertd(config: config, store: .current) { alertd in
            let busy = Contract.uniqueClient("busy")
            let quiet = Contract.uniqueClient("quiet")
            var answered: [String] = []
            for index in 0..<7 {
                let id = Contract.id(try await alertd.create(busy, Self.large("q\(index)")))
                #expect(try await alertd.choose(busy, id, ["button": "Yes"]).status == 200)
                answered.append(id)
            }
            let pending = Contract.id(try await alertd.create(busy, Self.large("still waiting")))
            var quietOnes: [String] = []
            for index in 0..<3 {
                let id = Contract.id(try await alertd.create(quiet, Self.large("alone \(index)")))
                #expect(try await alertd.delete("/v1/clients/\(quiet)/alerts/\(id)").status == 200)
                quietOnes.append(id)
            }

            await alertd.purge()

            let left = Set(try await alertd.allAlerts(busy).map(Contract.id))
            #expect(left == Set([pending] + answered.suffix(3)), "the pending one and the newest three terminal ones")
            for id in answered.prefix(4) {
                #expect(try await alertd.get("/v1/clients/\(busy)/alerts/\(id)").status == 404)
            }
            #expect(Set(try await alertd.allAlerts(quiet).map(Contract.id)) == Set(quietOnes), "another client's own bytes")
        }
    }

    @Test(
        "the purge keeps every client's terminal alerts to retention_max_bytes together, the oldest decided going first; /metrics shows the bytes against the bound"
    )
    func keepsTheBytesInAll() async throws {
        let config = Contract.baseConfig + "alerts:\n  retention_max_bytes: 65536\n"
        try await withInProcessAlertd(config: config, store: .current, clock: ManualClock()) { alertd in
            let clients = (0..<3).map { Contract.uniqueClient("all-\($0)") }
            var posted: [(client: String, id: String)] = []
            for client in clients {
                for index in 0..<2 {
                    posted.append((client, Contract.id(try await alertd.create(client, Self.large("\(client) \(index)")))))
                }
            }
            // Decided in another order than posted: the oldest decided go first, whatever their client or age.
            let decidedOrder = [5, 0, 3, 1, 4, 2].map { posted[$0] }
            for alert in decidedOrder {
                alertd.clock.advance(seconds: 1)
                #expect(try await alertd.delete("/v1/clients/\(alert.client)/alerts/\(alert.id)").status == 200)
            }
            let pending = Contract.id(try await alertd.create(clients[0], Self.large("still waiting")))

            await alertd.purge()

            // Six take ~102 KB: the three decided first go, and ~51 KB stay under 64 KiB.
            for (index, alert) in decidedOrder.enumerated() {
                let status = try await alertd.get("/v1/clients/\(alert.client)/alerts/\(alert.id)").status
                #expect(status == (index < 3 ? 404 : 200), "the alert decided \(index + 1)th answered \(status)")
            }
            #expect(try await alertd.get("/v1/clients/\(clients[0])/alerts/\(pending)").status == 200, "a pending alert stays")
            let metrics = try await alertd.get("/metrics").text
            let retained = try #require(Self.metric("alertd_store_retained_bytes", in: metrics), "\(metrics)")
            #expect(retained > 40_000 && retained <= 65_536, "alertd_store_retained_bytes \(retained)")
            #expect(Self.metric("alertd_store_retained_bytes_limit", in: metrics) == 65_536)
            #expect((Self.metric("alertd_store_bytes", in: metrics) ?? 0) > 0)
        }
    }
}
