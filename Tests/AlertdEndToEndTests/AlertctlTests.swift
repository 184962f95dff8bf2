import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// `alertctl`, the real binary, started as a process against the real daemon.
struct Alertctl {
    /// `ALERTD_URL`; nil leaves it unset.
    var url: String?
    var token: String? = nil
    /// More of the environment, over the test process's (nil unsets a name). By default no
    /// `alertctl.yaml` is read: `XDG_CONFIG_HOME` names a directory that does not exist, so a
    /// file on the machine running the tests cannot change what they see.
    var environment: [String: String?] = [:]

    /// `alertctl` beside the test executable, or `$ALERTCTL_BINARY`.
    static func binary() throws -> String {
        try Daemon.locateBinary("alertctl")
    }

    /// A running program (see `ChildProcess`: posix_spawn with every inherited descriptor
    /// above 2 closed, reaped by its own thread), not Foundation's `Process`: tests run in
    /// parallel, and a `Process` child inherits the pipes of whatever other `Process` is
    /// being started at that moment.
    struct Run: Sendable {
        let child: ChildProcess

        /// Waits for the exit, then returns the output.
        func finish(timeout: Duration = asyncWaitTimeout) async throws -> (status: Int32, stdout: String, stderr: String) {
            guard let status = await child.waitForExit(timeout: timeout) else {
                await child.killAndReap()
                throw ProcessError("alertctl still running after \(timeout)", stderr: child.stderr.text)
            }
            await child.awaitOutputEnd()
            return (status, child.stdout.text, child.stderr.text)
        }

        /// Ctrl-C.
        func interrupt() { child.send(SIGINT) }

        /// Starts `executable ARGS`; see ``Program/spawn(_:_:environment:stdinPath:)``.
        static func spawn(_ executable: String, _ arguments: [String], environment: [String: String?]) async throws -> Run {
            Run(child: try await Program.spawn(executable, arguments, environment: environment))
        }
    }

    /// Starts `alertctl ARGS` with `ALERTD_URL` (and `ALERTD_TOKEN`) set.
    func start(_ arguments: [String]) async throws -> Run {
        var variables: [String: String?] = [
            "ALERTD_URL": url, "ALERTD_TOKEN": token, "ALERTD_CACERT": nil,
            "XDG_CONFIG_HOME": "/nonexistent/alertd-tests-config",
        ]
        variables.merge(environment) { $1 }
        return try await Run.spawn(try Self.binary(), arguments, environment: variables)
    }

    func run(_ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await start(arguments).finish()
    }

    func json(_ arguments: String...) async throws -> Any {
        let result = try await start(arguments + ["--json"]).finish()
        try #require(result.status == 0, "alertctl \(arguments) exited \(result.status): \(result.stderr)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8), options: [.fragmentsAllowed])
    }
}

@Suite("alertctl: commands, --json and exit codes against the real daemon")
struct AlertctlTests {
    @Test("post --wait exits 0 for a button, 1 for the cancel button, and prints the button")
    func waitForAButton() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let alertd = try AlertdClient(url: daemon.baseURL)
        for (button, status) in [("Deploy", Int32(0)), ("Cancel", 1)] {
            let run = try await ctl.start(["post", "ops", "--title", "Deploy?", "--button", "Deploy", "--cancel", "Cancel", "--wait"])
            let id = try await SDKTests.awaitDisplayed(daemon, "ops")
            _ = try await alertd.choose(on: "ops", id: id, button: button)
            let result = try await run.finish()
            #expect(result.status == status && result.stdout == "\(button)\n", "\(result)")
        }
    }

    @Test("post --wait exits 2 when dismissed, expired or withdrawn, and says which")
    func waitWithoutADecision() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let dismissed = try await ctl.run("post", "a", "--title", "Backup done", "--dismiss-after", "0.05", "--wait")
        #expect(dismissed.status == 2 && dismissed.stdout == "dismissed\n", "\(dismissed)")
        let expired = try await ctl.run("post", "b", "--title", "Still?", "--button", "Yes", "--expires-in", "0.1", "--wait")
        #expect(expired.status == 2 && expired.stdout == "expired\n", "\(expired)")
        let run = try await ctl.start(["post", "c", "--title", "Pick", "--button", "One", "--wait"])
        let id = try await SDKTests.awaitDisplayed(daemon, "c")
        let withdraw = try await ctl.run("withdraw", "c", id)
        #expect(withdraw.status == 0 && withdraw.stdout.contains("withdrawn"))
        let withdrawn = try await run.finish()
        #expect(withdrawn.status == 2 && withdrawn.stdout == "withdrawn\n", "\(withdrawn)")
    }

    @Test("post --wait with an idempotency key run twice asks once: the second run waits for the same alert")
    func waitIsIdempotent() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let arguments = ["post", "ops", "--title", "Deploy 9?", "--button", "Go", "--idempotency-key", "deploy-9", "--wait"]
        let first = try await ctl.start(arguments)
        let id = try await SDKTests.awaitDisplayed(daemon, "ops")
        let second = try await ctl.start(arguments)
        try await SDKTests.awaitWaiters(daemon, 2)
        _ = try await AlertdClient(url: daemon.baseURL).choose(on: "ops", id: id, button: "Go")
        for run in [first, second] {
            let result = try await run.finish()
            #expect(result.status == 0 && result.stdout == "Go\n", "\(result)")
        }
        let all = try await daemon.client().get("/v1/clients/ops/alerts?state=queued,displayed,answered").jsonObject()
        #expect((all["alerts"] as? [Any])?.count == 1)
    }

    @Test("Ctrl-C while waiting withdraws the alert and exits 130")
    func interruptWithdraws() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let run = try await ctl.start(["post", "ops", "--title", "Approve?", "--button", "Yes", "--wait"])
        let id = try await SDKTests.awaitDisplayed(daemon, "ops")
        try await SDKTests.awaitWaiters(daemon, 1)
        run.interrupt()
        let result = try await run.finish()
        #expect(
            result.status == 130
                && result.stderr
                    == "alertctl: alert \(id): waiting for an answer on ops (Ctrl-C withdraws it)\n"
                    + "alertctl: interrupted: the alert \(id) was withdrawn\n",
            "\(result)")
        #expect(try await AlertdClient(url: daemon.baseURL).alert(on: "ops", id: id).state == .withdrawn)
    }

    @Test("errors: 3 with the problem's title and detail (and each field) when refused, 4 when unreachable, 64 for bad usage")
    func errorExitCodes() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let invalid = try await ctl.run("post", "ops", "--title", "x", "--button", "A", "--button", "A")
        #expect(invalid.status == 3 && invalid.stdout.isEmpty, "\(invalid)")
        #expect(invalid.stderr.contains("Invalid alert: ") && invalid.stderr.contains("buttons[1].title: "), "\(invalid.stderr)")
        let missing = try await ctl.run("get", "ops", "01M00000000000000000000000")
        #expect(missing.status == 3 && missing.stderr.contains("Not found: "), "\(missing)")
        let badClient = try await ctl.run("current", "bad!id")
        #expect(badClient.status == 3 && badClient.stderr.contains("Bad request: "), "\(badClient)")
        let down = try await Alertctl(url: "http://127.0.0.1:1").run("clients")
        #expect(down.status == 4 && down.stderr == "alertctl: cannot reach alertd: connection refused (127.0.0.1:1)\n", "\(down)")
        let usage = try await ctl.run("post", "ops")
        #expect(usage.status == 64 && usage.stderr.contains("--title"), "\(usage)")
        let badMetadata = try await ctl.run("post", "ops", "--title", "x", "--metadata", "[1]")
        #expect(badMetadata.status == 64 && badMetadata.stderr.contains("--metadata"), "\(badMetadata)")
    }

    @Test("every command, in order of a session: post, current, list, choose, get, clients, withdraw, webhooks, deliveries")
    func everyCommand() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let posted =
            try await ctl.json(
                "post", "ops", "--title", "Roll out?", "--message", "to 3 regions", "--button", "Go", "--destructive", "Nuke",
                "--button", "Later", "--cancel", "Stop", "--priority", "7", "--style", "action_sheet", "--metadata", #"{"build": 9}"#,
                "--idempotency-key", "k1") as! [String: Any]
        let id = posted["id"] as! String
        let buttons = (posted["buttons"] as! [[String: String]]).map { "\($0["title"]!):\($0["style"]!)" }
        #expect(buttons == ["Go:default", "Nuke:destructive", "Later:default", "Stop:cancel"])
        #expect(posted["priority"] as? Int == 7 && posted["style"] as? String == "action_sheet")
        #expect((posted["metadata"] as? [String: Int]) == ["build": 9])
        let plain = try await ctl.run(
            "post", "ops", "--title", "Roll out?", "--message", "to 3 regions", "--button", "Go",
            "--destructive", "Nuke", "--button", "Later", "--cancel", "Stop", "--priority", "7", "--style", "action_sheet",
            "--metadata", #"{"build": 9}"#, "--idempotency-key", "k1")
        #expect(plain.status == 0 && plain.stdout == id + "\n", "the same key returns the first alert's id: \(plain)")
        let second = try await ctl.run("post", "ops", "--title", "Second", "--dismiss-after", "600")
        let secondID = second.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let current = try await ctl.run("current", "ops")
        #expect(
            current.status == 0 && current.stdout.contains("title:     Roll out?")
                && current.stdout.contains("buttons:   [1] Go  [2] Nuke (destructive)  [3] Later  [4] Stop (cancel)"), "\(current)")
        #expect((try await ctl.json("current", "ops") as? [String: Any])?["id"] as? String == id)
        #expect(try await ctl.json("current", "nobody") is NSNull)
        let listed = try await ctl.run("list", "ops")
        #expect(listed.stdout.split(separator: "\n").map { String($0.prefix(26)) } == [id, secondID], "\(listed)")

        let chosen = try await ctl.run("choose", "ops", id, "3", "--number")
        #expect(chosen.status == 0 && chosen.stdout.contains("→ Later"), "\(chosen)")
        let got = try await ctl.json("get", "ops", id) as! [String: Any]
        #expect((got["result"] as? [String: Any])?["button"] as? String == "Later")
        // --json keeps the daemon's nulls: `next_cursor` is there, null on the last page.
        let clientPage = try await ctl.json("clients") as! [String: Any]
        #expect(clientPage["next_cursor"] is NSNull)
        let clients = ["clients": clientPage["clients"] as! [[String: Any]]]
        #expect(clients["clients"]?.first?["pending"] as? Int == 1 && clients["clients"]?.first?["displayed"] as? String == secondID)
        let withdrawn = try await ctl.run("withdraw", "ops", secondID)
        #expect(withdrawn.status == 0, "\(withdrawn)")
        let answered = [
            "alerts": (try await ctl.json("list", "ops", "--state", "answered,withdrawn") as! [String: Any])["alerts"] as! [[String: Any]]
        ]
        #expect(Set(answered["alerts"]!.map { $0["id"] as! String }) == [id, secondID])

        let hook = try await ctl.json("webhooks", "add", "ops", "https://hooks.example.com/hook") as! [String: Any]
        let hookID = hook["id"] as! String
        #expect((hook["secret"] as? String)?.hasPrefix("whsec_") == true)
        let hooks = try await ctl.run("webhooks", "list", "ops")
        #expect(hooks.stdout.hasPrefix(hookID) && !hooks.stdout.contains("whsec_"))
        // The same URL again would deliver every event twice: refused, naming the webhook it has.
        let twice = try await ctl.run("webhooks", "add", "ops", "https://hooks.example.com/hook")
        #expect(twice.status == 3 && twice.stderr.contains("already has a webhook") && twice.stderr.contains(hookID), "\(twice)")
        let note = try await ctl.run("post", "ops", "--title", "note", "--dismiss-after", "0.05", "--wait", "--json")
        #expect(note.status == 2)
        let dismissed = try JSONSerialization.jsonObject(with: Data(note.stdout.utf8)) as! [String: Any]
        #expect(dismissed["state"] as? String == "dismissed")
        let deliveries = try await ctl.json("deliveries", "ops", dismissed["id"] as! String) as! [String: [[String: Any]]]
        #expect(deliveries["deliveries"]?.first?["webhook_id"] as? String == hookID)
        #expect(try await ctl.run("webhooks", "rm", "ops", hookID).status == 0)
        #expect(try await ctl.run("webhooks", "list", "ops").stdout.isEmpty)
    }

    @Test("the token comes from ALERTD_TOKEN or --token; a wrong one exits 3 saying where it came from")
    func tokens() async throws {
        let (daemon, secrets) = try await AuthTests.start()
        defer { daemon.cleanup() }
        let reader = Alertctl(url: daemon.baseURL, token: secrets["reader"])
        #expect(try await reader.run("clients").status == 0)
        let refused = try await reader.run("post", "ops", "--title", "x")
        #expect(refused.status == 3 && refused.stderr.contains("Forbidden: "), "\(refused)")
        let flag = try await reader.run("post", "ops", "--title", "x", "--token", secrets["deployer"]!)
        #expect(flag.status == 0, "\(flag)")
        #expect(flag.stderr.hasPrefix("alertctl: warning: a token given with --token is visible to every user"), "\(flag.stderr)")
        #expect(!refused.stderr.contains("warning"), "a token from the environment, to loopback: \(refused.stderr)")
        let wrong = try await Alertctl(url: daemon.baseURL, token: "nope").run("clients")
        #expect(wrong.status == 3 && wrong.stderr.contains("alertd refused the token from $ALERTD_TOKEN"), "\(wrong)")
    }

    @Test("examples/deploy-gate.sh deploys only when a person chooses Deploy")
    func deployGate() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let scratch = try ScratchDirectory()
        let marker = scratch.url.appendingPathComponent("deployed").path
        let deploy = scratch.url.appendingPathComponent("deploy.sh")
        try Data("#!/bin/sh\necho \"$1\" > \(marker)\n".utf8).write(to: deploy)
        chmod(deploy.path, 0o755)
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let binDirectory = URL(fileURLWithPath: try Alertctl.binary()).deletingLastPathComponent().path
        let alertd = try AlertdClient(url: daemon.baseURL)
        for (button, status, deployed) in [("Cancel", Int32(1), false), ("Deploy", 0, true)] {
            // The script runs in the scratch directory: a shell changes into it and execs the script.
            let script = repo.appendingPathComponent("examples/deploy-gate.sh").path
            let path = binDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let run = try await Alertctl.Run.spawn(
                "/bin/sh", ["-c", #"cd "$1" && exec "$2" 77"#, "sh", scratch.url.path, script],
                environment: ["PATH": path, "ALERTD_URL": daemon.baseURL, "XDG_CONFIG_HOME": "/nonexistent/alertd-tests-config"])
            let id = try await SDKTests.awaitDisplayed(daemon, "ops")
            #expect(try await alertd.alert(on: "ops", id: id).title == "Deploy build 77?")
            _ = try await alertd.choose(on: "ops", id: id, button: button)
            let result = try await run.finish()
            #expect(result.status == status, "\(result)")
            #expect(FileManager.default.fileExists(atPath: marker) == deployed)
        }
    }
}
