import AlertdCore
import AlertdWire
import Logging
import NIOConcurrencyHelpers

extension Engine {
    /// Follows the changes other processes commit (``AlertStore/changes``) until the stream
    /// ends or the task is cancelled (``EngineJobsService`` runs it, and stops it first).
    func followChanges() async {
        for await change in store.changes { follow(change) }
    }

    /// Follows a change another process committed (a store shared by several
    /// instances): its displays are published, its decisions answer the
    /// waiters parked here, its webhooks are taken.
    func follow(_ change: StoreChange) {
        switch change {
        case .displays(let displays):
            publish(
                encoded: displays.map {
                    (client: $0.client, display: Waiters.Display(id: $0.id, body: $0.body, version: $0.version, votes: $0.votes))
                })
            deadlineAdded()
        case .clients(let clients):
            // Read again only where the version moved past what is published (a commit
            // of this instance was published with its version already).
            jobs.start { [self] in try? await synchronize(clients) }
            deadlineAdded()
        case .decided(let ids):
            // Read only the alerts something waits for here: another instance's decisions are
            // not read back one by one.
            let waited = waiters.withLockedValue { waiters in ids.filter { waiters.isWaitedFor($0) } }
            for id in waited { wakeAlertWaiters(id) }
        case .terminal(let alerts):
            for alert in alerts where alert.state.isTerminal {
                let woken = waiters.withLockedValue { $0.takeAlertWaiters(alert.id) }
                for waiter in woken { answer(.alert(waiter, alert, nil)) }
            }
        case .webhooks:
            rereadWebhooks()
        case .deadline:
            deadlineAdded()
        case .pushSubscriptions:
            jobs.start { [self] in await rereadPushSubscriptions() }
        case .resync:
            // Missed notifications: every client something waits on, every alert
            // something waits for, and the webhooks are looked at again.
            let (clients, alerts) = waiters.withLockedValue { ($0.clientsWaitedOn, $0.alertsWaitedFor) }
            jobs.start { [self] in try? await synchronize(clients) }
            for id in alerts { wakeAlertWaiters(id) }
            jobs.start { [self] in await reread() }
            jobs.start { [self] in await rereadPushSubscriptions() }
        }
    }

    /// Reads the API's webhooks again after another instance changed them — only them:
    /// no display changed. One read at a time however many notifications come (a burst
    /// of registrations elsewhere used to start a read of every webhook and every display
    /// per notification, which took the whole pool and left requests 503), and one more
    /// after it when any came while it ran (that read may have begun before their commit).
    private func rereadWebhooks() {
        let start = webhookRereads.withLockedValue { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        guard start else { return }
        jobs.start { [self] in
            repeat {
                do throws(EngineError) {
                    let api = try await store.webhooks()
                    registry.withLockedValue { $0.replaceAPIWebhooks(with: api) }
                } catch {
                    logger.error("the webhooks cannot be read back", metadata: ["error": "\(error)"])
                }
            } while webhookRereads.withLockedValue({ state -> Bool in
                if state.again {
                    state.again = false
                    return true
                }
                state.running = false
                return false
            })
        } refused: {
            webhookRereads.withLockedValue { $0.running = false }
        }
    }

    /// Answers the waiters of an alert if it is terminal now.
    private func wakeAlertWaiters(_ id: AlertID) {
        jobs.start { [self] in
            guard let found = try? await store.alert(id), found.alert.state.isTerminal else { return }
            let woken = waiters.withLockedValue { $0.takeAlertWaiters(id) }
            for waiter in woken { answer(.alert(waiter, found.alert, nil)) }
        }
    }
}
