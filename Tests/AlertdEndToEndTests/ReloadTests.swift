import AlertdTestSupport
import Foundation
import Testing

/// Runs `alertd` with `arguments` to completion: exit status, stdout, stderr.
private func runAlertd(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    let run = try Program.alertd(arguments)
    return (run.status, run.stdout, run.stderr)
}

private func tokenEntry(_ name: String, _ secret: String, roles: String) -> String {
    let hex = Program.sha256Hex(secret)
    return "    - { name: \(name), sha256: \"\(hex)\", roles: [\(roles)], clients: [\"*\"] }\n"
}

extension Daemon {
    /// Waits until stderr holds `count` lines containing `text`.
    fileprivate func waitForLines(containing text: String, count: Int, timeout: Double = 20) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if stderrText.components(separatedBy: "\n").filter({ $0.contains(text) }).count >= count { return true }
            usleep(5_000)
        }
        return false
    }
}

@Suite("SIGHUP reloads the config; check-config checks one", .serialized, .ownThreads)
struct ReloadTests {
    @Test("tokens, config webhooks and the log level change on SIGHUP; a parked long-poll survives it")
    func reloadApplies() throws {
        let hook = try WebhookReceiver.start()
        defer { hook.stop() }
        let before = "auth:\n  tokens:\n" + tokenEntry("old", "old-secret", roles: "admin")
        let daemon = try Daemon.start(.init(config: before))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let old = [("Authorization", "Bearer old-secret")]
        let new = [("Authorization", "Bearer new-secret")]
        #expect(try http.get("/v1/clients", headers: old).status == 200)
        #expect(try http.get("/v1/clients", headers: new).status == 401)

        // A long-poll parked across the reload, authorized by the old token.
        let parked = try ParkedRequests(
            port: daemon.port, count: 1, method: "GET", path: "/v1/clients/ops/alerts/current?wait=30", headers: old)
        try http.awaitWaiters(1)

        try daemon.rewriteConfig(
            "log: { level: debug }\nauth:\n  tokens:\n" + tokenEntry("new", "new-secret", roles: "admin")
                + "webhooks:\n  - { client: ops, url: \"\(hook.url)\", secret: \"hook secret\" }\n")
        daemon.sendSignal(SIGHUP)
        #expect(daemon.waitForLines(containing: "msg=\"config reloaded\"", count: 1))
        #expect(daemon.stderrText.contains("log_level=debug"))

        #expect(try http.get("/v1/clients", headers: old).status == 401, "the old token is gone")
        #expect(try http.get("/v1/clients", headers: new).status == 200)
        let hooks = try http.get("/v1/clients/ops/webhooks", headers: new).jsonObject()["webhooks"] as! [[String: Any]]
        #expect(hooks.map { $0["url"] as? String } == [hook.url])

        // The parked request is answered by the post made with the new token.
        let alert = try http.post(
            "/v1/clients/ops/alerts", json: #"{"title":"After reload","dismiss_after":0.2}"#, headers: new)
        #expect(alert.status == 201)
        let answers = try parked.awaitAll(timeout: 10)
        #expect(answers.first?.status == 200)
        // The new webhook gets the dismissal; the new level logs the deadline at debug.
        let received = try hook.waitForRequestsBlocking(count: 1, timeout: 20)
        #expect(received.first?.text.contains("alert.dismissed") == true)
        #expect(daemon.waitForLines(containing: "level=debug", count: 1))
    }

    @Test("client policies and limits change on SIGHUP: a switch to stack displays the newest at once and wakes its waiters")
    func clientPolicies() throws {
        let daemon = try Daemon.start(.init(config: "clients:\n  ops: { policy: fifo }\n"))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let older = try http.postAlert("ops", #"{"title": "older", "buttons": [{"title": "ok"}]}"#)
        let newer = try http.postAlert("ops", #"{"title": "newer", "buttons": [{"title": "ok"}]}"#)
        #expect(newer["state"] as? String == "queued")
        let parked = try ParkedRequests(
            port: daemon.port, count: 1, method: "GET", path: "/v1/clients/ops/alerts/current?wait=30&after=\(id(older))")
        try http.awaitWaiters(1)

        try daemon.rewriteConfig("clients:\n  ops: { policy: stack, max_pending: 2 }\n")
        daemon.sendSignal(SIGHUP)
        #expect(daemon.waitForLines(containing: "msg=\"config reloaded\"", count: 1))
        #expect(!daemon.stderrText.contains("changed_at_next_start"))

        let answers = try parked.awaitAll(timeout: 10)
        #expect(try answers.first?.jsonObject()["id"] as? String == id(newer))
        let current = try http.get("/v1/clients/ops/alerts/current").jsonObject()
        #expect(current["id"] as? String == id(newer) && current["position"] as? Int == 0)
        #expect(try http.get("/v1/clients/ops/alerts/\(id(older))").jsonObject()["state"] as? String == "queued")
        let full = try http.post("/v1/clients/ops/alerts", json: #"{"title": "third"}"#)
        #expect(try full.status == 429 && full.jsonObject()["code"] as? String == "queue-full")

        // The new display was committed: a restart shows the same.
        let again = try daemon.restart()
        defer { again.cleanup() }
        #expect(try again.client().get("/v1/clients/ops/alerts/current").jsonObject()["id"] as? String == id(newer))
    }

    @Test("a broken config is refused with a line naming the problem; the running one stays")
    func brokenConfigRefused() throws {
        let config = "auth:\n  tokens:\n" + tokenEntry("keeper", "keep-secret", roles: "read")
        let daemon = try Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        for broken in ["durability: fast\n", "auth: { tokens: [ { name: x } ] }\n", "listen: [\n"] {
            try daemon.rewriteConfig(broken)
            let refusals = daemon.stderrText.components(separatedBy: "config reload refused").count
            daemon.sendSignal(SIGHUP)
            #expect(daemon.waitForLines(containing: "config reload refused", count: refusals))
        }
        #expect(daemon.stderrText.contains("durability must be"))
        #expect(try daemon.client().get("/v1/clients", headers: [("Authorization", "Bearer keep-secret")]).status == 200)
        #expect(!daemon.stderrText.contains("config reloaded"))
    }

    @Test("a reload that would leave the API open on a non-loopback address is refused; the tokens stay")
    func reloadKeepsExposureRule() throws {
        var options = Daemon.Options(config: "auth:\n  tokens:\n" + tokenEntry("guard", "guard-secret", roles: "read"))
        options.listen = "0.0.0.0:0"
        let daemon = try Daemon.start(options)
        defer { daemon.cleanup() }
        try daemon.rewriteConfig("log: { level: info }\n")
        daemon.sendSignal(SIGHUP)
        #expect(daemon.waitForLines(containing: "config reload refused", count: 1))
        #expect(daemon.stderrText.contains("the API would be open to anyone"))
        let http = daemon.client()
        #expect(try http.get("/v1/clients").status == 401)
        #expect(try http.get("/v1/clients", headers: [("Authorization", "Bearer guard-secret")]).status == 200)
    }

    @Test("alertd check-config prints ok for a good file and the reason for a bad one, exiting 1")
    func checkConfig() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = directory.appendingPathComponent("good.yaml")
        try Data("durability: normal\nlimits: { max_waiters: 10 }\n".utf8).write(to: good)
        let ok = try runAlertd(["check-config", good.path])
        #expect(ok.status == 0 && ok.out.contains("ok"), "\(ok)")
        let bad = directory.appendingPathComponent("bad.yaml")
        try Data("limits: { max_waiters: lots }\n".utf8).write(to: bad)
        let refused = try runAlertd(["check-config", bad.path])
        #expect(refused.status == 1)
        #expect(refused.err.contains("limits.max_waiters"), "\(refused)")
        let missing = try runAlertd(["check-config", directory.appendingPathComponent("none.yaml").path])
        #expect(missing.status == 1 && !missing.err.isEmpty)
        // The shipped example is valid.
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/alertd.yaml")
        #expect(try runAlertd(["check-config", example.standardized.path]).status == 0)
    }
}
