import AlertdCore
import AlertdWire
import Testing

@Suite("Buttonless alerts are dismissed dismiss_after after they are displayed")
struct DismissTests {
    @Test("The default dismiss_after comes from the rules; not a millisecond early")
    func defaultDismissal() throws {
        let clock = ManualClock(start)
        var board = AlertBoard(rules: AlertRules(defaultDismissAfter: 2))
        let alert = try board.postCommitted(notice("Backup done"), now: clock.now())
        #expect(alert.dismissAfterMilliseconds == 2000)
        #expect(alert.dismissAt == at(2000))
        #expect(board.nextDeadline == at(2000))

        clock.advance(seconds: 1.999)
        let early = board.fireDeadlines(now: clock.now())
        #expect(early.isEmpty && early.decided.isEmpty && early.displayChanged.isEmpty)
        #expect(board.state(of: alert) == .displayed)

        clock.advance(seconds: 0.001)
        let change = board.fireDeadlines(now: clock.now())
        let dismissed = try #require(change.decided.first)
        #expect(change.decided.count == 1)
        #expect(dismissed.id == alert.id)
        #expect(dismissed.state == .dismissed)
        #expect(dismissed.decidedAt == at(2000))
        #expect(dismissed.result == AlertResult(outcome: .dismissed, button: nil, buttonIndex: nil, cancelled: false, decidedBy: nil))
        #expect(change.saved.map(\.id) == [alert.id])
        #expect(change.displayChanged == ["ops"])
        #expect(board.displayed(on: "ops") == nil)
    }

    @Test(
        "A configured default and a posted dismiss_after are both honoured",
        arguments: [(nil, 5000), (0.25, 250), (1.5, 1500)] as [(Double?, Int64)])
    func durations(dismissAfter: Double?, milliseconds: Int64) throws {
        var board = AlertBoard(rules: AlertRules(defaultDismissAfter: 5))
        let alert = try board.postCommitted(notice("n", dismissAfter: dismissAfter), now: at(0))
        #expect(alert.dismissAfterMilliseconds == milliseconds)
        #expect(board.fireDeadlines(now: at(milliseconds - 1)).isEmpty)
        #expect(board.fireDeadlines(now: at(milliseconds)).decided.map(\.id) == [alert.id])
    }

    @Test("An alert with buttons is never dismissed")
    func buttonsAreNotDismissed() throws {
        var board = AlertBoard(rules: AlertRules(defaultDismissAfter: 2))
        let alert = try board.postCommitted(question("q", expiresIn: 3600), now: at(0))
        #expect(alert.dismissAfterMilliseconds == nil)
        #expect(alert.dismissAt == nil)
        #expect(board.fireDeadlines(now: at(3_599_999)).isEmpty)
        #expect(board.state(of: alert) == .displayed)
    }

    @Test("A queued buttonless alert's timer starts only when it is displayed, and the next one is displayed")
    func queuedTimerStartsOnDisplay() throws {
        let clock = ManualClock(start)
        var board = AlertBoard()
        let first = try board.postCommitted(notice("first", dismissAfter: 2), now: clock.now())
        clock.advance(seconds: 0.5)
        let second = try board.postCommitted(notice("second", dismissAfter: 2), now: clock.now())
        #expect(second.state == .queued)
        #expect(second.dismissAt == nil)

        // Nothing of the second fires at 2.5 s, two seconds after it was posted.
        clock.set(at(2000))
        let firstGone = board.fireDeadlines(now: clock.now())
        board.settle(firstGone)
        #expect(firstGone.decided.map(\.id) == [first.id])
        let shown = try #require(board.displayed(on: "ops"))
        #expect(shown.id == second.id)
        #expect(shown.displayedAt == at(2000))
        #expect(shown.dismissAt == at(4000))
        #expect(firstGone.saved.map(\.state) == [.dismissed, .displayed])

        clock.set(at(2500))
        #expect(board.fireDeadlines(now: clock.now()).isEmpty)
        clock.set(at(3999))
        #expect(board.fireDeadlines(now: clock.now()).isEmpty)
        #expect(board.state(of: second) == .displayed)
        clock.set(at(4000))
        #expect(board.fireDeadlines(now: clock.now()).decided.map(\.id) == [second.id])
    }

    @Test("A buttonless alert covered on a stack gets a fresh timer when it is displayed again")
    func coveredNoticeRestartsTimer() throws {
        var board = AlertBoard(settings: QueueSettings(standard: ClientSettings(policy: .stack)))
        let noticeAlert = try board.postCommitted(notice("n", dismissAfter: 2), now: at(0))
        let cover = try board.postCommitted(question("q"), now: at(1000))
        // The covered notice is not dismissed while queued.
        #expect(board.fireDeadlines(now: at(2000)).isEmpty)
        #expect(board.state(of: noticeAlert) == .queued)

        let (_, answer) = try board.choose(.index(0), for: cover.id, on: "ops", by: nil, now: at(5000))
        board.settle(answer)
        #expect(board.alert(noticeAlert.id)?.dismissAt == at(7000))
        #expect(board.fireDeadlines(now: at(6999)).isEmpty)
        #expect(board.fireDeadlines(now: at(7000)).decided.map(\.id) == [noticeAlert.id])
    }
}

@Suite("Pending alerts expire at expires_at")
struct ExpiryTests {
    @Test("expires_in defaults from the rules")
    func defaultExpiry() throws {
        var board = AlertBoard(rules: AlertRules(defaultExpiresIn: 120, maxExpiresIn: 600))
        let defaulted = try board.postCommitted(question("d"), now: at(0))
        let explicit = try board.postCommitted(question("e", expiresIn: 30.5), now: at(0))
        #expect(defaulted.expiresAt == at(120_000))
        #expect(explicit.expiresAt == at(30_500))
    }

    @Test("A displayed alert expires at expires_at, not before, and the next one is displayed")
    func displayedExpires() throws {
        let clock = ManualClock(start)
        var board = AlertBoard()
        let first = try board.postCommitted(question("first", expiresIn: 60), now: clock.now())
        let second = try board.postCommitted(question("second", expiresIn: 600), now: clock.now())

        clock.advance(seconds: 59.999)
        #expect(board.fireDeadlines(now: clock.now()).isEmpty)
        #expect(board.state(of: first) == .displayed)

        clock.advance(seconds: 0.001)
        let change = board.fireDeadlines(now: clock.now())
        let expired = try #require(change.decided.first)
        #expect(expired.id == first.id)
        #expect(expired.state == .expired)
        #expect(expired.decidedAt == at(60_000))
        #expect(expired.result == AlertResult(outcome: .expired, button: nil, buttonIndex: nil, cancelled: false, decidedBy: nil))
        #expect(change.displayChanged == ["ops"])
        #expect(board.displayed(on: "ops")?.id == second.id)
        #expect(board.displayed(on: "ops")?.displayedAt == at(60_000))
    }

    @Test("A queued alert expires too, without touching the display")
    func queuedExpires() throws {
        var board = AlertBoard()
        let shown = try board.postCommitted(question("shown", expiresIn: 600), now: at(0))
        let waiting = try board.postCommitted(question("waiting", expiresIn: 30), now: at(0))
        #expect(board.fireDeadlines(now: at(29_999)).isEmpty)
        let change = board.fireDeadlines(now: at(30_000))
        #expect(change.decided.map(\.id) == [waiting.id])
        #expect(change.decided.first?.state == .expired)
        #expect(change.decided.first?.displayedAt == nil)
        #expect(change.displayChanged.isEmpty)
        #expect(board.displayed(on: "ops")?.id == shown.id)
        #expect(board.pendingCount(on: "ops") == 1)
    }

    @Test("Every deadline that passed fires in one call")
    func severalAtOnce() throws {
        var board = AlertBoard()
        let a = try board.postCommitted(question("a", expiresIn: 10), now: at(0))
        let b = try board.postCommitted(question("b", expiresIn: 20), now: at(0))
        let c = try board.postCommitted(question("c", expiresIn: 40), now: at(0))
        let change = board.fireDeadlines(now: at(25_000))
        #expect(Set(change.decided.map(\.id)) == [a.id, b.id])
        #expect(change.decided.allSatisfy { $0.state == .expired })
        #expect(board.displayed(on: "ops")?.id == c.id)
        #expect(board.nextDeadline == at(40_000))
    }

    @Test("An alert decided before its deadline does not fire")
    func decidedDoesNotFire() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(question("a", expiresIn: 10), now: at(0))
        let (_, change) = try board.choose(.index(0), for: alert.id, on: "ops", by: nil, now: at(1))
        board.settle(change)
        #expect(board.fireDeadlines(now: at(10_000)).isEmpty)
        #expect(board.nextDeadline == nil)
    }

    @Test("An alert is never displayed after its expires_at, even when deadlines fire late")
    func lateFiring() throws {
        var board = AlertBoard()
        // The notice is due for dismissal at 2 s; the alert behind it expires at 3 s.
        try board.postCommitted(notice("n", dismissAfter: 2), now: at(0))
        let behind = try board.postCommitted(question("q", expiresIn: 3), now: at(0))
        // The timer fires late, at 10 s, for both deadlines at once.
        let change = board.fireDeadlines(now: at(10_000))
        let expired = try #require(change.saved.first { $0.id == behind.id })
        #expect(expired.state == .expired)
        if let displayedAt = expired.displayedAt {
            #expect(displayedAt <= expired.expiresAt, "displayed at \(displayedAt), after it expired at \(expired.expiresAt)")
        }
        #expect(board.displayed(on: "ops") == nil)
    }

    @Test("nextDeadline reports the earliest dismissal or expiry")
    func nextDeadline() throws {
        var board = AlertBoard()
        #expect(board.nextDeadline == nil)
        try board.postCommitted(question("q1", expiresIn: 60), to: "a", now: at(0))
        #expect(board.nextDeadline == at(60_000))
        try board.postCommitted(question("q2", expiresIn: 30), to: "a", now: at(0))
        #expect(board.nextDeadline == at(30_000))
        try board.postCommitted(question("q3", expiresIn: 90), to: "a", now: at(0))
        #expect(board.nextDeadline == at(30_000))
        try board.postCommitted(notice("n", dismissAfter: 5), to: "b", now: at(1000))
        #expect(board.nextDeadline == at(6000))
        board.settle(board.fireDeadlines(now: at(6000)))
        #expect(board.nextDeadline == at(30_000))
    }
}

@Suite("restore() rebuilds the board from stored alerts")
struct RestoreTests {
    private func stored(
        _ title: String, client: String = "ops", priority: Int = 0, created: Int64, displayed: Int64? = nil,
        expiresAt: Int64 = 3_600_000, dismissAfter: Int64? = nil, ids: inout AlertIDGenerator
    ) -> Alert {
        Alert(
            id: ids.next(at: at(created)), client: client, title: title,
            buttons: dismissAfter == nil ? [Button(title: "OK")] : [], priority: priority,
            state: displayed == nil ? .queued : .displayed, createdAt: at(created), displayedAt: displayed.map(at),
            expiresAt: at(expiresAt), dismissAfterMilliseconds: dismissAfter)
    }

    @Test("Pending alerts come back displayed and queued as stored, with nothing to save")
    func asStored() throws {
        var ids = AlertIDGenerator()
        let shown = stored("shown", created: 0, displayed: 0, ids: &ids)
        let next = stored("next", priority: 5, created: 10, ids: &ids)
        let last = stored("last", created: 20, ids: &ids)
        var board = AlertBoard(lastID: last.id)
        // The store may list them in any order.
        let change = board.restore(clients: ["ops", "idle"], pending: [last, next, shown], now: at(60_000))
        #expect(change.isEmpty && change.displayChanged.isEmpty)
        #expect(board.pending(on: "ops") == [shown, next, last])
        #expect(board.displayed(on: "ops") == shown)
        #expect([shown, next, last].map { board.position(of: $0) } == [0, 1, 2])
        #expect(board.clients == ["idle", "ops"])
        #expect(board.knows(client: "idle"))
        #expect(board.nextDeadline == at(3_600_000))
        #expect(board.alert(shown.id) == shown)
        // New ids continue after the last one.
        let (posted, _) = try board.post(question("new"), to: "ops", now: at(0))
        #expect(posted.id > last.id)
    }

    @Test("Deadlines that passed while the daemon was down fire on the next fireDeadlines")
    func passedDeadlines() throws {
        var ids = AlertIDGenerator()
        let shownNotice = stored("notice", created: 0, displayed: 1000, dismissAfter: 2000, ids: &ids)
        let stale = stored("stale", created: 10, expiresAt: 5000, ids: &ids)
        let fresh = stored("fresh", created: 20, ids: &ids)
        var board = AlertBoard()
        let now = at(10_000)
        let restored = board.restore(clients: ["ops"], pending: [shownNotice, stale, fresh], now: now)
        #expect(restored.isEmpty)
        #expect(board.displayed(on: "ops")?.id == shownNotice.id)
        #expect(board.nextDeadline == at(3000))

        let change = board.fireDeadlines(now: now)
        #expect(change.decided.map(\.id) == [shownNotice.id, stale.id])
        #expect(change.decided.map(\.state) == [.dismissed, .expired])
        // Passed deadlines take effect at their own times, in order: the notice
        // was dismissed at 3 s, the stale alert (displayed then) expired at 5 s,
        // and that is when the fresh one was displayed.
        #expect(change.decided.map(\.decidedAt) == [at(3000), at(5000)])
        let displayed = try #require(board.displayed(on: "ops"))
        #expect(displayed.id == fresh.id)
        #expect(displayed.displayedAt == at(5000))
    }

    @Test("An alert whose expiry passed while it was queued expires without ever being displayed")
    func expiredWhileQueuedIsNeverDisplayed() throws {
        var ids = AlertIDGenerator()
        // The notice would have been dismissed at 9 s; the queued one expired at 5 s, before that.
        let shownNotice = stored("notice", created: 0, displayed: 1000, dismissAfter: 8000, ids: &ids)
        let stale = stored("stale", created: 10, expiresAt: 5000, ids: &ids)
        var board = AlertBoard()
        _ = board.restore(clients: ["ops"], pending: [shownNotice, stale], now: at(10_000))
        let change = board.fireDeadlines(now: at(10_000))
        #expect(change.decided.map(\.id) == [stale.id, shownNotice.id])
        let expired = try #require(change.saved.first { $0.id == stale.id })
        #expect(expired.state == .expired)
        #expect(expired.displayedAt == nil)
        #expect(board.displayed(on: "ops") == nil)
    }

    @Test("A queue stored without a displayed alert displays its first one and reports it")
    func nothingDisplayed() throws {
        var ids = AlertIDGenerator()
        let low = stored("low", created: 0, ids: &ids)
        let high = stored("high", priority: 1, created: 10, ids: &ids)
        var board = AlertBoard()
        let change = board.restore(clients: [], pending: [low, high], now: at(50_000))
        #expect(board.displayed(on: "ops")?.id == high.id)
        #expect(board.displayed(on: "ops")?.displayedAt == at(50_000))
        #expect(change.saved.map(\.id) == [high.id])
        #expect(change.saved.first?.state == .displayed)
        #expect(change.displayChanged == ["ops"])
        #expect(board.clients == ["ops"])
    }

    @Test("Two alerts stored as displayed on one client leave only one displayed")
    func twoDisplayed() throws {
        var ids = AlertIDGenerator()
        let a = stored("a", created: 0, displayed: 0, ids: &ids)
        let b = stored("b", created: 10, displayed: 10, ids: &ids)
        var board = AlertBoard()
        _ = board.restore(clients: ["ops"], pending: [a, b], now: at(50_000))
        #expect(board.pending(on: "ops").filter { $0.state == .displayed }.count == 1)
        #expect(board.pending(on: "ops").filter { $0.state == .queued }.allSatisfy { $0.displayedAt == nil })
        #expect(board.pendingCount(on: "ops") == 2)
    }

    @Test("Restoring under a stack policy re-orders the queue and reports the change")
    func policyChange() throws {
        var ids = AlertIDGenerator()
        // Stored under fifo: the older one displayed, the newer one queued.
        let older = stored("older", created: 0, displayed: 0, ids: &ids)
        let newer = stored("newer", created: 10, ids: &ids)
        let other = stored("other", client: "kiosk", created: 0, displayed: 0, ids: &ids)
        let otherNewer = stored("other-newer", client: "kiosk", created: 10, ids: &ids)
        var board = AlertBoard(settings: QueueSettings(clients: ["ops": ClientSettings(policy: .stack)]))
        let change = board.restore(clients: ["ops", "kiosk"], pending: [older, newer, other, otherNewer], now: at(50_000))

        #expect(board.titles(on: "ops") == ["newer", "older"])
        #expect(board.alert(newer.id)?.state == .displayed)
        #expect(board.alert(newer.id)?.displayedAt == at(50_000))
        #expect(board.alert(older.id)?.state == .queued)
        #expect(board.alert(older.id)?.displayedAt == nil)
        #expect(Set(change.saved.map(\.id)) == [older.id, newer.id])
        #expect(change.displayChanged == ["ops"])
        // The fifo client is left as stored.
        #expect(board.titles(on: "kiosk") == ["other", "other-newer"])
        // The change says which stored versions it replaces (a store shows readers those until it commits).
        #expect(change.replaced(older.id) == .some(older))
        #expect(change.replaced(newer.id) == .some(newer))
        #expect(change.replaced.count == change.saved.count)
    }
}
