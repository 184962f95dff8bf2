import AlertdVersion
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Synchronization

/// This instance's presence in the database: a row of `instances` (its id, its version,
/// what it supports) and a session-level advisory lock it holds on a connection of its
/// own for as long as it runs.
///
/// PostgreSQL releases a session's locks when the session ends, however it ends: a
/// process killed with -9, a machine gone, a network cut (once the server notices). So
/// an instance whose lock nobody holds is dead, and another takes over its delivery
/// leases at once, where it used to wait for them to run out (30 s for a delivery not
/// attempted yet, issue 44 item 12). An instance alive but slow (a long attempt, a
/// frozen VM whose connections stay open) keeps its lock, and its leases stay its own
/// until they run out. Anyone who may connect can take an advisory lock, so a stranger
/// could make a dead instance look alive: its leases are then taken over when they run
/// out, as before.
///
/// The rows also say what each instance supports (``capabilities``): one that lacks
/// `quorum` (an older version) would take one vote as an alert's answer, so while such
/// an instance serves the database, alerts with a quorum above 1 are refused
/// (``PostgresAlertStore/quorumRefusal``, item 7).
final class Presence: Sendable {
    /// The first key of every instance's lock (`pg_advisory_lock(int, int)`: "aler"); the
    /// second is the instance's `lock_key`. The two-key form never meets the one-key locks
    /// of migrations and clients.
    static let lockClass: Int32 = 0x616C_6572
    /// What this version supports, written with its row: `quorum` (SPEC §10).
    static let capabilities = "quorum"

    /// Whether the instance row aliased `alias` holds its lock now: SQL.
    static func isLive(_ alias: String) -> String {
        """
        EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND l.granted
            AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
            AND l.classid = \(lockClass)::oid AND l.objid = \(alias).lock_key::oid AND l.objsubid = 2)
        """
    }

    /// The ids of instances registered and dead (their lock free): a `WITH` clause's body.
    static let dead = "SELECT i.id FROM instances i WHERE NOT \(isLive("i"))"

    let url: PostgresURL
    let instance: String
    let logger: Logger
    /// The lock's second key, once taken (kept across reconnections).
    let lockKey = NIOLockedValueBox<Int32?>(nil)
    /// Set while the lock is held and the row written.
    let present = Atomic<Bool>(false)

    init(url: PostgresURL, instance: String, logger: Logger) {
        self.url = url
        self.instance = instance
        self.logger = logger
    }

    /// Holds the lock until cancelled, from the moment `ready` says the schema is current,
    /// on a connection of its own, made again when it drops.
    func run(ready: @escaping @Sendable () -> Bool) async {
        while !ready() {
            do { try await Task.sleep(for: .milliseconds(20)) } catch { return }
        }
        var connectionID = 0
        while !Task.isCancelled {
            connectionID += 1
            do {
                var configuration = try url.connectionConfiguration(applicationName: "alertd/\(instance)")
                configuration.options.connectTimeout = .seconds(3)
                let connection = try await PostgresConnection.connect(configuration: configuration, id: connectionID, logger: logger)
                await withTaskCancellationHandler {
                    do {
                        // Through Pool.untilClosed: cancellation closes the connection, and a
                        // query in flight on a connection closed under it may never be answered
                        // (postgres-nio #487); the store's shutdown would wait for it for good.
                        try await Pool.untilClosed(connection) { try await self.hold(on: connection) }
                        // Until the connection ends (or cancellation closes it).
                        try await connection.closeFuture.get()
                    } catch {
                        if !Task.isCancelled {
                            logger.warning(
                                "this instance's presence in the database was lost; taking it again",
                                metadata: ["error": "\(String(reflecting: error))"])
                        }
                    }
                } onCancel: {
                    _ = connection.close() as EventLoopFuture<Void>
                }
                present.store(false, ordering: .relaxed)
                try? await connection.close()
            } catch {
                if !Task.isCancelled {
                    logger.warning(
                        "this instance cannot show it is alive in the database", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Takes the lock (a new key if another instance's is the same; the kept one again,
    /// waiting while an earlier session of this instance still holds it) and writes the row.
    private func hold(on connection: PostgresConnection) async throws {
        while true {
            let key = lockKey.withLockedValue { $0 } ?? Int32.random(in: 1...Int32.max)
            var held = false
            for try await got in try await connection.query(
                "SELECT pg_catalog.pg_try_advisory_lock(\(Self.lockClass), \(key))", logger: logger
            ).decode(Bool.self) {
                held = got
            }
            if held {
                lockKey.withLockedValue { $0 = key }
                break
            }
            if lockKey.withLockedValue({ $0 }) != nil { try await Task.sleep(for: .seconds(1)) }
        }
        let key = lockKey.withLockedValue { $0 }!
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        try await connection.query(
            """
            INSERT INTO instances (id, lock_key, version, capabilities, started_at)
            VALUES (\(instance), \(key), \(AlertdVersion.string), \(Self.capabilities), \(now))
            ON CONFLICT (id) DO UPDATE SET lock_key = excluded.lock_key
            """, logger: logger)
        present.store(true, ordering: .relaxed)
        logger.debug("this instance is present in the database", metadata: ["instance": "\(instance)", "lock_key": "\(key)"])
    }
}
