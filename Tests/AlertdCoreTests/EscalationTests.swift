import AlertdCore
import AlertdWire
import Testing

/// A question to "ops" that escalates to "ops-lead" after 5 minutes, then to "cto" after 15.
private func chained(_ title: String = "Deploy build 1234?", priority: Int = 0, quorum: Int? = nil) -> NewAlert {
    NewAlert(
        title: title, buttons: [Button(title: "Deploy"), Button(title: "Cancel", style: .cancel)], priority: priority,
        expiresIn: 3600, quorum: quorum,
        escalation: [EscalationStep(after: 300, to: "ops-lead"), EscalationStep(after: 900, to: "cto")])
}

private let fiveMinutes: Int64 = 300_000
private let fifteenMinutes: Int64 = 900_000

/// SPEC §12 on the board, with a manual clock: one alert, pending on several clients' queues.
@Suite("Escalation: an alert nobody answers is also queued on another client")
struct EscalationTests {
    @Test(
        "A step is a deadline: not a millisecond early; then the alert is also queued on the step's client, where an empty queue displays it, and stays on its own"
    )
    func stepTakesTheAlertToAnotherClient() throws {
        var board = AlertBoard()
        let blocker = try board.postCommitted(question("blocker"), now: at(0))
        let alert = try board.postCommitted(chained(), now: at(1))
        #expect(alert.escalation.map(\.to) == ["ops-lead", "cto"])
        #expect(board.nextDeadline == at(1 + fiveMinutes))
        #expect(board.fireDeadlines(now: at(fiveMinutes)).isEmpty)

        let change = board.fireDeadlines(now: at(1 + fiveMinutes))
        #expect(change.escalated == [EscalationTaken(id: alert.id, step: 0, client: "ops-lead", at: at(1 + fiveMinutes))])
        #expect(change.newClients == ["ops-lead"])
        #expect(change.displayChanged == ["ops-lead"])
        #expect(change.decided.isEmpty)
        let saved = try #require(change.saved.first { $0.id == alert.id })
        #expect(saved.escalatedTo == [Escalation(client: "ops-lead", at: at(1 + fiveMinutes), displayedAt: at(1 + fiveMinutes))])
        #expect(change.replaced(alert.id) == .some(alert))
        // One alert, two queues: still queued behind the blocker on its own, displayed on ops-lead.
        #expect(board.titles(on: "ops") == ["blocker", "Deploy build 1234?"])
        #expect(board.displayed(on: "ops")?.id == blocker.id)
        let there = try #require(board.displayed(on: "ops-lead"))
        #expect(there.id == alert.id && there.client == "ops" && there.state == .displayed)
        #expect(there.displayedAt == at(1 + fiveMinutes))
        #expect(board.alert(alert.id)?.state == .queued)
        #expect(board.position(of: saved) == 1)
        #expect(board.position(of: saved, on: "ops-lead") == 0)
        #expect(board.pendingCount(on: "ops-lead") == 1)
        #expect(board.pendingTotal == 2)
        #expect(board.clients == ["ops", "ops-lead"])
        // The second step is the next deadline.
        #expect(board.nextDeadline == at(1 + fifteenMinutes))
    }

    @Test("Steps are taken in order, each once; one due while nobody looked fires at its own time")
    func stepsInOrder() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(chained(), now: at(0))
        // Both due at once (alertd was down): each at its own time.
        let change = board.fireDeadlines(now: at(fifteenMinutes + 60_000))
        #expect(change.escalated.map(\.client) == ["ops-lead", "cto"])
        #expect(change.escalated.map(\.at) == [at(fiveMinutes), at(fifteenMinutes)])
        #expect(board.alert(alert.id)?.escalatedTo.map(\.client) == ["ops-lead", "cto"])
        #expect(board.displayed(on: "cto")?.displayedAt == at(fifteenMinutes))
        #expect(board.fireDeadlines(now: at(3_000_000)).isEmpty, "a step fired again")
        #expect(board.nextDeadline == at(3_600_000), "the expiry is the last deadline")
    }

    @Test("A stack client receiving an escalated alert of higher priority shows it at once; the one it covered goes back to queued")
    func stackShowsAHigherEscalatedAlert() throws {
        var board = AlertBoard(settings: QueueSettings(clients: ["ops-lead": ClientSettings(policy: .stack)]))
        let local = try board.postCommitted(question("lead's own", priority: 5), to: "ops-lead", now: at(0))
        _ = try board.postCommitted(question("blocker"), now: at(0))
        let alert = try board.postCommitted(chained(priority: 50), now: at(1))
        let change = board.fireDeadlines(now: at(1 + fiveMinutes))
        #expect(board.displayed(on: "ops-lead")?.id == alert.id)
        let covered = try #require(change.saved.first { $0.id == local.id })
        #expect(covered.state == .queued && covered.displayedAt == nil)
        #expect(board.titles(on: "ops-lead") == ["Deploy build 1234?", "lead's own"])
        // Its own client's queue did not move.
        #expect(board.titles(on: "ops") == ["blocker", "Deploy build 1234?"])
    }

    @Test("A fifo client queues an escalated alert behind its displayed one, as if posted when it arrived")
    func fifoQueuesIt() throws {
        var board = AlertBoard()
        _ = try board.postCommitted(question("lead's first"), to: "ops-lead", now: at(0))
        _ = try board.postCommitted(question("blocker"), now: at(0))
        let alert = try board.postCommitted(chained(priority: 50), now: at(1))
        // Posted there after the alert was created, before it escalated: ahead of it among equal priorities.
        _ = try board.postCommitted(question("lead's second", priority: 50), to: "ops-lead", now: at(10))
        _ = board.fireDeadlines(now: at(1 + fiveMinutes))
        _ = try board.postCommitted(question("lead's third", priority: 50), to: "ops-lead", now: at(1 + fiveMinutes + 5))
        #expect(board.titles(on: "ops-lead") == ["lead's first", "lead's second", "Deploy build 1234?", "lead's third"])
        let there = try #require(board.pending(on: "ops-lead").first { $0.id == alert.id })
        #expect(there.state == .queued && there.displayedAt == nil)
        #expect(board.position(of: there, on: "ops-lead") == 2)
    }

    @Test("A stack client with its own alert of equal priority: the newer arrival is displayed (stack: newest first among equals)")
    func stackEqualPriority() throws {
        var board = AlertBoard(settings: QueueSettings(clients: ["ops-lead": ClientSettings(policy: .stack)]))
        _ = try board.postCommitted(question("blocker"), now: at(0))
        let alert = try board.postCommitted(chained(), now: at(1))
        let local = try board.postCommitted(question("lead's own"), to: "ops-lead", now: at(100))
        _ = board.fireDeadlines(now: at(1 + fiveMinutes))
        #expect(board.displayed(on: "ops-lead")?.id == alert.id)
        let later = try board.postCommitted(question("lead's later"), to: "ops-lead", now: at(1 + fiveMinutes + 1))
        #expect(board.displayed(on: "ops-lead")?.id == later.id)
        #expect(board.pending(on: "ops-lead").map(\.id) == [later.id, alert.id, local.id])
    }

    @Test(
        "Answered on the client it escalated to: decided everywhere, every display it held freed, one result",
        arguments: ["ops", "ops-lead"])
    func decisionOnEitherClient(on client: String) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(chained(), now: at(0))
        _ = try board.postCommitted(question("lead's next"), to: "ops-lead", now: at(1))
        _ = try board.postCommitted(question("ops's next"), now: at(2))
        _ = board.fireDeadlines(now: at(fiveMinutes))
        // Displayed on its own client (first there) and queued on ops-lead behind the lead's alert...
        #expect(board.displayed(on: "ops")?.id == alert.id)
        #expect(board.displayed(on: "ops-lead")?.title == "lead's next")
        if client == "ops-lead" {
            // ... so ops-lead cannot answer it yet: it is not displayed there.
            let error = #expect(throws: BoardError.self) {
                try board.choose(.title("Deploy"), for: alert.id, on: "ops-lead", by: "lead", now: at(fiveMinutes + 1))
            }
            #expect(error?.code == .notDisplayed)
            #expect(error?.detail.contains("displayed on ops") == true, "\(String(describing: error))")
            let leadsNext = try #require(board.displayed(on: "ops-lead"))
            let (done, freed) = try board.choose(.title("Yes"), for: leadsNext.id, on: "ops-lead", by: "lead", now: at(fiveMinutes + 2))
            board.settle(freed)
            #expect(done.state == .answered)
            #expect(board.displayed(on: "ops-lead")?.id == alert.id, "the escalated alert is next on ops-lead")
        }
        let (answered, change) = try board.choose(.title("Deploy"), for: alert.id, on: client, by: "lead", now: at(fiveMinutes + 10))
        #expect(answered.state == .answered && answered.result?.button == "Deploy" && answered.result?.decidedBy == "lead")
        #expect(change.decided.map(\.id) == [alert.id])
        board.settle(change)
        #expect(board.displayed(on: "ops")?.title == "ops's next")
        if client == "ops-lead" {
            // Displayed on both when answered: both displays freed.
            #expect(Set(change.displayChanged) == ["ops", "ops-lead"])
            #expect(board.displayed(on: "ops-lead") == nil)
            #expect(board.pendingCount(on: "ops-lead") == 0)
            #expect(board.pendingTotal == 1)
        } else {
            // Queued on ops-lead when answered: out of its queue, its display unchanged.
            #expect(change.displayChanged == ["ops"])
            #expect(board.displayed(on: "ops-lead")?.title == "lead's next")
            #expect(board.titles(on: "ops-lead") == ["lead's next"])
            #expect(board.pendingTotal == 2)
        }
        // Its later step is never taken.
        #expect(board.fireDeadlines(now: at(fifteenMinutes)).escalated.isEmpty)
        #expect(!board.knows(client: "cto"))
    }

    @Test("A decision on a client the alert is not on is not-found, even with the id")
    func notOnThatClient() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(chained(), now: at(0))
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title("Deploy"), for: alert.id, on: "ops-lead", by: "lead", now: at(1))
        }
        #expect(error?.code == .notFound)
        _ = board.fireDeadlines(now: at(fiveMinutes))
        #expect(throws: BoardError.self) { try board.withdraw(alert.id, on: "cto", by: nil, now: at(fiveMinutes + 1)) }
    }

    @Test("Withdrawn through either client while escalated: gone from both queues", arguments: ["ops", "ops-lead"])
    func withdrawDuringEscalation(through client: String) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(chained(), now: at(0))
        _ = board.fireDeadlines(now: at(fiveMinutes))
        let (withdrawn, change) = try board.withdraw(alert.id, on: client, by: "deployer", now: at(fiveMinutes + 1))
        #expect(withdrawn.state == .withdrawn && withdrawn.result?.decidedBy == "deployer")
        #expect(Set(change.displayChanged) == ["ops", "ops-lead"])
        board.settle(change)
        #expect(board.pendingCount(on: "ops") == 0 && board.pendingCount(on: "ops-lead") == 0)
        #expect(board.fireDeadlines(now: at(3_600_000)).isEmpty, "a withdrawn alert's step or expiry fired")
    }

    @Test("Expiry during escalation: it expires once, from every queue, and the next alert is displayed on each")
    func expiryDuringEscalation() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(
            NewAlert(
                title: "short", buttons: [Button(title: "OK")], expiresIn: 600, escalation: [EscalationStep(after: 60, to: "ops-lead")]),
            now: at(0))
        _ = try board.postCommitted(question("ops next"), now: at(1))
        _ = board.fireDeadlines(now: at(60_000))
        _ = try board.postCommitted(question("lead next"), to: "ops-lead", now: at(60_001))
        let change = board.fireDeadlines(now: at(600_000))
        #expect(change.decided.map(\.id) == [alert.id])
        #expect(change.decided.first?.state == .expired)
        #expect(Set(change.displayChanged) == ["ops", "ops-lead"])
        board.settle(change)
        #expect(board.displayed(on: "ops")?.title == "ops next")
        #expect(board.displayed(on: "ops-lead")?.title == "lead next")
    }

    @Test("Quorum votes cast on two clients count once per decider; the completing vote answers it everywhere")
    func quorumAcrossClients() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(chained(quorum: 2), by: "deployer", now: at(0))
        _ = board.fireDeadlines(now: at(fiveMinutes))
        // Displayed on both: each shows the votes.
        let (first, voted) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", now: at(fiveMinutes + 1))
        #expect(first.state == .displayed && first.votes.count == 1)
        #expect(Set(voted.displayChanged) == ["ops", "ops-lead"])
        // The same decider again through the other client: a safe retry, not a second vote.
        let (again, nothing) = try board.choose(.title("Deploy"), for: alert.id, on: "ops-lead", by: "alice", now: at(fiveMinutes + 2))
        #expect(nothing.saved.isEmpty && again.votes.count == 1)
        #expect(again.state == .displayed, "seen from ops-lead, where it is displayed")
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title("Cancel"), for: alert.id, on: "ops-lead", by: "alice", now: at(fiveMinutes + 3))
        }
        #expect(error?.code == .alreadyVoted)
        // The poster still may not approve it, whichever client it uses.
        #expect(throws: BoardError.self) {
            try board.choose(.title("Deploy"), for: alert.id, on: "ops-lead", by: "deployer", now: at(fiveMinutes + 4))
        }
        let (answered, change) = try board.choose(.title("Deploy"), for: alert.id, on: "ops-lead", by: "bob", now: at(fiveMinutes + 5))
        #expect(answered.state == .answered)
        #expect(answered.votes.map(\.decidedBy) == ["alice", "bob"])
        #expect(answered.result?.decidedBy == "bob")
        #expect(Set(change.displayChanged) == ["ops", "ops-lead"])
    }

    @Test("The policy: its own replaces its client's; [] turns it off; the client's steps at or past the alert's expiry are left out")
    func policyResolution() throws {
        let settings = QueueSettings(
            clients: [
                "ops": ClientSettings(escalation: [EscalationStep(after: 60, to: "ops-lead"), EscalationStep(after: 7200, to: "cto")])
            ])
        var board = AlertBoard(settings: settings)
        let byClient = try board.postCommitted(question("q", expiresIn: 3600), now: at(0))
        #expect(byClient.escalation == [EscalationStep(after: 60, to: "ops-lead")])
        var off = question("off")
        off.escalation = []
        #expect(try board.postCommitted(off, now: at(1)).escalation.isEmpty)
        var own = question("own")
        own.escalation = [EscalationStep(after: 30, to: "sre")]
        #expect(try board.postCommitted(own, now: at(2)).escalation == [EscalationStep(after: 30, to: "sre")])
        // Another client's alerts do not take ops's policy.
        #expect(try board.postCommitted(question("elsewhere"), to: "db", now: at(3)).escalation.isEmpty)
        // A reload changes the policy of alerts posted from then on, not of those pending.
        _ = board.reconfigure(QueueSettings(), now: at(4))
        #expect(board.alert(byClient.id)?.escalation == [EscalationStep(after: 60, to: "ops-lead")])
        #expect(try board.postCommitted(question("after reload"), now: at(5)).escalation.isEmpty)
    }

    @Test("A buttonless alert escalated and displayed there first is dismissed dismiss_after after that display")
    func noticeDismissedAfterItsFirstDisplay() throws {
        var board = AlertBoard()
        _ = try board.postCommitted(question("blocker"), now: at(0))
        let notice = try board.postCommitted(
            NewAlert(title: "FYI", expiresIn: 3600, dismissAfter: 5, escalation: [EscalationStep(after: 60, to: "ops-lead")]), now: at(1))
        _ = board.fireDeadlines(now: at(60_001))
        #expect(board.displayed(on: "ops-lead")?.id == notice.id)
        #expect(board.fireDeadlines(now: at(65_000)).isEmpty)
        let change = board.fireDeadlines(now: at(65_001))
        #expect(change.decided.map(\.state) == [.dismissed])
        board.settle(change)
        #expect(board.titles(on: "ops") == ["blocker"])
    }

    @Test("A board that holds some clients only neither decides nor escalates an alert pending beyond them")
    func scopedBoard() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(chained(), now: at(0))
        _ = board.fireDeadlines(now: at(fiveMinutes))
        let escalated = try #require(board.alert(alert.id))
        // What a shared store's transaction of ops-lead alone holds.
        var lead = AlertBoard()
        lead.hold(only: ["ops-lead"])
        _ = lead.restore(clients: ["ops-lead"], pending: [escalated], now: at(fiveMinutes + 1))
        #expect(!lead.holds(escalated.clients))
        #expect(lead.displayed(on: "ops-lead")?.id == alert.id)
        #expect(!lead.knows(client: "ops"), "a client it does not hold got a queue")
        #expect(throws: BoardError.self) { try lead.withdraw(alert.id, on: "ops-lead", by: nil, now: at(fiveMinutes + 2)) }
        #expect(lead.fireDeadlines(now: at(3_600_000)).isEmpty, "a partial board took a step or an expiry")
        // Held whole, it does.
        var both = AlertBoard()
        both.hold(only: ["ops", "ops-lead"])
        _ = both.restore(clients: ["ops", "ops-lead"], pending: [escalated], now: at(fiveMinutes + 1))
        #expect(both.fireDeadlines(now: at(fifteenMinutes)).isEmpty, "its step to cto, a client it does not hold, was taken")
        var all = AlertBoard()
        all.hold(only: ["ops", "ops-lead", "cto"])
        _ = all.restore(clients: ["ops", "ops-lead"], pending: [escalated], now: at(fiveMinutes + 1))
        #expect(all.fireDeadlines(now: at(fifteenMinutes)).escalated.map(\.client) == ["cto"])
    }

    @Test("Restored from a store, an escalated alert is back on every queue as it was, in each queue's order")
    func restore() throws {
        var board = AlertBoard(settings: QueueSettings(clients: ["ops-lead": ClientSettings(policy: .stack)]))
        _ = try board.postCommitted(question("blocker"), now: at(0))
        let alert = try board.postCommitted(chained(), now: at(1))
        let local = try board.postCommitted(question("lead's own"), to: "ops-lead", now: at(2))
        _ = board.fireDeadlines(now: at(fiveMinutes + 1))
        let pending = board.pending(on: "ops").map { board.alert($0.id)! } + [board.alert(local.id)!]
        var restored = AlertBoard(settings: board.settings)
        let change = restored.restore(clients: ["ops", "ops-lead"], pending: pending, now: at(fiveMinutes + 100))
        #expect(change.isEmpty, "\(change.saved)")
        #expect(restored.titles(on: "ops") == board.titles(on: "ops"))
        #expect(restored.titles(on: "ops-lead") == board.titles(on: "ops-lead"))
        #expect(restored.displayed(on: "ops-lead")?.id == alert.id)
        #expect(restored.nextDeadline == at(1 + fifteenMinutes))
        #expect(restored.pendingCount(on: "ops-lead") == 2)
    }

    @Test("Taken by a merge of what another instance committed: the alert enters and leaves a client's queue")
    func merge() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(chained(), now: at(0))
        _ = board.fireDeadlines(now: at(fiveMinutes))
        let escalated = try #require(board.alert(alert.id))
        var lead = AlertBoard()
        lead.hold(only: ["ops-lead"])
        _ = lead.restore(clients: ["ops-lead"], pending: [], now: at(0))
        _ = lead.merge(committedElsewhere: [escalated], on: "ops-lead", now: at(fiveMinutes))
        #expect(lead.displayed(on: "ops-lead")?.id == alert.id)
        let (answered, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "a", now: at(fiveMinutes + 1))
        let change = lead.merge(committedElsewhere: [answered], on: "ops-lead", now: at(fiveMinutes + 2))
        #expect(lead.displayed(on: "ops-lead") == nil)
        #expect(lead.pendingCount(on: "ops-lead") == 0)
        #expect(change.saved.isEmpty)
    }
}

@Suite("Escalation policies are checked (SPEC §12): each bad step said at its place")
struct EscalationValidationTests {
    private func problems(_ escalation: String, expiresIn: Double? = nil) -> [FieldError] {
        let body = """
            {"title": "t", "buttons": [{"title": "OK"}]\(expiresIn.map { ", \"expires_in\": \($0)" } ?? ""), "escalation": \(escalation)}
            """
        switch NewAlert.validate(try! JSONParser.parse(Array(body.utf8)), rules: AlertRules(), namedDeciders: false, client: "ops") {
        case .success: return []
        case .failure(let invalid): return invalid.errors
        }
    }

    @Test("Valid policies pass, [] and null too")
    func valid() throws {
        #expect(problems(#"[{"after": 300, "to": "ops-lead"}, {"after": 900.5, "to": "cto"}]"#).isEmpty)
        #expect(problems("[]").isEmpty)
        #expect(problems("null").isEmpty)
        let body = #"{"title": "t", "escalation": [{"after": 60, "to": "b"}]}"#
        guard
            case .success(let draft) = NewAlert.validate(try JSONParser.parse(Array(body.utf8)), rules: AlertRules(), namedDeciders: false)
        else { Issue.record("refused"); return }
        #expect(draft.escalation == [EscalationStep(after: 60, to: "b")])
    }

    @Test(
        "Each invalid step is 400 invalid-alert at its field",
        arguments: [
            (#""5m""#, "escalation", "must be an array"),
            (
                #"[{"after": 60, "to": "a"}, {"after": 120, "to": "b"}, {"after": 180, "to": "c"}, {"after": 240, "to": "d"}, {"after": 300, "to": "e"}, {"after": 360, "to": "f"}]"#,
                "escalation", "at most 5 steps"
            ),
            (#"[{"after": 300, "to": "a"}, {"after": 300, "to": "b"}]"#, "escalation[1].after", "greater than the step before"),
            (#"[{"after": 300, "to": "a"}, {"after": 60, "to": "b"}]"#, "escalation[1].after", "greater than the step before"),
            (#"[{"after": 0, "to": "a"}]"#, "escalation[0].after", "at least 0.001"),
            (#"[{"after": -5, "to": "a"}]"#, "escalation[0].after", "at least 0.001"),
            (#"[{"after": 86400, "to": "a"}]"#, "escalation[0].after", "below the alert's expiry"),
            (#"[{"after": "5m", "to": "a"}]"#, "escalation[0].after", "must be a number of seconds"),
            (#"[{"to": "a"}]"#, "escalation[0].after", "is required"),
            (#"[{"after": 60}]"#, "escalation[0].to", "is required"),
            (#"[{"after": 60, "to": "no spaces"}]"#, "escalation[0].to", "not a valid client id"),
            (#"[{"after": 60, "to": 7}]"#, "escalation[0].to", "must be a client id"),
            (#"[{"after": 60, "to": "ops"}]"#, "escalation[0].to", "the alert's own client"),
            (#"[{"after": 60, "to": "a"}, {"after": 120, "to": "a"}]"#, "escalation[1].to", "asked by an earlier step"),
            (#"[{"after": 60, "to": "a", "when": "always"}]"#, "escalation[0].when", "unknown field"),
            (#"["a"]"#, "escalation[0]", "must be an object"),
        ] as [(String, String, String)])
    func invalid(escalation: String, field: String, reason: String) throws {
        let errors = problems(escalation)
        #expect(errors.contains { $0.field == field && $0.reason.contains(reason) }, "\(errors)")
    }

    @Test("Below the alert's own expiry, not only the default one")
    func belowItsExpiry() throws {
        let errors = problems(#"[{"after": 600, "to": "a"}]"#, expiresIn: 600)
        #expect(errors.map(\.field) == ["escalation[0].after"])
        #expect(problems(#"[{"after": 599, "to": "a"}]"#, expiresIn: 600).isEmpty)
    }

    @Test("A config's policy is checked the same way, at its own path")
    func configPolicy() throws {
        let errors = EscalationRules.problems(
            [EscalationStep(after: 60, to: "ops"), EscalationStep(after: 30, to: "b")], field: "clients.ops.escalation", client: "ops",
            expiresIn: nil)
        #expect(errors.map(\.field) == ["clients.ops.escalation[0].to", "clients.ops.escalation[1].after"])
    }
}
