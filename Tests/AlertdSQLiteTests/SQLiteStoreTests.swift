import AlertdCore
import AlertdEngine
import AlertdSQLite
import AlertdWire
import Foundation
import Testing

/// A temp directory removed at the end of the test.
final class TempDir {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "alertd-store-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

func makeAlert(
    _ id: AlertID, client: String = "ops", state: AlertState = .queued, priority: Int = 0,
    at ms: Int64 = 1_795_000_000_000, buttons: [Button] = [Button(title: "Deploy"), Button(title: "Cancel", style: .cancel)]
) -> Alert {
    Alert(
        id: id, client: client, title: "Deploy build 1234?", message: "ünïcode ✓", style: .actionSheet,
        buttons: buttons, priority: priority, callbackURL: "https://example.test/hook",
        metadata: try! { () throws -> CompactJSON in
            guard case .object(let o) = try JSONParser.parse(Array(#"{"z":1,"a":[1.50,"x"],"n":null}"#.utf8)) else { fatalError() }
            return CompactJSON(o)
        }(),
        state: state, createdAt: Timestamp(milliseconds: ms), displayedAt: state == .displayed ? Timestamp(milliseconds: ms + 5) : nil,
        expiresAt: Timestamp(milliseconds: ms + 86_400_000))
}

@Suite("The SQLite store")
struct SQLiteStoreTests {
    @Test(
        "durability full sets synchronous FULL on the writer, normal sets NORMAL",
        arguments: [
            (Durability.full, 2), (Durability.normal, 1),
        ])
    func synchronousPragma(durability: Durability, expected: Int) throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: durability)
        #expect(try store.synchronousLevel() == expected)
    }

    @Test("an alert round-trips through a commit and a reopen, every field intact")
    func roundTrip() throws {
        let dir = TempDir()
        var ids = AlertIDGenerator()
        let id = ids.next(at: Timestamp(milliseconds: 1_795_000_000_000))
        var answered = makeAlert(id, state: .answered)
        answered.decidedAt = Timestamp(milliseconds: 1_795_000_001_234)
        answered.votes = [Vote(decidedBy: "ops-console", button: "Cancel", buttonIndex: 1, at: answered.decidedAt!)]
        answered.result = AlertResult(
            outcome: .answered, button: "Cancel", buttonIndex: 1, cancelled: true, decidedBy: "ops-console", votes: answered.votes)
        do {
            let store = try SQLiteStore(directory: dir.path, durability: .full)
            try store.commit([.client("ops", createdAt: Timestamp(milliseconds: 1)), .alert(answered)])
        }
        let reopened = try SQLiteStore(directory: dir.path, durability: .full)
        let loaded = try #require(try reopened.alert(id))
        #expect(loaded == answered)
        #expect(loaded.metadata?.description == #"{"z":1,"a":[1.50,"x"],"n":null}"#)
    }

    @Test("an alert of several deciders keeps its quorum and votes, in order, pending and once decided")
    func roundTripVotes() throws {
        let dir = TempDir()
        var ids = AlertIDGenerator()
        let id = ids.next(at: Timestamp(milliseconds: 1_795_000_000_000))
        var pending = makeAlert(id, state: .displayed)
        pending.quorum = 3
        pending.votes = [
            Vote(decidedBy: "carol", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_000_900)),
            Vote(decidedBy: "a \"quoted\" name ✓", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_001_000)),
        ]
        var withdrawn = pending
        withdrawn.state = .withdrawn
        withdrawn.decidedAt = Timestamp(milliseconds: 1_795_000_002_000)
        withdrawn.result = AlertResult(outcome: .withdrawn, decidedBy: "deployer", votes: pending.votes)
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        try store.commit([.client("ops", createdAt: Timestamp(milliseconds: 1)), .alert(pending)])
        #expect(try store.load().pending == [pending])
        try store.commit([.alert(withdrawn)])
        #expect(try store.alert(id) == withdrawn)
    }

    @Test("fields, a vote's comment and values, and the result's words round-trip, pending and once answered (SPEC §13)")
    func roundTripWords() throws {
        let dir = TempDir()
        var ids = AlertIDGenerator()
        let id = ids.next(at: Timestamp(milliseconds: 1_795_000_000_000))
        var pending = makeAlert(id, state: .displayed)
        pending.quorum = 2
        pending.fields = [
            AlertField(
                name: "ticket", label: "Change \"ticket\" ✓", placeholder: "OPS-123", required: true, maxLength: 12, buttons: ["Deploy"]),
            AlertField(name: "why", buttons: ["Deploy", "Cancel"]),
        ]
        pending.votes = [
            Vote(
                decidedBy: "alice", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_000_900),
                comment: "line one\nline \"two\" ✓", values: ["ticket": "OPS-1", "why": "z"])
        ]
        var answered = pending
        answered.state = .answered
        answered.decidedAt = Timestamp(milliseconds: 1_795_000_002_000)
        answered.votes.append(
            Vote(decidedBy: "bob", button: "Deploy", buttonIndex: 0, at: answered.decidedAt!, comment: "ok", values: ["ticket": "OPS-2"]))
        answered.result = AlertResult(
            outcome: .answered, button: "Deploy", buttonIndex: 0, decidedBy: "bob", votes: answered.votes, comment: "ok",
            values: ["ticket": "OPS-2"])
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        try store.commit([.client("ops", createdAt: Timestamp(milliseconds: 1)), .alert(pending)])
        #expect(try store.load().pending == [pending])
        try store.commit([.alert(answered)])
        let reopened = try SQLiteStore(directory: dir.path, durability: .normal)
        #expect(try reopened.alert(id) == answered)
    }

    @Test("a row answered before votes were stored (votes NULL) reads its one choice as its vote; other rows have none")
    func rowsWithoutVotes() throws {
        let dir = TempDir()
        var ids = AlertIDGenerator()
        let now = Timestamp(milliseconds: 1_795_000_000_000)
        let (a, b) = (ids.next(at: now), ids.next(at: now))
        // Written with no votes: the columns a row of an older alertd has (NULL votes, quorum 1).
        var answered = makeAlert(a, state: .answered)
        answered.decidedAt = now.adding(milliseconds: 700)
        answered.result = AlertResult(outcome: .answered, button: "Deploy", buttonIndex: 0, decidedBy: "console")
        var expired = makeAlert(b, state: .expired)
        expired.decidedAt = now.adding(milliseconds: 900)
        expired.result = AlertResult(outcome: .expired)
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        try store.commit([.client("ops", createdAt: now), .alert(answered), .alert(expired)])
        let vote = Vote(decidedBy: "console", button: "Deploy", buttonIndex: 0, at: now.adding(milliseconds: 700))
        let read = try #require(try store.alert(a))
        #expect(read.votes == [vote] && read.result?.votes == [vote] && read.quorum == 1)
        #expect(try store.alert(b) == expired)
    }

    @Test("absent fields stay absent, empty ones empty, and a later write of an alert replaces its row")
    func roundTripSparseAndReplaced() throws {
        let dir = TempDir()
        var ids = AlertIDGenerator()
        let id = ids.next(at: Timestamp(milliseconds: 1_795_000_000_000))
        var sparse = makeAlert(id, state: .displayed, priority: -3)
        sparse.message = nil
        sparse.callbackURL = nil
        sparse.metadata = nil
        sparse.title = ""
        sparse.dismissAfterMilliseconds = 2_500
        var decided = sparse
        decided.state = .dismissed
        decided.decidedAt = Timestamp(milliseconds: 1_795_000_002_500)
        decided.result = AlertResult(outcome: .dismissed, button: nil, buttonIndex: nil, cancelled: false, decidedBy: nil)
        do {
            let store = try SQLiteStore(directory: dir.path, durability: .full)
            try store.commit([.client("ops", createdAt: Timestamp(milliseconds: 1)), .alert(sparse)])
            #expect(try store.alert(id) == sparse)
            try store.commit([.alert(decided)])
        }
        let reopened = try SQLiteStore(directory: dir.path, durability: .full)
        #expect(try reopened.alert(id) == decided)
        #expect(try reopened.load().pending.isEmpty)
    }

    @Test("load returns every client, only pending alerts, and the greatest id ever issued")
    func load() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        let now = Timestamp(milliseconds: 1_795_000_000_000)
        let a = ids.next(at: now), b = ids.next(at: now), c = ids.next(at: now)
        var decided = makeAlert(c, state: .expired)
        decided.decidedAt = now
        decided.result = AlertResult(outcome: .expired)
        try store.commit([
            .client("ops", createdAt: now), .client("idle", createdAt: now),
            .alert(makeAlert(a, state: .displayed)), .alert(makeAlert(b)), .alert(decided),
        ])
        let state = try store.load()
        #expect(state.clients == ["idle", "ops"])
        #expect(Set(state.pending.map(\.id)) == [a, b])
        #expect(state.lastID == c)
    }

    @Test("decided lists terminal alerts of the wanted states, newest first, paged by id")
    func decidedListing() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        let now = Timestamp(milliseconds: 1_795_000_000_000)
        var writes: [StoreWrite] = []
        var answeredIDs: [AlertID] = []
        for index in 0..<6 {
            let id = ids.next(at: now)
            let state: AlertState = index % 2 == 0 ? .answered : .withdrawn
            var alert = makeAlert(id, state: state)
            alert.decidedAt = now
            alert.result = AlertResult(
                outcome: state, button: state == .answered ? "Deploy" : nil, buttonIndex: state == .answered ? 0 : nil)
            if state == .answered { answeredIDs.append(id) }
            writes.append(.alert(alert))
        }
        writes.append(.alert(makeAlert(ids.next(at: now))))  // pending: never listed here
        try store.commit(writes)
        let first = try store.decided(on: "ops", states: [.answered, .queued], before: nil, limit: 2)
        #expect(first.map(\.id) == [answeredIDs[2], answeredIDs[1]])
        let rest = try store.decided(on: "ops", states: [.answered], before: first.last!.id, limit: 10)
        #expect(rest.map(\.id) == [answeredIDs[0]])
        #expect(try store.decided(on: "other", states: [.answered], before: nil, limit: 10).isEmpty)
        #expect(try store.decided(on: "ops", states: [.queued, .displayed], before: nil, limit: 10).isEmpty)
    }

    @Test("an idempotency key round-trips and purge deletes old keys and old decided alerts only")
    func idempotencyAndPurge() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        let old = Timestamp(milliseconds: 1_000_000), recent = Timestamp(milliseconds: 9_000_000)
        let pendingID = ids.next(at: old), oldID = ids.next(at: old), newID = ids.next(at: recent)
        var oldDecided = makeAlert(oldID, state: .dismissed, at: 1_000_000)
        oldDecided.decidedAt = old
        var newDecided = makeAlert(newID, state: .dismissed, at: 9_000_000)
        newDecided.decidedAt = recent
        let record = IdempotencyRecord(
            client: "ops", key: "k-1", alertID: pendingID, bodyDigest: Array(repeating: 7, count: 32), createdAt: old)
        try store.commit([
            .alert(makeAlert(pendingID, at: 1_000_000)), .alert(oldDecided), .alert(newDecided), .idempotency(record),
            .idempotency(IdempotencyRecord(client: "ops", key: "k-2", alertID: newID, bodyDigest: [1], createdAt: recent)),
        ])
        #expect(try store.idempotency(client: "ops", key: "k-1") == record)
        #expect(try store.idempotency(client: "other", key: "k-1") == nil)

        try store.purge(decidedBefore: Timestamp(milliseconds: 5_000_000), keysBefore: Timestamp(milliseconds: 5_000_000))
        #expect(try store.alert(oldID) == nil)
        #expect(try store.alert(newID) != nil)
        #expect(try store.alert(pendingID) != nil, "pending alerts are never purged")
        #expect(try store.idempotency(client: "ops", key: "k-1") == nil)
        #expect(try store.idempotency(client: "ops", key: "k-2") != nil)
    }

    @Test("opening an existing store again runs no migration twice and keeps the data")
    func reopen() throws {
        let dir = TempDir()
        var ids = AlertIDGenerator()
        let id = ids.next(at: Timestamp(milliseconds: 5))
        try SQLiteStore(directory: dir.path, durability: .full).commit([.alert(makeAlert(id))])
        _ = try SQLiteStore(directory: dir.path, durability: .full)
        let third = try SQLiteStore(directory: dir.path, durability: .full)
        #expect(try third.load().pending.map(\.id) == [id])
        #expect(third.isWritable())
    }
}

@Suite("Store migrations")
struct MigrationTests {
    @Test("listing decided alerts by client uses the partial index of migration v2")
    func decidedListingUsesIndex() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        let plan = try store.explain(
            "SELECT id FROM alerts WHERE client = 'ops' AND decided_at IS NOT NULL AND state IN ('answered') ORDER BY id DESC LIMIT 10")
        #expect(plan.contains("alerts_decided_by_client"), "plan: \(plan)")
    }
}

extension SQLiteStore {
    /// A purge as `SQLiteAlertStore` runs one: the candidates read, then deleted, then the keys.
    func purge(decidedBefore: Timestamp, keepPerClient: Int = .max, keysBefore: Timestamp) throws {
        let ids = try purgeCandidates(Retention(decidedBefore: decidedBefore, keepPerClient: keepPerClient), limit: .max)
        try commit([.deleteTerminal(ids), .deleteKeys(createdBefore: keysBefore)])
    }
}
