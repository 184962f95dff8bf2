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
// (b66596a for positions of displayed alerts) and stays as a regression test.

/// README: "Reads show committed state only": while a change is committing, or after its
/// commit failed, no reader and no other caller sees it.
@Suite("Reads show committed state only")
struct CommittedReadTests {
    /// AlertService.decide answers 409 already-decided (and not-displayed) at once,
    /// from the board's latest, uncommitted version: while a choice of "OK" is
    /// committing, a choice of "Cancel" is told the alert is already answered
    /// with "OK". When that commit fails (or alertd is killed first), the answer
    /// never happened, yet a caller acted on it (README: "Reads show committed
    /// state only ... no dashboard or waiter ever acts on an answer that a crash
    /// could lose"). The repeated-same-button half was fixed in 2da5e63.
    @Test("a choice whose commit fails is never reported to anyone as made")
    func uncommittedDecisionIsNotRevealed() async throws {
        let store = ControlledStore()
        try await withAlertd(wrapStore: store.wrap) { daemon in
            let alert = try await daemon.postAlert(
                "ops", #"{"title":"Deploy?","buttons":[{"title":"OK"},{"title":"Cancel","style":"cancel"}]}"#)
            let id = alert["id"] as! String

            // Nothing but the test's own changes may run into the lock (a purge's failed commit
            // would fail them before they began).
            try await store.awaitStartPurge()
            let lock = try await SQLiteWriteLock.take(stateDir: daemon.stateDir)
            let original = daemon.begin("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#)
            // The writer has taken the choice's batch and waits for the lock.
            try await store.awaitCommit(of: "the choice") { $0.id.description == id && $0.state == .answered }
            let other = daemon.begin("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Cancel"}"#)
            let repeated = daemon.begin("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#)

            let originalAnswer = try await original.value(timeout: .seconds(20))
            await lock.release()
            #expect(originalAnswer.status == 503, "the original choice failed to commit (SQLITE_BUSY)")
            let otherAnswer = try await other.value(timeout: .seconds(20))
            let repeatedAnswer = try await repeated.value(timeout: .seconds(20))

            let stored = try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)").jsonObject()
            #expect(stored["state"] as? String == "displayed", "the answer was lost: the alert is still displayed")

            // Both came while the choice was committing, went into its batch, and failed with it:
            // 503 unavailable, retry later. Not 409 "already answered" (an answer that never
            // happened), not 200 for the repeat, and no other failure either (the old check took a 500).
            for (name, answer) in [("the other choice", otherAnswer), ("the repeated choice", repeatedAnswer)] {
                #expect(answer.status == 503, "\(name): \(answer.status) \(answer.text)")
                #expect((try? answer.jsonObject()["code"] as? String) == "unavailable", "\(name): \(answer.text)")
            }
        }
    }

    /// Found in review and fixed in b66596a (kept as a regression test): `position`
    /// (and `/v1/clients` `pending`) came from the live queue, which already holds
    /// uncommitted changes, while `state` came from the committed view: while a
    /// covering post was in flight on a stack client, the displayed alert read
    /// `"state":"displayed","position":1`.
    @Test("a displayed alert reads position 0 while a covering post is still committing")
    func positionComesFromCommittedState() async throws {
        let store = ControlledStore()
        try await withAlertd(config: "clients:\n  ops: { policy: stack }\n", wrapStore: store.wrap) { daemon in
            let a = try await daemon.postAlert("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)

            store.hold()
            defer { store.release() }
            let postB = daemon.begin("POST", "/v1/clients/ops/alerts", json: #"{"title":"B","buttons":[{"title":"OK"}]}"#)
            try await store.awaitCommit(of: "B's post") { $0.title == "B" }
            let seen = try await daemon.send("GET", "/v1/clients/ops/alerts/\(a["id"] as! String)").jsonObject()
            let clients = try await daemon.send("GET", "/v1/clients").jsonObject()["clients"] as? [[String: Any]]
            let listed = try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]]
            #expect(!postB.isAnswered, "B's post was answered before its commit")
            store.release()
            #expect(try await postB.value(timeout: .seconds(20)).status == 201)

            #expect(seen["state"] as? String == "displayed")
            #expect(seen["position"] as? Int == 0, "state displayed with position \(seen["position"] ?? "nil")")
            #expect(listed?.map { $0["title"] as? String } == ["A"], "B is not committed: readers do not see it")
            #expect(clients?.first?["pending"] as? Int == listed?.count, "/v1/clients counts an alert no reader can see yet")
        }
    }

    /// b66596a made a displayed alert read position 0, but a queued alert's
    /// position still came from the live queue: an uncommitted higher-priority post
    /// was counted ahead of it (README: "Reads show committed state only").
    /// Fixed: the store counts positions among committed versions
    /// (`AlertBoard.visiblePosition`).
    @Test("a queued alert's position counts only alerts readers can see")
    func queuedPositionFromCommittedState() async throws {
        let store = ControlledStore()
        try await withAlertd(wrapStore: store.wrap) { daemon in
            _ = try await daemon.postAlert("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)
            let b = try await daemon.postAlert("ops", #"{"title":"B","buttons":[{"title":"OK"}]}"#)
            let bID = b["id"] as! String
            #expect(b["position"] as? Int == 1)

            store.hold()
            defer { store.release() }
            let urgent = daemon.begin("POST", "/v1/clients/ops/alerts", json: #"{"title":"C","priority":10,"buttons":[{"title":"OK"}]}"#)
            try await store.awaitCommit(of: "C's post") { $0.title == "C" }
            let withCommitting = try await daemon.send("GET", "/v1/clients/ops/alerts/\(bID)").jsonObject()
            let listed = try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
            #expect(!urgent.isAnswered, "C's post was answered before its commit")
            store.release()
            #expect(try await urgent.value(timeout: .seconds(20)).status == 201)

            #expect(listed.map { $0["title"] as? String } == ["A", "B"], "C is not committed: readers do not see it")
            #expect(
                withCommitting["position"] as? Int == 1,
                "B reads position \(withCommitting["position"] ?? "nil") behind an alert no reader can see")
            #expect(listed.last?["position"] as? Int == 1)
            // Once C is committed, readers see it ahead of B.
            let after = try await daemon.send("GET", "/v1/clients/ops/alerts/\(bID)").jsonObject()
            #expect(after["position"] as? Int == 2)
        }
    }

    /// Same root cause, in lists: they were the live queue filtered by what readers see,
    /// so while the displayed alert's withdrawal was committing it was missing from the
    /// list, and the next one was listed first, queued, at position 0.
    @Test("while the displayed alert's withdrawal commits, reads show it displayed and the rest behind it")
    func withdrawalOfTheDisplayedAlertInFlight() async throws {
        let store = ControlledStore()
        try await withAlertd(wrapStore: store.wrap) { daemon in
            let a = try await daemon.postAlert("ops", #"{"title":"A","buttons":[{"title":"OK"}]}"#)
            let b = try await daemon.postAlert("ops", #"{"title":"B","buttons":[{"title":"OK"}]}"#)
            _ = try await daemon.postAlert("ops", #"{"title":"C","buttons":[{"title":"OK"}]}"#)
            let aID = a["id"] as! String

            store.hold()
            defer { store.release() }
            let withdrawal = daemon.begin("DELETE", "/v1/clients/ops/alerts/\(aID)")
            try await store.awaitCommit(of: "A's withdrawal") { $0.id.description == aID && $0.state == .withdrawn }
            let listed = try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
            let seenB = try await daemon.send("GET", "/v1/clients/ops/alerts/\(b["id"] as! String)").jsonObject()
            #expect(!withdrawal.isAnswered, "the withdrawal was answered before its commit")
            store.release()
            #expect(try await withdrawal.value(timeout: .seconds(20)).status == 200)

            #expect(listed.map { $0["title"] as? String } == ["A", "B", "C"])
            #expect(listed.map { $0["state"] as? String } == ["displayed", "queued", "queued"])
            #expect(listed.map { $0["position"] as? Int } == [0, 1, 2])
            #expect(seenB["state"] as? String == "queued" && seenB["position"] as? Int == 1, "B as read: \(seenB)")
            let after = try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
            #expect(after.map { $0["title"] as? String } == ["B", "C"])
        }
    }
}
