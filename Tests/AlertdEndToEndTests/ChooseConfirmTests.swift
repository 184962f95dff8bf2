import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// Issue 32, item 1: one button numbering wherever a person types a number, and a destructive
/// button never one keypress (or one command) away.
@Suite("alertctl choose: buttons numbered from 1 as watch shows them; a destructive one is confirmed")
struct ChooseConfirmTests {
    /// The issue's alert: watch shows `[1] Restart [2] Drop tables [3] Keep (cancel)`, though
    /// the cancel button was posted first.
    static let wipe = NewAlert(title: "Wipe staging?", buttons: [.cancel("Keep"), .default("Restart"), .destructive("Drop tables")])

    @Test("--number counts from 1 in the order watch and the dashboard show the buttons, the cancel button last")
    func numberedAsShown() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let ctl = Alertctl(url: daemon.baseURL)
        let first = try await alertd.post(Self.wipe, to: "ops")
        let shown = try await ctl.run("get", "ops", first.id)
        #expect(shown.stdout.contains("buttons:   [1] Restart  [2] Drop tables (destructive)  [3] Keep (cancel)"), "\(shown)")
        let one = try await ctl.run("choose", "ops", "--current", "1", "--number")
        #expect(one.status == 0 && one.stdout.contains("→ Restart"), "1 is the first button shown, not the second posted: \(one)")
        #expect(try await alertd.alert(on: "ops", id: first.id).result?.buttonIndex == 1, "the API's button_index stays 0-based")

        let second = try await alertd.post(Self.wipe, to: "ops")
        for wrong in ["0", "4"] {
            let refused = try await ctl.run("choose", "ops", second.id, wrong, "--number")
            #expect(refused.status == 3, "\(refused)")
            #expect(
                refused.stderr.contains("no button \(wrong)") && refused.stderr.contains("1 Restart, 2 Drop tables, 3 Keep"), "\(refused)")
            if wrong == "0" { #expect(refused.stderr.contains("numbered from 1")) }
        }
        #expect(try await alertd.alert(on: "ops", id: second.id).state == .displayed)
        let three = try await ctl.run("choose", "ops", second.id, "3", "--number")
        #expect(three.status == 0 && three.stdout.contains("→ Keep"), "\(three)")
    }

    @Test("choose --help says which numbering it takes; the old 0-based --index is refused, pointing at --number")
    func helpAndOldIndex() async throws {
        let ctl = Alertctl(url: nil)
        let help = try await ctl.run("choose", "--help")
        #expect(help.status == 0, "\(help)")
        let text = help.stdout.replacingOccurrences(of: "\n", with: " ").split(separator: " ").joined(separator: " ")
        #expect(text.contains("counted from 1") && text.contains("the cancel button last") && text.contains("--yes"), "\(help.stdout)")
        #expect(!help.stdout.contains("--index"))
        let old = try await ctl.run("choose", "ops", "--current", "1", "--index")
        #expect(old.status == 64 && old.stderr.contains("--index is gone") && old.stderr.contains("--number"), "\(old)")
    }

    @Test("a destructive button without a terminal on stdin is refused unless --yes; nothing is chosen")
    func destructiveNeedsYesWithoutTerminal() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let ctl = Alertctl(url: daemon.baseURL)
        let alert = try await alertd.post(Self.wipe, to: "ops")
        // stdin is /dev/null here: no one to ask.
        for attempt in [["choose", "ops", alert.id, "Drop tables"], ["choose", "ops", "--current", "2", "--number"]] {
            let refused = try await ctl.start(attempt).finish()
            #expect(refused.status == 64, "\(refused)")
            #expect(
                refused.stderr.contains("“Drop tables” is destructive") && refused.stderr.contains("stdin is not a terminal")
                    && refused.stderr.contains("--yes"),
                "\(refused)")
        }
        #expect(try await alertd.alert(on: "ops", id: alert.id).state == .displayed)
        // A button that is not destructive needs no confirmation.
        let plain = try await alertd.post(NewAlert(title: "Restart?", buttons: [.default("Restart")]), to: "other")
        #expect(try await ctl.run("choose", "other", plain.id, "Restart").status == 0)
        let chosen = try await ctl.run("choose", "ops", "--current", "2", "--number", "--yes")
        #expect(chosen.status == 0 && chosen.stdout.contains("→ Drop tables"), "\(chosen)")
    }

    @Test("on a terminal a destructive choice asks first: n keeps the alert (exit 1), y chooses it")
    func destructiveAsksOnTerminal() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let alert = try await alertd.post(Self.wipe, to: "ops")
        for (reply, status) in [("n", 1), ("y", 0)] {
            // The shell prints alertctl's exit status, then `cat` keeps the pane to read.
            let tmux = try await TmuxSession.start(
                ["sh", "-c", #""$0" choose ops --current 2 --number; echo "exit=$?"; exec cat"#, try Alertctl.binary()],
                environment: ["ALERTD_URL": daemon.baseURL])
            defer { tmux.kill() }
            try await tmux.awaitScreen { $0.contains("“Drop tables” is destructive. Answer “Wipe staging?”") && $0.contains("[y/N]") }
            #expect(try await alertd.alert(on: "ops", id: alert.id).state == .displayed, "nothing is chosen while it asks")
            try await tmux.send(reply, "Enter")
            try await tmux.awaitScreen { $0.contains("exit=\(status)") }
            if reply == "n" {
                #expect(await tmux.screen().contains("kept: “Drop tables” was not chosen"))
                #expect(try await alertd.alert(on: "ops", id: alert.id).state == .displayed)
            } else {
                #expect(try await alertd.alert(on: "ops", id: alert.id).result?.button == "Drop tables")
            }
        }
    }
}
