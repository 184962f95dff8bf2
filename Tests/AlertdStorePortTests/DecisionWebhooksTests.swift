import AlertdCore
import AlertdEngine
import AlertdWire
import NIOConcurrencyHelpers
import Testing

// A decision's targets as committed (SPEC §9): a shared store reads the API's webhooks of the
// decision's clients with their queues, in the transaction, so one registered or removed
// through another instance before the decision counts; an embedded store's engine registry
// holds every change, and the store reads none.

@Suite("Store port: a decision's webhooks, read with its queues")
struct DecisionWebhooksTests {
    /// Runs an empty transaction on `client` and returns what its context said the webhooks are.
    private func webhooksSeen(by store: any AlertStore, client: String, others: [String] = [], reading: Bool, now: Timestamp)
        async throws -> [Webhook]?
    {
        let seen = NIOLockedValueBox<[Webhook]??>(nil)
        _ = try await store.transact(client: client, others: others, now: now, idempotencyKey: nil, readingWebhooks: reading) {
            _, context throws(EngineError) in
            seen.withLockedValue { $0 = .some(context.webhooks()) }
            return Mutation(())
        }
        guard let answer = seen.withLockedValue({ $0 }) else {
            Issue.record("the transaction's body did not run")
            return nil
        }
        return answer
    }

    private func hook(_ id: String, client: String, now: Timestamp) -> Webhook {
        Webhook(id: id, client: client, url: "https://receiver.example/\(id)", secret: "whsec_\(id)", createdAt: now, source: .api)
    }

    @Test(
        "a shared store hands a transaction that asks the API's webhooks of its clients, another instance's included; none unasked")
    func sharedStore() async throws {
        try await StoreUnderTest.with(.postgres) { subject in
            let store = subject.store
            let now = subject.clock.now()
            try await store.saveWebhook(hook("wh_ops", client: "ops", now: now))
            try await store.saveWebhook(hook("wh_other", client: "elsewhere", now: now))

            let seen = try await webhooksSeen(by: store, client: "ops", reading: true, now: now)
            #expect(seen?.map(\.id) == ["wh_ops"], "seen: \(String(describing: seen))")
            #expect(seen?.first?.url == "https://receiver.example/wh_ops" && seen?.first?.secret == "whsec_wh_ops")
            #expect(seen?.first?.source == .api && seen?.first?.client == "ops")
            #expect(try await webhooksSeen(by: store, client: "ops", reading: false, now: now) == nil, "webhooks read unasked")
            let none = try await webhooksSeen(by: store, client: "quiet", reading: true, now: now)
            #expect(none?.isEmpty == true, "a client with no webhook: \(String(describing: none))")

            // Registered and removed through another instance, before the transaction: counted
            // at once, with no notification awaited.
            let ran = try await subject.withPeer { peer in
                try await peer.saveWebhook(hook("wh_peer", client: "ops", now: now))
                _ = try await peer.deleteWebhook(id: "wh_ops")
                let after = try await webhooksSeen(by: store, client: "ops", reading: true, now: now)
                #expect(after?.map(\.id) == ["wh_peer"], "another instance's changes not counted: \(String(describing: after))")
                // A transaction of several clients (an alert pending on several, SPEC §12) gets each one's.
                let both = try await webhooksSeen(by: store, client: "ops", others: ["elsewhere"], reading: true, now: now)
                #expect(Set(both?.map(\.id) ?? []) == ["wh_peer", "wh_other"], "both: \(String(describing: both))")
            }
            #expect(ran)
        }
    }

    @Test("an embedded store reads none: the engine's registry holds every change")
    func embeddedStore() async throws {
        try await StoreUnderTest.with(.sqlite) { subject in
            let store = subject.store
            let now = subject.clock.now()
            try await store.saveWebhook(hook("wh_ops", client: "ops", now: now))
            #expect(try await webhooksSeen(by: store, client: "ops", reading: true, now: now) == nil)
            #expect(try await store.webhooksIfChangedElsewhere() == nil)
        }
    }
}
