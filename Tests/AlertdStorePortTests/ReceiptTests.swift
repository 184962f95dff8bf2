import AlertdCore
import AlertdEngine
import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import Synchronization
import Testing

// Signed receipts (SPEC §14) through the port: every transaction that decides an alert
// writes its receipt with it, after the deployment's last one; the commit and the terminal
// event carry it; the chain has no gap and no fork, however many instances decide.

extension AlertStore {
    /// Withdraws `id` on `client`, with its terminal event (one delivery) as the engine writes it.
    fileprivate func withdraw(_ id: AlertID, on client: String, now: Timestamp, delivery: String? = nil) async
        -> Result<Committed<Alert>, EngineError>
    {
        await commit(client, now: now) { board, _ throws(EngineError) in
            do throws(BoardError) {
                let (alert, change) = try board.withdraw(id, on: client, by: "poster", now: now)
                return Mutation(alert, change: change, events: delivery.map { [terminalEvent(for: alert, delivery: $0)] } ?? [])
            } catch {
                throw EngineError(error)
            }
        }
    }

    /// `decider`'s choice of button `index` of the displayed alert `id`, with its terminal event when it decides.
    fileprivate func vote(_ index: Int, of id: AlertID, on client: String, by decider: String, now: Timestamp) async
        -> Result<Committed<Alert>, EngineError>
    {
        await commit(client, now: now) { board, _ throws(EngineError) in
            do throws(BoardError) {
                let (alert, change) = try board.choose(.index(index), for: id, on: client, by: decider, now: now)
                return Mutation(alert, change: change, events: change.decided.map { terminalEvent(for: $0, delivery: "dl_\($0.id)") })
            } catch {
                throw EngineError(error)
            }
        }
    }

    /// Fires what is due at `now`, each decision with its terminal event; the round's commits.
    fileprivate func fireDue(now: Timestamp) async -> [Committed<Void>] {
        await fireDeadlines(now: now, events: { $0.decided.map { terminalEvent(for: $0, delivery: "dl_\($0.id)") } }).compactMap {
            try? $0.get()
        }
    }

    /// Every receipt, in `seq` order.
    fileprivate func allReceipts() async throws -> [ReceiptRecord] {
        var all: [ReceiptRecord] = []
        while true {
            let page = try await receipts(after: all.last?.seq ?? 0, limit: 7)
            if page.isEmpty { return all }
            all += page
        }
    }
}

/// The terminal event of `alert`, its body as the engine writes it (`{"type","timestamp","data":{"alert"}}`).
private func terminalEvent(for alert: Alert, delivery: String) -> OutboxEvent {
    var json = JSONWriter()
    AlertEvent.write(type: "alert.\(alert.state.rawValue)", timestamp: alert.decidedAt ?? alert.createdAt, into: &json) {
        $0.raw(alert.json(position: nil))
    }
    return OutboxEvent(
        id: "msg_\(delivery)", alertID: alert.id, client: alert.client, type: "alert.\(alert.state.rawValue)",
        createdAt: alert.decidedAt ?? alert.createdAt, body: json.bytes,
        deliveries: [OutboxDelivery(id: delivery, target: "http://receiver.invalid/hook", webhookID: nil, secret: "secret")])
}

/// The alert as the API renders it, read back as the SDK reads it.
private func resource(_ alert: Alert) throws -> AlertResource {
    try JSONValueDecoder().decode(AlertResource.self, from: alert.json(position: nil))
}

private let keys = ReceiptKeySet([StoreUnderTest.receiptKey.publicKey])

@Suite("Store port: signed receipts (SPEC §14)")
struct ReceiptPortTests {
    @Test(
        "answered, withdrawn, expired, dismissed and a quorum's completing vote: one receipt each, in the commit that decides, chained from seq 1",
        arguments: StoreKind.allCases)
    func everyOutcome(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            var decided: [(alert: Alert, committed: [AlertID: ReceiptRecord])] = []

            let a = try await store.post(draft("Deploy?"), to: "ops", now: start).get()
            let answered = try await store.vote(0, of: a.id, on: "ops", by: "alice", now: start.adding(seconds: 1)).get()
            decided.append((answered.value, answered.receipts))
            // Its terminal event carries the receipt, as it is handed to the worker.
            let record = try #require(answered.receipts[a.id])
            let body = String(decoding: try #require(answered.deliveries.first).body, as: UTF8.self)
            #expect(body.hasSuffix(#","receipt":"# + String(decoding: record.json, as: UTF8.self) + "}}"), "\(body)")

            let w = try await store.post(draft("Rotate keys?"), to: "keys", now: start).get()
            let withdrawn = try await store.withdraw(w.id, on: "keys", now: start.adding(seconds: 2)).get()
            decided.append((withdrawn.value, withdrawn.receipts))

            let e = try await store.post(draft("Still there?", expiresIn: 30), to: "night", now: start).get()
            let d = try await store.post(NewAlert(title: "Disk 91% full"), to: "disks", now: start).get()
            let later = start.adding(seconds: 60)
            subject.clock.set(later)
            var fired: [AlertID: ReceiptRecord] = [:]
            var firedAlerts: [Alert] = []
            for commit in await store.fireDue(now: later) {
                firedAlerts += commit.change.decided
                fired.merge(commit.receipts) { first, _ in first }
            }
            #expect(Set(firedAlerts.map(\.id)) == [e.id, d.id])
            #expect(Set(firedAlerts.map(\.state)) == [.expired, .dismissed])
            for alert in firedAlerts { decided.append((alert, fired)) }

            let q = try await store.post(
                NewAlert(title: "Drop db-3?", buttons: [Button(title: "Drop"), Button(title: "Keep", style: .cancel)], quorum: 2),
                to: "dbs", now: later
            ).get()
            let first = try await store.vote(0, of: q.id, on: "dbs", by: "alice", now: later.adding(seconds: 1)).get()
            #expect(first.receipts.isEmpty, "a vote short of the quorum has a receipt")
            let second = try await store.vote(0, of: q.id, on: "dbs", by: "bob", now: later.adding(seconds: 2)).get()
            decided.append((second.value, second.receipts))

            let receipts = try await store.allReceipts()
            #expect(receipts.map(\.seq) == Array(1...5), "\(receipts.map(\.seq))")
            let report = ChainVerifier.verify(lines: receipts.map { String(decoding: $0.json, as: UTF8.self) }, keys: keys)
            #expect(report.isValid && report.firstLinkChecked && report.count == 5, "\(report)")
            for (alert, committed) in decided {
                let stored = try #require(try await store.receipt(of: alert.id), "no receipt of \(alert.state) alert \(alert.id)")
                #expect(committed[alert.id] == stored, "the commit's receipt of \(alert.state) alert \(alert.id) is not the stored one")
                let signed = try SignedReceipt(text: String(decoding: stored.json, as: UTF8.self))
                // What it says and hashes is the alert as a reader holds it.
                let read = try #require(try await store.read(alert.id)).alert
                try signed.verify(with: keys, for: try resource(read))
                #expect(signed.receipt.outcome.rawValue == alert.state.rawValue)
                #expect(stored.client == alert.client && stored.decidedAt == alert.decidedAt)
            }
            let quorum = try SignedReceipt(text: String(decoding: try #require(second.receipts[q.id]).json, as: UTF8.self))
            #expect(quorum.receipt.decidedBy == "bob" && quorum.receipt.votes.count == 2 && quorum.receipt.button == "Drop")
            #expect(try await store.receipt(of: AlertID(String(repeating: "0", count: 26))!) == nil)
        }
    }

    @Test(
        "a repeated decision and a decision refused write no receipt; the chain goes on from its head after a restart",
        arguments: StoreKind.allCases)
    func noSecondReceipt(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let a = try await store.post(draft("A"), to: "ops", now: now).get()
            _ = try await store.vote(0, of: a.id, on: "ops", by: "alice", now: now).get()
            // Withdrawing an answered alert is refused; nothing is written.
            #expect(await store.withdraw(a.id, on: "ops", now: now).failure != nil)
            let b = try await store.post(draft("B"), to: "ops", now: now).get()
            #expect(try await store.allReceipts().map(\.alertID) == [a.id])
            try await subject.restarted { fresh in
                _ = try await fresh.vote(0, of: b.id, on: "ops", by: "bob", now: now.adding(seconds: 1)).get()
                let receipts = try await fresh.allReceipts()
                #expect(receipts.map(\.seq) == [1, 2] && receipts.map(\.alertID) == [a.id, b.id])
                let report = ChainVerifier.verify(lines: receipts.map { String(decoding: $0.json, as: UTF8.self) }, keys: keys)
                #expect(report.isValid && report.count == 2, "\(report)")
            }
        }
    }

    @Test("receipts past retention go from the chain's start; the totals follow; the chain goes on", arguments: StoreKind.allCases)
    func retention(kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { subject in
            let store = subject.store
            let start = subject.clock.now()
            var ids: [AlertID] = []
            for index in 0..<4 {
                let at = start.adding(seconds: Double(index) * 100)
                let alert = try await store.post(draft("A\(index)"), to: "ops", now: at).get()
                _ = try await store.vote(0, of: alert.id, on: "ops", by: "alice", now: at).get()
                ids.append(alert.id)
            }
            // Decided at 0, 100, 200, 300 s: the first two go.
            _ = try await store.purge(
                Retention(decidedBefore: Timestamp(milliseconds: 0), receiptsDecidedBefore: start.adding(seconds: 150)),
                keysBefore: Timestamp(milliseconds: 0))
            let kept = try await store.allReceipts()
            #expect(kept.map(\.seq) == [3, 4] && kept.map(\.alertID) == Array(ids.suffix(2)))
            #expect(try await store.receipt(of: ids[0]) == nil)
            let totals = try #require(store.receiptTotals)
            #expect(totals.count == 2 && totals.lastSeq == 4 && totals.bytes == kept.reduce(0) { $0 + $1.json.count }, "\(totals)")
            // The chain goes on from its head: the next receipt links to seq 4.
            let next = try await store.post(draft("A4"), to: "ops", now: start.adding(seconds: 400)).get()
            _ = try await store.vote(0, of: next.id, on: "ops", by: "alice", now: start.adding(seconds: 400)).get()
            let report = ChainVerifier.verify(
                lines: try await store.allReceipts().map { String(decoding: $0.json, as: UTF8.self) }, keys: keys)
            #expect(report.isValid && report.firstSeq == 3 && report.head?.seq == 5, "\(report)")
        }
    }

    /// SPEC §9 and §14: two instances deciding at once, on clients of their own and on shared
    /// ones, take turns at the chain's head: one chain, `seq` 1…n, no gap, no fork, every
    /// receipt signed and linked.
    @Test("two instances deciding at once write one chain: no gap, no fork, every receipt verifies")
    func twoInstances() async throws {
        try await StoreUnderTest.with(.postgres) { subject in
            let store = subject.store
            let now = subject.clock.now()
            let perInstance = 40
            _ = try await subject.withPeer { peer in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, instance) in [store, peer].enumerated() {
                        for lane in 0..<4 {
                            group.addTask {
                                // Lanes 0 and 1 are the same two clients on both instances: shared queues.
                                let client = lane < 2 ? "shared-\(lane)" : "own-\(index)-\(lane)"
                                for round in 0..<(perInstance / 4) {
                                    let alert = try await instance.post(draft("\(index)-\(lane)-\(round)"), to: client, now: now).get()
                                    // Shared: the other instance's alert may be the displayed one; answer what is displayed.
                                    var decided = false
                                    while !decided {
                                        guard let shown = try await instance.readDisplays([client]).first?.alert else { break }
                                        switch await instance.vote(0, of: shown.id, on: client, by: "i\(index)", now: now) {
                                        case .success(let committed): decided = committed.change.decided.contains { $0.id == alert.id }
                                        case .failure: continue  // decided by the other instance meanwhile
                                        }
                                        if try await instance.read(alert.id)?.alert.state.isTerminal == true { decided = true }
                                    }
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let receipts = try await store.allReceipts()
            #expect(receipts.count == 2 * perInstance, "\(receipts.count) receipts for \(2 * perInstance) decisions")
            #expect(receipts.map(\.seq) == Array(1...receipts.count), "a gap or a repeat in seq")
            #expect(Set(receipts.map(\.alertID)).count == receipts.count, "an alert with two receipts")
            let report = ChainVerifier.verify(lines: receipts.map { String(decoding: $0.json, as: UTF8.self) }, keys: keys)
            #expect(report.isValid && report.count == receipts.count, "\(report)")
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
