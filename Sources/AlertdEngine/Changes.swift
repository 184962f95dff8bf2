import AlertdCore
import AlertdWire
import NIOConcurrencyHelpers

extension Engine {
    /// Follows a change another process committed (a store shared by several
    /// instances): its displays are published, its decisions answer the
    /// waiters parked here, its webhooks are taken.
    func follow(_ change: StoreChange) {
        switch change {
        case .displays(let displays):
            publish(encoded: displays.map { (client: $0.client, display: Waiters.Display(id: $0.id, body: $0.body, version: $0.version)) })
            deadlineAdded()
        case .clients(let clients):
            // Read again only where the version moved past what is published (a commit
            // of this instance was published with its version already).
            synchronize(clients) { _ in }
            deadlineAdded()
        case .decided(let ids):
            // Read only the alerts something waits for here: another instance's decisions are
            // not read back one by one.
            let waited = waiters.withLockedValue { waiters in ids.filter { waiters.isWaitedFor($0) } }
            for id in waited { wakeAlertWaiters(id) }
        case .terminal(let alerts):
            for alert in alerts where alert.state.isTerminal {
                let woken = waiters.withLockedValue { $0.takeAlertWaiters(alert.id) }
                for waiter in woken { answer(.alert(waiter, alert)) }
            }
        case .webhooks:
            Task { await reread() }
        case .resync:
            // Missed notifications: every client something waits on, every alert
            // something waits for, and the webhooks are looked at again.
            let (clients, alerts) = waiters.withLockedValue { ($0.clientsWaitedOn, $0.alertsWaitedFor) }
            synchronize(clients) { _ in }
            for id in alerts { wakeAlertWaiters(id) }
            Task { await reread() }
        }
    }

    /// Answers the waiters of an alert if it is terminal now.
    private func wakeAlertWaiters(_ id: AlertID) {
        store.alert(id) { [self] result in
            guard case .success(let found?) = result, found.alert.state.isTerminal else { return }
            let woken = waiters.withLockedValue { $0.takeAlertWaiters(id) }
            for waiter in woken { answer(.alert(waiter, found.alert)) }
        }
    }
}
