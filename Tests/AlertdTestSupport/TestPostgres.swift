import Foundation
import Logging
import PostgresNIO
import NIOConcurrencyHelpers
import Synchronization

/// A throwaway PostgreSQL server: a new cluster in a scratch directory, the
/// postmaster a child of the test process (killed by the kernel if the test
/// process dies), listening on 127.0.0.1 and a socket in that directory.
///
/// ```swift
/// let server = try await TestPostgres.shared()
/// let url = try await server.createDatabase()   // postgres://postgres@127.0.0.1:PORT/t_…
/// ```
///
/// As root (CI, containers) it runs as the `postgres` user, since `initdb`
/// refuses root; otherwise as the caller. Needs the Debian `postgresql`
/// package (its binaries under /usr/lib/postgresql/N/bin).
/// The shared server's directory, removed at exit.
private let sharedDirectory = NIOLockedValueBox<String?>(nil)

public final class TestPostgres: Sendable {
    public let port: Int
    let directory: ScratchDirectory
    let bin: String
    private let postmaster = NIOLockedValueBox<ChildProcess?>(nil)

    /// The one server of this test process, started at first use: databases
    /// are cheap, clusters are not (~1 s of initdb on an idle machine).
    public static func shared() async throws -> TestPostgres {
        try await SharedServer.instance.value.get()
    }

    private enum SharedServer {
        static let instance = Task { () -> Result<TestPostgres, any Error> in
            do {
                let server = try await TestPostgres.start()
                // A static lives until exit and is never deinitialised: its directory goes at exit.
                sharedDirectory.withLockedValue { $0 = server.directory.url.path }
                atexit {
                    if let path = sharedDirectory.withLockedValue({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
                }
                return .success(server)
            } catch {
                return .failure(error)
            }
        }
    }

    /// A new cluster of its own, started (for tests that stop the database).
    public static func start() async throws -> TestPostgres {
        let bin = try binDirectory()
        // In memory where there is a tmpfs: a database per test is written, not kept
        // (on this project's 2-core test machines a disk made the tier five times slower).
        let base = Self.memoryDirectory ?? ScratchDirectory.base
        sweep(base)
        let directory = try ScratchDirectory(in: base, prefix: Self.prefix)
        // Whose cluster it is: a test that stops its server (the outage test) leaves a cluster
        // without a postmaster, which another test process's sweep must not take for a dead one.
        try Array("\(getpid())\n".utf8).withUnsafeBytes {
            try Data($0).write(to: directory.url.appendingPathComponent("owner"))
        }
        // The postgres user must reach the scratch directory and own its data.
        chmod(directory.url.path, 0o755)
        let data = directory.url.appendingPathComponent("data").path
        let sockets = directory.url.appendingPathComponent("run").path
        for owned in [data, sockets] {
            try FileManager.default.createDirectory(atPath: owned, withIntermediateDirectories: false)
            try Self.owned(owned)
        }
        let initdb = try await Program.run(
            asDatabaseUser("\(bin)/initdb"),
            asDatabaseUserArguments("\(bin)/initdb") + [
                "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C",
            ], timeout: .seconds(120))
        guard initdb.status == 0 else { throw ProcessError("initdb failed", exitStatus: initdb.status, stderr: initdb.stderr) }
        let port = try freePort()
        let server = TestPostgres(port: port, directory: directory, bin: bin)
        try await server.startPostmaster()
        return server
    }

    static let prefix = "alertd-pg"

    /// Removes the clusters of test processes that were killed (their scratch
    /// directories outlive them): those whose test process is gone, or, for a
    /// directory that does not name it, whose postmaster is gone. A cluster of a
    /// test process still running is left alone, its server stopped or not.
    private static func sweep(_ base: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        for name in names where name.hasPrefix(prefix + ".") {
            let directory = "\(base)/\(name)"
            if let text = try? String(contentsOfFile: "\(directory)/owner", encoding: .utf8),
                let owner = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), Glibc.kill(owner, 0) == 0 || errno == EPERM
            {
                continue
            }
            let pidFile = "\(directory)/data/postmaster.pid"
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let pid = text.split(separator: "\n").first.flatMap({ pid_t($0) }), Glibc.kill(pid, 0) == 0 || errno == EPERM
            {
                continue
            }
            // No postmaster.pid: a cluster being made now, or one that never started; old ones go.
            if (try? String(contentsOfFile: pidFile, encoding: .utf8)) == nil,
                let made = (try? FileManager.default.attributesOfItem(atPath: directory))?[.modificationDate] as? Date,
                made.timeIntervalSinceNow > -600
            {
                continue
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// `/dev/shm` when it is a writable directory (a tmpfs on Linux), else nil.
    static var memoryDirectory: String? {
        access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : nil
    }

    private init(port: Int, directory: ScratchDirectory, bin: String) {
        self.port = port
        self.directory = directory
        self.bin = bin
    }

    /// Where its Unix socket is (psql connects there).
    var socketDirectory: String { directory.url.appendingPathComponent("run").path }

    /// `postgres://postgres@127.0.0.1:PORT/NAME`.
    public func url(database: String) -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)" }

    /// Creates an empty database with a unique name; its URL.
    public func createDatabase() async throws -> String {
        let name = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try await execute("CREATE DATABASE \(name)")
        return url(database: name)
    }

    /// An empty database to use until ``giveBack(_:)``: one given back earlier
    /// (emptied), else a new one. For the many short tests that each want one.
    public func borrowDatabase() async throws -> String {
        if let url = free.withLockedValue({ $0.popLast() }) { return url }
        return try await createDatabase()
    }

    /// Empties a borrowed database (its public schema made again) for the next
    /// borrower; call when nothing uses it any more. One that cannot be emptied is dropped.
    public func giveBack(_ url: String) async {
        guard let name = url.split(separator: "/").last.map(String.init) else { return }
        do {
            try await execute("DROP SCHEMA public CASCADE", "CREATE SCHEMA public", database: name)
            free.withLockedValue { $0.append(url) }
        } catch {
            try? await execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }

    /// Runs statements one after the other on `database`, over a connection of its own (as `user`).
    public func execute(_ statements: String..., database: String = "postgres", user: String = "postgres") async throws {
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1", port: port, username: user, password: nil, database: database, tls: .disable)
        let connection = try await PostgresConnection.connect(
            configuration: configuration, id: Self.connections.add(1, ordering: .relaxed).newValue, logger: Self.quiet)
        do {
            for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Self.quiet) }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    private let free = NIOLockedValueBox<[String]>([])
    private static let connections = Atomic<Int>(0)
    fileprivate static let quiet = Logger(label: "alertd.test-postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Listens on `channel` of `database` as `user` (any role that may connect can, SPEC §9)
    /// until the listener is stopped; what it hears is ``Listener/payloads``.
    public func listen(_ channel: String, database: String, user: String) async throws -> Listener {
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1", port: port, username: user, password: nil, database: database, tls: .disable)
        let connection = try await PostgresConnection.connect(
            configuration: configuration, id: Self.connections.add(1, ordering: .relaxed).newValue, logger: Self.quiet)
        let listener = Listener(connection: connection)
        let listening = AsyncStream<Void>.makeStream()
        listener.task.withLockedValue {
            $0 = Task {
                try? await connection.listen(on: channel) { notifications in
                    listening.continuation.finish()
                    for try await notification in notifications { listener.heard.withLockedValue { $0.append(notification.payload) } }
                }
                listening.continuation.finish()
            }
        }
        for await _ in listening.stream {}
        return listener
    }

    /// A connection listening on a channel (``listen(_:database:user:)``).
    public final class Listener: Sendable {
        let connection: PostgresConnection
        let heard = NIOLockedValueBox<[String]>([])
        let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

        init(connection: PostgresConnection) { self.connection = connection }

        /// Every payload heard so far, in order.
        public var payloads: [String] { heard.withLockedValue { $0 } }

        /// Waits until at least `count` payloads were heard (polled: a notification is no event here).
        public func awaitPayloads(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [String] {
            let deadline = ContinuousClock.now + timeout
            while payloads.count < count {
                guard ContinuousClock.now < deadline else { throw TestFailure("heard \(payloads.count) of \(count) notifications") }
                try await Task.sleep(for: .milliseconds(10))
            }
            return payloads
        }

        public func stop() async {
            task.withLockedValue { $0 }?.cancel()
            try? await connection.close()
        }
    }

    /// A connection of its own to `database` as `user`, kept open until ``Session/close()``:
    /// for what lasts as long as a session does (an advisory lock, a LISTEN).
    public func session(database: String, user: String = "postgres") async throws -> Session {
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1", port: port, username: user, password: nil, database: database, tls: .disable)
        return Session(
            connection: try await PostgresConnection.connect(
                configuration: configuration, id: Self.connections.add(1, ordering: .relaxed).newValue, logger: Self.quiet))
    }

    /// A connection kept open (``session(database:user:)``).
    public final class Session: Sendable {
        let connection: PostgresConnection

        init(connection: PostgresConnection) { self.connection = connection }

        /// Runs one statement to its end.
        public func run(_ sql: String) async throws {
            for try await _ in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestPostgres.quiet) {}
        }

        public func close() async { try? await connection.close() }
    }

    /// Runs SQL through psql on `database`; its output (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        let result = try await Program.run(
            "\(bin)/psql",
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", socketDirectory, "-p", "\(port)", "-U", "postgres", "-d", database,
                "-c", sql,
            ],
            timeout: .seconds(60))
        guard result.status == 0 else { throw ProcessError("psql failed: \(sql)", exitStatus: result.status, stderr: result.stderr) }
        return result.stdout
    }

    /// Stops the server at once (SIGKILL: connections drop, as when its machine dies).
    public func kill() async {
        let running = postmaster.withLockedValue { process in
            defer { process = nil }
            return process
        }
        await running?.killAndReap()
    }

    /// Starts the server again on the same port and data (after ``kill()``).
    public func restart() async throws {
        try await startPostmaster()
    }

    private func startPostmaster() async throws {
        let data = directory.url.appendingPathComponent("data").path
        let program = "\(bin)/postgres"
        let process = try await ChildProcess.spawn(
            asDatabaseUser(program),
            arguments: asDatabaseUserArguments(program, dieWithParent: true) + [
                "-D", data, "-p", "\(port)", "-k", socketDirectory, "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=1000",
                // Its shared memory segments in its directory (removed with it), its WAL small.
                "-c", "dynamic_shared_memory_type=mmap", "-c", "wal_level=minimal", "-c", "max_wal_senders=0",
                "-c", "max_wal_size=64MB",
            ],
            environment: ["LANG=C", "PATH=/usr/bin:/bin"], dieWithParent: geteuid() != 0)
        let ready = await process.stderr.wait(timeout: .seconds(120)) { bytes, ended in
            let text = String(decoding: bytes, as: UTF8.self)
            if text.contains("ready to accept connections") { return true }
            return ended ? false : nil
        }
        guard ready == true else {
            await process.killAndReap()
            throw ProcessError("postgres did not start", exitStatus: process.exitStatus, stderr: process.stderr.text)
        }
        postmaster.withLockedValue { $0 = process }
    }

    /// As root, programs run through `setpriv` as `postgres` (which also sets
    /// the parent-death signal after the change of user, where it survives).
    private static func asDatabaseUser(_ program: String) -> String {
        geteuid() == 0 ? "/usr/bin/setpriv" : program
    }

    private func asDatabaseUser(_ program: String) -> String { Self.asDatabaseUser(program) }

    private static func asDatabaseUserArguments(_ program: String, dieWithParent: Bool = false) -> [String] {
        guard geteuid() == 0 else { return [] }
        return ["--reuid=postgres", "--regid=postgres", "--init-groups"] + (dieWithParent ? ["--pdeathsig", "KILL"] : []) + [
            "--", program,
        ]
    }

    private func asDatabaseUserArguments(_ program: String, dieWithParent: Bool = false) -> [String] {
        Self.asDatabaseUserArguments(program, dieWithParent: dieWithParent)
    }

    private static func owned(_ path: String) throws {
        guard geteuid() == 0 else { return }
        guard let user = getpwnam("postgres") else {
            throw ProcessError("no postgres user: install the postgresql package (apt-get install postgresql)")
        }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw ProcessError("chown \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The newest /usr/lib/postgresql/N/bin.
    private static func binDirectory() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last else {
            throw ProcessError("PostgreSQL is not installed (no \(root)/N/bin): apt-get install postgresql")
        }
        return "\(root)/\(newest)/bin"
    }

    /// A port nothing listens on now (bound, read, released).
    private static func freePort() throws -> Int {
        let reserved = try ReservedPort()
        defer { reserved.release() }
        return reserved.port
    }
}
