import AlertdCore
import AlertdWire
import Testing

/// The time most tests start at: 2026-11-18T11:06:40.000Z.
let start = Timestamp(milliseconds: 1_795_000_000_000)

/// `start` plus some milliseconds.
func at(_ milliseconds: Int64) -> Timestamp { start.adding(milliseconds: milliseconds) }

/// An alert with two buttons, "Yes" (default) and "No" (cancel).
func question(_ title: String, priority: Int = 0, expiresIn: Double? = nil) -> NewAlert {
    NewAlert(
        title: title, buttons: [Button(title: "Yes"), Button(title: "No", style: .cancel)], priority: priority,
        expiresIn: expiresIn)
}

/// A buttonless alert, dismissed after it has been displayed for a while.
func notice(_ title: String, priority: Int = 0, dismissAfter: Double? = nil, expiresIn: Double? = nil) -> NewAlert {
    NewAlert(title: title, priority: priority, expiresIn: expiresIn, dismissAfter: dismissAfter)
}

extension AlertBoard {
    /// Posts, settles the change at once (as a store does once it is committed), and returns the alert as posted.
    @discardableResult
    mutating func postCommitted(
        _ draft: NewAlert, to client: String = "ops", by poster: String? = nil, now: Timestamp
    ) throws(BoardError) -> Alert {
        let (alert, change) = try post(draft, to: client, by: poster, now: now)
        settle(change)
        return alert
    }

    /// What a store does once a change is committed: the alerts it decided leave the board.
    mutating func settle(_ change: BoardChange) { forgetDecided(change.decided.map(\.id)) }

    /// Titles of a client's pending alerts in display order.
    func titles(on client: String = "ops") -> [String] { pending(on: client).map(\.title) }

    /// The current state of an alert held in memory.
    func state(of alert: Alert) -> AlertState? { self.alert(alert.id)?.state }

    /// The position of the latest version of an alert held in memory.
    func currentPosition(of alert: Alert) -> Int? {
        self.alert(alert.id).flatMap { position(of: $0) }
    }
}

extension BoardChange {
    /// The version the change replaced of alert `id` (`.some(nil)`: the alert is new); nil when it did not write it.
    func replaced(_ id: AlertID) -> Alert?? {
        saved.firstIndex { $0.id == id }.map { replaced[$0] }
    }
}

/// An id from a new generator: unrelated to any board's ids.
func freshID(at time: Timestamp) -> AlertID {
    var generator = AlertIDGenerator()
    return generator.next(at: time)
}
