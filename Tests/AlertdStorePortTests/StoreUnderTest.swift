import AlertdCore
import AlertdEngine
import AlertdInProcess
import AlertdPostgres
import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import Foundation

import Logging
import PostgresNIO
import Testing

import AlertdSQLite

/// The stores every test of this suite runs against: the port's contract is one.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { self == .sqlite ? "SQLite" : "PostgreSQL" }
}

/// A store under test on storage of its own, on a manual clock, and what a test needs
/// to interfere with it the way another process would: a second instance on the same
/// storage, and the database's write lock held from another connection.
final class StoreUnderTest: Sendable {
    let kind: StoreKind
    let store: any AlertStore
    let clock: ManualClock
    let settings: QueueSettings
    private let storage: Storage
    private let running: Task<Void, Never>?

    private enum Storage: Sendable {
        case directory(ScratchDirectory)
        case database(TestPostgres, url: String)
    }

    private static let logger = Logger(label: "store-port") { _ in SwiftLogNoOpLogHandler() }
    /// The key every store of the suite signs receipts with (SPEC §14): two instances of one
    /// database sign with the same, as `receipts.key_file` has them.
    static let receiptKey = ReceiptSigningKey.generate()

    /// Runs `body` on a new store of `kind` and closes it after, whatever `body` did.
    static func with(
        _ kind: StoreKind, settings: QueueSettings = QueueSettings(), _ body: (StoreUnderTest) async throws -> Void
    ) async throws {
        let subject = try await StoreUnderTest(kind, settings: settings)
        do {
            try await body(subject)
        } catch {
            await subject.close()
            throw error
        }
        await subject.close()
    }

    private init(_ kind: StoreKind, settings: QueueSettings) async throws {
        self.kind = kind
        self.settings = settings
        let clock = ManualClock()
        self.clock = clock
        switch kind {
        case .sqlite:
            let directory = try ScratchDirectory(prefix: "alertd-port")
            let store = try SQLiteAlertStore(
                persistent: try SQLiteStore(directory: directory.url.path, durability: .normal), settings: settings,
                rules: AlertRules(), clock: clock, logger: Self.logger, receiptKey: Self.receiptKey)
            store.startWriter()
            self.store = store
            storage = .directory(directory)
            running = nil
        case .postgres:
            let server = try await TestPostgres.shared()
            let url = try await server.borrowDatabase()
            let (store, running) = try await Self.postgresStore(url, settings: settings, clock: clock)
            self.store = store
            self.running = running
            storage = .database(server, url: url)
        }
    }

    private static func postgresStore(
        _ url: String, settings: QueueSettings, clock: any WallClock
    ) async throws -> (PostgresAlertStore, Task<Void, Never>) {
        let store = try PostgresAlertStore(
            url: try PostgresURL(url), poolSize: 4, settings: settings, rules: AlertRules(), clock: clock, logger: logger,
            receiptKey: Self.receiptKey)
        let running = Task { _ = try? await store.run() }
        try await store.migrate()
        return (store, running)
    }

    /// A second instance on the same storage, as another alertd process sharing the
    /// database runs it; nil for a store one process owns (SQLite's state directory is
    /// locked by its daemon). Closed by `body`'s end.
    func withPeer(_ body: (any AlertStore) async throws -> Void) async throws -> Bool {
        guard case .database(_, let url) = storage else { return false }
        let (peer, running) = try await Self.postgresStore(url, settings: settings, clock: clock)
        defer { running.cancel() }
        try await body(peer)
        running.cancel()
        _ = await running.result
        return true
    }

    /// The store as alertd finds it at its next start: for SQLite this store stopped and
    /// another opened on its directory (memory rebuilt from the files); for PostgreSQL a new
    /// instance on the database. Closed by `body`'s end; this store is not used after.
    func restarted(_ body: (any AlertStore) async throws -> Void) async throws {
        switch storage {
        case .directory(let directory):
            (store as? SQLiteAlertStore)?.shutdown()
            let fresh = try SQLiteAlertStore(
                persistent: try SQLiteStore(directory: directory.url.path, durability: .normal), settings: settings,
                rules: AlertRules(), clock: clock, logger: Self.logger, receiptKey: Self.receiptKey)
            fresh.startWriter()
            defer { fresh.shutdown() }
            try await body(fresh)
        case .database:
            _ = try await withPeer(body)
        }
    }

    /// Holds the database's write lock from a connection of its own, as an outside tool
    /// (a backup, a migration) would, until the returned hold is released: a change whose
    /// body ran is then committing, and stays so. SQLite waits for the lock for its
    /// `busy_timeout` (5 s) before the commit fails; PostgreSQL for its `lock_timeout` (10 s).
    func holdWrites() async throws -> any HeldWrites {
        switch storage {
        case .directory(let directory):
            return try await SQLiteWriteLock.take(stateDir: directory.url.path)
        case .database(_, let url):
            return try await PostgresTableLock.take(url: url)
        }
    }

    /// Holds `client`'s lock in another session, as another instance's transaction on
    /// that client does; nil for a store one process owns.
    func holdClient(_ client: String) async throws -> (any HeldWrites)? {
        guard case .database(_, let url) = storage else { return nil }
        return try await PostgresTableLock.take(
            url: url, statement: "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(\(client), 0))")
    }

    /// Sessions of this store's database waiting for an advisory lock (a flush waiting
    /// for a client another session holds); 0 for SQLite.
    func sessionsWaitingForAClient() async throws -> Int {
        guard case .database(let server, let url) = storage else { return 0 }
        let database = String(url.split(separator: "/").last ?? "")
        let count = try await server.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND wait_event_type = 'Lock' AND wait_event = 'advisory'")
        return Int(count.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    func close() async {
        switch storage {
        case .directory:
            (store as? SQLiteAlertStore)?.shutdown()
        case .database(let server, let url):
            running?.cancel()
            _ = await running?.result
            await server.giveBack(url)
        }
    }
}

/// A write lock held by another connection, until released.
protocol HeldWrites: Sendable {
    func release() async
}

/// SQLite's write lock, held as another connection holds it (AlertdInProcess).
extension SQLiteWriteLock: HeldWrites {}

/// A PostgreSQL lock taken in an open transaction of its own connection: by default
/// every table alertd writes, in SHARE mode (reads go on; every write waits).
final class PostgresTableLock: HeldWrites {
    private let connection: PostgresConnection
    private static let logger = Logger(label: "store-port-lock") { _ in SwiftLogNoOpLogHandler() }

    private init(_ connection: PostgresConnection) { self.connection = connection }

    static func take(url: String, statement: PostgresQuery = "LOCK TABLE alerts, clients IN SHARE MODE") async throws -> PostgresTableLock {
        let connection = try await PostgresConnection.connect(
            configuration: try PostgresURL(url).connectionConfiguration(), id: 1, logger: logger)
        try await connection.query("BEGIN", logger: logger)
        try await connection.query(statement, logger: logger)
        return PostgresTableLock(connection)
    }

    func release() async {
        _ = try? await connection.query("ROLLBACK", logger: Self.logger)
        try? await connection.close()
    }
}

struct StorePortFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
