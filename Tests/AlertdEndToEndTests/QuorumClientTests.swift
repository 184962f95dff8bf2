import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// Where an alert that needs several people (SPEC §10) is shown outside the dashboard: the
/// SDK, `alertctl post --quorum`, its choice commands and `watch`, against the real daemon.
/// (The rules themselves are the contract tier's; the dashboard's, Tests/Browser's.)
@Suite("Quorum in the SDK and alertctl, against the real daemon")
struct QuorumClientTests {
    /// A daemon with tokens made by `alertd token new` on every client: `deployer` (post),
    /// `alice`, `bob` and `carol` (answer); and their secrets.
    static func start() async throws -> (Daemon, [String: String]) {
        let (config, secrets) = try await deciders()
        return (try await Daemon.start(.init(config: config)), secrets)
    }

    /// The displayed alert on `client`, as `alertd` long-polls it with `token`.
    static func displayed(_ daemon: Daemon, _ token: String?, on client: String = "ops") async throws -> AlertResource {
        let alertd = try AlertdClient(url: daemon.baseURL, token: token)
        let deadline = ContinuousClock.now + asyncWaitTimeout
        while ContinuousClock.now < deadline {
            if let alert = try await alertd.current(on: client, wait: 20) { return alert }
        }
        throw ProcessError("nothing displayed on \(client)", stderr: daemon.stderrText)
    }

    static let deploy: [Button] = [.default("Deploy"), .cancel("Cancel")]

    @Test("the SDK reads posted_by; the poster's own approval is 403 forbidden through it, its cancel is taken (issue 44 item 6)")
    func posterCannotApprove() async throws {
        let (daemon, secrets) = try await Self.start()
        defer { daemon.cleanup() }
        let lead = try AlertdClient(url: daemon.baseURL, token: secrets["lead"])
        let alice = try AlertdClient(url: daemon.baseURL, token: secrets["alice"])
        let posted = try await lead.post(NewAlert(title: "Deploy build 77?", buttons: Self.deploy, quorum: 2), to: "ops")
        #expect(posted.postedBy == "lead")
        #expect(try await alice.alert(on: "ops", id: posted.id).postedBy == "lead")
        await #expect {
            _ = try await lead.choose(on: "ops", id: posted.id, button: "Deploy")
        } throws: { error in
            let error = error as? AlertdError
            return error?.code == .forbidden && error?.problem?.detail.contains("the poster cannot approve its own alert") == true
        }
        #expect(try await alice.alert(on: "ops", id: posted.id).votes.isEmpty, "the refused vote was not counted")
        let cancelled = try await lead.choose(on: "ops", id: posted.id, button: "Cancel")
        #expect(cancelled.state == .answered && cancelled.result?.cancelled == true)
    }

    @Test("present(…, quorum: 2) waits through a vote and returns the decision with both votes; choose returns the alert still displayed")
    func sdkPresent() async throws {
        let (daemon, secrets) = try await Self.start()
        defer { daemon.cleanup() }
        let deployer = try AlertdClient(url: daemon.baseURL, token: secrets["deployer"])
        let alice = try AlertdClient(url: daemon.baseURL, token: secrets["alice"])
        let bob = try AlertdClient(url: daemon.baseURL, token: secrets["bob"])
        async let decision = deployer.present(on: "ops", title: "Deploy build 1234?", buttons: Self.deploy, quorum: 2)
        let shown = try await Self.displayed(daemon, secrets["alice"])
        #expect(shown.quorum == 2 && shown.votes.isEmpty)

        let voted = try await alice.choose(on: "ops", id: shown.id, button: "Deploy")
        #expect(voted.state == .displayed && voted.result == nil && !voted.isTerminal)
        #expect(voted.votes.map(\.decidedBy) == ["alice"] && voted.votes.map(\.button) == ["Deploy"])
        // The same vote again is a safe retry; another button after voting is already-voted, with the alert.
        #expect(try await alice.choose(on: "ops", id: shown.id, button: "Deploy").votes.count == 1)
        await #expect {
            _ = try await alice.choose(on: "ops", id: shown.id, button: "Cancel")
        } throws: { error in
            let error = error as? AlertdError
            return error?.code == .alreadyVoted && error?.problem?.alert?.votes.count == 1
        }

        // A reader that shows no vote yet learns of alice's at once (votes=0), not after its wait.
        let started = ContinuousClock.now
        let seen = try await bob.current(on: "ops", wait: 30, after: shown.id, votes: 0)
        #expect(seen?.votes.map(\.decidedBy) == ["alice"])
        #expect(ContinuousClock.now - started < .seconds(15), "votes=0 against one vote answers at once")

        let answered = try await bob.choose(on: "ops", id: shown.id, button: "Deploy")
        #expect(answered.state == .answered && answered.result?.decidedBy == "bob")
        let result = try await decision
        #expect(result.outcome == .button("Deploy") && result.decidedBy == "bob")
        #expect(result.chosenBy == ["alice", "bob"] && result.votes.map(\.buttonIndex) == [0, 0])
        #expect("\(result)" == "button Deploy by alice, bob")
    }

    @Test("present(…, quorum: 3) is stopped by one cancel: the decision names who, with the vote before it")
    func sdkVeto() async throws {
        let (daemon, secrets) = try await Self.start()
        defer { daemon.cleanup() }
        let deployer = try AlertdClient(url: daemon.baseURL, token: secrets["deployer"])
        async let decision = deployer.presentForDecision(NewAlert(title: "Drop db-3?", buttons: Self.deploy, quorum: 3), on: "ops")
        let shown = try await Self.displayed(daemon, secrets["alice"])
        _ = try await AlertdClient(url: daemon.baseURL, token: secrets["alice"]).choose(on: "ops", id: shown.id, button: "Deploy")
        _ = try await AlertdClient(url: daemon.baseURL, token: secrets["carol"]).choose(on: "ops", id: shown.id, button: "Cancel")
        let result = try await decision
        #expect(result.outcome == .cancel("Cancel") && result.decidedBy == "carol" && result.chosenBy == ["carol"])
        #expect(result.votes.map { "\($0.decidedBy ?? "-"):\($0.button)" } == ["alice:Deploy", "carol:Cancel"])
    }

    @Test("alertctl post --quorum 2 --wait waits through a vote; choose says a vote is a vote, then the decision; list, get show votes")
    func alertctl() async throws {
        let (daemon, secrets) = try await Self.start()
        defer { daemon.cleanup() }
        let waiting = try await Alertctl(url: daemon.baseURL, token: secrets["deployer"]).start([
            "post", "ops", "--title", "Deploy build 1234?", "--button", "Deploy", "--cancel", "Cancel", "--quorum", "2", "--wait",
        ])
        let shown = try await Self.displayed(daemon, secrets["alice"])
        #expect(shown.quorum == 2)

        let alice = Alertctl(url: daemon.baseURL, token: secrets["alice"])
        let vote = try await alice.run("choose", "ops", shown.id, "Deploy")
        #expect(vote.status == 0, "\(vote)")
        let lines = vote.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(vote.stdout)")
        let first = String(lines.first ?? "")
        #expect(first.contains("displayed") && first.hasSuffix("(1 of 2 approvals — alice: Deploy)"), "\(vote.stdout)")
        #expect(lines.last?.hasPrefix("voted: not decided yet; it is answered when 2 deciders choose the same button") == true)
        // Issue 45: the same vote again changes nothing, and says so instead of "voted".
        let repeated = try await alice.run("choose", "ops", shown.id, "Deploy")
        #expect(repeated.status == 0, "\(repeated)")
        let repeatLines = repeated.stdout.split(separator: "\n")
        #expect(repeatLines.first?.hasSuffix("(1 of 2 approvals — alice: Deploy)") == true, "\(repeated.stdout)")
        #expect(
            repeatLines.last?.hasPrefix("already voted: your vote for Deploy of ") == true
                && repeatLines.last?.contains("stands, and nothing new was recorded; not decided yet") == true, "\(repeated.stdout)")
        let again = try await alice.run("choose", "ops", "--current", "Cancel")
        #expect(again.status == 3 && again.stderr.contains("Already voted"), "\(again)")
        let listed = try await alice.run("list", "ops")
        #expect(listed.stdout.contains("(1 of 2 approvals — alice: Deploy)"), "\(listed)")
        let details = try await alice.run("get", "ops", shown.id)
        #expect(details.stdout.contains("votes:     1 of 2 approvals — alice: Deploy"), "\(details)")

        let decided = try await Alertctl(url: daemon.baseURL, token: secrets["bob"]).run("choose", "ops", "--current", "Deploy")
        #expect(decided.status == 0 && decided.stdout.contains("answered") && decided.stdout.contains("→ Deploy"), "\(decided)")
        #expect(decided.stdout.contains("(2 of 2 approvals — alice: Deploy, bob: Deploy)") && !decided.stdout.contains("voted:"))
        let result = try await waiting.finish()
        #expect(result.status == 0 && result.stdout == "Deploy\n", "\(result)")
        let decision = try await alice.run("get", "ops", shown.id)
        #expect(decision.stdout.contains("result:    answered: Deploy by alice and bob"), "\(decision)")
    }

    @Test("alertctl post --quorum: a veto exits 1; above 1 without tokens the daemon refuses it (3); out of 1–10 too")
    func alertctlRefusalsAndVeto() async throws {
        let open = try await Daemon.start()
        defer { open.cleanup() }
        let anonymous = try await Alertctl(url: open.baseURL).run(
            "post", "ops", "--title", "Deploy?", "--button", "Deploy", "--quorum", "2")
        #expect(anonymous.status == 3 && anonymous.stderr.contains("quorum"), "\(anonymous)")

        let (daemon, secrets) = try await Self.start()
        defer { daemon.cleanup() }
        let deployer = Alertctl(url: daemon.baseURL, token: secrets["deployer"])
        let tooMany = try await deployer.run("post", "ops", "--title", "Deploy?", "--button", "Deploy", "--quorum", "11")
        #expect(tooMany.status == 3 && tooMany.stderr.contains("quorum"), "\(tooMany)")
        let waiting = try await deployer.start([
            "post", "ops", "--title", "Deploy?", "--button", "Deploy", "--cancel", "Stop", "--quorum", "2", "--wait",
        ])
        let shown = try await Self.displayed(daemon, secrets["alice"])
        let veto = try await Alertctl(url: daemon.baseURL, token: secrets["carol"]).run("choose", "ops", shown.id, "Stop")
        #expect(veto.status == 0 && veto.stdout.contains("→ Stop") && !veto.stdout.contains("voted:"), "\(veto)")
        let result = try await waiting.finish()
        #expect(result.status == 1 && result.stdout == "Stop\n", "\(result)")
    }

    @Test("alertctl watch shows the votes as others cast them, its own key is a vote, then its keys choose nothing until the decision")
    func watch() async throws {
        let (daemon, secrets) = try await Self.start()
        defer { daemon.cleanup() }
        let deployer = try AlertdClient(url: daemon.baseURL, token: secrets["deployer"])
        let posted = try await deployer.post(
            NewAlert(title: "Deploy build 1234?", buttons: [.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")], quorum: 3),
            to: "ops")
        let tmux = try await TmuxSession.start(
            [try Alertctl.binary(), "watch", "ops"], environment: ["ALERTD_URL": daemon.baseURL, "ALERTD_TOKEN": secrets["alice"]!])
        defer { tmux.kill() }
        try await tmux.awaitScreen { $0.contains("Deploy build 1234?") && $0.contains("0 of 3 approvals") && $0.contains("[1] Deploy") }

        // Bob votes elsewhere: the console shows it without a key pressed.
        _ = try await AlertdClient(url: daemon.baseURL, token: secrets["bob"]).choose(on: "ops", id: posted.id, button: "Deploy")
        try await tmux.awaitScreen { $0.contains("1 of 3 approvals — bob: Deploy") }

        // Alice's key is her vote.
        try await tmux.send("1")
        try await tmux.awaitScreen {
            $0.contains("2 of 3 approvals — bob: Deploy, alice: Deploy") && $0.contains("You voted Deploy; waiting for the others.")
        }
        #expect(try await deployer.alert(on: "ops", id: posted.id).state == .displayed)
        #expect(!(await tmux.screen()).contains("[1]"), "no key offers a button once voted")
        try await tmux.send("Escape")
        try await tmux.awaitScreen { $0.contains("you voted Deploy: a vote is not changed; nothing was chosen") }
        #expect(try await deployer.alert(on: "ops", id: posted.id).votes.count == 2)

        // Carol completes it: the console says who decided, all three.
        _ = try await AlertdClient(url: daemon.baseURL, token: secrets["carol"]).choose(on: "ops", id: posted.id, button: "Deploy")
        try await tmux.awaitScreen {
            $0.contains("“Deploy build 1234?” was answered “Deploy” by bob, alice and carol") && $0.contains("Nothing displayed")
        }
    }
}
