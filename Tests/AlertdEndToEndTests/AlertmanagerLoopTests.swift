// The Alertmanager loop with both real programs (issue 19, docs/alertmanager.md): Debian's
// prometheus-alertmanager notifies the real alertd binary, whose Silence button creates a
// silence back in Alertmanager; Alertmanager's resolution withdraws the question; a
// silence chosen while Alertmanager is down is made once it is back, across kill -9 and a
// restart of alertd. No mock of either side. The receiver's rules one by one, bad payloads
// and the silence on PostgreSQL are the contract tier's (AlertmanagerReceiverTests).

import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// alertd on a reserved port with the integration pointing at an Alertmanager whose
/// receiver is that alertd (client `oncall`), a token each for Alertmanager (post) and an
/// operator (answer).
private struct Loop {
    let alertd: Daemon
    let alertmanager: TestAlertmanager
    /// `Authorization` of the operator `oncall-alice` (answer, read).
    let operator_: [(String, String)]
    /// `Authorization` of Alertmanager's token (post).
    let poster: [(String, String)]
    /// Holds the token file Alertmanager reads.
    let scratch: ScratchDirectory

    /// Alertmanager runs with docs/alertmanager.md's `alertmanager.yml`, changed only where a
    /// test must: alertd's port, the token file, and timings in seconds instead of minutes.
    static func start() async throws -> Loop {
        #expect(TestAlertmanager.binary != nil, "install Debian's prometheus-alertmanager (make test-deps)")
        let (amSecret, amEntry) = try await newToken("alertmanager", roles: "alertmanager", clients: "oncall")
        let (aliceSecret, aliceEntry) = try await newToken("oncall-alice", roles: "answer", clients: "oncall")
        let reserved = try ReservedPort()
        let port = reserved.port
        reserved.release()
        let scratch = try ScratchDirectory()
        let tokenFile = scratch.url.appendingPathComponent("alertd.token")
        try Data((amSecret + "\n").utf8).write(to: tokenFile)
        var snippet = try documentedAlertmanagerConfig()
        for (documented, here) in [
            ("127.0.0.1:8080", "127.0.0.1:\(port)"), ("/etc/alertmanager/alertd.token", tokenFile.path),
            ("group_wait: 30s", "group_wait: 100ms"),
            ("group_interval: 5m", "group_interval: 1s"), ("repeat_interval: 4h", "repeat_interval: 2s"),
        ] {
            try #require(snippet.contains(documented), "docs/alertmanager.md's alertmanager.yml has no \(documented)")
            snippet = snippet.replacingOccurrences(of: documented, with: here)
        }
        let alertmanager = try await TestAlertmanager.start(config: snippet)
        let config = """
            log:
              level: debug
            durability: full
            # The most severe alert is the one displayed, whichever arrived first.
            clients:
              oncall: { policy: stack }
            auth:
              tokens:
            \(amEntry)\(aliceEntry)callbacks:
              retry_initial_seconds: 0.2
              retry_max_interval_seconds: 1
            integrations:
              alertmanager:
                url: "\(alertmanager.baseURL)"

            """
        do {
            let alertd = try await Daemon.start(.init(config: config, listen: "127.0.0.1:\(port)"))
            return Loop(
                alertd: alertd, alertmanager: alertmanager, operator_: [("Authorization", "Bearer \(aliceSecret)")],
                poster: [("Authorization", "Bearer \(amSecret)")], scratch: scratch)
        } catch {
            alertmanager.stop()
            throw error
        }
    }

    func stop() {
        alertd.cleanup()
        alertmanager.stop()
        withExtendedLifetime(scratch) {}
    }

    /// `POST /api/v2/alerts` to Alertmanager: alerts firing until `endsAt` (default: in ten minutes).
    func fire(_ alertname: String, severity: String, summary: String? = nil, description: String? = nil, endsAt: Date? = nil)
        async throws
    {
        var annotations: [String: String] = [:]
        if let summary { annotations["summary"] = summary }
        if let description { annotations["description"] = description }
        let alert: [String: Any] = [
            "labels": ["alertname": alertname, "instance": "db1:9100", "severity": severity], "annotations": annotations,
            "generatorURL": "http://prometheus:9090/graph?g0.expr=\(alertname)",
            "endsAt": ISO8601DateFormatter().string(from: endsAt ?? Date().addingTimeInterval(600)),
        ]
        let body = try JSONSerialization.data(withJSONObject: [alert], options: [.sortedKeys])
        try await alertmanager.post(alerts: String(decoding: body, as: UTF8.self))
    }

    /// Polls `GET /v1/clients/oncall/alerts` (every state) until `done` holds.
    func awaitAlerts(timeout: Duration = .seconds(30), until done: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let response = try await alertd.client().get(
                "/v1/clients/oncall/alerts?state=queued,displayed,answered,withdrawn,expired,dismissed", headers: operator_)
            try #require(response.status == 200, "\(response.status) \(response.text)")
            let alerts = try #require(try response.jsonObject()["alerts"] as? [[String: Any]])
            if done(alerts) { return alerts }
            guard ContinuousClock.now < deadline else {
                throw ProcessError("alertd's alerts never matched: \(alerts)\n\(alertmanager.log.suffix(3000))", stderr: alertd.stderrText)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Polls the deliveries of an alert until `done` holds.
    func awaitDeliveries(of id: String, daemon: Daemon? = nil, until done: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let response = try await (daemon ?? alertd).client().get("/v1/clients/oncall/alerts/\(id)/deliveries", headers: operator_)
            try #require(response.status == 200, "\(response.status) \(response.text)")
            let list = try #require(try response.jsonObject()["deliveries"] as? [[String: Any]])
            if done(list) { return list }
            guard ContinuousClock.now < deadline else { throw TestFailure("deliveries never matched: \(list)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// The `alertmanager.yml` of docs/alertmanager.md (the ```yaml block of its section 2).
func documentedAlertmanagerConfig() throws -> String {
    let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let doc = try String(contentsOf: repository.appendingPathComponent("docs/alertmanager.md"), encoding: .utf8)
    let section = try #require(
        doc.components(separatedBy: "\n## 2. Alertmanager").dropFirst().first, "no section 2 in docs/alertmanager.md")
    let block = try #require(section.components(separatedBy: "```yaml\n").dropFirst().first, "no yaml block in section 2")
    return (block.components(separatedBy: "\n```").first ?? "") + "\n"
}

private func title(_ alert: [String: Any]) -> String { alert["title"] as? String ?? "?" }
private func pending(_ alerts: [[String: Any]]) -> [[String: Any]] {
    alerts.filter { ["queued", "displayed"].contains($0["state"] as? String ?? "") }
}

/// The active silences whose `alertname` matcher is `alertname`.
private func active(_ silences: [[String: Any]], _ alertname: String) -> [[String: Any]] {
    silences.filter { silence in
        (silence["status"] as? [String: Any])?["state"] as? String == "active"
            && (silence["matchers"] as? [[String: Any]] ?? []).contains {
                $0["name"] as? String == "alertname" && $0["value"] as? String == alertname
            }
    }
}

/// Milliseconds since 1970 of an RFC 3339 time, as alertd or Alertmanager (nanoseconds, any precision) writes it.
private func milliseconds(_ text: Any?) -> Int64? {
    (text as? String).flatMap(Timestamp.init(rfc3339:))?.milliseconds
}

@Suite("Alertmanager and alertd, both real: alerts become questions, a Silence becomes a silence", .serialized)
struct AlertmanagerLoopTests {
    @Test("docs/alertmanager.md's alertmanager.yml passes amtool check-config as pasted")
    func documentedConfigChecks() async throws {
        let scratch = try ScratchDirectory()
        let file = scratch.url.appendingPathComponent("alertmanager.yml")
        try Data(try documentedAlertmanagerConfig().utf8).write(to: file)
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/amtool"), "install Debian's prometheus-alertmanager")
        let run = try await Program.run("/usr/bin/amtool", ["check-config", file.path])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("SUCCESS"), "\(run.stdout)")
    }

    @Test(
        "alerts posted to Alertmanager arrive once each with their title, message, priority and metadata; repeats add nothing; Silence 1h silences them; a resolution withdraws"
    )
    func wholeLoop() async throws {
        let loop = try await Loop.start()
        defer { loop.stop() }
        try await loop.fire("DiskFull", severity: "critical", summary: "Disk full on db1", description: "/var is 99% full")
        try await loop.fire("HighLoad", severity: "warning")
        let arrived = try await loop.awaitAlerts { pending($0).count == 2 }
        let disk = try #require(arrived.first { title($0) == "Disk full on db1" })
        let load = try #require(arrived.first { title($0) == "HighLoad" })
        // The silence a button would make is on the alert: alertname and the configured matcher labels.
        #expect((disk["message"] as? String)?.hasPrefix("/var is 99% full\n\nA silence matches: alertname=\"DiskFull\"") == true)
        #expect(disk["priority"] as? Int == 50 && load["priority"] as? Int == 0)
        #expect(
            (disk["buttons"] as? [[String: Any]])?.map { $0["title"] as? String } == ["Acknowledge", "Silence 1h", "Silence 24h", "Ignore"])
        let metadata = try #require((disk["metadata"] as? [String: Any])?["alertmanager"] as? [String: Any])
        #expect(metadata["labels"] as? [String: String] == ["alertname": "DiskFull", "instance": "db1:9100", "severity": "critical"])
        #expect(metadata["generator_url"] as? String == "http://prometheus:9090/graph?g0.expr=DiskFull")
        #expect(milliseconds(metadata["starts_at"]) != nil)
        // The fingerprint is Alertmanager's own.
        let amAlerts = try #require(try await loop.alertmanager.http.get("/api/v2/alerts").json() as? [[String: Any]])
        let fingerprint = amAlerts.first { ($0["labels"] as? [String: String])?["alertname"] == "DiskFull" }?["fingerprint"] as? String
        #expect(fingerprint != nil && metadata["fingerprint"] as? String == fingerprint)

        // Alertmanager notifies each group again every repeat_interval (2 s): two more
        // notifications of both groups, and still one alert each.
        try await loop.alertd.waitForStderr(containing: "path=/v1/integrations/alertmanager/oncall ", count: 6, timeout: .seconds(30))
        #expect(try await loop.awaitAlerts { _ in true }.count == 2)

        // Silence 1h, chosen by the operator: a silence in Alertmanager on the alert's labels.
        let chosen = try await loop.alertd.client().post(
            "/v1/clients/oncall/alerts/\(id(disk))/choice", json: #"{"button":"Silence 1h"}"#, headers: loop.operator_)
        try #require(chosen.status == 200, "\(chosen.text)")
        let decidedAt = try #require(milliseconds(try chosen.jsonObject()["decided_at"]))
        let silences = try await loop.alertmanager.awaitSilences { !active($0, "DiskFull").isEmpty }
        let silence = try #require(active(silences, "DiskFull").first)
        #expect(active(silences, "DiskFull").count == 1)
        let matchers = (silence["matchers"] as? [[String: Any]] ?? []).map {
            "\($0["name"] as? String ?? "")=\($0["value"] as? String ?? "") \($0["isRegex"] as? Bool ?? true) \($0["isEqual"] as? Bool ?? false)"
        }
        #expect(Set(matchers) == ["alertname=DiskFull false true", "instance=db1:9100 false true", "severity=critical false true"])
        #expect(silence["createdBy"] as? String == "oncall-alice")
        #expect((silence["comment"] as? String)?.contains(id(disk)) == true)
        let ends = try #require(milliseconds(silence["endsAt"]))
        #expect(abs(ends - (decidedAt + 3_600_000)) < 2000, "ends an hour after the choice: \(silence)")
        let delivered = try await loop.awaitDeliveries(of: id(disk)) { $0.first?["state"] as? String == "delivered" }
        #expect(delivered.first?["type"] as? String == "alertmanager.silence")
        #expect(delivered.first?["silence_id"] as? String == silence["id"] as? String)

        // HighLoad resolves in Alertmanager: its alertd alert is withdrawn by the integration.
        try await loop.fire("HighLoad", severity: "warning", endsAt: Date().addingTimeInterval(-1))
        let resolved = try await loop.alertd.client().get("/v1/clients/oncall/alerts/\(id(load))?wait=20", headers: loop.operator_)
            .jsonObject()
        #expect(resolved["state"] as? String == "withdrawn", "\(resolved)")
        #expect((resolved["result"] as? [String: Any])?["decided_by"] as? String == "alertmanager (resolved)")

        // A payload that is not Alertmanager's, over the wire: 400 naming the field, nothing stored.
        let bad = try await loop.alertd.client().post(
            "/v1/integrations/alertmanager/oncall", json: #"{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"X"}}]}"#,
            headers: loop.poster)
        #expect(bad.status == 400 && bad.header("Content-Type") == "application/problem+json", "\(bad.text)")
        let problem = try bad.jsonObject()
        #expect(problem["code"] as? String == "invalid-alert")
        #expect(
            (problem["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String } == [
                "alerts[0].fingerprint", "alerts[0].startsAt",
            ])
        #expect(try await loop.awaitAlerts { _ in true }.count == 2)
    }

    @Test(
        "Alertmanager down when Silence 24h is chosen: attempts fail and are shown, survive kill -9 and a restart of alertd, and the silence is made once Alertmanager is back"
    )
    func alertmanagerDownAcrossRestart() async throws {
        let loop = try await Loop.start()
        defer { loop.stop() }
        try await loop.fire("WhileDown", severity: "info", summary: "Backups late")
        let alert = try #require(try await loop.awaitAlerts { pending($0).count == 1 }.first)
        #expect(alert["priority"] as? Int == -50)
        await loop.alertmanager.kill()

        let chosen = try await loop.alertd.client().post(
            "/v1/clients/oncall/alerts/\(id(alert))/choice", json: #"{"button":"Silence 24h"}"#, headers: loop.operator_)
        #expect(chosen.status == 200, "answered once committed, not once Alertmanager answers")
        let failing = try await loop.awaitDeliveries(of: id(alert)) { attempts($0.first ?? [:]).count >= 2 }
        #expect(failing.first?["state"] as? String == "pending")
        let before = attempts(failing.first ?? [:]).count

        await loop.alertd.kill9()
        let second = try await loop.alertd.restart()
        defer { second.cleanup() }
        // Retried from where it stood: more failed attempts, after the restart.
        let resumed = try await loop.awaitDeliveries(of: id(alert), daemon: second) { attempts($0.first ?? [:]).count >= before + 2 }
        #expect(attempts(resumed.first ?? [:]).allSatisfy { $0["status_code"] is NSNull })

        try await loop.alertmanager.restart()
        let silences = try await loop.alertmanager.awaitSilences { !active($0, "WhileDown").isEmpty }
        #expect(active(silences, "WhileDown").count == 1)
        #expect(active(silences, "WhileDown").first?["createdBy"] as? String == "oncall-alice")
        let done = try await loop.awaitDeliveries(of: id(alert), daemon: second) { $0.first?["state"] as? String == "delivered" }
        #expect(attempts(done.first ?? [:]).last?["status_code"] as? Int == 200)
        #expect(done.first?["silence_id"] as? String == active(silences, "WhileDown").first?["id"] as? String)
    }
}
