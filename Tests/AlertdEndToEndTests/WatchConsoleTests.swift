import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// A tmux session (80×24 unless told) running one command: keys in with send-keys, the screen out
/// with capture-pane.
///
/// Each session has a tmux server of its own (its own socket, `-S`): with one server for
/// every test, a session started as another test's last session was killed met the
/// server on its way out ("server exited unexpectedly", seen in a full run).
struct TmuxSession {
    let name: String

    /// Starts `command` in a new session; no `alertctl.yaml` is read unless `environment` names
    /// an `XDG_CONFIG_HOME`.
    static func start(_ command: [String], environment: [String: String], width: Int = 80, height: Int = 24) async throws
        -> TmuxSession
    {
        let session = TmuxSession(name: "alertd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        var arguments = ["new-session", "-d", "-x", "\(width)", "-y", "\(height)", "-s", session.name]
        let isolated = ["XDG_CONFIG_HOME": "/nonexistent/alertd-tests-config"].merging(environment) { $1 }
        for (key, value) in isolated { arguments += ["-e", "\(key)=\(value)"] }
        try await session.tmux(arguments + command)
        return session
    }

    /// The socket of this session's own server, named after the session.
    var socket: String { NSTemporaryDirectory() + "/" + name + ".tmux" }

    /// Runs tmux on this session's own server.
    @discardableResult
    func tmux(_ arguments: [String]) async throws -> String {
        // Not Foundation's Process: the first call starts the tmux server, which would keep
        // Process's exit-detection socket open (see Program).
        let run = try await Program.run("tmux", ["-S", socket] + arguments, timeout: .seconds(20))
        guard run.status == 0 else {
            throw ProcessError(
                "tmux \(arguments.joined(separator: " ")) failed: \(run.stdout)\(run.stderr)", exitStatus: run.status, stderr: run.stderr)
        }
        return run.stdout
    }

    func screen() async -> String { (try? await tmux(["capture-pane", "-p", "-t", name])) ?? "" }

    func send(_ keys: String...) async throws { try await tmux(["send-keys", "-t", name] + keys) }

    /// Resizes the window (the program in it gets SIGWINCH).
    func resize(width: Int, height: Int) async throws {
        try await tmux(["resize-window", "-t", name, "-x", "\(width)", "-y", "\(height)"])
    }

    var isRunning: Bool { get async { (try? await tmux(["has-session", "-t", name])) != nil } }

    /// Ends the session and its server, and removes its socket, without waiting (for a `defer`).
    func kill() {
        Task { [self] in
            _ = try? await tmux(["kill-server"])
            try? FileManager.default.removeItem(atPath: socket)
        }
    }

    /// Waits until the screen satisfies `check`; fails the test with the screen as it is otherwise.
    func awaitScreen(
        timeout: Duration = asyncWaitTimeout, sourceLocation: SourceLocation = #_sourceLocation, _ check: (String) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !check(await screen()) {
            guard ContinuousClock.now < deadline else {
                Issue.record("the screen never showed what was awaited:\n\(await screen())", sourceLocation: sourceLocation)
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

@Suite("alertctl watch: the terminal console, driven through tmux")
struct WatchConsoleTests {
    @Test("it shows the alert in 80×24, a number key and Esc choose, new alerts appear live, q quits")
    func console() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let tmux = try await TmuxSession.start([try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": daemon.baseURL])
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("Nothing displayed") }

        let first = try await alertd.post(
            NewAlert(
                title: "Deploy build 1234?", message: "Goes to every region.",
                buttons: [.cancel("Cancel"), .default("Deploy"), .destructive("Roll back")]),
            to: "ops")
        _ = try await alertd.post(NewAlert(title: "Second <b>\u{1B}[31m", buttons: [.default("OK"), .cancel("No")]), to: "ops")
        // Numbered in display order: the cancel button last; the queue behind it counted.
        try await tmux.awaitScreen {
            $0.contains("Deploy build 1234?") && $0.contains("[1] Deploy") && $0.contains("[2] Roll back  (destructive)")
                && $0.contains("[3] Cancel  (cancel, Esc)") && $0.contains("2 pending, 1 queued behind")
        }
        #expect(await tmux.screen().split(separator: "\n").allSatisfy { $0.count <= 80 })
        // A destructive button waits for y.
        try await tmux.send("2")
        try await tmux.awaitScreen { $0.contains("Roll back is destructive: y chooses it") }
        try await tmux.send("y")
        try await tmux.awaitScreen { $0.contains("Second <b>") && $0.contains("answered “Deploy build 1234?” with Roll back") }
        #expect(try await alertd.alert(on: "ops", id: first.id).result?.button == "Roll back")
        // An escape sequence in a title is shown harmlessly, not interpreted.
        #expect(await tmux.screen().contains("Second <b>\u{FFFD}[31m"))

        try await tmux.send("Escape")
        try await tmux.awaitScreen { $0.contains("Nothing displayed") }
        let second = try #require(try await alertd.listPage(on: "ops", states: [.answered]).alerts.first { $0.title.hasPrefix("Second") })
        #expect(second.result?.button == "No" && second.result?.cancelled == true)

        // A choice made elsewhere shows without a key pressed.
        let third = try await alertd.post(NewAlert(title: "Third", buttons: [.default("Fine")]), to: "ops")
        try await tmux.awaitScreen { $0.contains("Third") }
        _ = try await alertd.choose(on: "ops", id: third.id, button: "Fine")
        try await tmux.awaitScreen { $0.contains("Nothing displayed") }

        try await tmux.send("q")
        let deadline = ContinuousClock.now + .seconds(10)
        while await tmux.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await !tmux.isRunning, "q ends the console (and with it the tmux session)")
    }

    @Test("a daemon that goes away is shown as reconnecting, and the console recovers when it is back")
    func reconnects() async throws {
        let first = try await Daemon.start()
        defer { first.cleanup() }
        let tmux = try await TmuxSession.start([try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": first.baseURL])
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("Nothing displayed") }
        await first.kill9()
        try await tmux.awaitScreen { $0.contains("reconnecting in") }
        let second = try await Daemon.start(.init(stateDir: first.stateDir, listen: "127.0.0.1:\(first.port)"))
        defer { second.cleanup() }
        _ = try await AlertdClient(url: second.baseURL).post(NewAlert(title: "Back again", buttons: [.default("Yes")]), to: "ops")
        try await tmux.awaitScreen { $0.contains("Back again") && !$0.contains("reconnecting") }
    }

    @Test("a token that may not read the client (403) is said whole on the screen; no reconnecting")
    func refusedToken() async throws {
        let (daemon, secrets) = try await AuthTests.start()
        defer { daemon.cleanup() }
        let tmux = try await TmuxSession.start(
            [try Alertctl.binary(), "watch", "db"], environment: ["ALERTD_URL": daemon.baseURL, "ALERTD_TOKEN": secrets["console"]!])
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("This token cannot read client db.") && $0.contains("alertctl whoami") }
        let screen = await tmux.screen()
        #expect(!screen.contains("reconnecting") && screen.contains("Forbidden: "))
        #expect(screen.split(separator: "\n").last?.trimmingCharacters(in: .whitespaces) == "q quit", "\(screen)")
    }

    @Test(
        "a token the daemon refuses (401), or none given to a daemon that needs one, is said before the console takes the screen: which, and where it came from; exit 3",
        arguments: [("not-a-token", "alertd refused the token from $ALERTD_TOKEN"), ("", "alertd needs a token and none was given")])
    func unauthorizedBeforeTheConsole(token: String, words: String) async throws {
        let (daemon, _) = try await AuthTests.start()
        defer { daemon.cleanup() }
        // In a shell that says how it ended and stays: the pane would close with alertctl.
        let tmux = try await TmuxSession.start(
            ["/bin/sh", "-c", #""$0" watch ops; echo "exit=$?"; sleep 600"#, try Alertctl.binary()],
            environment: ["ALERTD_URL": daemon.baseURL, "ALERTD_TOKEN": token], width: 400)
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("exit=") }
        let screen = await tmux.screen()
        #expect(screen.contains("alertctl: \(words)") && screen.contains("exit=3"), "\(screen)")
        #expect(screen.contains("--token, $ALERTD_TOKEN, or token (or token_file) in "), "\(screen)")
        #expect(!screen.contains("Nothing displayed") && !screen.contains("Bearer <token>"), "\(screen)")
    }

    @Test("it fits a 60×18 terminal, words whole, header and title on screen, and follows a resize to 100×30")
    func fitsTheTerminal() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let message = "The nightly migration of the payments database finished with warnings about replication lag on two replicas."
        _ = try await alertd.post(
            NewAlert(
                title: "Promote the standby replica of payments-eu to primary now?", message: message,
                buttons: [.default("Promote"), .destructive("Fail over everything"), .cancel("Wait")]),
            to: "ops")
        let tmux = try await TmuxSession.start(
            [try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": daemon.baseURL], width: 60, height: 18)
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("[3] Wait") }
        let lines = await tmux.screen().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("alertd · ops") == true, "the header scrolled away:\n\(lines.joined(separator: "\n"))")
        #expect(lines.contains { $0.contains("Promote the standby") }, "\(lines)")
        #expect(lines.allSatisfy { $0.count <= 60 } && lines.contains(String(repeating: "─", count: 60)), "\(lines)")
        // Wrapped between words: every word of the message is on the screen whole.
        let words = Set(lines.joined(separator: " ").split(separator: " ").map(String.init))
        for word in message.split(separator: " ") {
            #expect(words.contains(String(word)), "\(word) was cut:\n\(lines.joined(separator: "\n"))")
        }

        try await tmux.resize(width: 100, height: 30)
        try await tmux.awaitScreen { $0.contains(String(repeating: "─", count: 100)) }
        let wide = await tmux.screen().split(separator: "\n").map(String.init)
        #expect(wide.allSatisfy { $0.count <= 100 } && wide.first?.hasPrefix("alertd · ops") == true, "\(wide)")
    }

    @Test("a token that may not answer shows read-only up front and offers no keys; an alert answered elsewhere says by whom")
    func readOnlyToken() async throws {
        let (daemon, secrets) = try await AuthTests.start()
        defer { daemon.cleanup() }
        let root = try AlertdClient(url: daemon.baseURL, token: secrets["root"]!)
        let alert = try await root.post(ChooseConfirmTests.wipe, to: "ops")
        let tmux = try await TmuxSession.start(
            [try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": daemon.baseURL, "ALERTD_TOKEN": secrets["reader"]!])
        defer { tmux.kill() }
        try await tmux.awaitScreen {
            $0.contains("alertd · ops · read-only") && $0.contains("· Restart") && $0.contains("· Drop tables  (destructive)")
                && $0.contains("read-only: token reader (roles: read) may not answer")
        }
        #expect(!(await tmux.screen()).contains("[1]"))
        try await tmux.send("1")
        try await tmux.awaitScreen { $0.contains("nothing was chosen") }
        let screen = await tmux.screen()
        #expect(screen.components(separatedBy: "may not").count == 2, "said once: \(screen)")
        #expect(try await root.alert(on: "ops", id: alert.id).state == .displayed)
        _ = try await root.choose(on: "ops", id: alert.id, button: "Restart")
        try await tmux.awaitScreen { $0.contains("“Wipe staging?” was answered “Restart” by root") && $0.contains("Nothing displayed") }
    }

    @Test("twelve buttons and a long message: every button with its key (letters after 9), the message scrolls, a wrong key is named")
    func manyButtons() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let message = (1...40).map { "Line \($0) of the release notes." }.joined(separator: "\n")
        let alert = try await alertd.post(
            NewAlert(title: "Pick a region", message: message, buttons: (1...11).map { .default("Region \($0)") } + [.cancel("None")]),
            to: "ops")
        let tmux = try await TmuxSession.start([try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": daemon.baseURL])
        defer { tmux.kill() }
        try await tmux.awaitScreen {
            $0.contains("[9] Region 9") && $0.contains("[a] Region 10") && $0.contains("[b] Region 11")
                && $0.contains("[c] None  (cancel, Esc)")
                && $0.contains("1-9, a-c choose · Esc cancel · Tab comment · ↑↓ PgUp PgDn scroll · q quit")
        }
        let first = await tmux.screen()
        #expect(first.contains("Line 1 of the release notes.") && !first.contains("Line 40 of"))
        #expect(first.split(separator: "\n").allSatisfy { $0.count <= 80 })
        try await tmux.send("PageDown")
        try await tmux.awaitScreen { !$0.contains("Line 1 of the release notes.") && $0.contains("Line 6 of the release notes.") }
        try await tmux.send("z")
        try await tmux.awaitScreen { $0.contains("key z chooses nothing; 1-9, a-c choose") }
        try await tmux.send("b")
        try await tmux.awaitScreen { $0.contains("answered “Pick a region” with Region 11") }
        #expect(try await alertd.alert(on: "ops", id: alert.id).result?.button == "Region 11")
    }

    @Test("any key but y keeps an alert whose destructive button was pressed")
    func destructiveKept() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let alert = try await alertd.post(NewAlert(title: "Drop the table?", buttons: [.destructive("Drop"), .cancel("Keep")]), to: "ops")
        let tmux = try await TmuxSession.start([try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": daemon.baseURL])
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("[1] Drop  (destructive)") }
        try await tmux.send("1")
        try await tmux.awaitScreen { $0.contains("y choose · any other key keep · q quit") }
        try await tmux.send("n")
        try await tmux.awaitScreen { $0.contains("kept: Drop was not chosen") }
        #expect(try await alertd.alert(on: "ops", id: alert.id).state == .displayed)
    }
}
