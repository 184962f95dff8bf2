// Escalation steps are stored deadlines (SPEC §12): the real binary, killed and started
// again on its state directory. A step taken before survives; a step due while alertd was
// down fires when it comes back, at its own time.

import AlertdTestSupport
import Foundation
import Testing

@Suite("Escalation across a restart")
struct EscalationRestartTests {
    @Test("kill -9, a step due while down, restart: the step fires on return at its own time; the one taken before is still there")
    func stepDueWhileDown() async throws {
        let first = try await Daemon.start(.init(config: "durability: full\n"))
        defer { first.cleanup() }
        let http = first.client()
        _ = try await http.postAlert("ops", #"{"title":"blocker","buttons":[{"title":"OK"}]}"#)
        let taken = try await http.postAlert(
            "ops", #"{"title":"taken before","buttons":[{"title":"OK"}],"escalation":[{"after":0.2,"to":"ops-lead"}]}"#)
        let shown = try await http.get("/v1/clients/ops-lead/alerts/current?wait=15").jsonObject()
        #expect(shown["id"] as? String == id(taken), "the first step was not taken while up")

        let due = try await http.postAlert(
            "ops", #"{"title":"due while down","buttons":[{"title":"OK"}],"escalation":[{"after":2,"to":"cto"}]}"#)
        let created = try #require(milliseconds(due["created_at"]))
        await first.kill9()
        // Down until its step is due (a known time, not a guess), then back.
        let dueAt = Date(timeIntervalSince1970: Double(created + 2000) / 1000)
        if dueAt > Date() { try await Task.sleep(for: .milliseconds(Int(dueAt.timeIntervalSinceNow * 1000) + 50)) }
        #expect(Date() > dueAt)
        let second = try await first.restart()
        defer { second.cleanup() }
        let after = second.client()

        let fired = try await after.get("/v1/clients/cto/alerts/current?wait=15").jsonObject()
        #expect(fired["id"] as? String == id(due), "the step due while alertd was down did not fire on its return")
        let step = try #require((fired["escalated_to"] as? [[String: Any]])?.first)
        #expect(step["client"] as? String == "cto")
        #expect(milliseconds(step["at"]) == created + 2000, "the step fired late took another time than its own: \(step)")
        #expect(fired["state"] as? String == "displayed" && fired["client"] as? String == "ops")
        // The step taken before the kill is still there, on both of its clients.
        let still = try await after.get("/v1/clients/ops-lead/alerts/current").jsonObject()
        #expect(still["id"] as? String == id(taken))
        #expect((try await after.get("/v1/clients/ops/alerts/\(id(taken))").jsonObject())["state"] as? String == "queued")
        // And one answer decides it everywhere.
        #expect(try await after.choose("ops-lead", id(taken), #"{"button":"OK"}"#).status == 200)
        #expect(try await after.get("/v1/clients/ops-lead/alerts/current").status == 204)
        #expect((try await after.get("/v1/clients/ops/alerts/\(id(taken))").jsonObject())["state"] as? String == "answered")
    }

    private func id(_ alert: [String: Any]) -> String { alert["id"] as? String ?? "<no id>" }

    private func milliseconds(_ value: Any?) -> Int64? {
        guard let text = value as? String else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}
