import AlertdTestSupport
import Foundation
import GRDB

@testable import AlertdStore

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
            throw TestFailure("no hold of the write lock within 20 s")
        }
        return holder
    }

    func unlock() async {
        release.signal()
        _ = await state.wait(timeout: .seconds(20)) { $0 == "done" ? true : nil }
    }
}

extension DispatchGroup {
    /// Returns once every member left, without holding a thread meanwhile.
    func finished() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in notify(queue: .global()) { done.resume() } }
    }
}
