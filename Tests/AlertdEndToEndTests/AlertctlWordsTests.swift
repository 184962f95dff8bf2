// Issue 43 through the real binaries: `alertctl post --field` and `choose --comment --value`,
// `watch`'s form in tmux, and `alertctl hook claude-code` fed Claude Code's documented
// PreToolUse event; and issue 44's alertctl items 8 and 10 (a URL's secrets, escape sequences).

import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// Claude Code's PreToolUse event, as its hooks documentation shows it.
func preToolUse(_ tool: String, _ input: [String: Any], toolUseID: String = "toolu_\(UInt32.random(in: 0...UInt32.max))") -> String {
    let event: [String: Any] = [
        "session_id": "abc123", "transcript_path": "/home/me/.claude/projects/x/abc123.jsonl", "cwd": "/home/me/repo",
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input, "tool_use_id": toolUseID,
    ]
    return String(decoding: try! JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]), as: UTF8.self)
}

extension Alertctl {
    /// Starts `alertctl ARGS` with `stdin` as its standard input.
    func start(_ arguments: [String], stdin: String) async throws -> (Run, ScratchDirectory) {
        let directory = try ScratchDirectory()
        let file = directory.url.appendingPathComponent("stdin")
        try Data(stdin.utf8).write(to: file)
        var variables: [String: String?] = [
            "ALERTD_URL": url, "ALERTD_TOKEN": token, "ALERTD_CACERT": nil, "XDG_CONFIG_HOME": "/nonexistent/alertd-tests-config",
        ]
        variables.merge(environment) { $1 }
        let child = try await Program.spawn(try Self.binary(), arguments, environment: variables, stdinPath: file.path)
        return (Run(child: child), directory)
    }

    /// Runs `alertctl hook claude-code ARGS` on `event`; returns the exit status, the decoded
    /// hookSpecificOutput (nil when stdout is empty) and stderr.
    func hook(_ arguments: [String], event: String) async throws -> (status: Int32, output: [String: String]?, stderr: String) {
        let (run, directory) = try await start(["hook", "claude-code"] + arguments, stdin: event)
        let result = try await run.finish()
        withExtendedLifetime(directory) {}
        return (result.status, Self.decision(result.stdout), result.stderr)
    }

    static func decision(_ stdout: String) -> [String: String]? {
        guard !stdout.isEmpty, let object = try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
            return nil
        }
        return object["hookSpecificOutput"] as? [String: String]
    }
}

@Suite("alertctl: answers with words, against the real daemon")
struct AlertctlWordsTests {
    @Test(
        "post --field asks for a value; choose --value --comment answers with it; post --wait prints the button, the value and the comment")
    func postAndChoose() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let waiting = try await ctl.start([
            "post", "ops", "--title", "Deploy?", "--button", "Deploy", "--cancel", "Cancel", "--field", "ticket:Change ticket:required",
            "--wait",
        ])
        let id = try await awaitDisplayed(daemon, "ops")
        let shown = try await ctl.run("get", "ops", id)
        #expect(shown.stdout.contains("fields:    ticket (Change ticket) required"), "\(shown.stdout)")

        // Without a terminal nothing is asked: the daemon refuses the missing ticket, each field named.
        let refused = try await ctl.run("choose", "ops", id, "Deploy", "--comment", "go")
        #expect(refused.status == 3, "\(refused)")
        #expect(refused.stderr.contains("Invalid answer") && refused.stderr.contains("values.ticket: is required for button \"Deploy\""))
        let malformed = try await ctl.run("choose", "ops", id, "Deploy", "--value", "ticket")
        #expect(malformed.status == 64 && malformed.stderr.contains("--value takes name=text"), "\(malformed)")

        let chosen = try await ctl.run("choose", "ops", id, "Deploy", "--value", "ticket=OPS-77", "--comment", "window \u{1B}[31magreed")
        #expect(chosen.status == 0, "\(chosen)")
        #expect(chosen.stdout.contains("→ Deploy  \"window \u{FFFD}[31magreed\""), "\(chosen.stdout)")
        let done = try await waiting.finish()
        #expect(done.status == 0, "\(done)")
        #expect(done.stdout == "Deploy\nticket=OPS-77\ncomment: window \u{FFFD}[31magreed\n", "\(done.stdout.debugDescription)")
        let got = try await ctl.run("get", "ops", id)
        #expect(got.stdout.contains("value:     ticket=OPS-77") && got.stdout.contains("comment:   window \u{FFFD}[31magreed"))
    }

    @Test("watch: a button whose alert asks for a field opens the form; the value and a comment go with the answer")
    func watchForm() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let posted = try await alertd.post(
            NewAlert(
                title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")],
                fields: [AlertField(name: "ticket", label: "Change ticket", placeholder: "OPS-123", required: true)]),
            to: "ops")
        let tmux = try await TmuxSession.start([try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": daemon.baseURL])
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("Deploy build 1234?") && $0.contains("Asks for: Change ticket*") }
        try await tmux.send("1")
        try await tmux.awaitScreen { $0.contains("Answer Deploy:") && $0.contains("Change ticket (required): ▌") }
        try await tmux.send("Enter")
        try await tmux.awaitScreen { $0.contains("Change ticket is required for Deploy") }
        try await tmux.send("-l", "OPS-7")
        try await tmux.send("Enter")
        try await tmux.awaitScreen { $0.contains("Comment (optional): ▌") }
        try await tmux.send("-l", "window agreed")
        try await tmux.send("Enter")
        try await tmux.awaitScreen { $0.contains("answered “Deploy build 1234?” with Deploy") }
        let answered = try await alertd.alert(on: "ops", id: posted.id)
        #expect(answered.result?.values == ["ticket": "OPS-7"] && answered.result?.comment == "window agreed")
    }

    @Test("whoami and a bad --url never print a URL's credentials (issue 44, item 8)")
    func urlSecrets() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let port = daemon.baseURL.split(separator: ":").last!
        let ctl = Alertctl(url: "http://ops:hunter2@127.0.0.1:\(port)")
        let me = try await ctl.run("whoami")
        #expect(me.stdout.contains("url:     http://***@127.0.0.1:\(port)"), "\(me)")
        let bad = try await Alertctl(url: "ftp://ops:hunter2@example.com/?token=query-secret").run(
            "get", "ops", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
        #expect(bad.status == 64, "\(bad)")
        for text in [me.stdout, me.stderr, bad.stdout, bad.stderr] {
            #expect(!text.contains("hunter2") && !text.contains("query-secret"), "\(text)")
        }
    }
}

@Suite("alertctl hook claude-code: Claude Code's PreToolUse hook, against the real daemon")
struct ClaudeCodeHookTests {
    @Test("a person's Allow allows; Deny denies with their comment as the reason")
    func allowAndDeny() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let ctl = Alertctl(url: daemon.baseURL)
        for (button, comment, verdict, reason) in [
            ("Allow", nil, "allow", "Allowed by a person on alertd."), ("Deny", "not on main", "deny", "not on main"),
        ] as [(String, String?, String, String)] {
            let (run, directory) = try await ctl.start(
                ["hook", "claude-code", "--client", "agents", "--timeout", "60"], stdin: preToolUse("Bash", ["command": "git push --force"])
            )
            let id = try await awaitDisplayed(daemon, "agents")
            let shown = try await alertd.alert(on: "agents", id: id)
            #expect(shown.title == "Allow Bash: git push --force?" && shown.buttons == [.default("Allow"), .cancel("Deny")])
            // Nobody waits for it past the hook's timeout: it expires a minute after, even if the hook is killed.
            #expect(shown.expiresIn == 120)
            #expect(
                shown.metadata?["asked_via"] == .string("alertctl hook claude-code") && shown.metadata?["session_id"] == .string("abc123"))
            _ = try await alertd.choose(on: "agents", id: id, button: button, comment: comment)
            let result = try await run.finish()
            withExtendedLifetime(directory) {}
            #expect(result.status == 0, "\(result)")
            let output = try #require(Alertctl.decision(result.stdout), "\(result)")
            #expect(output == ["hookEventName": "PreToolUse", "permissionDecision": verdict, "permissionDecisionReason": reason])
        }
    }

    @Test("nobody answering in time asks the terminal (and withdraws the question); --on-timeout deny denies")
    func timeout() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let asked = try await ctl.hook(["--client", "agents", "--timeout", "1"], event: preToolUse("Edit", ["file_path": "/srv/a.swift"]))
        #expect(asked.status == 0 && asked.output?["permissionDecision"] == "ask", "\(asked)")
        #expect(asked.output?["permissionDecisionReason"]?.contains("Nobody answered on alertd within 1 s") == true, "\(asked)")
        let denied = try await ctl.hook(
            ["--client", "agents", "--timeout", "1", "--on-timeout", "deny"], event: preToolUse("Edit", ["file_path": "/srv/b.swift"]))
        #expect(denied.output?["permissionDecision"] == "deny", "\(denied)")
        let alertd = try AlertdClient(url: daemon.baseURL)
        let withdrawn = try await alertd.listPage(on: "agents", states: [.withdrawn]).alerts.map(\.title)
        #expect(Set(withdrawn) == ["Allow Edit: /srv/a.swift?", "Allow Edit: /srv/b.swift?"])
    }

    @Test("the hook run again for the same tool use waits for the same question; other flags ask anew")
    func sameToolUseSameQuestion() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let ctl = Alertctl(url: daemon.baseURL)
        let event = preToolUse("Bash", ["command": "make deploy"], toolUseID: "toolu_same")
        let first = try await ctl.hook(["--client", "agents", "--timeout", "1"], event: event)
        #expect(first.output?["permissionDecision"] == "ask", "\(first)")
        // Withdrawn by its timeout; the same run again is handed the same (withdrawn) question.
        let again = try await ctl.hook(["--client", "agents", "--timeout", "1"], event: event)
        #expect(
            again.output?["permissionDecision"] == "ask" && again.output?["permissionDecisionReason"]?.contains("withdrawn") == true,
            "\(again)")
        #expect(try await alertd.listPage(on: "agents", states: AlertState.allCases).alerts.count == 1)
        // Another timeout is another question, never an idempotency-mismatch.
        let other = try await ctl.hook(["--client", "agents", "--timeout", "2"], event: event)
        #expect(other.output?["permissionDecisionReason"]?.contains("Nobody answered on alertd within 2 s") == true, "\(other)")
        #expect(try await alertd.listPage(on: "agents", states: AlertState.allCases).alerts.count == 2)
    }

    @Test("alertd out of reach asks the terminal; malformed input asks with a clear error on stderr; it never allows by itself")
    func failuresAsk() async throws {
        let closed = try ReservedPort()
        let down = Alertctl(url: "http://127.0.0.1:\(closed.port)")
        let unreachable = try await down.hook(["--client", "agents"], event: preToolUse("Bash", ["command": "ls"]))
        #expect(unreachable.status == 0 && unreachable.output?["permissionDecision"] == "ask", "\(unreachable)")
        #expect(unreachable.output?["permissionDecisionReason"]?.contains("cannot reach alertd") == true, "\(unreachable)")
        let denying = try await down.hook(["--client", "agents", "--on-timeout", "deny"], event: preToolUse("Bash", ["command": "ls"]))
        #expect(denying.output?["permissionDecision"] == "deny", "\(denying)")

        for (event, said) in [
            ("{not json", "not JSON"), (#"{"hook_event_name":"PreToolUse","tool_input":{}}"#, "no tool_name"),
            (#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}"#, "not a PreToolUse event"), ("", "no event on stdin"),
        ] {
            let result = try await down.hook(["--client", "agents", "--on-timeout", "deny"], event: event)
            #expect(result.status == 0 && result.output?["permissionDecision"] == "ask", "\(event): \(result)")
            #expect(result.stderr.contains("alertctl: hook claude-code:") && result.stderr.contains(said), "\(event): \(result.stderr)")
        }
    }

    @Test("--only: a tool not named passes untouched (nothing printed, nothing asked); --print-config installs it")
    func onlyAndConfig() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let passed = try await ctl.hook(
            ["--client", "agents", "--only", "Bash,Edit,Write"], event: preToolUse("Read", ["file_path": "/a"]))
        #expect(passed.status == 0 && passed.output == nil, "\(passed)")
        #expect(try await AlertdClient(url: daemon.baseURL).clients().isEmpty, "nothing was posted")

        let config = try await ctl.run("hook", "claude-code", "--client", "agents", "--only", "Bash,Edit,Write", "--print-config")
        #expect(config.status == 0, "\(config)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(config.stdout.utf8)) as? [String: Any])
        let entry = try #require(((object["hooks"] as? [String: Any])?["PreToolUse"] as? [[String: Any]])?.first)
        #expect(entry["matcher"] as? String == "Bash|Edit|Write")
        let hook = try #require((entry["hooks"] as? [[String: Any]])?.first)
        #expect(hook["command"] as? String == "alertctl hook claude-code --client agents --timeout 600 --only Bash,Edit,Write")
        #expect(hook["timeout"] as? Int == 630)
        #expect(config.stderr.contains("settings.json"))
    }
}
