import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// Issue 45: the first hour, third pass. What a new user met with the release binaries,
/// each held by the real daemon and the real alertctl.
@Suite("The first hour, third pass (issue 45)")
struct FirstHourThirdPassTests {
    // MARK: Item 1: a first local webhook

    @Test("alertctl webhooks add with a name that resolves to a denied address is refused (exit 3) naming the entry and callbacks.allow")
    func localWebhookRefused() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let added = try await ctl.run("webhooks", "add", "ops", "http://localhost:9000/hook")
        #expect(added.status == 3 && added.stdout.isEmpty, "\(added)")
        #expect(added.stderr.contains("localhost resolves to an address in callbacks.deny entry "), "\(added.stderr)")
        #expect(added.stderr.contains("callbacks.allow"), "\(added.stderr)")
        #expect(try await ctl.run("webhooks", "list", "ops").stdout.isEmpty, "nothing was registered")
        // As for a literal, said the same way.
        let literal = try await ctl.run("webhooks", "add", "ops", "http://127.0.0.1:9000/hook")
        #expect(literal.status == 3 && literal.stderr.contains("127.0.0.1 is in callbacks.deny entry 127.0.0.0/8"), "\(literal)")
    }

    // MARK: Item 3: removing a webhook cancels its deliveries

    @Test("alertctl webhooks remove cancels the webhook's pending deliveries and says how many")
    func removeSaysHowMany() async throws {
        let dead = try ReservedPort()
        defer { dead.release() }
        let daemon = try await Daemon.start(.init(config: callbackConfig(allow: ["127.0.0.1"])))
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let hook = try await ctl.json("webhooks", "add", "ops", "http://127.0.0.1:\(dead.port)/hook") as! [String: Any]
        let hookID = try #require(hook["id"] as? String)
        let http = daemon.client()
        for title in ["One", "Two"] {
            let alert = try await http.postAlert("ops", #"{"title":"\#(title)","buttons":[{"title":"OK"}]}"#)
            #expect(try await http.choose("ops", id(alert), #"{"button":"OK"}"#).status == 200)
            _ = try await deliveries(http, "ops", id(alert)) { !attempts($0.first ?? [:]).isEmpty }
        }
        let removed = try await ctl.run("webhooks", "remove", "ops", hookID)
        #expect(removed.status == 0 && removed.stdout == "removed \(hookID); cancelled 2 pending deliveries\n", "\(removed)")
        try await daemon.waitForStderr(containing: "msg=\"webhook removed\"")
        #expect(daemon.stderrLines(containing: "webhook removed").first?.contains("deliveries_cancelled=2") == true)
        let again = try await ctl.json("webhooks", "add", "ops", "http://127.0.0.1:\(dead.port)/other") as! [String: Any]
        let json = try await ctl.run("webhooks", "rm", "ops", again["id"] as! String, "--json")
        #expect(json.status == 0 && json.stdout == "{\"cancelled_deliveries\":0}\n", "\(json)")
        let shown = try await ctl.run(
            "deliveries", "ops",
            try #require(try await http.get("/v1/clients/ops/alerts?state=answered").jsonObject()["alerts"] as? [[String: Any]]).first.map(
                id) ?? "")
        #expect(shown.stdout.contains("  cancelled  "), "\(shown)")
    }

    // MARK: Item 4: get --wait waits as long as asked

    @Test("get --wait longer than the daemon's max_wait_seconds waits as long as asked, then exits 2 saying the alert is still pending")
    func getWaitsAsLongAsAsked() async throws {
        let daemon = try await Daemon.start(.init(config: "limits:\n  max_wait_seconds: 1\n"))
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let id = try await ctl.run("post", "ops", "--title", "Deploy?", "--button", "Deploy").stdout.trimmingCharacters(in: .newlines)
        let started = ContinuousClock.now
        let waited = try await ctl.run("get", "ops", id, "--wait", "3s")
        let elapsed = ContinuousClock.now - started
        #expect(waited.status == 2, "\(waited)")
        #expect(elapsed >= .milliseconds(2800), "returned after \(elapsed), at the daemon's 1 s cap")
        #expect(waited.stdout.contains("state:     displayed"), "\(waited)")
        #expect(waited.stderr == "alertctl: alert \(id) is still displayed after waiting 3 s\n", "\(waited.stderr)")
        // Decided while it waits: exit 0 with the answer.
        let run = try await ctl.start(["get", "ops", id, "--wait", "2m"])
        try await SDKTests.awaitWaiters(daemon, 1)
        _ = try await AlertdClient(url: daemon.baseURL).choose(on: "ops", id: id, button: "Deploy")
        let decided = try await run.finish()
        #expect(decided.status == 0 && decided.stdout.contains("result:    answered: Deploy"), "\(decided)")
        let bad = try await ctl.run("get", "ops", id, "--wait", "soon")
        #expect(bad.status == 64 && bad.stderr.contains("90s"), "\(bad)")
    }

    // MARK: Item 5: post --wait says what it waits for

    @Test("post --wait says on stderr which alert it waits for, where, and that Ctrl-C withdraws it; stdout stays the answer")
    func postWaitSaysSo() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let run = try await Alertctl(url: daemon.baseURL).start(["post", "ops", "--title", "Deploy?", "--button", "Deploy", "--wait"])
        let id = try await SDKTests.awaitDisplayed(daemon, "ops")
        // Said before anyone answered.
        let said = await run.child.stderr.wait(timeout: .seconds(30)) { bytes, ended -> Bool? in
            String(decoding: bytes, as: UTF8.self).contains("\n") ? true : ended ? false : nil
        }
        #expect(said == true)
        #expect(run.child.stderr.text == "alertctl: alert \(id): waiting for an answer on ops (Ctrl-C withdraws it)\n")
        _ = try await AlertdClient(url: daemon.baseURL).choose(on: "ops", id: id, button: "Deploy")
        let result = try await run.finish()
        #expect(result.status == 0 && result.stdout == "Deploy\n", "\(result)")
    }

    // MARK: Item 6: a 401 says where the token came from

    @Test("a refused token names where it came from; no token says none was given and how to give one; whoami shows what it can")
    func unauthorizedSaysWhy() async throws {
        let (daemon, _) = try await AuthTests.start()
        defer { daemon.cleanup() }
        let file = "/nonexistent/alertd-tests-config/alertd/alertctl.yaml"
        let none = try await Alertctl(url: daemon.baseURL).run("clients")
        #expect(
            none.status == 3
                && none.stderr
                    == "alertctl: alertd needs a token and none was given: pass one with --token, $ALERTD_TOKEN, or token (or token_file) in \(file)\n",
            "\(none)")
        let wrong = try await Alertctl(url: daemon.baseURL, token: "nope").run("clients")
        #expect(wrong.status == 3 && wrong.stderr.hasPrefix("alertctl: alertd refused the token from $ALERTD_TOKEN ("), "\(wrong)")
        #expect(!wrong.stderr.contains("Authorization: Bearer"), "HTTP advice: \(wrong.stderr)")
        let flag = try await Alertctl(url: daemon.baseURL).run("clients", "--token", "nope")
        #expect(flag.stderr.contains("alertd refused the token from --token ("), "\(flag)")
        // From alertctl.yaml: named by its path.
        let home = try ScratchDirectory()
        let directory = home.url.appendingPathComponent("alertd")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let yaml = directory.appendingPathComponent("alertctl.yaml")
        try Data("token: nope\n".utf8).write(to: yaml)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: yaml.path)
        let fromFile = try await Alertctl(url: daemon.baseURL, environment: ["XDG_CONFIG_HOME": home.url.path]).run("clients")
        #expect(fromFile.stderr.contains("alertd refused the token from token in \(yaml.path) ("), "\(fromFile)")

        let whoami = try await Alertctl(url: daemon.baseURL).run("whoami")
        #expect(whoami.status == 3, "\(whoami)")
        #expect(whoami.stdout.hasPrefix("url:     \(daemon.baseURL)\ntoken:   none"), "\(whoami.stdout)")
        #expect(whoami.stderr.hasPrefix("alertctl: alertd needs a token and none was given"), "\(whoami.stderr)")
    }

    // MARK: Item 8: decisions are logged

    @Test("each decision is one info line: who chose what on which alert, a vote with its count, a withdrawal by whom")
    func decisionsLogged() async throws {
        let (config, secrets) = try await deciders()
        let daemon = try await Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let asked = try await http.postAlert(
            "ops", #"{"title":"Deploy?","quorum":2,"buttons":[{"title":"Deploy"},{"title":"Stop","style":"cancel"}]}"#,
            headers: bearer(secrets["deployer"]))
        let path = "/v1/clients/ops/alerts/\(id(asked))/choice"
        #expect(try await http.post(path, json: #"{"button":"Deploy"}"#, headers: bearer(secrets["alice"])).status == 200)
        // A repeat changes nothing and logs nothing.
        #expect(try await http.post(path, json: #"{"button":"Deploy"}"#, headers: bearer(secrets["alice"])).status == 200)
        #expect(try await http.post(path, json: #"{"button":"Deploy"}"#, headers: bearer(secrets["bob"])).status == 200)
        try await daemon.waitForStderr(containing: "msg=\"alert answered\"")
        let vote = try #require(daemon.stderrLines(containing: "msg=\"vote recorded\"").first)
        #expect(daemon.stderrLines(containing: "msg=\"vote recorded\"").count == 1)
        let voted = Daemon.logfmtFields(String(vote))
        #expect(voted["level"] == "info" && voted["by"] == "alice" && voted["button"] == "Deploy" && voted["agreeing"] == "1 of 2")
        #expect(voted["alert"] == id(asked) && voted["client"] == "ops")
        let answered = Daemon.logfmtFields(String(try #require(daemon.stderrLines(containing: "msg=\"alert answered\"").first)))
        #expect(answered["by"] == "bob" && answered["button"] == "Deploy" && answered["alert"] == id(asked) && answered["votes"] == "2")

        let other = try await http.postAlert("ops", #"{"title":"Other","buttons":[{"title":"OK"}]}"#, headers: bearer(secrets["deployer"]))
        #expect(try await http.delete("/v1/clients/ops/alerts/\(id(other))", headers: bearer(secrets["deployer"])).status == 200)
        try await daemon.waitForStderr(containing: "msg=\"alert withdrawn\"")
        let withdrawn = Daemon.logfmtFields(String(try #require(daemon.stderrLines(containing: "msg=\"alert withdrawn\"").first)))
        #expect(withdrawn["by"] == "deployer" && withdrawn["alert"] == id(other))
    }

    // MARK: Item 11: smaller things

    @Test("list labels each button as get, watch and the dashboard do (1–9, then a–g); choose --number takes a or 10 alike")
    func buttonLabels() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let titles = (1...12).map { "B\($0)" }
        let id = try await ctl.start(["post", "ops", "--title", "Which?"] + titles.flatMap { ["--button", $0] } + ["--cancel", "None"])
            .finish().stdout.trimmingCharacters(in: .newlines)
        let listed = try await ctl.run("list", "ops")
        #expect(listed.stdout.contains("[1] B1  [2] B2"), "\(listed)")
        #expect(listed.stdout.contains("[9] B9  [a] B10  [b] B11  [c] B12  [d] None (cancel)"), "\(listed)")
        let got = try await ctl.run("get", "ops", id)
        #expect(got.stdout.contains("[9] B9  [a] B10  [b] B11  [c] B12  [d] None (cancel)"), "\(got)")
        let byLetter = try await ctl.run("choose", "ops", id, "a", "--number")
        #expect(byLetter.status == 0 && byLetter.stdout.contains("→ B10"), "\(byLetter)")
        let second = try await ctl.start(["post", "ops", "--title", "Again?"] + titles.flatMap { ["--button", $0] })
            .finish().stdout.trimmingCharacters(in: .newlines)
        let byNumber = try await ctl.run("choose", "ops", second, "11", "--number")
        #expect(byNumber.status == 0 && byNumber.stdout.contains("→ B11"), "\(byNumber)")
        let wrong = try await ctl.run("choose", "ops", second, "z", "--number")
        #expect(wrong.status == 3 && wrong.stderr.contains("no button z: “Again?” has 1 B1, 2 B2, "), "\(wrong)")
        #expect(wrong.stderr.contains("9 B9, a B10, b B11, c B12\n"), "\(wrong)")
    }

    @Test("alertctl mcp on a terminal says it is an MCP server waiting on stdin, and how to configure a host")
    func mcpOnATerminal() async throws {
        let tmux = try await TmuxSession.start(
            [try Alertctl.binary(), "mcp", "--client", "ops"], environment: ["ALERTD_URL": "http://127.0.0.1:9"], width: 400)
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("this is an MCP server") }
        let screen = await tmux.screen()
        #expect(screen.contains("Model Context Protocol") && screen.contains("Ctrl-D") && screen.contains("docs/agents.md"), "\(screen)")
    }

    @Test("check-config: a state_dir under a file, every problem of a token at once, and the sample's placeholder signing secret")
    func checkConfigFindsMore() async throws {
        let (directory, file) = try FirstHourSmallTests.configFile(
            """
            state_dir: /etc/hostname/alertd-state
            callbacks: { signing_secret: "replace-with-openssl-rand-base64-32" }
            auth:
              tokens:
                - { name: "a b", sha256: "xyz", roles: [raed, admin], clients: ["bad id"] }

            """)
        defer { try? FileManager.default.removeItem(at: directory) }
        let check = try await Program.alertd(["check-config", file.path])
        #expect(check.status == 1, "\(check)")
        let lines = check.stderr.split(separator: "\n").map(String.init)
        for expected in [
            "state_dir: /etc/hostname/alertd-state cannot be created: /etc/hostname is a file, not a directory",
            "auth.tokens[0].name is required", "auth.tokens[0].sha256 must be the 64 hex digits",
            "auth.tokens[0].roles: raed (did you mean read?) is not one of read, post, answer, admin, alertmanager",
            "auth.tokens[0].clients: bad id is not a client id glob",
            "callbacks.signing_secret is the sample config's placeholder (replace-with-openssl-rand-base64-32)",
        ] {
            #expect(lines.contains { $0.contains(expected) }, "no line with \(expected):\n\(check.stderr)")
        }
        // The start refuses it too, naming the same key.
        let start = try await Program.alertd(["--config", file.path])
        #expect(start.status == 2 && start.stderr.contains("callbacks.signing_secret is the sample config's placeholder"), "\(start)")
    }

    @Test("alertctl.yaml: a misspelt key gets a suggestion")
    func configFileSuggestion() async throws {
        let home = try ScratchDirectory()
        let directory = home.url.appendingPathComponent("alertd")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let yaml = directory.appendingPathComponent("alertctl.yaml")
        try Data("url: http://127.0.0.1:9\ntokenfile: ~/token\n".utf8).write(to: yaml)
        let run = try await Alertctl(url: nil, environment: ["XDG_CONFIG_HOME": home.url.path]).run("clients")
        #expect(run.status == 64, "\(run)")
        #expect(
            run.stderr.hasPrefix("alertctl: \(yaml.path) line 2: unknown key `tokenfile` (did you mean `token_file`?)"), "\(run.stderr)")
    }
}
