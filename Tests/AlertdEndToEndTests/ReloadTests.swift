import AlertdTestSupport
import Foundation
import Testing

/// Runs `alertd` with `arguments` to completion: exit status, stdout, stderr.
private func runAlertd(_ arguments: [String]) async throws -> (status: Int32, out: String, err: String) {
    let run = try await Program.alertd(arguments)
    return (run.status, run.stdout, run.stderr)
}

private func tokenEntry(_ name: String, _ secret: String, roles: String) async -> String {
    let hex = await Program.sha256Hex(secret)
    return "    - { name: \(name), sha256: \"\(hex)\", roles: [\(roles)], clients: [\"*\"] }\n"
}

@Suite("SIGHUP reloads the config; check-config checks one")
struct ReloadTests {
    @Test("tokens, config webhooks and the log level change on SIGHUP; a parked long-poll survives it")
    func reloadApplies() async throws {
        let hook = try await WebhookReceiver.listening()
        defer { hook.close() }
        // The receiver listens on loopback, which callbacks.deny refuses by default (callbacks are read at start).
        let allow = "callbacks: { allow: [\"127.0.0.1\"] }\n"
        let before = allow + "auth:\n  tokens:\n" + (await tokenEntry("old", "old-secret", roles: "admin"))
        let daemon = try await Daemon.start(.init(config: before))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let old = [("Authorization", "Bearer old-secret")]
        let new = [("Authorization", "Bearer new-secret")]
        #expect(try await http.get("/v1/clients", headers: old).status == 200)
        #expect(try await http.get("/v1/clients", headers: new).status == 401)

        // A long-poll parked across the reload, authorized by the old token.
        let parked = Parked(count: 1) { try await http.get("/v1/clients/ops/alerts/current?wait=30", headers: old) }
        try await http.awaitWaiters(1)

        try daemon.rewriteConfig(
            allow + "log: { level: debug }\nauth:\n  tokens:\n" + (await tokenEntry("new", "new-secret", roles: "admin"))
                + "webhooks:\n  - { client: ops, url: \"\(hook.url)\", secret: \"hook secret\" }\n")
        daemon.sendSignal(SIGHUP)
        try await daemon.waitForStderr(containing: "msg=\"config reloaded\"")
        #expect(daemon.stderrText.contains("log_level=debug"))

        #expect(try await http.get("/v1/clients", headers: old).status == 401, "the old token is gone")
        #expect(try await http.get("/v1/clients", headers: new).status == 200)
        let hooks = try await http.get("/v1/clients/ops/webhooks", headers: new).jsonObject()["webhooks"] as! [[String: Any]]
        #expect(hooks.map { $0["url"] as? String } == [hook.url])

        // The parked request is answered by the post made with the new token.
        let alert = try await http.post(
            "/v1/clients/ops/alerts", json: #"{"title":"After reload","dismiss_after":0.2}"#, headers: new)
        #expect(alert.status == 201)
        let answers = try await parked.awaitAll(timeout: .seconds(10))
        #expect(answers.first?.status == 200)
        // The new webhook gets the dismissal; the new level logs the deadline at debug.
        let received = try await hook.waitForRequests(count: 1, timeout: 20)
        #expect(received.first?.text.contains("alert.dismissed") == true)
        try await daemon.waitForStderr(containing: "level=debug")
    }

    @Test("client policies and limits change on SIGHUP: a switch to stack displays the newest at once and wakes its waiters")
    func clientPolicies() async throws {
        let daemon = try await Daemon.start(.init(config: "clients:\n  ops: { policy: fifo }\n"))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let older = try await http.postAlert("ops", #"{"title": "older", "buttons": [{"title": "ok"}]}"#)
        let newer = try await http.postAlert("ops", #"{"title": "newer", "buttons": [{"title": "ok"}]}"#)
        #expect(newer["state"] as? String == "queued")
        let olderID = id(older)
        let parked = Parked(count: 1) { try await http.get("/v1/clients/ops/alerts/current?wait=30&after=\(olderID)") }
        try await http.awaitWaiters(1)

        try daemon.rewriteConfig("clients:\n  ops: { policy: stack, max_pending: 2 }\n")
        daemon.sendSignal(SIGHUP)
        try await daemon.waitForStderr(containing: "msg=\"config reloaded\"")
        #expect(!daemon.stderrText.contains("changed_at_next_start"))

        let answers = try await parked.awaitAll(timeout: .seconds(10))
        #expect(try answers.first?.jsonObject()["id"] as? String == id(newer))
        let current = try await http.get("/v1/clients/ops/alerts/current").jsonObject()
        #expect(current["id"] as? String == id(newer) && current["position"] as? Int == 0)
        #expect(try await http.get("/v1/clients/ops/alerts/\(id(older))").jsonObject()["state"] as? String == "queued")
        let full = try await http.post("/v1/clients/ops/alerts", json: #"{"title": "third"}"#)
        #expect(try full.status == 429 && full.jsonObject()["code"] as? String == "queue-full")

        // The new display was committed: a restart shows the same.
        let again = try await daemon.restart()
        defer { again.cleanup() }
        #expect(try await again.client().get("/v1/clients/ops/alerts/current").jsonObject()["id"] as? String == id(newer))
    }

    @Test(
        "callbacks.allow and callbacks.deny change on SIGHUP: a refused local receiver is let through at once, its refused event delivered without waiting out its backoff"
    )
    func reloadAppliesCallbackLists() async throws {
        let hook = try await WebhookReceiver.listening()
        defer { hook.close() }
        // The default deny list refuses loopback. The config webhook is checked at delivery only; its retry is a minute away.
        func config(allow: String) -> String {
            """
            callbacks:
              signing_secret: "\(callbackSecret)"
              retry_initial_seconds: 60
              retry_max_interval_seconds: 120
            \(allow)
            webhooks:
              - { client: ops, url: "\(hook.url)", secret: "\(callbackSecret)" }

            """
        }
        let daemon = try await Daemon.start(.init(config: config(allow: "")))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let callback = #"{"title":"Local?","buttons":[{"title":"OK"}],"callback_url":"\#(hook.url)"}"#
        let refused = try await http.post("/v1/clients/ops/alerts", json: callback)
        #expect(refused.status == 400 && refused.text.contains("callbacks.allow"), "\(refused.text)")
        let alert = try await http.postAlert("ops", #"{"title":"Before","buttons":[{"title":"OK"}]}"#)
        #expect(try await http.choose("ops", id(alert), #"{"button":"OK"}"#).status == 200)
        let first = try await deliveries(http, "ops", id(alert)) { !attempts($0.first ?? [:]).isEmpty }
        #expect((attempts(first.first ?? [:]).first?["error"] as? String)?.hasPrefix("refused: ") == true, "\(first)")

        try daemon.rewriteConfig(config(allow: "  allow: [\"127.0.0.1\"]"))
        daemon.sendSignal(SIGHUP)
        try await daemon.waitForStderr(containing: "msg=\"config reloaded\"")
        let line = try #require(daemon.stderrLines(containing: "config reloaded").last)
        #expect(line.contains("callbacks_deny_allow=applied") && !line.contains("changed_at_next_start"), "\(line)")
        // Refused before, due at once now: well inside the 30–60 s its backoff had left.
        let received = try await hook.waitForRequests(count: 1, timeout: 20)
        #expect(received.first?.text.contains(id(alert)) == true)
        #expect(try await http.post("/v1/clients/ops/alerts", json: callback).status == 201)
    }

    @Test("a broken config is refused with a line naming the problem; the running one stays")
    func brokenConfigRefused() async throws {
        let config = "auth:\n  tokens:\n" + (await tokenEntry("keeper", "keep-secret", roles: "read"))
        let daemon = try await Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        for broken in ["durability: fast\n", "auth: { tokens: [ { name: x } ] }\n", "listen: [\n"] {
            try daemon.rewriteConfig(broken)
            let refusals = daemon.stderrText.components(separatedBy: "config reload refused").count
            daemon.sendSignal(SIGHUP)
            try await daemon.waitForStderr(containing: "config reload refused", count: refusals)
        }
        #expect(daemon.stderrText.contains("durability must be"))
        #expect(try await daemon.client().get("/v1/clients", headers: [("Authorization", "Bearer keep-secret")]).status == 200)
        #expect(!daemon.stderrText.contains("config reloaded"))
    }

    @Test("a reload that would leave the API open on a non-loopback address is refused; the tokens stay")
    func reloadKeepsExposureRule() async throws {
        var options = Daemon.Options(config: "auth:\n  tokens:\n" + (await tokenEntry("guard", "guard-secret", roles: "read")))
        options.listen = "0.0.0.0:0"
        let daemon = try await Daemon.start(options)
        defer { daemon.cleanup() }
        try daemon.rewriteConfig("log: { level: info }\n")
        daemon.sendSignal(SIGHUP)
        try await daemon.waitForStderr(containing: "config reload refused")
        #expect(daemon.stderrText.contains("the API would be open to anyone"))
        let http = daemon.client()
        #expect(try await http.get("/v1/clients").status == 401)
        #expect(try await http.get("/v1/clients", headers: [("Authorization", "Bearer guard-secret")]).status == 200)
    }

    @Test("alertd check-config prints ok for a good file and the reason for a bad one, exiting 1")
    func checkConfig() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = directory.appendingPathComponent("good.yaml")
        try Data("durability: normal\nlimits: { max_waiters: 10 }\n".utf8).write(to: good)
        let ok = try await runAlertd(["check-config", good.path])
        #expect(ok.status == 0 && ok.out.contains("ok"), "\(ok)")
        let bad = directory.appendingPathComponent("bad.yaml")
        try Data("limits: { max_waiters: lots }\n".utf8).write(to: bad)
        let refused = try await runAlertd(["check-config", bad.path])
        #expect(refused.status == 1)
        #expect(refused.err.contains("limits.max_waiters"), "\(refused)")
        let missing = try await runAlertd(["check-config", directory.appendingPathComponent("none.yaml").path])
        #expect(missing.status == 1 && !missing.err.isEmpty)
        // The shipped example is valid.
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/alertd.yaml")
        #expect(try await runAlertd(["check-config", example.standardized.path]).status == 0)
    }
}

@Suite("alertd check-config and alertd's first words")
struct FirstWordsTests {
    @Test("check-config reports every problem, each on its own line naming its key, with a suggestion for a misspelt key")
    func everyProblem() async throws {
        let directory = try ScratchDirectory()
        let file = directory.url.appendingPathComponent("bad.yaml")
        try Data(
            """
            listen: "0.0.0.0:8080"
            durabilty: full
            limits: { max_waiters: lots }
            tls: { cert_file: /nonexistent/cert.pem, key_file: /nonexistent/key.pem }
            webhooks:
              - { client: ops, url: "ftp://x/y", secret: s }

            """.utf8
        ).write(to: file)
        let refused = try await Program.alertd(["check-config", file.path])
        #expect(refused.status == 1)
        let lines = refused.stderr.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "\(file.path): unknown key durabilty (did you mean durability?)",
                "\(file.path): limits.max_waiters must be an integer",
                "\(file.path): webhooks[0].url must be an absolute http or https URL",
                "\(file.path): listen: refusing to listen on 0.0.0.0:8080 without auth.tokens: anyone who can reach it could post and answer alerts; add tokens, listen on a loopback address, or set auth.allow_anonymous: true",
                "\(file.path): tls.cert_file: cannot read /nonexistent/cert.pem",
            ], "\(refused.stderr)")
        // alertd itself refuses to start with the same lines.
        let start = try await Program.alertd(["--config", file.path, "--state-dir", directory.url.appendingPathComponent("state").path])
        #expect(start.status == 2 && start.stderr.split(separator: "\n").map(String.init) == lines.map { "alertd: " + $0 }, "\(start)")
        // A YAML syntax error is one line with its line and column.
        try Data("limits:\n  max_waiters: [1, 2\n".utf8).write(to: file)
        let syntax = try await Program.alertd(["check-config", file.path])
        #expect(
            syntax.status == 1 && syntax.stderr.hasPrefix("\(file.path):3:") && syntax.stderr.split(separator: "\n").count == 1, "\(syntax)"
        )
        // A good file: its counts, in words.
        try Data("auth:\n  allow_anonymous: false\n".utf8).write(to: file)
        let ok = try await Program.alertd(["check-config", file.path])
        #expect(ok.status == 0 && ok.stdout == "\(file.path): ok (0 tokens, 0 webhooks, listen 127.0.0.1:8080)\n", "\(ok)")
    }

    @Test(
        "at start alertd says which config file it read (or that it uses the defaults), where it listens, its store and whether tokens are on"
    )
    func startLines() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let config = try #require(daemon.stderrLines(containing: "msg=config").first)
        #expect(Daemon.logfmtFields(String(config))["file"]?.hasSuffix(".yaml") == true, "\(config)")
        let listening = Daemon.logfmtFields(String(try #require(daemon.stderrLines(containing: "msg=listening").first)))
        #expect(listening["address"] == "127.0.0.1:\(daemon.port)")
        #expect(listening["store"] == "sqlite:\(daemon.stateDir.path)")
        #expect(listening["tokens"]?.hasPrefix("none") == true, "\(listening)")

        let defaults = try await Program.alertd(["check-config", "/nonexistent/alertd.yaml"])
        #expect(defaults.status == 1 && defaults.stderr == "cannot read config file /nonexistent/alertd.yaml: there is no such file\n")
    }
}
