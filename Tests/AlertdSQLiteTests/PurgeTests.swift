import AlertdCore
import AlertdEngine
import AlertdInProcess
import AlertdReceipts
import AlertdSQLite
import AlertdTestSupport
import AlertdWire
import Dispatch
import Logging
import NIOConcurrencyHelpers
import Testing

@Suite("The embedded store's purge")
struct PurgeTests {
    /// A purge of a minute's answered alerts in one commit held the writer, and every
    /// post behind it, for seconds (a soak at ~760 alerts/s: posts waited up to 7.8 s).
    @Test("a purge deletes in commits of at most 500 alerts, the candidates read beside the writer")
    func deletesInChunks() async throws {
        let dir = TempDir()
        let sqlite = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        let decided = Timestamp(milliseconds: 1_795_000_000_000)
        var writes: [StoreWrite] = [.client("ops", createdAt: decided)]
        for _ in 0..<1_200 {
            var alert = makeAlert(ids.next(at: decided), state: .answered)
            alert.decidedAt = decided
            writes.append(.alert(alert))
        }
        let kept = makeAlert(ids.next(at: decided))
        writes.append(.alert(kept))
        try sqlite.commit(writes)

        let gated = ControlledStore(sqlite)
        let store = try SQLiteAlertStore(
            persistent: gated, settings: QueueSettings(), rules: AlertRules(), clock: ManualClock(decided),
            logger: Logger(label: "purge") { _ in SwiftLogNoOpLogHandler() }, receiptKey: .generate())
        store.startWriter()
        defer { store.shutdown() }

        let forgotten = try await store.purge(decidedBefore: decided.adding(seconds: 1), keepPerClient: .max, keysBefore: decided)
        #expect(forgotten.isEmpty, "ops still has a pending alert")
        let deletions = gated.committed.joined().compactMap { write -> Int? in
            guard case .deleteTerminal(let ids) = write else { return nil }
            return ids.count
        }
        #expect(deletions == [500, 500, 200])
        #expect(try sqlite.decided(on: "ops", states: [.answered], before: nil, limit: 10).isEmpty)
        #expect(try sqlite.alert(kept.id) != nil, "a pending alert was purged")
    }
}
