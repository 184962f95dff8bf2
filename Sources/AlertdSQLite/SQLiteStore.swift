public import AlertdCore
public import AlertdEngine
public import AlertdReceipts
public import AlertdWire
import Foundation
import GRDB
import GRDBSQLite
import NIOConcurrencyHelpers

// Over 400 lines on purpose: each kind of write (StoreWrite) is one statement on the one
// connection this type keeps private; the schema and row decoding are in files of their own.

/// How hard a commit is pushed to disk.
public enum Durability: String, Sendable {
    /// `synchronous = FULL`: each commit is fsynced; survives a power loss.
    case full
    /// `synchronous = NORMAL`: survives a process crash, not a power loss.
    case normal
}

/// alertd's store: SQLite in WAL mode through GRDB, in the state directory.
public final class SQLiteStore: PersistentStore {
    public static let fileName = "alertd.sqlite"
    let pool: DatabasePool
    let durability: Durability
    /// The deliveries each webhook's removal cancelled, by webhook id, from the commit that
    /// removed it until ``cancelledDeliveries(ofWebhook:)`` takes them.
    private let cancelled = NIOLockedValueBox<[String: [String]]>([:])

    /// Opens (creating and migrating) the database in `directory`.
    public init(directory: String, durability: Durability) throws {
        self.durability = durability
        // The store holds webhook secrets: a new directory is 0700 and the
        // database 0600 whatever the umask (SQLite gives its -wal and -shm files
        // the database's mode). An existing directory keeps the mode its owner chose.
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Self.restrictFile(directory + "/" + Self.fileName)
        var configuration = Configuration()
        configuration.label = "alertd"
        configuration.maximumReaderCount = 4
        configuration.prepareDatabase { db in
            // Bounded wait instead of SQLITE_BUSY if an outside tool holds a lock.
            try db.execute(sql: "PRAGMA busy_timeout = 5000")
        }
        pool = try DatabasePool(path: directory + "/" + Self.fileName, configuration: configuration)
        // GRDB sets synchronous = NORMAL when it opens WAL, after prepareDatabase:
        // set the level on the writer connection now that it is open.
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
        }
        try Self.migrator.migrate(pool)
    }

    /// The database, its WAL and its shared-memory index, as the file system counts them.
    public var sizeInBytes: Int? {
        var total = 0
        for suffix in ["", "-wal", "-shm"] {
            var info = stat()
            if stat(pool.path + suffix, &info) == 0 { total += Int(info.st_size) }
        }
        return total
    }

    /// Creates `path` 0600 if missing; tightens an existing one (and its -wal, -shm) to 0600.
    static func restrictFile(_ path: String) throws {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path, "reason": String(cString: strerror(errno))])
        }
        fchmod(fd, 0o600)
        close(fd)
        for suffix in ["-wal", "-shm"] { chmod(path + suffix, 0o600) }
    }

    /// SQLite's query plan for a statement (for tests of index use).
    public func explain(_ sql: String) throws -> String {
        try pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }.joined(separator: "; ")
        }
    }

    /// Commits a transaction that takes `bytes` of new pages and frees them again:
    /// it fails where a commit that size would (pages over `max_page_count`, a
    /// WAL that cannot grow on a full disk). Leaves that much free space behind.
    public func hasRoom(forBytes bytes: Int) -> Bool {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        do {
            try pool.write { db -> Void in
                try db.execute(sql: "INSERT OR REPLACE INTO probe (id, at, room) VALUES (2, ?, zeroblob(?))", arguments: [now, bytes])
                try db.execute(sql: "DELETE FROM probe WHERE id = 2")
            }
            return true
        } catch {
            return false
        }
    }

    /// Caps the database at `pages` pages (`PRAGMA max_page_count`; nil: no cap
    /// but SQLite's own): a commit that needs more fails as on a full disk.
    /// SQLite never sets the cap below the pages in use; returns the cap in force.
    @discardableResult
    public func limitPages(_ pages: Int?) throws -> Int {
        try pool.writeWithoutTransaction { db in
            try Int.fetchOne(db, sql: "PRAGMA max_page_count = \(pages ?? 4_294_967_294)") ?? 0
        }
    }

    /// Pages the database uses now.
    public func pageCount() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 }
    }

    /// The writer connection's `PRAGMA synchronous` (2 FULL, 1 NORMAL).
    public func synchronousLevel() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    // MARK: - PersistentStore

    public func load() throws -> StoredState {
        try pool.read { db in
            let clients = try String.fetchAll(db, sql: "SELECT id FROM clients ORDER BY id")
            var pending: [Alert] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT \(Self.columns) FROM alerts WHERE state IN ('queued', 'displayed')")
            while let row = try rows.next() {
                pending.append(try Self.alert(from: row))
            }
            let last = try String.fetchOne(db, sql: "SELECT max(id) FROM alerts").flatMap { AlertID($0) }
            return StoredState(clients: clients, pending: pending, lastID: last)
        }
    }

    /// Commits `writes` in one transaction.
    ///
    /// A batch of delivery attempts alone is committed without its own fsync even with
    /// `durability: full`: the WAL is written (a crash of alertd loses nothing) and the
    /// next fsynced commit, or a checkpoint, makes it durable with everything before it.
    /// A power loss in between can forget those attempts, and the deliveries are sent
    /// again — at least once, as §5 says; the deliveries themselves, written with their
    /// decision, are never lost. Attempts come in thousands a second when a receiver
    /// drains a backlog; an fsync per batch of them would buy nothing a user can see.
    public func commit(_ writes: [StoreWrite]) throws {
        guard durability == .full, !writes.isEmpty, writes.allSatisfy(\.needsNoFsync) else {
            return try pool.write { db in try Self.apply(writes, db, cancelled: cancelled) }
        }
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
            try db.inTransaction {
                try Self.apply(writes, db, cancelled: cancelled)
                return .commit
            }
        }
    }

    /// `cancelled`: where a webhook's removal leaves the ids of the deliveries it cancelled.
    private static func apply(_ writes: [StoreWrite], _ db: Database, cancelled: NIOLockedValueBox<[String: [String]]>) throws {
        // An alert decided is written with its events: their bodies count in its size.
        var eventBytes: [AlertID: Int] = [:]
        for case .event(let event) in writes { eventBytes[event.alertID, default: 0] += event.body.count }
        for write in writes {
            switch write {
            case .client(let id, let createdAt):
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO clients (id, created_at) VALUES (?, ?)")
                    .execute(arguments: [id, createdAt.milliseconds])
            case .alert(let alert):
                try Self.upsert(alert, eventBytes: eventBytes[alert.id] ?? 0, try db.cachedStatement(sql: Self.upsertAlert), db)
                try Self.upsertEscalations(of: alert, db)
            case .idempotency(let record):
                try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO idempotency_keys (client, key, alert_id, body_sha256, created_at)
                        VALUES (?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    record.client, record.key, record.alertID.description, Data(record.bodyDigest),
                    record.createdAt.milliseconds,
                ])
            case .webhook(let webhook):
                try db.execute(
                    sql: "INSERT OR REPLACE INTO webhooks (id, client, url, secret, created_at) VALUES (?, ?, ?, ?, ?)",
                    arguments: [webhook.id, webhook.client, webhook.url, webhook.secret, webhook.createdAt.milliseconds])
            case .deleteWebhook(let id):
                try db.execute(sql: "DELETE FROM webhooks WHERE id = ?", arguments: [id])
                // Its deliveries would go on to a receiver nobody wants any more, for max_age,
                // counted against the client's callbacks.max_pending_per_client. Exactly those
                // this transaction cancelled are kept for the caller (a delivery written by a
                // decision in the same batch included).
                let ids = try String.fetchAll(
                    db,
                    sql: """
                        UPDATE deliveries SET state = 'cancelled', next_attempt_at = NULL
                        WHERE webhook_id = ? AND state = 'pending' RETURNING id
                        """,
                    arguments: [id])
                cancelled.withLockedValue { $0[id] = ids.sorted() }
            case .event(let event):
                // Cached statements: a display on a client of a hundred push subscriptions writes a
                // hundred deliveries, each re-parsed before (bench/push.py).
                try db.cachedStatement(sql: "INSERT INTO events (id, alert_id, client, type, created_at, body) VALUES (?, ?, ?, ?, ?, ?)")
                    .execute(arguments: [
                        event.id, event.alertID.description, event.client, event.type, event.createdAt.milliseconds,
                        Data(event.body),
                    ])
                let insertDelivery = try db.cachedStatement(
                    sql: """
                        INSERT INTO deliveries (id, event_id, alert_id, target, webhook_id, secret, state, next_attempt_at)
                        VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)
                        """)
                for delivery in event.deliveries {
                    try insertDelivery.execute(
                        arguments: [
                            delivery.id, event.id, event.alertID.description, delivery.target, delivery.webhookID,
                            delivery.secret, event.createdAt.milliseconds,
                        ])
                }
            case .attempt(let record):
                // One way only: an attempt counts while its delivery is pending and
                // still there (a purge may have taken it); a settled delivery, or an
                // attempt number already recorded, is never overwritten.
                try db.cachedStatement(
                    sql: """
                        INSERT OR IGNORE INTO delivery_attempts (delivery_id, number, at, status_code, error)
                        SELECT id, ?, ?, ?, ? FROM deliveries WHERE id = ? AND state = 'pending'
                        """
                ).execute(arguments: [
                    record.number, record.attempt.at.milliseconds, record.attempt.statusCode, record.attempt.error,
                    record.deliveryID,
                ])
                try db.cachedStatement(
                    sql: """
                        UPDATE deliveries SET state = ?, next_attempt_at = ?, result = coalesce(?, result)
                        WHERE id = ? AND state = 'pending'
                        """
                ).execute(arguments: [record.state.rawValue, record.nextAttemptAt?.milliseconds, record.result, record.deliveryID])
            case .deleteClients(let clients):
                for client in clients {
                    try db.cachedStatement(sql: "DELETE FROM clients WHERE id = ?").execute(arguments: [client])
                }
            case .deleteTerminal(let ids):
                // Events, deliveries and attempts go with their alert; an alert with a
                // delivery still pending stays until it is settled (retention shorter than
                // callbacks.max_age loses nothing). The ids go in a table of this (the
                // writer's) connection, which each statement joins.
                try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS purged (id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID")
                let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.purged (id) VALUES (?)")
                for id in ids { try insert.execute(arguments: [id]) }
                try db.execute(
                    sql: """
                        DELETE FROM temp.purged WHERE EXISTS
                            (SELECT 1 FROM deliveries d WHERE d.alert_id = purged.id AND d.state = 'pending')
                            OR NOT EXISTS (SELECT 1 FROM alerts a WHERE a.id = purged.id AND a.decided_at IS NOT NULL)
                        """)
                try db.execute(
                    sql: """
                        DELETE FROM delivery_attempts WHERE delivery_id IN
                            (SELECT id FROM deliveries WHERE alert_id IN (SELECT id FROM temp.purged))
                        """)
                try db.execute(sql: "DELETE FROM deliveries WHERE alert_id IN (SELECT id FROM temp.purged)")
                try db.execute(sql: "DELETE FROM events WHERE alert_id IN (SELECT id FROM temp.purged)")
                try db.execute(sql: "DELETE FROM escalations WHERE alert_id IN (SELECT id FROM temp.purged)")
                try db.execute(sql: "DELETE FROM alerts WHERE id IN (SELECT id FROM temp.purged)")
                try db.execute(sql: "DELETE FROM temp.purged")
            case .deleteKeys(let createdBefore):
                try db.cachedStatement(sql: "DELETE FROM idempotency_keys WHERE created_at < ?")
                    .execute(arguments: [createdBefore.milliseconds])
            case .secret(let name, let value, let createdAt):
                try db.execute(
                    sql: "INSERT OR IGNORE INTO secrets (name, value, created_at) VALUES (?, ?, ?)",
                    arguments: [name, Data(value), createdAt.milliseconds])
            case .pushSubscription(let subscription):
                try db.execute(sql: "DELETE FROM push_subscriptions WHERE endpoint = ?", arguments: [subscription.endpoint])
                try db.execute(
                    sql: """
                        INSERT INTO push_subscriptions (id, endpoint, p256dh, auth, clients, answer, decider, created_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        subscription.id, subscription.endpoint, Data(subscription.p256dh), Data(subscription.auth),
                        subscription.storedClients, subscription.answer, subscription.decider,
                        subscription.createdAt.milliseconds,
                    ])
            case .deletePushSubscription(let id):
                try db.execute(sql: "DELETE FROM answer_tokens WHERE subscription_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM push_subscriptions WHERE id = ?", arguments: [id])
            case .answerToken(let token):
                try db.execute(
                    sql: "DELETE FROM answer_tokens WHERE alert_id = ? AND subscription_id = ?",
                    arguments: [token.alertID.description, token.subscriptionID])
                try db.execute(
                    sql: """
                        INSERT INTO answer_tokens (hash, alert_id, client, subscription_id, decider, expires_at, used_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        Data(token.hash), token.alertID.description, token.client, token.subscriptionID, token.decider,
                        token.expiresAt.milliseconds, token.usedAt?.milliseconds,
                    ])
            case .useAnswerToken(let hash, let at):
                try db.execute(
                    sql: "UPDATE answer_tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL",
                    arguments: [at.milliseconds, Data(hash)])
            case .deleteAnswerTokens(let expiredBefore):
                try db.execute(sql: "DELETE FROM answer_tokens WHERE expires_at < ?", arguments: [expiredBefore.milliseconds])
            case .receipt(let alert):
                // The committer's signer signs every receipt before its batch reaches here.
                throw GroupCommitter.UnsignedReceipt(alert: alert.id)
            case .signedReceipt(let record):
                try db.cachedStatement(sql: "INSERT INTO receipts (seq, alert_id, client, decided_at, body) VALUES (?, ?, ?, ?, ?)")
                    .execute(arguments: [
                        record.seq, record.alertID.description, record.client, record.decidedAt.milliseconds,
                        String(decoding: record.json, as: UTF8.self),
                    ])
            case .receiptHead(let head, let added, let bytes):
                try db.cachedStatement(
                    sql: "UPDATE receipt_chain SET seq = ?, sha256 = ?, count = count + ?, bytes = bytes + ? WHERE id = 1"
                ).execute(arguments: [head.seq, head.sha256, added, bytes])
            case .deleteReceipts(let below):
                let row = try Row.fetchOne(
                    db, sql: "SELECT count(*), coalesce(sum(length(CAST(body AS BLOB))), 0) FROM receipts WHERE seq < ?",
                    arguments: [below])
                let (count, bytes) = (row?[0] as Int? ?? 0, row?[1] as Int? ?? 0)
                guard count > 0 else { break }
                try db.execute(sql: "DELETE FROM receipts WHERE seq < ?", arguments: [below])
                try db.execute(
                    sql: "UPDATE receipt_chain SET count = count - ?, bytes = bytes - ? WHERE id = 1", arguments: [count, bytes])
            }
        }
    }

    public func purgeCandidates(_ retention: Retention, limit: Int) throws -> [String] {
        try pool.read { db in
            let unsettled = "NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.alert_id = alerts.id AND d.state = 'pending')"
            var found = Set<String>()
            var ids: [String] = []
            func take(_ statement: Statement, _ arguments: StatementArguments) throws {
                let cursor = try String.fetchCursor(statement, arguments: arguments)
                while ids.count < limit, let id = try cursor.next() {
                    if found.insert(id).inserted { ids.append(id) }
                }
            }
            try take(
                db.cachedStatement(sql: "SELECT id FROM alerts WHERE decided_at IS NOT NULL AND decided_at < ? AND \(unsettled) LIMIT ?"),
                [retention.decidedBefore.milliseconds, limit])
            // Beyond each client's newest keepPerClient terminal alerts (by id, the order its
            // list pages in): per client, the index by client and id walks keepPerClient
            // entries to the first one that goes, then the rest. (One statement with the
            // cutoff as a correlated subquery ran it again for every row: minutes, with the
            // writer held, once a client had a few thousand.)
            let cutoff = try db.cachedStatement(
                sql: "SELECT id FROM alerts WHERE client = ? AND decided_at IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET ?")
            let beyond = try db.cachedStatement(
                sql: "SELECT id FROM alerts WHERE client = ? AND decided_at IS NOT NULL AND id <= ? AND \(unsettled) LIMIT ?")
            for client in try String.fetchAll(db, sql: "SELECT id FROM clients") where ids.count < limit {
                guard let last = try String.fetchOne(cutoff, arguments: [client, retention.keepPerClient]) else { continue }
                try take(beyond, [client, last, limit])
            }
            // Beyond each client's newest maxBytesPerClient bytes: the clients over it, from the
            // index of decided alerts by client, which carries each one's size; then, newest
            // first, the first alert that does not fit, and every older one.
            if retention.maxBytesPerClient < Int.max, ids.count < limit {
                let over = try String.fetchAll(
                    db,
                    sql: """
                        SELECT client FROM alerts WHERE decided_at IS NOT NULL GROUP BY client HAVING sum(size) > ?
                        """, arguments: [retention.maxBytesPerClient])
                let newest = try db.cachedStatement(
                    sql: "SELECT id, size FROM alerts WHERE client = ? AND decided_at IS NOT NULL ORDER BY id DESC")
                for client in over where ids.count < limit {
                    var kept = 0
                    var first: String?
                    let rows = try Row.fetchCursor(newest, arguments: [client])
                    while let row = try rows.next() {
                        kept += row[1] as Int? ?? 0
                        if kept > retention.maxBytesPerClient {
                            first = row[0]
                            break
                        }
                    }
                    if let first { try take(beyond, [client, first, limit]) }
                }
            }
            // Beyond maxBytes of every client's: the oldest decided first, until what goes
            // covers the excess (alerts with a delivery pending stay, and count as kept).
            // Once the bounds above have nothing left to take, so that the total is exact.
            if retention.maxBytes < Int.max, ids.isEmpty {
                let total = try Int.fetchOne(db, sql: "SELECT coalesce(sum(size), 0) FROM alerts WHERE decided_at IS NOT NULL") ?? 0
                var excess = total - retention.maxBytes
                if excess > 0 {
                    let oldest = try Row.fetchCursor(
                        db, sql: "SELECT id, size FROM alerts WHERE decided_at IS NOT NULL AND \(unsettled) ORDER BY decided_at, id")
                    while excess > 0, ids.count < limit, let row = try oldest.next() {
                        let id: String = row[0]
                        if found.insert(id).inserted {
                            ids.append(id)
                            excess -= row[1] as Int? ?? 0
                        }
                    }
                }
            }
            return ids
        }
    }

    public func retainedBytes() throws -> Int {
        try pool.read { db in
            try Int.fetchOne(db, sql: "SELECT coalesce(sum(size), 0) FROM alerts WHERE decided_at IS NOT NULL") ?? 0
        }
    }

    public func clientsWithoutDecidedAlerts(among clients: [String]) throws -> [String] {
        try pool.read { db in
            // The partial index of decided alerts by client answers each in one lookup.
            // An alert escalated to a client (SPEC §12) is one of its own too: its lists show it.
            let statement = try db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM alerts WHERE client = ? AND decided_at IS NOT NULL)
                        OR EXISTS (SELECT 1 FROM escalations e JOIN alerts a ON a.id = e.alert_id WHERE e.client = ? AND a.decided_at IS NOT NULL)
                    """)
            return try clients.filter { client in try Bool.fetchOne(statement, arguments: [client, client]) == false }
        }
    }

    public func alert(_ id: AlertID) throws -> Alert? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.columns) FROM alerts WHERE id = ?", arguments: [id.description])
                .map(Self.alert(from:))
        }
    }

    public func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) throws -> [Alert] {
        let wanted = states.filter(\.isTerminal).map(\.rawValue).sorted()
        guard !wanted.isEmpty, limit > 0 else { return [] }
        let marks = Array(repeating: "?", count: wanted.count).joined(separator: ", ")
        let below = before == nil ? "" : " AND id < ?"
        // Its own alerts, and those escalated to it (SPEC §12), each part newest first.
        let own = "SELECT \(Self.columns) FROM alerts WHERE client = ? AND decided_at IS NOT NULL AND state IN (\(marks))\(below)"
        let escalated = """
            SELECT \(Self.columns) FROM alerts WHERE id IN (SELECT alert_id FROM escalations WHERE client = ?) \
            AND decided_at IS NOT NULL AND state IN (\(marks))\(below)
            """
        var part: StatementArguments = [client]
        part += StatementArguments(wanted)
        if let before { part += [before.description] }
        part += [limit]
        let sql = """
            SELECT * FROM (\(own) ORDER BY id DESC LIMIT ?) UNION ALL SELECT * FROM (\(escalated) ORDER BY id DESC LIMIT ?)
            ORDER BY 1 DESC LIMIT ?
            """
        let arguments = part + part + [limit]
        return try pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.alert(from:))
        }
    }

    public func idempotency(client: String, key: String) throws -> IdempotencyRecord? {
        try pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM idempotency_keys WHERE client = ? AND key = ?", arguments: [client, key]),
                let id = AlertID(row["alert_id"] as String)
            else { return nil }
            let digest: Data = row["body_sha256"]
            return IdempotencyRecord(
                client: client, key: key, alertID: id, bodyDigest: Array(digest),
                createdAt: Timestamp(milliseconds: row["created_at"]))
        }
    }

    public func secret(named name: String) throws -> [UInt8]? {
        try pool.read { db in
            try Data.fetchOne(db, sql: "SELECT value FROM secrets WHERE name = ?", arguments: [name]).map(Array.init)
        }
    }

    public func pushSubscriptions() throws -> [PushSubscription] {
        try pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, endpoint, p256dh, auth, clients, answer, decider, created_at FROM push_subscriptions ORDER BY id"
            ).map { row in
                PushSubscription(
                    id: row[0], endpoint: row[1], p256dh: Array(row[2] as Data), auth: Array(row[3] as Data),
                    clients: PushSubscription.clients(stored: row[4] as String), answer: row[5], decider: row[6],
                    createdAt: Timestamp(milliseconds: row[7]))
            }
        }
    }

    public func answerToken(hash: [UInt8]) throws -> AnswerToken? {
        try pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT alert_id, client, subscription_id, decider, expires_at, used_at FROM answer_tokens WHERE hash = ?",
                    arguments: [Data(hash)]),
                let alertID = AlertID(row[0] as String)
            else { return nil }
            return AnswerToken(
                hash: hash, alertID: alertID, client: row[1], subscriptionID: row[2], decider: row[3],
                expiresAt: Timestamp(milliseconds: row[4]), usedAt: (row[5] as Int64?).map(Timestamp.init(milliseconds:)))
        }
    }

    public func webhooks() throws -> [Webhook] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, client, url, secret, created_at FROM webhooks ORDER BY id").map { row in
                Webhook(
                    id: row[0], client: row[1], url: row[2], secret: row[3],
                    createdAt: Timestamp(milliseconds: row[4]), source: .api)
            }
        }
    }

    public func deliveries(of alertID: AlertID) throws -> [DeliveryRecord] {
        try pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT d.id, d.event_id, d.target, d.webhook_id, d.state, d.next_attempt_at, e.type, d.result
                    FROM deliveries d LEFT JOIN events e ON e.id = d.event_id
                    WHERE d.alert_id = ? ORDER BY d.id
                    """,
                arguments: [alertID.description])
            return try rows.map { row in
                let id: String = row[0]
                let attempts = try Row.fetchAll(
                    db, sql: "SELECT at, status_code, error FROM delivery_attempts WHERE delivery_id = ? ORDER BY number",
                    arguments: [id]
                ).map { DeliveryAttempt(at: Timestamp(milliseconds: $0[0]), statusCode: $0[1], error: $0[2]) }
                let stateText: String = row[4]
                return DeliveryRecord(
                    id: id, eventID: row[1], target: row[2], webhookID: row[3],
                    state: DeliveryState(rawValue: stateText) ?? .pending, attempts: attempts,
                    nextAttemptAt: (row[5] as Int64?).map { Timestamp(milliseconds: $0) }, type: row[6], silenceID: row[7])
            }
        }
    }

    public func cancelledDeliveries(ofWebhook id: String) throws -> [String] {
        cancelled.withLockedValue { $0.removeValue(forKey: id) } ?? []
    }

    public func pendingDeliveries() throws -> [PendingDelivery] {
        try pool.read { db in
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT d.id, d.event_id, d.target, d.secret, e.body, e.created_at, d.next_attempt_at,
                        (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id), e.type, e.client
                    FROM deliveries d JOIN events e ON e.id = d.event_id
                    WHERE d.state = 'pending'
                    ORDER BY d.next_attempt_at, d.id
                    """)
            var pending: [PendingDelivery] = []
            // One copy of each event's body, shared by its deliveries.
            var bodies: [String: [UInt8]] = [:]
            while let row = try rows.next() {
                let eventID: String = row[1]
                let body: [UInt8]
                if let shared = bodies[eventID] {
                    body = shared
                } else {
                    body = Array(row[4] as Data)
                    bodies[eventID] = body
                }
                let created = Timestamp(milliseconds: row[5])
                pending.append(
                    PendingDelivery(
                        id: row[0], eventID: eventID, target: row[2], secret: row[3], body: body, eventCreatedAt: created,
                        attemptsMade: row[7], due: (row[6] as Int64?).map { Timestamp(milliseconds: $0) } ?? created,
                        kind: DeliveryKind(eventType: row[8]), client: row[9]))
            }
            return pending
        }
    }

    // MARK: - Receipts (SPEC §14)

    public func receiptHead() throws -> ChainLink {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT seq, sha256 FROM receipt_chain WHERE id = 1") else { return .start }
            return ChainLink(seq: row[0], sha256: row[1])
        }
    }

    public func receipt(of id: AlertID) throws -> ReceiptRecord? {
        try pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT seq, alert_id, client, decided_at, body FROM receipts WHERE alert_id = ?", arguments: [id.description]
            ).flatMap(Self.receipt(from:))
        }
    }

    public func receipts(after: Int, limit: Int) throws -> [ReceiptRecord] {
        try pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT seq, alert_id, client, decided_at, body FROM receipts WHERE seq > ? ORDER BY seq LIMIT ?",
                arguments: [after, limit]
            ).compactMap(Self.receipt(from:))
        }
    }

    public func receiptTotals() throws -> ReceiptTotals {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT count, bytes, seq FROM receipt_chain WHERE id = 1") else {
                return ReceiptTotals(count: 0, bytes: 0, lastSeq: 0)
            }
            return ReceiptTotals(count: row[0], bytes: row[1], lastSeq: row[2])
        }
    }

    public func receiptsKept(decidedBefore: Timestamp) throws -> Int {
        try pool.read { db in
            // Walks the chain from its start (by seq, the primary key) to the first receipt
            // decided at or after the time: as many rows as go.
            if let first = try Int.fetchOne(
                db, sql: "SELECT seq FROM receipts WHERE decided_at >= ? ORDER BY seq LIMIT 1", arguments: [decidedBefore.milliseconds])
            {
                return first
            }
            return (try Int.fetchOne(db, sql: "SELECT seq FROM receipt_chain WHERE id = 1") ?? 0) + 1
        }
    }

    static func receipt(from row: Row) -> ReceiptRecord? {
        guard let id = AlertID(row[1] as String) else { return nil }
        return ReceiptRecord(
            seq: row[0], alertID: id, client: row[2], decidedAt: Timestamp(milliseconds: row[3]), json: Array((row[4] as String).utf8))
    }

    /// Whether a commit goes through now: a real one (one small row rewritten),
    /// since taking the write lock alone says nothing of a full disk.
    public func isWritable() -> Bool {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return
            (try? pool.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO probe (id, at) VALUES (1, ?)", arguments: [now])
            }) != nil
    }
}

extension SQLiteStore {
    /// Every table ``StoreDump`` copies, read in one transaction (a consistent copy).
    public func dump() throws -> StoreDump {
        try pool.read { db in
            var dump = StoreDump()
            for (table, columns) in StoreDump.columns {
                var rows: [[StoreDump.Cell]] = []
                let cursor = try Row.fetchCursor(db, sql: "SELECT \(columns.joined(separator: ", ")) FROM \(table) ORDER BY \(columns[0])")
                while let row = try cursor.next() {
                    rows.append(
                        (0..<columns.count).map { index in
                            switch row[index] as DatabaseValue {
                            case let value where value.isNull: .null
                            case let value:
                                switch value.storage {
                                case .int64(let number): .integer(number)
                                case .double(let number): .integer(Int64(number))
                                case .string(let text): .text(text)
                                case .blob(let data): .bytes([UInt8](data))
                                case .null: .null
                                }
                            }
                        })
                }
                dump.rows[table] = rows
            }
            return dump
        }
    }
}
