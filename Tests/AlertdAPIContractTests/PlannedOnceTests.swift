// The store's prepared statements are planned once per connection (the header of
// FlushStatements.swift): PostgreSQL keeps planning a prepared statement at each execution
// while its custom plan looks cheaper than its generic one, and an array parameter it can
// see made the custom plan always look cheaper. The display check was planned at every
// `GET …/current` through an instance on PostgreSQL: 0.2–0.5 ms of the database's time
// against 0.01 ms to run it, a quarter of the reads a second (bench/RESULTS.md, issue 46).

import AlertdTestSupport
import Logging
import PostgresNIO
import Testing

@testable import AlertdPostgres

@Suite("PostgreSQL: the store's prepared statements are planned once per connection")
struct PlannedOnceTests {
    private static let quiet = Logger(label: "planned-once") { _ in SwiftLogNoOpLogHandler() }

    @Test("after its first executions each statement runs its generic plan, whatever its arrays hold")
    func genericPlans() async throws {
        let server = try await TestPostgres.shared()
        let address = try await server.borrowDatabase()
        // The schema as `alertd migrate` makes it; no store runs beside the statements.
        _ = try await PostgresAdministration.migrate(try PostgresURL(address), logger: Self.quiet)

        let connection = try await PostgresConnection.connect(
            configuration: try PostgresURL(address).connectionConfiguration(), id: 1, logger: Self.quiet)
        // A connection left open on a failure would stop the whole run (postgres-nio asserts);
        // a PSQLError's description hides the server's message, recorded here.
        do {
            try await check(connection)
        } catch {
            try? await connection.close()
            Issue.record("\(String(reflecting: error))")
            throw error
        }
        try await connection.close()
        await server.giveBack(address)
    }

    /// Runs each statement ten times on `connection`, then asks it how each was planned.
    private func check(_ connection: PostgresConnection) async throws {
        func run<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws {
            for try await _ in try await connection.execute(statement, logger: Self.quiet) {}
        }
        // One to three clients a run, as a flush or a batch of reads carries: each length is
        // a different custom plan's cost, and the generic plan must win over all of them.
        for round in 0..<10 {
            let clients = (0...(round % 3)).map { "client-\($0)" }
            try await run(DisplayReader.Check(clients: clients, versions: clients.map { _ in -1 }))
            try await run(Flushes.Lock(clients: clients, count: clients.count))
            try await run(Flushes.TryLock(clients: clients, count: clients.count))
            try await run(
                Flushes.Read(
                    clients: clients, since: clients.map { _ in -1 }, keyClients: clients, keys: clients.map { "key-\($0)" },
                    hookClients: clients))
            try await run(Flushes.Write(instance: "planned-once"))
        }

        var plans: [String: (generic: Int64, custom: Int64)] = [:]
        for try await (name, generic, custom) in try await connection.query(
            "SELECT name, generic_plans, custom_plans FROM pg_catalog.pg_prepared_statements", logger: Self.quiet
        ).decode((String, Int64, Int64).self) {
            plans[name] = (generic, custom)
        }
        for name in [
            DisplayReader.Check.name, Flushes.Lock.name, Flushes.TryLock.name, Flushes.Read.name, Flushes.Write.name,
        ] {
            let counted = plans[name]
            #expect(counted != nil, "\(name) was not prepared: \(plans)")
            // PostgreSQL plans the first five executions for their values, then keeps the
            // generic plan when it costs no more than they did on average.
            #expect((counted?.custom ?? 0) <= 5, "\(name) planned for its values at each run: \(String(describing: counted))")
            #expect((counted?.generic ?? 0) >= 5, "\(name) did not keep its generic plan: \(String(describing: counted))")
        }
    }
}
