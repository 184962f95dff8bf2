import AlertdCore
import AlertdEngine
import AlertdTestSupport
import AlertdWire
import Testing

@Suite("Store port: the outbox")
struct OutboxTests {
    @Test(
        "an event committed with a decision is a delivery due at once; recorded attempts move it on until it settles",
        arguments: StoreKind.allCases)
    func attemptsMoveADeliveryOn(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let a = try await store.post(draft("A"), to: "ops", now: now).get()
            let committed = try await store.choose(0, of: a.id, on: "ops", now: now, delivery: "dl_a").get()

            #expect(committed.deliveries.map(\.id) == ["dl_a"], "the commit hands the new delivery to the worker")
            #expect(committed.deliveries.first?.due == now && committed.deliveries.first?.attemptsMade == 0)
            var records = try await store.readDeliveries(of: a.id)
            #expect(records.map(\.state) == [.pending] && records.first?.attempts.isEmpty == true)

            let retryAt = now.adding(seconds: 30)
            try await store.recordAttempt(
                AttemptRecord(
                    deliveryID: "dl_a", number: 1, attempt: DeliveryAttempt(at: now, statusCode: 503, error: nil), state: .pending,
                    nextAttemptAt: retryAt))
            records = try await store.readDeliveries(of: a.id)
            #expect(records.first?.attempts.map(\.statusCode) == [503])
            #expect(records.first?.nextAttemptAt == retryAt && records.first?.state == .pending)

            try await store.recordAttempt(
                AttemptRecord(
                    deliveryID: "dl_a", number: 2, attempt: DeliveryAttempt(at: retryAt, statusCode: 204, error: nil), state: .delivered,
                    nextAttemptAt: nil))
            records = try await store.readDeliveries(of: a.id)
            #expect(records.first?.attempts.map(\.statusCode) == [503, 204])
            #expect(records.first?.state == .delivered && records.first?.nextAttemptAt == nil)
        }
    }

    /// Only a store several processes deliver from leases its deliveries; SQLite's one
    /// process hands each delivery to its one worker as it is, and never has one without a holder.
    @Test("an outbox of one process hands each delivery back as it is, and has no orphans to take")
    func ownOutbox() async throws {
        try await StoreUnderTest.with(.sqlite) { subject in
            let store = subject.store
            let now = subject.clock.now()
            #expect(store.publishesEveryCommit, "the embedded store says other processes commit to it")
            let a = try await store.post(draft("A"), to: "ops", now: now).get()
            _ = try await store.choose(0, of: a.id, on: "ops", now: now, delivery: "dl_a").get()
            let delivery = PendingDelivery(
                id: "dl_a", eventID: "ev", target: "http://127.0.0.1:9/", secret: "s", body: [1], eventCreatedAt: now, attemptsMade: 3,
                due: now)
            let claimed = try await store.claim(delivery, until: now.adding(seconds: 60))
            #expect(claimed?.id == "dl_a" && claimed?.attemptsMade == 3 && claimed?.body == [1], "claimed: \(String(describing: claimed))")
            #expect(try await store.takeDue(now: now.adding(seconds: 3600), until: now.adding(seconds: 3660)) == nil)
        }
    }

    @Test("a shared outbox leases a new delivery to the instance that committed it; another takes it over only once the lease ran out")
    func leases() async throws {
        try await StoreUnderTest.with(.postgres) { subject in
            let store = subject.store
            #expect(!store.publishesEveryCommit)
            let now = subject.clock.now()
            let a = try await store.post(draft("A"), to: "ops", now: now).get()
            _ = try await store.choose(0, of: a.id, on: "ops", now: now, delivery: "dl_a").get()

            let ran = try await subject.withPeer { peer in
                let soon = now.adding(seconds: 1)
                #expect(
                    try await peer.takeDue(now: now, until: soon)?.isEmpty == true, "another instance took a delivery its committer holds")
                #expect(try await peer.claimDelivery("dl_a", until: soon) == nil, "another instance claimed a delivery its committer holds")
                #expect(try await store.claimDelivery("dl_a", until: soon) == 0, "the committer cannot claim its own delivery")

                // The committer died with it (no attempt recorded): once its lease ran out, one other instance takes it over.
                let later = now.adding(seconds: 3600)
                subject.clock.set(later)
                let lease = later.adding(seconds: 60)
                #expect(
                    try await peer.takeDue(now: later, until: lease)?.map(\.id) == ["dl_a"],
                    "a delivery whose lease ran out was not taken over")
                #expect(try await store.takeDue(now: later, until: lease)?.isEmpty == true, "a delivery taken over was taken again")
                #expect(try await store.claimDelivery("dl_a", until: lease) == nil, "a delivery taken over was claimed by another")

                try await peer.recordAttempt(
                    AttemptRecord(
                        deliveryID: "dl_a", number: 1, attempt: DeliveryAttempt(at: later, statusCode: 204, error: nil), state: .delivered,
                        nextAttemptAt: nil))
                let afterLease = lease.adding(seconds: 600)
                subject.clock.set(afterLease)
                #expect(
                    try await store.takeDue(now: afterLease, until: afterLease.adding(seconds: 60))?.isEmpty == true,
                    "a settled delivery was taken")
                #expect(
                    try await store.claimDelivery("dl_a", until: afterLease.adding(seconds: 60)) == nil, "a settled delivery was claimed")
            }
            #expect(ran)
        }
    }

    @Test(
        "a purge deletes terminal alerts past the cutoff and forgets emptied clients; pending alerts and unsettled deliveries stay",
        arguments: StoreKind.allCases)
    func purge(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            let gone = try await store.post(draft("gone"), to: "finished", now: start).get()
            _ = try await store.choose(0, of: gone.id, on: "finished", now: start).get()
            let undelivered = try await store.post(draft("undelivered"), to: "waiting", now: start).get()
            _ = try await store.choose(0, of: undelivered.id, on: "waiting", now: start, delivery: "dl_w").get()
            let pending = try await store.post(draft("pending"), to: "busy", now: start).get()

            let later = start.adding(seconds: 3600)
            subject.clock.set(later)
            let forgotten = try await store.purgeDecided(before: start.adding(seconds: 1), keysBefore: start.adding(seconds: 1))

            #expect(try await store.read(gone.id) == nil, "a terminal alert past the cutoff was kept")
            #expect(try await store.readDecided("finished").isEmpty)
            #expect(forgotten == ["finished"], "forgotten: \(forgotten)")
            #expect(try await store.readClients().map(\.client) == ["busy", "waiting"])
            #expect(try await store.read(undelivered.id)?.alert.state == .answered, "an alert with a delivery pending was purged")
            #expect(try await store.read(pending.id)?.alert.state == .displayed, "a pending alert was purged")
        }
    }
}
