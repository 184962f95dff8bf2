import AlertdTestSupport
import AlertdSQLite
import Foundation
import GRDB

/// SQLite's write lock on a state directory, held from a connection of its own as an
/// outside tool (`sqlite3`, a backup script) would hold it. While it is held, alertd's
/// writer waits in SQLite's busy handler (`busy_timeout` = 5 s), then its commit fails
/// with SQLITE_BUSY: a commit in flight that the test controls. Its own thread holds
/// the lock and blocks; the test awaits.
public final class SQLiteWriteLock: Sendable {
    private let letGo = DispatchSemaphore(value: 0)
    /// "taken" once the lock is held, "done" once it was let go.
    private let state = Observed("")

    /// Returns once the lock is held.
    public static func take(stateDir: String) async throws -> SQLiteWriteLock {
        let lock = SQLiteWriteLock()
        let database = try DatabaseQueue(path: stateDir + "/" + SQLiteStore.fileName)
        Thread { [letGo = lock.letGo, state = lock.state] in
            try? database.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                state.update { $0 = "taken" }
                letGo.wait()
                try db.execute(sql: "ROLLBACK")
            }
            state.update { $0 = "done" }
        }.start()
        guard await lock.state.wait(timeout: .seconds(20), until: { $0 == "taken" ? true : $0 == "done" ? false : nil }) == true else {
            throw TestFailure("no hold of the write lock within 20 s")
        }
        return lock
    }

    /// Lets the lock go; returns once it is.
    public func release() async {
        letGo.signal()
        _ = await state.wait(timeout: .seconds(20)) { $0 == "done" ? true : nil }
    }
}
