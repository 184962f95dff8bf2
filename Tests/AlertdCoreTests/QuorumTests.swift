import AlertdCore
import AlertdWire
import Testing

/// A deploy approval: "Deploy" (default), "Roll back" (destructive), "Cancel" (cancel).
private func approval(quorum: Int, expiresIn: Double? = nil) -> NewAlert {
    NewAlert(
        title: "Deploy build 1234?",
        buttons: [Button(title: "Deploy"), Button(title: "Roll back", style: .destructive), Button(title: "Cancel", style: .cancel)],
        expiresIn: expiresIn, quorum: quorum)
}

/// The votes' deciders and buttons, `alice:Deploy`, in order.
private func ballot(_ votes: [Vote]) -> [String] { votes.map { "\($0.decidedBy ?? "-"):\($0.button)" } }

/// SPEC §10, row by row, on the board with a manual clock.
@Suite("Alerts that need several people (quorum)")
struct QuorumTests {
    @Test("With quorum N a choice is a vote: appended, the alert stays displayed, saved and told as a display change, decided nothing")
    func aVoteIsSaved() throws {
        let clock = ManualClock(start)
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), now: clock.now())
        #expect(alert.quorum == 2 && alert.votes.isEmpty)
        clock.advance(seconds: 3)
        let (voted, change) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: clock.now())
        #expect(voted.state == .displayed)
        #expect(voted.result == nil && voted.decidedAt == nil)
        #expect(voted.votes == [Vote(decidedBy: "alice", button: "Deploy", buttonIndex: 0, at: at(3000))])
        // Both stores persist what a change saves; the display's readers learn of the vote.
        #expect(change.saved == [voted])
        #expect(change.replaced(alert.id) == .some(alert))
        #expect(change.displayChanged == ["ops"])
        // Nothing decided: no waiter of the alert wakes, no callback is written.
        #expect(change.decided.isEmpty)
        #expect(board.displayed(on: "ops") == voted)
        #expect(board.position(of: voted) == 0)
        #expect(board.pendingCount(on: "ops") == 1)
    }

    @Test(
        "The poster cannot approve its own alert (§10): a vote of its name for a non-cancel button is forbidden and changes nothing",
        arguments: ["Deploy", "Roll back"])
    func posterCannotApprove(button: String) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), by: "deployer", now: at(0))
        #expect(alert.postedBy == "deployer")
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title(button), for: alert.id, on: "ops", by: "deployer", now: at(1))
        }
        #expect(error?.code == .forbidden)
        #expect(error?.detail.contains("the poster cannot approve its own alert") == true, "\(String(describing: error))")
        #expect(board.alert(alert.id) == alert, "the refused vote changed the alert")
        // Two others still decide it.
        _ = try board.choose(.title(button), for: alert.id, on: "ops", by: "alice", now: at(2))
        let (decided, _) = try board.choose(.title(button), for: alert.id, on: "ops", by: "bob", now: at(3))
        #expect(decided.state == .answered && decided.result?.button == button)
    }

    @Test("The poster may still stop it: its cancel vote answers it, cancelled; and withdraw it")
    func posterMayCancel() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), by: "deployer", now: at(0))
        let (cancelled, _) = try board.choose(.title("Cancel"), for: alert.id, on: "ops", by: "deployer", now: at(1))
        #expect(cancelled.state == .answered && cancelled.result?.cancelled == true && cancelled.result?.decidedBy == "deployer")
        let second = try board.postCommitted(approval(quorum: 2), by: "deployer", now: at(2))
        let (withdrawn, _) = try board.withdraw(second.id, on: "ops", by: "deployer", now: at(3))
        #expect(withdrawn.state == .withdrawn)
    }

    @Test("With quorum 1 the poster answers like anyone: four eyes are what a quorum asks for")
    func posterOfQuorumOne() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 1), by: "deployer", now: at(0))
        let (answered, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "deployer", now: at(1))
        #expect(answered.state == .answered && answered.result?.decidedBy == "deployer")
    }

    @Test("Votes are kept in the order they were made")
    func commitOrder() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 4), now: at(0))
        for (n, (decider, button)) in [("carol", 1), ("alice", 0), ("bob", 1)].enumerated() {
            _ = try board.choose(.index(button), for: alert.id, on: "ops", by: decider, now: at(Int64(n + 1) * 100))
        }
        let votes = try #require(board.alert(alert.id)).votes
        #expect(ballot(votes) == ["carol:Roll back", "alice:Deploy", "bob:Roll back"])
        #expect(votes.map(\.at) == [at(100), at(200), at(300)])
    }

    @Test("N different deciders on one button answer it: that button, the completing decider, every vote in the result")
    func quorumReached() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), now: at(0))
        _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(10))
        let (answered, change) = try board.choose(.index(0), for: alert.id, on: "ops", by: "bob", now: at(20))
        #expect(answered.state == .answered)
        #expect(answered.decidedAt == at(20))
        let result = try #require(answered.result)
        #expect(result.outcome == .answered && result.button == "Deploy" && result.buttonIndex == 0 && !result.cancelled)
        #expect(result.decidedBy == "bob")
        #expect(ballot(result.votes) == ["alice:Deploy", "bob:Deploy"])
        #expect(result.votes == answered.votes)
        #expect(change.decided == [answered])
        #expect(change.displayChanged == ["ops"])
        #expect(board.displayed(on: "ops") == nil)
    }

    @Test("Votes for other buttons count for those buttons")
    func otherButtonsCount() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), now: at(0))
        _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(1))
        let (stillOpen, _) = try board.choose(.title("Roll back"), for: alert.id, on: "ops", by: "bob", now: at(2))
        #expect(stillOpen.state == .displayed, "one vote each: no button has two")
        let (answered, _) = try board.choose(.title("Roll back"), for: alert.id, on: "ops", by: "carol", now: at(3))
        #expect(answered.result?.button == "Roll back" && answered.result?.decidedBy == "carol")
        #expect(ballot(answered.result?.votes ?? []) == ["alice:Deploy", "bob:Roll back", "carol:Roll back"])
    }

    @Test("One person can stop it: a vote for the cancel-style button answers it at once, cancelled, whatever the quorum")
    func cancelVetoes() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 10), now: at(0))
        _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(1))
        let (vetoed, change) = try board.choose(.title("Cancel"), for: alert.id, on: "ops", by: "mallory", now: at(2))
        #expect(vetoed.state == .answered)
        #expect(vetoed.result?.cancelled == true && vetoed.result?.button == "Cancel" && vetoed.result?.decidedBy == "mallory")
        #expect(ballot(vetoed.result?.votes ?? []) == ["alice:Deploy", "mallory:Cancel"])
        #expect(change.decided.map(\.id) == [alert.id])
    }

    @Test("The same decider choosing the same button again changes nothing (a safe retry)")
    func sameVoteAgain() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 3), now: at(0))
        let (voted, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(1))
        let (again, change) = try board.choose(.index(0), for: alert.id, on: "ops", by: "alice", now: at(2))
        #expect(change.isEmpty && change.saved.isEmpty && change.displayChanged.isEmpty && change.decided.isEmpty)
        #expect(again == voted)
        #expect(board.alert(alert.id) == voted)
    }

    @Test("Another button after voting is already-voted, with the alert, and changes nothing", arguments: ["Roll back", "Cancel"])
    func anotherButtonAfterVoting(button: String) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), now: at(0))
        let (voted, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(1))
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title(button), for: alert.id, on: "ops", by: "alice", now: at(2))
        }
        #expect(error?.code == .alreadyVoted)
        #expect(error?.alert == voted)
        #expect(BoardError.Code.alreadyVoted.rawValue == "already-voted")
        #expect(board.alert(alert.id) == voted)
    }

    @Test("Without tokens every choice is the one anonymous decider's: it counts once")
    func anonymousIsOneDecider() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), now: at(0))
        _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: nil, now: at(1))
        let (again, change) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: nil, now: at(2))
        #expect(change.isEmpty && again.state == .displayed && again.votes.count == 1)
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title("Roll back"), for: alert.id, on: "ops", by: nil, now: at(3))
        }
        #expect(error?.code == .alreadyVoted)
    }

    @Test("A vote for a queued alert is not-displayed")
    func queuedAlert() throws {
        var board = AlertBoard()
        _ = try board.postCommitted(approval(quorum: 2), now: at(0))
        let queued = try board.postCommitted(approval(quorum: 2), now: at(1))
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title("Deploy"), for: queued.id, on: "ops", by: "alice", now: at(2))
        }
        #expect(error?.code == .notDisplayed)
        #expect(board.alert(queued.id)?.votes == [])
    }

    @Test("Quorum 1 is answered by the one choice, which is its one vote")
    func quorumOne() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(question("Restart?"), now: at(0))
        #expect(alert.quorum == 1)
        let (answered, change) = try board.choose(.title("Yes"), for: alert.id, on: "ops", by: "ops-console", now: at(5))
        #expect(answered.state == .answered && answered.result?.decidedBy == "ops-console")
        let vote = Vote(decidedBy: "ops-console", button: "Yes", buttonIndex: 0, at: at(5))
        #expect(answered.votes == [vote] && answered.result?.votes == [vote])
        #expect(change.decided == [answered])
    }

    @Test("After the decision: its button again is the alert; the decider's own losing vote again too; anything else already-decided")
    func afterTheDecision() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 2), now: at(0))
        _ = try board.choose(.title("Roll back"), for: alert.id, on: "ops", by: "carol", now: at(1))
        _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(2))
        let (answered, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "bob", now: at(3))
        // Held in memory until the store forgets it.
        for (decider, button) in [("bob", "Deploy"), ("dave", "Deploy"), ("carol", "Roll back")] {
            let (again, change) = try board.choose(.title(button), for: alert.id, on: "ops", by: decider, now: at(4))
            #expect(change.isEmpty && again == answered, "\(decider) \(button)")
        }
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title("Roll back"), for: alert.id, on: "ops", by: "dave", now: at(4))
        }
        #expect(error?.code == .alreadyDecided && error?.alert == answered)
        // The same rules from the stored alert, once forgotten.
        #expect(try AlertBoard.repeatChoice(.title("Deploy"), on: answered, by: "dave") == answered)
        #expect(try AlertBoard.repeatChoice(.title("Roll back"), on: answered, by: "carol") == answered)
        let stored = #expect(throws: BoardError.self) { try AlertBoard.repeatChoice(.title("Roll back"), on: answered, by: "alice") }
        #expect(stored?.code == .alreadyDecided)
    }

    @Test("Withdraw and expiry work as for any alert, and keep the votes", arguments: [false, true])
    func withdrawAndExpiry(expire: Bool) throws {
        let clock = ManualClock(start)
        var board = AlertBoard()
        let alert = try board.postCommitted(approval(quorum: 3, expiresIn: 60), now: clock.now())
        _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: clock.now())
        #expect(board.nextDeadline == at(60_000), "a vote leaves the expiry as it was")
        let ended: Alert
        if expire {
            clock.advance(seconds: 60)
            ended = try #require(board.fireDeadlines(now: clock.now()).decided.first)
            #expect(ended.state == .expired && ended.result?.decidedBy == nil)
        } else {
            clock.advance(seconds: 1)
            ended = try board.withdraw(alert.id, on: "ops", by: "deployer", now: clock.now()).0
            #expect(ended.state == .withdrawn && ended.result?.decidedBy == "deployer")
        }
        #expect(ballot(ended.votes) == ["alice:Deploy"] && ended.result?.votes == ended.votes)
        #expect(ended.result?.button == nil)
    }

    @Test("A vote on a stack's displayed alert stays with it while a newer one covers it")
    func coveredKeepsVotes() throws {
        var board = AlertBoard(settings: QueueSettings(standard: ClientSettings(policy: .stack)))
        let alert = try board.postCommitted(approval(quorum: 2), now: at(0))
        _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(1))
        let cover = try board.postCommitted(question("urgent"), now: at(2))
        #expect(board.alert(alert.id)?.state == .queued)
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "bob", now: at(3))
        }
        #expect(error?.code == .notDisplayed)
        let (_, change) = try board.choose(.title("Yes"), for: cover.id, on: "ops", by: "alice", now: at(4))
        board.settle(change)
        let shown = try #require(board.displayed(on: "ops"))
        #expect(shown.id == alert.id && ballot(shown.votes) == ["alice:Deploy"])
        let (answered, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "bob", now: at(5))
        #expect(answered.state == .answered && answered.result?.decidedBy == "bob")
    }

    @Test("Two instances' boards voting in turn, each merging what the other committed, count every vote and answer once")
    func votesMergeAcrossBoards() throws {
        var a = AlertBoard()
        var b = AlertBoard()
        let (alert, posted) = try a.post(approval(quorum: 3), to: "ops", now: at(0))
        a.settle(posted)
        b.settle(b.merge(committedElsewhere: posted.saved, on: "ops", now: at(0)))
        // Each vote is made on the board that holds what the other committed (a flush merges
        // it under the client's lock before it applies its own change).
        let (_, first) = try a.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(1))
        a.settle(first)
        #expect(b.merge(committedElsewhere: first.saved, on: "ops", now: at(1)).isEmpty)
        #expect(b.alert(alert.id)?.votes == a.alert(alert.id)?.votes)
        let (_, second) = try b.choose(.title("Deploy"), for: alert.id, on: "ops", by: "bob", now: at(2))
        b.settle(second)
        a.settle(a.merge(committedElsewhere: second.saved, on: "ops", now: at(2)))
        #expect(ballot(a.alert(alert.id)?.votes ?? []) == ["alice:Deploy", "bob:Deploy"])
        let (answered, third) = try a.choose(.title("Deploy"), for: alert.id, on: "ops", by: "carol", now: at(3))
        #expect(answered.state == .answered && ballot(answered.votes) == ["alice:Deploy", "bob:Deploy", "carol:Deploy"])
        #expect(third.decided.count == 1)
        a.settle(third)
        b.settle(b.merge(committedElsewhere: third.saved, on: "ops", now: at(3)))
        #expect(b.displayed(on: "ops") == nil && b.pendingCount(on: "ops") == 0)
        // A late retry of bob's vote on the instance that no longer holds it: the stored alert's rules.
        #expect(try AlertBoard.repeatChoice(.title("Deploy"), on: answered, by: "bob") == answered)
    }
}
