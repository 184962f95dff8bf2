import AlertdTestSupport
import Foundation
import Testing

/// What a script sees: issue 32, item 9.
@Suite("alertctl in scripts: refusals as JSON, durations, what a bad value is")
struct AlertctlScriptTests {
    @Test("with --json a refusal prints the daemon's problem+json object on stdout, the explanation on stderr, exit 3")
    func refusalAsJSON() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let missing = try await ctl.run("--json", "get", "ops", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
        #expect(missing.status == 3, "\(missing)")
        let problem = try #require(
            try JSONSerialization.jsonObject(with: Data(missing.stdout.utf8)) as? [String: Any], "stdout: \(missing.stdout)")
        #expect(problem["code"] as? String == "not-found" && problem["status"] as? Int == 404, "\(problem)")
        #expect(missing.stderr.hasPrefix("alertctl: "), "\(missing)")
        // Without --json, stdout stays empty.
        let plain = try await ctl.run("get", "ops", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
        #expect(plain.status == 3 && plain.stdout.isEmpty, "\(plain)")
    }

    @Test("--expires-in and --dismiss-after take 90s, 5m, 1h as well as seconds; anything else is bad usage naming the forms")
    func durations() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let asked = try await ctl.json("post", "ops", "--title", "Deploy?", "--button", "Go", "--expires-in", "5m") as? [String: Any]
        #expect(asked?["expires_in"] as? Double == 300, "\(asked ?? [:])")
        let note = try await ctl.json("post", "ops", "--title", "Done", "--dismiss-after", "1m30s") as? [String: Any]
        #expect(note?["dismiss_after"] as? Double == 90, "\(note ?? [:])")
        let hour = try await ctl.json("post", "ops", "--title", "Later?", "--button", "Go", "--expires-in", "1h") as? [String: Any]
        #expect(hour?["expires_in"] as? Double == 3600, "\(hour ?? [:])")
        let wrong = try await ctl.run("post", "ops", "--title", "x", "--expires-in", "5 min")
        #expect(wrong.status == 64 && wrong.stderr.contains("90s, 5m"), "\(wrong)")
    }

    @Test("--metadata that is not JSON names the parse error and where; JSON that is not an object names its type")
    func metadataErrors() async throws {
        let ctl = Alertctl(url: "http://127.0.0.1:1")
        let broken = try await ctl.run("post", "ops", "--title", "x", "--metadata", "{bad")
        #expect(
            broken.status == 64 && broken.stderr.contains("--metadata is not valid JSON: ") && broken.stderr.contains("at byte 1"),
            "\(broken)")
        let array = try await ctl.run("post", "ops", "--title", "x", "--metadata", "[1]")
        #expect(array.status == 64 && array.stderr.contains("must be a JSON object") && array.stderr.contains("array"), "\(array)")
    }

    @Test("a client id or token name with a space is told that the space is the problem")
    func spaces() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let posted = try await Alertctl(url: daemon.baseURL).run("post", "my app", "--title", "x")
        #expect(posted.status == 3 && posted.stderr.contains("has a space"), "\(posted)")
        let token = try await Program.alertd(["token", "new", "ops bot", "--roles", "post", "--clients", "ops"])
        #expect(token.status == 64 && token.stderr.contains("has a space") && token.stderr.contains("ops-bot"), "\(token)")
    }
}
