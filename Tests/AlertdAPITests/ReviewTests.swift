import AlertdEngine
import AlertdCore
import Foundation
import NIOConcurrencyHelpers
import Synchronization
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
@testable import AlertdStore
import AlertdHTTP
import AlertdTestSupport
import AlertdWire
import GRDB

// Review of the core daemon: each test demonstrates one defect found in the
// review and fails until it is fixed. Defects fixed while the review ran
// (2da5e63, b66596a) keep their test as a regression test. None is marked as a
// known issue on purpose.

/// A real store that records the writes of each commit as the writer begins it (before
/// SQLite sees them): the signal that a change has left the board for the store and is
/// committing now, which a test awaits instead of sleeping.
final class WatchedStore: PersistentStore, Sendable {
    let inner: any PersistentStore
    /// The writes of every commit begun, in order.
    let begun = Observed<[[StoreWrite]]>([])

    init(_ inner: any PersistentStore) { self.inner = inner }

    /// An in-process daemon on a watched store.
    static func daemon(config: String = "") async throws -> (InProcessDaemon, WatchedStore) {
        let holder = NIOLockedValueBox<WatchedStore?>(nil)
        let daemon = try await InProcessDaemon(config: config) { inner in
            let store = WatchedStore(inner)
            holder.withLockedValue { $0 = store }
            return store
        }
        return (daemon, try #require(holder.withLockedValue { $0 }))
    }

    /// Returns once a commit holding a version of an alert that `matches` has begun.
    func awaitCommit(of what: String, timeout: Duration = .seconds(20), _ matches: @escaping @Sendable (Alert) -> Bool) async throws {
        let seen = await begun.wait(timeout: timeout) { batches in
            batches.contains { batch in
                batch.contains { write in
                    guard case .alert(let alert) = write else { return false }
                    return matches(alert)
                }
            } ? true : nil
        }
        guard seen == true else { throw Unexpected.NoCommit(what: what, timeout: timeout) }
    }

    /// While set, a commit waits here (on the store's writer thread) once it has begun.
    private let gate = NIOLockedValueBox<DispatchSemaphore?>(nil)

    /// Holds every commit that begins from now on until ``release()``: the changes stay in
    /// flight for as long as the test needs. Release it in a `defer`.
    func hold() { gate.withLockedValue { $0 = DispatchSemaphore(value: 0) } }

    func release() { gate.withLockedValue { $0.take() }?.signal() }

    func commit(_ writes: [StoreWrite]) throws {
        begun.update { $0.append(writes) }
        if let held = gate.withLockedValue({ $0 }) {
            held.wait()
            held.signal()  // the next commit held by the same gate passes too
        }
        try inner.commit(writes)
    }

    func load() throws -> StoredState { try inner.load() }
    func alert(_ id: AlertID) throws -> Alert? { try inner.alert(id) }
    func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) throws -> [Alert] {
        try inner.decided(on: client, states: states, before: before, limit: limit)
    }
    func idempotency(client: String, key: String) throws -> IdempotencyRecord? { try inner.idempotency(client: client, key: key) }
    func webhooks() throws -> [Webhook] { try inner.webhooks() }
    func deliveries(of alertID: AlertID) throws -> [DeliveryRecord] { try inner.deliveries(of: alertID) }
    func pendingDeliveries() throws -> [PendingDelivery] { try inner.pendingDeliveries() }
    func clientsWithoutDecidedAlerts(among clients: [String]) throws -> [String] {
        try inner.clientsWithoutDecidedAlerts(among: clients)
    }
    func purgeCandidates(decidedBefore: Timestamp, keepPerClient: Int, limit: Int) throws -> [String] {
        try inner.purgeCandidates(decidedBefore: decidedBefore, keepPerClient: keepPerClient, limit: limit)
    }
    func isWritable() -> Bool { inner.isWritable() }
}

extension Unexpected {
    struct NoCommit: Error, CustomStringConvertible {
        let what: String
        let timeout: Duration
        var description: String { "no commit of \(what) began within \(timeout)" }
    }
}

/// Holds SQLite's write lock on a state directory from a second connection, as an
/// outside tool (`sqlite3`, a backup script) would. While it is held, alertd's
/// writer waits in SQLite's busy handler (`busy_timeout` = 5 s), then its commit
/// fails with SQLITE_BUSY: a commit in flight that the test controls.
/// Its own thread holds the lock and blocks; the test awaits.
final class WriteLockHolder: Sendable {
    private let release = DispatchSemaphore(value: 0)
    /// "taken" once the lock is held, "done" once it was let go.
    private let state = Observed("")

    /// Returns once the lock is held.
    static func take(stateDir: String) async throws -> WriteLockHolder {
        let holder = WriteLockHolder()
        let store = try SQLiteStore(directory: stateDir, durability: .normal)
        Thread { [release = holder.release, state = holder.state] in
            try? store.pool.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                state.update { $0 = "taken" }
                release.wait()
                try db.execute(sql: "ROLLBACK")
            }
            state.update { $0 = "done" }
        }.start()
        guard await holder.state.wait(timeout: .seconds(20), until: { $0 == "taken" ? true : $0 == "done" ? false : nil }) == true else {
            throw PendingAnswer.TimedOut()
        }
        return holder
    }

    func unlock() async {
        release.signal()
        _ = await state.wait(timeout: .seconds(20)) { $0 == "done" ? true : nil }
    }
}

@Suite("Review: order and visibility of changes")
struct ReviewVisibilityTests {
    /// Found in review and fixed in 2da5e63 (kept as a regression test): post and
    /// decide submitted their writes to the group committer after leaving the
    /// board lock, so two posts on a stack client could reach the store in the
    /// opposite order of the board and the store kept several displayed alerts.
    @Test("concurrent posts to a stack client leave exactly one displayed alert in the store")
    func concurrentStackPostsKeepStoreOrder() async throws {
        let daemon = try await InProcessDaemon(config: "clients:\n  ops: { policy: stack }\n")
        defer { daemon.cleanUp() }
        let threads = 16
        let postsPerThread = 150
        let failures = Atomic<Int>(0)
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            Thread {
                for i in 0..<postsPerThread {
                    let response = daemon.sendBlocking(
                        "POST", "/v1/clients/ops/alerts", json: #"{"title":"t\#(t)-\#(i)","buttons":[{"title":"OK"}]}"#)
                    if response?.status != 201 { failures.add(1, ordering: .relaxed) }
                }
                group.leave()
            }.start()
        }
        await group.finished()
        await daemon.barrier()
        #expect(failures.load(ordering: .relaxed) == 0)

        let stored = try SQLiteStore(directory: daemon.stateDir, durability: .normal).load()
        let displayed = stored.pending.filter { $0.client == "ops" && $0.state == .displayed }
        #expect(
            displayed.count == 1,
            "the store holds \(displayed.count) displayed alerts on one client: writes were committed out of board order")

        // What readers see agrees with itself: `current` is the first alert of the list.
        let current = try await daemon.send("GET", "/v1/clients/ops/alerts/current").object()["id"] as? String
        let first =
            (try await daemon.send("GET", "/v1/clients/ops/alerts?limit=1").object()["alerts"] as? [[String: Any]])?.first?["id"] as? String
        #expect(current == first, "current shows \(current ?? "nil") but the displayed alert is \(first ?? "nil")")
    }

    /// Same root cause (fixed in 2da5e63, kept as a regression test): a replay's
    /// barrier could be queued before the original post's writes and answer 404
    /// "the alert of this Idempotency-Key is gone (purged)".
    @Test("concurrent posts with one Idempotency-Key all answer the same alert, never 404")
    func concurrentIdempotentPosts() async throws {
        let daemon = try await InProcessDaemon()
        defer { daemon.cleanUp() }
        let rounds = 1000
        let racers = 8
        let bad = NIOLockedValueBox<[String]>([])
        for round in 0..<rounds {
            let ids = NIOLockedValueBox<Set<String>>([])
            let group = DispatchGroup()
            for _ in 0..<racers {
                group.enter()
                Thread {
                    let response = daemon.sendBlocking(
                        "POST", "/v1/clients/ops/alerts", json: #"{"title":"r\#(round)","buttons":[{"title":"OK"}]}"#,
                        headers: [("Idempotency-Key", "key-\(round)")])
                    if let response, response.status == 201 || response.status == 200,
                        let id = try? response.object()["id"] as? String
                    {
                        ids.withLockedValue { _ = $0.insert(id) }
                    } else {
                        bad.withLockedValue { $0.append("\(response?.status ?? -1) \(response?.text ?? "")") }
                    }
                    group.leave()
                }.start()
            }
            await group.finished()
            #expect(ids.withLockedValue { $0.count } <= 1)
        }
        let failures = bad.withLockedValue { $0 }
        #expect(failures.isEmpty, "\(failures.count) replays failed, first: \(failures.first ?? "")")
    }

    /// AlertService.decide answers 409 already-decided (and not-displayed) at once,
    /// from the board's latest, uncommitted version: while a choice of "OK" is
    /// committing, a choice of "Cancel" is told the alert is already answered
    /// with "OK". When that commit fails (or alertd is killed first), the answer
    /// never happened, yet a caller acted on it (README: "Reads show committed
    /// state only ... no dashboard or waiter ever acts on an answer that a crash
    /// could lose"). The repeated-same-button half was fixed in 2da5e63.
    @Test("a choice whose commit fails is never reported to anyone as made")
    func uncommittedDecisionIsNotRevealed() async throws {
        let (daemon, store) = try await WatchedStore.daemon()
        defer { daemon.cleanUp() }
        let alert = try await daemon.post("ops", #"{"title":"Deploy?","buttons":[{"title":"OK"},{"title":"Cancel","style":"cancel"}]}"#)
        let id = alert["id"] as! String

        let lock = try await WriteLockHolder.take(stateDir: daemon.stateDir)
        let original = daemon.start("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#)
        // The writer has taken the choice's batch and waits for the lock.
        try await store.awaitCommit(of: "the choice") { $0.id.description == id && $0.state == .answered }
        let other = daemon.start("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Cancel"}"#)
        let repeated = daemon.start("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#)

        let originalAnswer = try await original.value(seconds: 20)
        await lock.unlock()
        #expect(originalAnswer.status == 503, "the original choice failed to commit (SQLITE_BUSY)")
        let otherAnswer = try await other.value(seconds: 20)
        let repeatedAnswer = try await repeated.value(seconds: 20)

        let stored = try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)").object()
        #expect(stored["state"] as? String == "displayed", "the answer was lost: the alert is still displayed")

        let revealed = (try? otherAnswer.object()["alert"] as? [String: Any])?["state"] as? String
        #expect(
            !(otherAnswer.status == 409 && revealed == "answered"),
            "another caller was told the alert is already answered: \(otherAnswer.text)")
        #expect(
            repeatedAnswer.status != 200,
            "a repeated choice was answered 200 although nothing was answered: \(repeatedAnswer.text)")
    }

    /// GroupCommitter keeps committing batches queued behind a failed one. Those
    /// batches were computed on a board that includes the failed change, so
    /// they can make it durable and visible: here B's post fails (503), but the
    /// choice queued behind it writes "B displayed" (INSERT OR REPLACE), so B is
    /// displayed to dashboards at once and survives a restart.
    @Test("an alert whose post failed with 503 never becomes visible or durable")
    func batchesAfterAFailedCommitAreNotCommitted() async throws {
        let (first, store) = try await WatchedStore.daemon()
        var daemon = first
        defer { daemon.cleanUp() }
        let a = try await daemon.post("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)

        let lock = try await WriteLockHolder.take(stateDir: daemon.stateDir)
        let postB = daemon.start("POST", "/v1/clients/ops/alerts", json: #"{"title":"B","buttons":[{"title":"OK"}]}"#)
        // The writer has taken B's batch and waits for the lock.
        try await store.awaitCommit(of: "B's post") { $0.title == "B" }
        let choice = daemon.start("POST", "/v1/clients/ops/alerts/\(a["id"] as! String)/choice", json: #"{"button":"OK"}"#)
        let answerB = try await postB.value(seconds: 20)
        await lock.unlock()
        _ = try await choice.value(seconds: 20)
        #expect(answerB.status == 503)

        let current = try await daemon.send("GET", "/v1/clients/ops/alerts/current")
        let shown = current.status == 200 ? try current.object()["title"] as? String : nil
        #expect(shown != "B", "B's post failed with 503, yet dashboards display B")

        daemon = try await daemon.restart()
        let titles =
            (try await daemon.send("GET", "/v1/clients/ops/alerts").object()["alerts"] as? [[String: Any]])?
            .compactMap { $0["title"] as? String } ?? []
        #expect(!titles.contains("B"), "B's post failed with 503, yet B is in the store after a restart")
    }

    /// Found in review and fixed in b66596a (kept as a regression test): `position`
    /// (and `/v1/clients` `pending`) came from the live queue, which already holds
    /// uncommitted changes, while `state` came from the committed view: while a
    /// covering post was in flight on a stack client, the displayed alert read
    /// `"state":"displayed","position":1`.
    @Test("a displayed alert reads position 0 while a covering post is still committing")
    func positionComesFromCommittedState() async throws {
        let (daemon, store) = try await WatchedStore.daemon(config: "clients:\n  ops: { policy: stack }\n")
        defer { daemon.cleanUp() }
        let a = try await daemon.post("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)

        store.hold()
        defer { store.release() }
        let postB = daemon.start("POST", "/v1/clients/ops/alerts", json: #"{"title":"B","buttons":[{"title":"OK"}]}"#)
        try await store.awaitCommit(of: "B's post") { $0.title == "B" }
        let seen = try await daemon.send("GET", "/v1/clients/ops/alerts/\(a["id"] as! String)").object()
        let clients = try await daemon.send("GET", "/v1/clients").object()["clients"] as? [[String: Any]]
        let listed = try await daemon.send("GET", "/v1/clients/ops/alerts").object()["alerts"] as? [[String: Any]]
        #expect(!postB.isAnswered, "B's post was answered before its commit")
        store.release()
        #expect(try await postB.value(seconds: 20).status == 201)

        #expect(seen["state"] as? String == "displayed")
        #expect(seen["position"] as? Int == 0, "state displayed with position \(seen["position"] ?? "nil")")
        #expect(listed?.map { $0["title"] as? String } == ["A"], "B is not committed: readers do not see it")
        #expect(clients?.first?["pending"] as? Int == listed?.count, "/v1/clients counts an alert no reader can see yet")
    }
}

@Suite("Review: positions from committed state")
struct ReviewPositionTests {
    /// b66596a made a displayed alert read position 0, but a queued alert's
    /// position still came from the live queue: an uncommitted higher-priority post
    /// was counted ahead of it (README: "Reads show committed state only").
    /// Fixed: the store counts positions among committed versions
    /// (`AlertBoard.visiblePosition`).
    @Test("a queued alert's position counts only alerts readers can see")
    func queuedPositionFromCommittedState() async throws {
        let (daemon, store) = try await WatchedStore.daemon()
        defer { daemon.cleanUp() }
        _ = try await daemon.post("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)
        let b = try await daemon.post("ops", #"{"title":"B","buttons":[{"title":"OK"}]}"#)
        let bID = b["id"] as! String
        #expect(b["position"] as? Int == 1)

        store.hold()
        defer { store.release() }
        let urgent = daemon.start("POST", "/v1/clients/ops/alerts", json: #"{"title":"C","priority":10,"buttons":[{"title":"OK"}]}"#)
        try await store.awaitCommit(of: "C's post") { $0.title == "C" }
        let withCommitting = try await daemon.send("GET", "/v1/clients/ops/alerts/\(bID)").object()
        let listed = try await daemon.send("GET", "/v1/clients/ops/alerts").object()["alerts"] as? [[String: Any]] ?? []
        #expect(!urgent.isAnswered, "C's post was answered before its commit")
        store.release()
        #expect(try await urgent.value(seconds: 20).status == 201)

        #expect(listed.map { $0["title"] as? String } == ["A", "B"], "C is not committed: readers do not see it")
        #expect(
            withCommitting["position"] as? Int == 1,
            "B reads position \(withCommitting["position"] ?? "nil") behind an alert no reader can see")
        #expect(listed.last?["position"] as? Int == 1)
        // Once C is committed, readers see it ahead of B.
        let after = try await daemon.send("GET", "/v1/clients/ops/alerts/\(bID)").object()
        #expect(after["position"] as? Int == 2)
    }

    /// Same root cause, in lists: they were the live queue filtered by what readers see,
    /// so while the displayed alert's withdrawal was committing it was missing from the
    /// list, and the next one was listed first, queued, at position 0.
    @Test("while the displayed alert's withdrawal commits, reads show it displayed and the rest behind it")
    func withdrawalOfTheDisplayedAlertInFlight() async throws {
        let (daemon, store) = try await WatchedStore.daemon()
        defer { daemon.cleanUp() }
        let a = try await daemon.post("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)
        let b = try await daemon.post("ops", #"{"title":"B","buttons":[{"title":"OK"}]}"#)
        _ = try await daemon.post("ops", #"{"title":"C","buttons":[{"title":"OK"}]}"#)
        let aID = a["id"] as! String

        store.hold()
        defer { store.release() }
        let withdrawal = daemon.start("DELETE", "/v1/clients/ops/alerts/\(aID)")
        try await store.awaitCommit(of: "A's withdrawal") { $0.id.description == aID && $0.state == .withdrawn }
        let listed = try await daemon.send("GET", "/v1/clients/ops/alerts").object()["alerts"] as? [[String: Any]] ?? []
        let seenB = try await daemon.send("GET", "/v1/clients/ops/alerts/\(b["id"] as! String)").object()
        #expect(!withdrawal.isAnswered, "the withdrawal was answered before its commit")
        store.release()
        #expect(try await withdrawal.value(seconds: 20).status == 200)

        #expect(listed.map { $0["title"] as? String } == ["A", "B", "C"])
        #expect(listed.map { $0["state"] as? String } == ["displayed", "queued", "queued"])
        #expect(listed.map { $0["position"] as? Int } == [0, 1, 2])
        #expect(seenB["state"] as? String == "queued" && seenB["position"] as? Int == 1, "B as read: \(seenB)")
        let after = try await daemon.send("GET", "/v1/clients/ops/alerts").object()["alerts"] as? [[String: Any]] ?? []
        #expect(after.map { $0["title"] as? String } == ["B", "C"])
    }
}

extension DispatchGroup {
    /// Returns once every member left, without holding a thread meanwhile.
    func finished() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in notify(queue: .global()) { done.resume() } }
    }
}
