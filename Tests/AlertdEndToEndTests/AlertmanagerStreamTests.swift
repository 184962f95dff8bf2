// A long stream of ordinary Alertmanager notifications to the alertd binary (issue 44, item 1):
// the release build trapped in the receiver within 6–20 notifications on SQLite and at the
// first on PostgreSQL (docs/defects/immediate-child-typed-throws.swift). Each round fires
// three alerts on one of three clients, repeats the firing, then resolves them, and checks
// what the receiver answered for each alert and that the daemon is still the one started.
// The whole Alertmanager loop with the real prometheus-alertmanager is AlertmanagerLoopTests'.

import AlertdTestSupport
import Foundation
import Testing

@Suite("A long stream of ordinary Alertmanager notifications", .serialized)
struct AlertmanagerStreamTests {
    /// Rounds of firing → repeat → resolved, each three notifications of three alerts.
    static let rounds = 60

    @Test("on SQLite, every firing posts, every repeat is a repeat, every resolution withdraws; alertd stays up")
    func streamOnSQLite() async throws {
        try await stream(store: "")
    }

    @Test("on PostgreSQL, the same")
    func streamOnPostgres() async throws {
        let url = try await TestPostgres.shared().createDatabase()
        try await stream(
            store: "store:\n  backend: postgres\n  postgres:\n    url: \(url)\n    pool_size: 4\n" + TestReceiptKey.configSection)
    }

    private func stream(store: String) async throws {
        let (secret, entry) = try await newToken("alertmanager", roles: "alertmanager", clients: "*")
        let alertd = try await Daemon.start(
            .init(
                config: """
                    auth:
                      tokens:
                    \(entry)integrations:
                      alertmanager:
                        url: "http://127.0.0.1:9"
                    \(store)
                    """))
        defer { alertd.cleanup() }
        let http = alertd.client()
        let headers = [("Authorization", "Bearer \(secret)"), ("Content-Type", "application/json")]
        for round in 0..<Self.rounds {
            let client = "am-\(round % 3)"
            // A new firing each round (startsAt moves on): a repeat of an old one would post nothing.
            let startsAt = String(format: "2026-11-28T%02d:%02d:00Z", 10 + round / 60, round % 60)
            for (status, expected) in [("firing", "created"), ("firing", "repeated"), ("resolved", "withdrawn")] {
                let body = Self.notification(status: status, startsAt: startsAt)
                let response = try await http.execute(
                    "POST", "/v1/integrations/alertmanager/\(client)", headers: headers, body: Array(body.utf8))
                try #require(
                    response.status == 200,
                    "round \(round), \(status) → \(expected): \(response.status) \(response.text)\n\(alertd.stderrText.suffix(4000))")
                let alerts = try #require(try response.jsonObject()["alerts"] as? [[String: Any]])
                let outcomes = alerts.map { $0["outcome"] as? String ?? "?" }
                #expect(outcomes == Array(repeating: expected, count: 3), "round \(round), \(status): \(response.text)")
                #expect(alerts.map { $0["fingerprint"] as? String } == Self.labels.map { AlertmanagerFingerprint.of($0) })
            }
        }
        let healthy = try await http.get("/healthz")
        #expect(healthy.status == 200)
        #expect(alertd.isRunning, "alertd exited: \(alertd.stderrText.suffix(4000))")
        #expect(!alertd.stderrText.contains("Program crashed"), "\(alertd.stderrText.suffix(4000))")
    }

    /// The label sets of the three alerts of every notification.
    static let labels: [[String: String]] = (0..<3).map {
        ["alertname": "DiskFull", "instance": "db\($0):9100", "severity": $0 == 0 ? "critical" : "warning"]
    }

    /// Alertmanager's webhook payload (version 4) of the three alerts, as Alertmanager writes it.
    static func notification(status: String, startsAt: String) -> String {
        let alerts = labels.map { labels -> [String: Any] in
            [
                "status": status, "labels": labels, "annotations": ["summary": "\(labels["instance"]!) disk full"],
                "startsAt": startsAt, "endsAt": status == "resolved" ? "2026-11-28T23:00:00Z" : "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus:9090/graph?g0.expr=disk", "fingerprint": AlertmanagerFingerprint.of(labels),
            ]
        }
        let payload: [String: Any] = [
            "version": "4", "groupKey": "{}:{alertname=\"DiskFull\"}", "truncatedAlerts": 0, "status": status,
            "receiver": "alertd", "groupLabels": ["alertname": "DiskFull"], "commonLabels": ["alertname": "DiskFull"],
            "commonAnnotations": [String: String](), "externalURL": "http://alertmanager:9093", "alerts": alerts,
        ]
        let data = try! JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}

/// Alertmanager's fingerprint of a label set, computed here as Prometheus does
/// (`model.LabelSet.Fingerprint`: FNV-1a 64 of the sorted names and values, each followed
/// by 0xFF), independently of alertd's own.
enum AlertmanagerFingerprint {
    static func of(_ labels: [String: String]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for name in labels.keys.sorted() {
            for byte in Array(name.utf8) + [0xFF] + Array(labels[name]!.utf8) + [0xFF] {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        return String(format: "%016llx", hash)
    }
}
