import Foundation

/// The store a test body runs on: the embedded SQLite store, unless
/// `ALERTD_TEST_STORE=postgres` asks for a new database on this test process's throwaway
/// PostgreSQL server (``TestPostgres``) for each body.
public enum TestStore: String, Sendable {
    case sqlite, postgres

    /// PostgreSQL with `ALERTD_TEST_STORE=postgres`, and in the balanced pass
    /// (`ALERTD_TEST_MODE=balanced`: two instances share a store only on PostgreSQL);
    /// SQLite otherwise.
    public static let current: TestStore =
        environment["ALERTD_TEST_STORE"] == "postgres" || isBalancedPass ? .postgres : .sqlite

    private static let environment = ProcessInfo.processInfo.environment
    private static let isBalancedPass = environment["ALERTD_TEST_MODE"] == "balanced"

    /// How many bodies run on PostgreSQL at once: each is an alertd with its pool
    /// and its listener on a database of its own, and a whole tier of them at once
    /// (hundreds) left a 2-core machine too loaded for the tests' timings. In the
    /// balanced pass a body is two processes and nginx: half as many.
    static let bodies = Gate(width: (isBalancedPass ? 2 : 4) * max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// Runs `body` with `config` plus the store section this store needs: with
    /// PostgreSQL, on a database borrowed for the body and emptied after it, and the
    /// receipts key every instance on it signs with (``TestReceiptKey``).
    public func run<T>(_ config: String, _ body: (String) async throws -> T) async throws -> T {
        switch self {
        case .sqlite:
            return try await body(config)
        case .postgres:
            HangTrace.mark(HangTrace.waitingPhase)
            await Self.bodies.enter()
            HangTrace.mark("borrowing a database")
            let server: TestPostgres
            let url: String
            do {
                server = try await TestPostgres.shared()
                url = try await server.borrowDatabase()
            } catch {
                await Self.bodies.leave()
                throw error
            }
            let separated = config.isEmpty || config.hasSuffix("\n") ? config : config + "\n"
            let result: Result<T, any Error>
            HangTrace.mark("the body, on PostgreSQL")
            do {
                result = .success(
                    try await body(
                        TestReceiptKey.adding(
                            to: separated + "store:\n  backend: postgres\n  postgres:\n    url: \(url)\n    pool_size: 4\n")))
            } catch {
                result = .failure(error)
            }
            HangTrace.mark("giving back the database")
            await server.giveBack(url)
            await Self.bodies.leave()
            HangTrace.mark("the PostgreSQL body ended")
            return try result.get()
        }
    }
}
