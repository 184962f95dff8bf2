import AlertdCore
import AlertdWire
import AlertdStore
import Foundation
import Synchronization
import Testing

@testable import AlertdAPI

/// A real store whose commits fail once told to (a full disk, an I/O error).
final class FailingStore: AlertStore, Sendable {
    let inner: any AlertStore
    let failing = Atomic<Bool>(false)
    let attempts = Atomic<Int>(0)

    init(_ inner: any AlertStore) { self.inner = inner }

    struct DiskFull: Error, CustomStringConvertible {
        var description: String { "disk full" }
    }

    func commit(_ writes: [StoreWrite]) throws {
        attempts.add(1, ordering: .relaxed)
        if failing.load(ordering: .relaxed) { throw DiskFull() }
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
    func isWritable() -> Bool { !failing.load(ordering: .relaxed) && inner.isWritable() }
}

@Suite("A failing store")
struct StoreFailureTests {
    @Test("a failed commit answers 503, hides the change, and every later change is refused until a restart")
    func failedCommit() throws {
        let holder = Mutex<FailingStore?>(nil)
        var daemon = try InProcessDaemon { inner in
            let store = FailingStore(inner)
            holder.withLock { $0 = store }
            return store
        }
        let store = try #require(holder.withLock { $0 })
        let kept = try daemon.post("ops", #"{"title":"Committed","buttons":[{"title":"OK"}]}"#)

        store.failing.store(true, ordering: .relaxed)
        let refused = try daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"Lost","buttons":[{"title":"OK"}]}"#)
        #expect(refused.status == 503)
        #expect(try refused.object()["code"] as? String == "unavailable")

        // The store works again, but memory may no longer match it: no more changes.
        store.failing.store(false, ordering: .relaxed)
        let attemptsBefore = store.attempts.load(ordering: .relaxed)
        let later = try daemon.send("POST", "/v1/clients/ops/alerts/\(kept["id"] as! String)/choice", json: #"{"button":"OK"}"#)
        #expect(later.status == 503)
        #expect(store.attempts.load(ordering: .relaxed) == attemptsBefore, "the refused change never reached the store")
        #expect(try daemon.send("GET", "/readyz").status == 503)
        // Readers still see what was committed, and only that.
        let list = try daemon.send("GET", "/v1/clients/ops/alerts").object()["alerts"] as! [[String: Any]]
        #expect(list.map { $0["title"] as? String } == ["Committed"])

        // A restart restores from the store and takes changes again.
        daemon = try daemon.restart()
        defer { daemon.cleanUp() }
        #expect(try daemon.send("POST", "/v1/clients/ops/alerts/\(kept["id"] as! String)/choice", json: #"{"button":"OK"}"#).status == 200)
    }
}
