import AlertdEngine
import AlertdCore
import AlertdHTTP
import AlertdWire
import AlertdStore
import Foundation
import NIOConcurrencyHelpers
import Synchronization
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon

/// A real store whose commits fail once told to (a full disk, an I/O error).
final class FailingStore: PersistentStore, Sendable {
    let inner: any PersistentStore
    let failing = Atomic<Bool>(false)
    let attempts = Atomic<Int>(0)

    init(_ inner: any PersistentStore) { self.inner = inner }

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
    func clientsWithoutDecidedAlerts(among clients: [String]) throws -> [String] {
        try inner.clientsWithoutDecidedAlerts(among: clients)
    }
    func purgeCandidates(decidedBefore: Timestamp, keepPerClient: Int, limit: Int) throws -> [String] {
        try inner.purgeCandidates(decidedBefore: decidedBefore, keepPerClient: keepPerClient, limit: limit)
    }
    func isWritable() -> Bool { !failing.load(ordering: .relaxed) && inner.isWritable() }
}

@Suite("A failing store")
struct StoreFailureTests {
    @Test("a failed commit answers 503 with Retry-After and hides the change; once commits work, changes resume without a restart")
    func failedCommit() async throws {
        let holder = NIOLockedValueBox<FailingStore?>(nil)
        let daemon = try await InProcessDaemon { inner in
            let store = FailingStore(inner)
            holder.withLockedValue { $0 = store }
            return store
        }
        defer { daemon.cleanUp() }
        let store = try #require(holder.withLockedValue { $0 })
        let kept = try await daemon.post("ops", #"{"title":"Committed","buttons":[{"title":"OK"}]}"#)

        store.failing.store(true, ordering: .relaxed)
        let refused = try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"Lost","buttons":[{"title":"OK"}]}"#)
        #expect(refused.status == 503)
        #expect(try refused.object()["code"] as? String == "unavailable")
        #expect(refused.header("Retry-After") != nil)

        // Until a commit goes through again, changes are refused before they reach the store.
        store.failing.store(false, ordering: .relaxed)
        let attemptsBefore = store.attempts.load(ordering: .relaxed)
        let later = try await daemon.send("POST", "/v1/clients/ops/alerts/\(kept["id"] as! String)/choice", json: #"{"button":"OK"}"#)
        #expect(later.status == 503)
        #expect(later.header("Retry-After") != nil)
        #expect(store.attempts.load(ordering: .relaxed) == attemptsBefore, "the refused change never reached the store")
        #expect(try await daemon.send("GET", "/readyz").status == 503)
        // Readers still see what was committed, and only that.
        let list = try await daemon.send("GET", "/v1/clients/ops/alerts").object()["alerts"] as! [[String: Any]]
        #expect(list.map { $0["title"] as? String } == ["Committed"])

        // The readiness probe finds the store writable again: changes are taken, no restart.
        await daemon.alertd.engine.checkStore()
        #expect(try await daemon.send("GET", "/readyz").status == 200)
        #expect(
            try await daemon.send("POST", "/v1/clients/ops/alerts/\(kept["id"] as! String)/choice", json: #"{"button":"OK"}"#).status == 200
        )
        #expect(try await daemon.post("ops", #"{"title":"After","buttons":[{"title":"OK"}]}"#)["state"] as? String == "displayed")
    }

    @Test("a store that really fills (max_page_count): the batch fails whole, reads go on, writes resume once it has room")
    func fullStore() async throws {
        let holder = NIOLockedValueBox<SQLiteStore?>(nil)
        let dir = NSTemporaryDirectory() + "alertd-full-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let daemon = try await InProcessDaemon(stateDir: dir) { inner in
            holder.withLockedValue { $0 = inner as? SQLiteStore }
            return inner
        }
        let store = try #require(holder.withLockedValue { $0 })
        let first = try await daemon.post("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
        try store.limitPages(try store.pageCount())

        // Posts of 4 KiB messages fill the pages left; one is refused, whole.
        let message = String(repeating: "x", count: 4000)
        var acknowledged: [String] = []
        var refused: HTTPResponse?
        for index in 0..<200 where refused == nil {
            let response = try await daemon.send(
                "POST", "/v1/clients/ops/alerts", json: #"{"title":"Filler \#(index)","message":"\#(message)"}"#)
            if response.status == 201 {
                acknowledged.append(try response.object()["id"] as! String)
            } else {
                refused = response
            }
        }
        let full = try #require(refused, "the store never filled")
        #expect(full.status == 503)
        #expect(try full.object()["code"] as? String == "unavailable")
        #expect(full.header("Retry-After") == "2")
        // Reads keep working; /readyz says why not ready.
        #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(first["id"] as! String)").status == 200)
        #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").status == 200)
        #expect(try await daemon.send("GET", "/readyz").status == 503)
        // Still full: the probe finds no room and changes stay refused.
        await daemon.alertd.engine.checkStore()
        #expect(try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"Still full"}"#).status == 503)

        // Room again: the next probe resumes writes by itself.
        try store.limitPages(nil)
        await daemon.alertd.engine.checkStore()
        #expect(try await daemon.send("GET", "/readyz").status == 200)
        let after = try await daemon.post("ops", #"{"title":"After","buttons":[{"title":"OK"}]}"#)

        // Across a restart: every acknowledged alert is there, the refused ones are not.
        let restarted = try await daemon.restart()
        defer { restarted.cleanUp() }
        let titles = try await restarted.send("GET", "/v1/clients/ops/alerts?limit=1000").object()["alerts"] as! [[String: Any]]
        let ids = Set(titles.map { $0["id"] as! String })
        #expect(ids == Set(acknowledged + [first["id"] as! String, after["id"] as! String]))
        #expect(!titles.contains { ($0["title"] as? String) == "Still full" })
    }
}

@Suite("The state directory holds secrets")
struct StateFilePermissionTests {
    @Test("a new state dir is 0700 and its files 0600 whatever the umask; an existing 0644 database is tightened")
    func modes() async throws {
        let old = umask(0)
        defer { umask(old) }
        let dir = NSTemporaryDirectory() + "alertd-modes-\(UUID().uuidString)/state"
        defer { try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent) }
        func mode(_ path: String) throws -> Int {
            var info = stat()
            try #require(stat(path, &info) == 0, "stat \(path)")
            return Int(info.st_mode & 0o777)
        }
        let daemon = try await InProcessDaemon(stateDir: dir)
        _ = try await daemon.post("ops", #"{"title":"secret-bearing"}"#)
        #expect(try mode(dir) == 0o700)
        for file in ["alertd.sqlite", "alertd.sqlite-wal", "alertd.sqlite-shm", "alertd.lock"] {
            #expect(try mode(dir + "/" + file) == 0o600, "\(file)")
        }
        daemon.stop()
        chmod(dir + "/alertd.sqlite", 0o644)
        let again = try await InProcessDaemon(stateDir: dir)
        defer { again.stop() }
        #expect(try mode(dir + "/alertd.sqlite") == 0o600)
    }
}
