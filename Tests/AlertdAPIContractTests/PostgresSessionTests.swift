// What another role of the database, an administrator's typo and a rolling upgrade can
// do to alertd's connections (issue 27 item 7): a function planted in a writable schema
// must never run as alertd; every connection has its search_path and timeouts; a
// connection string that cannot be read is never quoted back; an index is built
// without blocking writes.

import AlertdCore
import AlertdEngine
import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import AlertdPostgres

@Suite("PostgreSQL sessions: planted functions, search_path and timeouts, unquoted errors, concurrent indexes")
struct PostgresSessionTests {
    private static let quiet = Logger(label: "postgres-session") { _ in SwiftLogNoOpLogHandler() }

    @Test(
        "a connection string that cannot be read is never quoted back, not even in part",
        arguments: [
            "host=db password=s3cr3t XYZ dbname=a",  // a space in an unquoted password
            "host=db password='s3cr3t XYZ dbname=a",  // an unterminated quote
            "host=db s3cr3tXYZ=1",  // a key that is a value cut loose
            "host=db port=s3cr3tXYZ",
            "host=db sslmode=s3cr3tXYZ",
            "postgres://u:s3cr3tXYZ@db/x?sslmode=s3cr3tXYZ",
            "postgres://u:s3cr3tXYZ@db/x?s3cr3tXYZ=1",
        ])
    func unquotedErrors(text: String) {
        do {
            _ = try PostgresURL(text, environment: [:])
            Issue.record("\(text) was read")
        } catch {
            #expect(!error.description.contains("s3cr3t") && !error.description.contains("XYZ"), "\(error.description)")
            #expect(!error.description.isEmpty)
        }
    }

    @Test("PGPASSWORD stands for a password the string leaves out, and only then")
    func passwordFromEnvironment() throws {
        #expect(try PostgresURL("postgres://alertd@db/alertd", environment: ["PGPASSWORD": "from-env"]).password == "from-env")
        #expect(try PostgresURL("host=db user=alertd", environment: ["PGPASSWORD": "from-env"]).password == "from-env")
        #expect(try PostgresURL("postgres://alertd:inline@db/alertd", environment: ["PGPASSWORD": "from-env"]).password == "inline")
        #expect(try PostgresURL("postgres://alertd@db/alertd", environment: [:]).password == nil)
        #expect(!(try PostgresURL("postgres://alertd@db/alertd", environment: ["PGPASSWORD": "from-env"])).description.contains("from-env"))
    }

    @Test("a password file's first line is the password, over the string's; an empty or missing file is refused, named")
    func passwordFile() throws {
        let directory = try ScratchDirectory()
        let file = directory.url.appendingPathComponent("password").path
        var url = try PostgresURL("postgres://alertd:inline@db/alertd", environment: [:])
        try Data("from-file\r\nsecond line\n".utf8).write(to: URL(fileURLWithPath: file))
        try url.readPassword(fromFile: file)
        #expect(url.password == "from-file")
        try Data("\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: PostgresURL.Invalid.self) { try url.readPassword(fromFile: file) }
        do {
            try url.readPassword(fromFile: file + ".missing")
            Issue.record("a missing file was read")
        } catch {
            #expect(error.description.contains("password.missing"))
        }
    }

    @Test("every connection, pooled or single, starts with alertd's search_path and timeouts, and JIT off")
    func sessionParameters() async throws {
        let server = try await TestPostgres.shared()
        let address = try await server.borrowDatabase()
        let url = try PostgresURL(address)
        let expected = [
            "search_path": "\"$user\", public", "statement_timeout": "30s", "lock_timeout": "10s",
            "idle_in_transaction_session_timeout": "1min", "jit": "off",
        ]
        func settings(_ connection: PostgresConnection) async throws -> [String: String] {
            var found: [String: String] = [:]
            for name in expected.keys {
                for try await value in try await connection.query(PostgresQuery(unsafeSQL: "SHOW \(name)"), logger: Self.quiet)
                    .decode(String.self)
                {
                    found[name] = value
                }
            }
            return found
        }
        let single = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: Self.quiet)
        #expect(try await settings(single) == expected)
        try await single.close()

        let client = PostgresClient(configuration: try url.clientConfiguration(), backgroundLogger: Self.quiet)
        let running = Task { await client.run() }
        #expect(try await client.withConnection { try await settings($0) } == expected)
        running.cancel()
        await server.giveBack(address)
    }

    @Test("functions another role planted in public never run as alertd: the purge's lock, migrate-store's queue order")
    func plantedFunctions() async throws {
        let server = try await TestPostgres.shared()
        let address = try await server.createDatabase()
        let database = String(address.split(separator: "/").last!)
        let role = "mallory_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        // A database where public is writable by others (any cluster made before PostgreSQL 15
        // and upgraded): another role plants functions that fit alertd's calls better than
        // pg_catalog's do (an int4 where pg_catalog's takes an int8, text for a regclass).
        try await server.execute("CREATE ROLE \(role)")
        try await server.execute(
            "GRANT CREATE, USAGE ON SCHEMA public TO \(role)", "SET ROLE \(role)",
            """
            CREATE FUNCTION public.hashtextextended(text, integer) RETURNS bigint LANGUAGE plpgsql
            AS $$ BEGIN RAISE EXCEPTION 'planted hashtextextended ran as %', current_user; END $$
            """,
            """
            CREATE FUNCTION public.nextval(text) RETURNS bigint LANGUAGE plpgsql
            AS $$ BEGIN RAISE EXCEPTION 'planted nextval ran as %', current_user; END $$
            """,
            "GRANT EXECUTE ON FUNCTION public.hashtextextended(text, integer), public.nextval(text) TO PUBLIC",
            database: database)

        // migrate-store into it: every alert takes its place in the queue order.
        let dump = StoreDump(rows: [
            "clients": [[.text("ops"), .integer(1)]],
            "alerts": [
                [
                    .text("01JAAAAAAAAAAAAAAAAAAAAAAA"), .text("ops"), .text("queued"), .integer(0), .text("t"), .null, .text("default"),
                    .text("[]"), .null, .null, .integer(1), .null, .null, .integer(Int64.max / 2), .null, .null, .null,
                    .integer(1), .null, .null, .null, .null, .null,
                ]
            ],
        ])
        try await PostgresAdministration.load(dump, into: try PostgresURL(address), logger: Self.quiet)
        #expect(try await server.psql("SELECT count(*) FROM alerts", database: database) == "1\n")

        // The purge forgets a client with nothing left, under that client's lock.
        try await server.execute("INSERT INTO clients (id, created_at) VALUES ('gone', 0)", database: database)
        let store = try PostgresAlertStore(
            url: try PostgresURL(address), poolSize: 2, settings: QueueSettings(), rules: AlertRules(), clock: SystemClock(),
            logger: Self.quiet, receiptKey: .generate())
        let running = Task { try await store.run() }
        let forgotten: Result<[String], EngineError>
        do throws(EngineError) {
            forgotten = .success(
                try await store.purge(
                    decidedBefore: Timestamp(milliseconds: 0), keepPerClient: 100_000, keysBefore: Timestamp(milliseconds: 0)))
        } catch {
            forgotten = .failure(error)
        }
        #expect((try? forgotten.get()) == ["gone"], "\(forgotten)")
        running.cancel()
        _ = await running.result
        try await server.execute("DROP DATABASE \(database) WITH (FORCE)", "DROP ROLE \(role)")
    }

    @Test("an index migration is built concurrently: writes go on while it waits for a transaction, then it is recorded")
    func concurrentIndex() async throws {
        let server = try await TestPostgres.shared()
        let address = try await server.borrowDatabase()
        let url = try PostgresURL(address)
        let client = PostgresClient(configuration: try url.clientConfiguration(), backgroundLogger: Self.quiet)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let table = Migration(1, "a table", ["CREATE TABLE things (id bigint, client text)"])
        let index = Migration(2, "an index", body: .index(name: "things_by_client", definition: "ON things (client)"))
        try await Schema.migrate(client, migrations: [table], logger: Self.quiet)

        // A transaction that wrote and has not ended: a plain CREATE INDEX waits for it while
        // holding a lock every later write queues behind.
        let writer = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: Self.quiet)
        try await writer.query("BEGIN", logger: Self.quiet)
        try await writer.query("INSERT INTO things VALUES (1, 'a')", logger: Self.quiet)
        let building = Task { try await Schema.migrate(client, migrations: [table, index], logger: Self.quiet) }
        // The build has started: it waits for the writer's transaction.
        let observer = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 2, logger: Self.quiet)
        var waiting = false
        for _ in 0..<600 where !waiting {
            for try await count in try await observer.query(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock'",
                logger: Self.quiet
            ).decode(Int.self) {
                waiting = count > 0
            }
            if !waiting { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(waiting, "the index build never started waiting for the open transaction")
        // Another write meanwhile: it must not queue behind the build (2 s: a bound, not a measure).
        try await observer.query("SET lock_timeout = '2s'", logger: Self.quiet)
        var queued: (any Error)?
        do {
            try await observer.query("INSERT INTO things VALUES (2, 'b')", logger: Self.quiet)
        } catch {
            queued = error
        }
        try await writer.query("COMMIT", logger: Self.quiet)
        #expect(queued == nil, "a write queued behind the index build: \(String(reflecting: queued))")
        #expect(try await building.value == [2])
        #expect(
            try await server.psql(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = 'things_by_client'::regclass",
                database: String(address.split(separator: "/").last!)) == "t\n")
        // Once recorded, it is not built again.
        #expect(try await Schema.migrate(client, migrations: [table, index], logger: Self.quiet) == [])
        try await writer.close()
        try await observer.close()
        await server.giveBack(address)
    }

    @Test("an index whose build was cut short (left invalid) is dropped and built again, not taken as built")
    func invalidIndexRebuilt() async throws {
        let server = try await TestPostgres.shared()
        let address = try await server.borrowDatabase()
        let database = String(address.split(separator: "/").last!)
        let client = PostgresClient(configuration: try PostgresURL(address).clientConfiguration(), backgroundLogger: Self.quiet)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let table = Migration(
            1, "a table", ["CREATE TABLE things (id bigint, client text)", "INSERT INTO things VALUES (1, 'a'), (2, 'a')"])
        try await Schema.migrate(client, migrations: [table], logger: Self.quiet)
        // A concurrent build that fails leaves its index behind, invalid.
        await #expect(throws: (any Error).self) {
            try await server.execute("CREATE UNIQUE INDEX CONCURRENTLY things_by_client ON things (client)", database: database)
        }
        #expect(
            try await server.psql("SELECT indisvalid FROM pg_index WHERE indexrelid = 'things_by_client'::regclass", database: database)
                == "f\n")

        let index = Migration(2, "an index", body: .index(name: "things_by_client", definition: "ON things (client)"))
        #expect(try await Schema.migrate(client, migrations: [table, index], logger: Self.quiet) == [2])
        #expect(
            try await server.psql("SELECT indisvalid FROM pg_index WHERE indexrelid = 'things_by_client'::regclass", database: database)
                == "t\n")
        await server.giveBack(address)
    }
}
