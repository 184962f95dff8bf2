import AlertdCore
import AlertdInProcess
import AlertdTestSupport
import AlertdWire
import Foundation
import NIOConcurrencyHelpers
import Synchronization
import Testing

@testable import AlertdSQLite

// Found in a review of the core daemon; each test failed until its defect was fixed
// (2da5e63 for the first two) and stays as a regression test.

/// Changes reach the store in the board's order, and nothing computed on a change that
/// failed to commit is committed after it.
@Suite("Changes commit in the board's order")
struct CommitOrderTests {
    /// Found in review and fixed in 2da5e63 (kept as a regression test): post and
    /// decide submitted their writes to the group committer after leaving the
    /// board lock, so two posts on a stack client could reach the store in the
    /// opposite order of the board and the store kept several displayed alerts.
    @Test("concurrent posts to a stack client leave exactly one displayed alert in the store")
    func concurrentStackPostsKeepStoreOrder() async throws {
        try await withAlertd(config: "clients:\n  ops: { policy: stack }\n") { daemon in
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
            let current = try await daemon.send("GET", "/v1/clients/ops/alerts/current").jsonObject()["id"] as? String
            let first =
                (try await daemon.send("GET", "/v1/clients/ops/alerts?limit=1").jsonObject()["alerts"] as? [[String: Any]])?.first?["id"]
                as? String
            #expect(current == first, "current shows \(current ?? "nil") but the displayed alert is \(first ?? "nil")")
        }
    }

    /// Same root cause (fixed in 2da5e63, kept as a regression test): a replay's
    /// barrier could be queued before the original post's writes and answer 404
    /// "the alert of this Idempotency-Key is gone (purged)".
    @Test("concurrent posts with one Idempotency-Key all answer the same alert, never 404")
    func concurrentIdempotentPosts() async throws {
        try await withAlertd { daemon in
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
                            let id = try? response.jsonObject()["id"] as? String
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
    }

    /// GroupCommitter keeps committing batches queued behind a failed one. Those
    /// batches were computed on a board that includes the failed change, so
    /// they can make it durable and visible: here B's post fails (503), but the
    /// choice queued behind it writes "B displayed" (INSERT OR REPLACE), so B is
    /// displayed to dashboards at once and survives a restart.
    @Test("an alert whose post failed with 503 never becomes visible or durable")
    func batchesAfterAFailedCommitAreNotCommitted() async throws {
        let store = ControlledStore()
        try await withAlertd(wrapStore: store.wrap) { daemon in
            let a = try await daemon.postAlert("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)

            // Nothing but the test's own changes may run into the lock (a purge's failed commit
            // would fail them before they began).
            try await store.awaitStartPurge()
            let lock = try await SQLiteWriteLock.take(stateDir: daemon.stateDir)
            let postB = daemon.begin("POST", "/v1/clients/ops/alerts", json: #"{"title":"B","buttons":[{"title":"OK"}]}"#)
            // The writer has taken B's batch and waits for the lock.
            try await store.awaitCommit(of: "B's post") { $0.title == "B" }
            let choice = daemon.begin("POST", "/v1/clients/ops/alerts/\(a["id"] as! String)/choice", json: #"{"button":"OK"}"#)
            let answerB = try await postB.value(timeout: .seconds(20))
            await lock.release()
            _ = try await choice.value(timeout: .seconds(20))
            #expect(answerB.status == 503)

            let current = try await daemon.send("GET", "/v1/clients/ops/alerts/current")
            let shown = current.status == 200 ? try current.jsonObject()["title"] as? String : nil
            #expect(shown != "B", "B's post failed with 503, yet dashboards display B")

            try await daemon.restart()
            let titles =
                (try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]])?
                .compactMap { $0["title"] as? String } ?? []
            #expect(!titles.contains("B"), "B's post failed with 503, yet B is in the store after a restart")
        }
    }
}
