import AlertdCore
import AlertdWire
import Testing

/// An alert with a default, a destructive and a cancel button.
private let deploy = NewAlert(
    title: "Deploy?",
    buttons: [Button(title: "Deploy"), Button(title: "Roll back", style: .destructive), Button(title: "Cancel", style: .cancel)])

@Suite("Choosing a button answers the displayed alert")
struct ChoiceTests {
    @Test("Choosing by title records the button, its index, who decided and when")
    func byTitle() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (answered, change) = try board.choose(.title("Roll back"), for: alert.id, on: "ops", by: "ops-console", now: at(500))
        #expect(answered.state == .answered)
        #expect(answered.decidedAt == at(500))
        #expect(answered.displayedAt == at(0))
        #expect(
            answered.result
                == AlertResult(
                    outcome: .answered, button: "Roll back", buttonIndex: 1, cancelled: false, decidedBy: "ops-console",
                    votes: [Vote(decidedBy: "ops-console", button: "Roll back", buttonIndex: 1, at: at(500))]))
        #expect(answered.votes == answered.result?.votes, "a quorum-1 alert's one choice is its one vote")
        #expect(change.decided.map(\.id) == [alert.id])
        #expect(change.saved.map(\.id) == [alert.id])
        #expect(change.saved.first?.state == .answered)
        #expect(change.displayChanged == ["ops"])
        #expect(change.newClients.isEmpty)
        #expect(board.displayed(on: "ops") == nil)
        #expect(board.position(of: answered) == nil)
    }

    @Test("Choosing by index picks the button at that index", arguments: [(0, "Deploy"), (1, "Roll back"), (2, "Cancel")])
    func byIndex(index: Int, title: String) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (answered, _) = try board.choose(.index(index), for: alert.id, on: "ops", by: nil, now: at(1))
        #expect(answered.result?.button == title)
        #expect(answered.result?.buttonIndex == index)
    }

    @Test("Only a cancel-style button marks the result cancelled", arguments: [(0, false), (1, false), (2, true)])
    func cancelled(index: Int, cancelled: Bool) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (answered, _) = try board.choose(.index(index), for: alert.id, on: "ops", by: nil, now: at(1))
        #expect(answered.result?.cancelled == cancelled)
    }

    @Test("Without a decider, decided_by is nil")
    func anonymous() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (answered, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: nil, now: at(1))
        #expect(answered.result?.decidedBy == nil)
    }

    @Test("Answering the displayed alert displays the next one, in the same change")
    func nextDisplayed() throws {
        var board = AlertBoard()
        let first = try board.postCommitted(deploy, now: at(0))
        let second = try board.postCommitted(question("second"), now: at(1))
        let (_, change) = try board.choose(.index(0), for: first.id, on: "ops", by: nil, now: at(9))
        #expect(change.saved.map(\.id) == [first.id, second.id])
        #expect(change.saved.map(\.state) == [.answered, .displayed])
        #expect(change.decided.map(\.id) == [first.id])
        #expect(change.displayChanged == ["ops"])
        #expect(board.displayed(on: "ops")?.id == second.id)
        #expect(board.displayed(on: "ops")?.displayedAt == at(9))
    }

    @Test("Choosing for a queued alert is not-displayed and changes nothing")
    func queued() throws {
        var board = AlertBoard()
        let first = try board.postCommitted(deploy, now: at(0))
        let queued = try board.postCommitted(deploy, now: at(1))
        let error = #expect(throws: BoardError.self) {
            try board.choose(.title("Deploy"), for: queued.id, on: "ops", by: nil, now: at(2))
        }
        #expect(error?.code == .notDisplayed)
        #expect(board.state(of: queued) == .queued)
        #expect(board.state(of: first) == .displayed)
    }

    @Test(
        "A button the alert does not have is unknown-button",
        arguments: [ButtonSelection.title("Maybe"), .title("deploy"), .title(""), .index(3), .index(-1), .index(Int.max)])
    func unknownButton(selection: ButtonSelection) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let error = #expect(throws: BoardError.self) {
            try board.choose(selection, for: alert.id, on: "ops", by: nil, now: at(1))
        }
        #expect(error?.code == .unknownButton)
        #expect(board.state(of: alert) == .displayed)
    }

    @Test("Any choice for a buttonless alert is unknown-button", arguments: [ButtonSelection.title("OK"), .index(0)])
    func buttonless(selection: ButtonSelection) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(notice("Backup done"), now: at(0))
        let error = #expect(throws: BoardError.self) {
            try board.choose(selection, for: alert.id, on: "ops", by: nil, now: at(1))
        }
        #expect(error?.code == .unknownButton)
        #expect(board.state(of: alert) == .displayed)
    }

    @Test(
        "Repeating the same button returns the answered alert with an empty change",
        arguments: [ButtonSelection.title("Cancel"), .index(2)])
    func repeatSameButton(repeated: ButtonSelection) throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        try board.postCommitted(question("next"), now: at(1))
        let (answered, _) = try board.choose(.title("Cancel"), for: alert.id, on: "ops", by: "first", now: at(2))

        let (again, change) = try board.choose(repeated, for: alert.id, on: "ops", by: "second", now: at(3))
        #expect(again == answered)
        #expect(again.result?.decidedBy == "first")
        #expect(change.isEmpty)
        #expect(change.saved.isEmpty && change.decided.isEmpty && change.displayChanged.isEmpty && change.newClients.isEmpty)
    }

    @Test("A different button for an answered alert is already-decided, carrying the alert")
    func differentButton() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (answered, _) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: nil, now: at(2))
        for selection in [ButtonSelection.title("Cancel"), .index(1)] {
            let error = #expect(throws: BoardError.self) {
                try board.choose(selection, for: alert.id, on: "ops", by: nil, now: at(3))
            }
            #expect(error?.code == .alreadyDecided)
            #expect(error?.alert == answered)
        }
    }

    @Test("A choice for a withdrawn alert is already-decided")
    func choiceAfterWithdraw() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (withdrawn, _) = try board.withdraw(alert.id, on: "ops", by: nil, now: at(1))
        let error = #expect(throws: BoardError.self) {
            try board.choose(.index(0), for: alert.id, on: "ops", by: nil, now: at(2))
        }
        #expect(error?.code == .alreadyDecided)
        #expect(error?.alert == withdrawn)
    }

    @Test("The wrong client or an unknown id is not-found")
    func notFound() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, to: "ops", now: at(0))
        try board.postCommitted(deploy, to: "kiosk", now: at(1))
        let stranger = freshID(at: at(2))
        for (id, client) in [(alert.id, "kiosk"), (alert.id, "nobody"), (stranger, "ops")] {
            let choice = #expect(throws: BoardError.self) {
                try board.choose(.index(0), for: id, on: client, by: nil, now: at(3))
            }
            #expect(choice?.code == .notFound)
            let withdrawal = #expect(throws: BoardError.self) {
                try board.withdraw(id, on: client, by: nil, now: at(3))
            }
            #expect(withdrawal?.code == .notFound)
        }
        #expect(board.state(of: alert) == .displayed)
    }
}

@Suite("Repeats on alerts that left memory follow the same rules")
struct StoredRepeatTests {
    private func answered(_ index: Int) -> Alert {
        var alert = Alert(
            id: freshID(at: start), client: "ops", title: "Deploy?", buttons: deploy.buttons ?? [],
            state: .answered, createdAt: start, displayedAt: start, decidedAt: at(5), expiresAt: at(60_000))
        alert.result = AlertResult(outcome: .answered, button: deploy.buttons?[index].title, buttonIndex: index)
        return alert
    }

    @Test("repeatChoice returns the alert for the same button, by title or index")
    func sameButton() throws {
        let alert = answered(1)
        #expect(try AlertBoard.repeatChoice(.title("Roll back"), on: alert, by: nil) == alert)
        #expect(try AlertBoard.repeatChoice(.index(1), on: alert, by: nil) == alert)
    }

    @Test("repeatChoice is already-decided for another button and unknown-button for a missing one")
    func otherButton() throws {
        let alert = answered(1)
        let other = #expect(throws: BoardError.self) { try AlertBoard.repeatChoice(.index(0), on: alert, by: nil) }
        #expect(other?.code == .alreadyDecided)
        #expect(other?.alert == alert)
        let missing = #expect(throws: BoardError.self) { try AlertBoard.repeatChoice(.title("Nope"), on: alert, by: nil) }
        #expect(missing?.code == .unknownButton)
    }

    @Test("repeatWithdraw returns a withdrawn alert and refuses any other terminal one")
    func withdrawRepeat() throws {
        var withdrawn = answered(0)
        withdrawn.state = .withdrawn
        withdrawn.result = AlertResult(outcome: .withdrawn)
        #expect(try AlertBoard.repeatWithdraw(on: withdrawn) == withdrawn)
        let error = #expect(throws: BoardError.self) { try AlertBoard.repeatWithdraw(on: answered(0)) }
        #expect(error?.code == .alreadyDecided)
    }
}

@Suite("Withdrawing a pending alert")
struct WithdrawTests {
    @Test("Withdrawing the displayed alert frees the display for the next one")
    func displayed() throws {
        var board = AlertBoard()
        let first = try board.postCommitted(deploy, now: at(0))
        let second = try board.postCommitted(deploy, now: at(1))
        let (withdrawn, change) = try board.withdraw(first.id, on: "ops", by: "deployer", now: at(7))
        #expect(withdrawn.state == .withdrawn)
        #expect(withdrawn.decidedAt == at(7))
        #expect(
            withdrawn.result == AlertResult(outcome: .withdrawn, button: nil, buttonIndex: nil, cancelled: false, decidedBy: "deployer"))
        #expect(board.displayed(on: "ops")?.id == second.id)
        #expect(change.decided.map(\.id) == [first.id])
        #expect(change.saved.map(\.state) == [.withdrawn, .displayed])
        #expect(change.displayChanged == ["ops"])
    }

    @Test("Withdrawing a queued alert leaves the display alone")
    func queued() throws {
        var board = AlertBoard()
        let first = try board.postCommitted(deploy, now: at(0))
        let second = try board.postCommitted(deploy, now: at(1))
        let (withdrawn, change) = try board.withdraw(second.id, on: "ops", by: nil, now: at(7))
        #expect(withdrawn.state == .withdrawn)
        #expect(withdrawn.displayedAt == nil)
        #expect(withdrawn.result?.decidedBy == nil)
        #expect(board.displayed(on: "ops")?.id == first.id)
        #expect(change.displayChanged.isEmpty)
        #expect(change.saved.map(\.id) == [second.id])
        #expect(board.pendingCount(on: "ops") == 1)
    }

    @Test("Withdrawing a withdrawn alert again returns it with an empty change")
    func again() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (withdrawn, _) = try board.withdraw(alert.id, on: "ops", by: "a", now: at(1))
        let (again, change) = try board.withdraw(alert.id, on: "ops", by: "b", now: at(2))
        #expect(again == withdrawn)
        #expect(change.isEmpty && change.decided.isEmpty && change.displayChanged.isEmpty)
    }

    @Test("Withdrawing an answered alert is already-decided, carrying the alert")
    func answered() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(deploy, now: at(0))
        let (answered, _) = try board.choose(.index(0), for: alert.id, on: "ops", by: nil, now: at(1))
        let error = #expect(throws: BoardError.self) {
            try board.withdraw(alert.id, on: "ops", by: nil, now: at(2))
        }
        #expect(error?.code == .alreadyDecided)
        #expect(error?.alert == answered)
        #expect(board.alert(alert.id) == answered)
    }
}

@Suite("Per-client pending limits")
struct QueueFullTests {
    @Test("A client's post beyond its max_pending is queue-full; other clients use the default")
    func limit() throws {
        var board = AlertBoard(
            settings: QueueSettings(standard: ClientSettings(maxPending: 3), clients: ["kiosk": ClientSettings(maxPending: 2)]))
        let first = try board.postCommitted(deploy, to: "kiosk", now: at(0))
        try board.postCommitted(deploy, to: "kiosk", now: at(1))
        let error = #expect(throws: BoardError.self) { try board.post(deploy, to: "kiosk", now: at(2)) }
        #expect(error?.code == .queueFull)
        #expect(board.pendingCount(on: "kiosk") == 2)

        for n in 0..<3 { try board.postCommitted(deploy, to: "ops", now: at(Int64(n))) }
        #expect(throws: BoardError.self) { try board.post(deploy, to: "ops", now: at(5)) }

        // A freed place can be used again.
        let (_, change) = try board.withdraw(first.id, on: "kiosk", by: nil, now: at(3))
        board.settle(change)
        #expect(throws: Never.self) { try board.post(deploy, to: "kiosk", now: at(4)) }
    }

    @Test("Terminal alerts do not count towards the limit")
    func terminalDoNotCount() throws {
        var board = AlertBoard(settings: QueueSettings(standard: ClientSettings(maxPending: 1)))
        for n in 0..<5 {
            let alert = try board.postCommitted(deploy, now: at(Int64(n * 10)))
            let (_, change) = try board.choose(.index(0), for: alert.id, on: "ops", by: nil, now: at(Int64(n * 10 + 1)))
            board.settle(change)
        }
        #expect(board.pendingCount(on: "ops") == 0)
    }
}

@Suite("What a post reports")
struct PostChangeTests {
    @Test("The first post to a client names the new client and saves the alert once, displayed")
    func firstPost() throws {
        var board = AlertBoard()
        let (alert, change) = try board.post(deploy, to: "ops", now: at(0))
        #expect(change.newClients == ["ops"])
        #expect(change.saved.map(\.id) == [alert.id])
        #expect(change.saved.first == alert)
        #expect(alert.state == .displayed)
        #expect(change.displayChanged == ["ops"])
        #expect(change.decided.isEmpty)
        #expect(!change.isEmpty)
        #expect(board.clients == ["ops"])
        #expect(board.knows(client: "ops"))
    }

    @Test("A later post to a known client that queues saves only the new alert")
    func queuedPost() throws {
        var board = AlertBoard()
        try board.postCommitted(deploy, now: at(0))
        let (alert, change) = try board.post(deploy, to: "ops", now: at(1))
        #expect(change.newClients.isEmpty)
        #expect(change.saved == [alert])
        #expect(alert.state == .queued)
        #expect(change.displayChanged.isEmpty)
        #expect(!change.isEmpty)
    }

    @Test("The posted alert carries the draft and the times")
    func postedAlert() throws {
        var board = AlertBoard(rules: AlertRules(defaultExpiresIn: 90, maxExpiresIn: 600, defaultDismissAfter: 3))
        var draft = deploy
        draft.message = "msg"
        draft.style = .actionSheet
        draft.priority = 42
        draft.callbackURL = "https://example.com/cb"
        draft.metadata = ["k": "v"]
        let (alert, _) = try board.post(draft, to: "ops", now: at(0))
        #expect(alert.client == "ops")
        #expect(alert.title == "Deploy?" && alert.message == "msg" && alert.style == .actionSheet)
        #expect(alert.buttons == deploy.buttons)
        #expect(alert.priority == 42)
        #expect(alert.callbackURL == "https://example.com/cb")
        #expect(alert.metadata?.object == ["k": "v"])
        #expect(alert.createdAt == at(0))
        #expect(alert.expiresAt == at(90_000))
        #expect(alert.dismissAfterMilliseconds == nil)
        #expect(alert.decidedAt == nil && alert.result == nil)
        #expect(alert.id.timestamp == at(0))
    }

    @Test("Ids of posted alerts increase in posting order")
    func idsIncrease() throws {
        var board = AlertBoard()
        var ids: [AlertID] = []
        for n in 0..<50 {
            // Several in the same millisecond, and the clock stepping back once.
            let time = n == 25 ? at(-1000) : at(Int64(n / 5))
            ids.append(try board.postCommitted(deploy, to: "c\(n % 3)", now: time).id)
        }
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
    }

    @Test("A board continues after the last id it is given")
    func continuesAfterLastID() throws {
        let last = freshID(at: at(3_600_000))
        var board = AlertBoard(lastID: last)
        let alert = try board.postCommitted(deploy, now: at(0))
        #expect(alert.id > last)
    }
}
