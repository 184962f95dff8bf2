import AlertdCore
import AlertdEngine
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Reads clients' displayed alerts for the engine to check what it publishes
/// against the database (SPEC §9: a read reflects every change committed before
/// it arrived). Each request names clients and the version the engine published
/// for each; one statement answers every request waiting, with the displayed
/// alert and version of the clients whose version moved (their other rows are
/// left out, so a current cache costs a few bytes per client). One statement
/// runs at a time: requests that arrive while it runs go together in the next,
/// so under load many reads share one round trip.
final class DisplayReader: BatchRunner {
    struct Request: Sendable {
        var known: [(client: String, version: Int64?)]
        var completion: @Sendable (Result<[VersionedDisplay], EngineError>) -> Void
    }

    /// At most this many clients in one statement; the rest go in the next.
    static let batch = 4096

    private let batcher = Batcher(InArrivalOrder<Request>(limit: DisplayReader.batch) { $0.known.count })
    private let logger: Logger
    /// Set once, right after the store is made (it owns the reader).
    nonisolated(unsafe) weak var store: PostgresAlertStore?

    init(logger: Logger) {
        self.logger = logger
    }

    func read(
        _ known: [(client: String, version: Int64?)], completion: @escaping @Sendable (Result<[VersionedDisplay], EngineError>) -> Void
    ) {
        batcher.enqueue(Request(known: known, completion: completion), to: self)
    }

    var batchJobs: Jobs? { store?.jobs }

    /// Fails every request of a batch that will not run: the store is stopping.
    func refuse(_ batch: [Request]) {
        for request in batch { request.completion(.failure(EngineError.stopping)) }
    }

    func run(_ batch: [Request]) async -> BatchEnd<Request> {
        guard let store else {
            refuse(batch)
            return BatchEnd()
        }
        await run(batch, store: store)
        return BatchEnd()
    }

    /// The displayed alert and version of each client whose version is not the one known
    /// (-1: none known), with the client's place in the arrays (from 1).
    struct Check: PostgresPreparedStatement {
        static let name = "alertd_display_check_v5"
        /// The displayed alert is the client's own, or one escalated to it (SPEC §12).
        ///
        /// The arrays are read through scalar subqueries, so that it is planned once per
        /// connection (why: the header of FlushStatements.swift): planned at every check, as
        /// it was, planning cost 0.2–0.5 ms of the database's time and running it 0.01 ms.
        static let sql = """
            SELECT \(AlertRow.qualified("a")), r.i, c.version
            FROM ROWS FROM (pg_catalog.unnest((SELECT $1::text[])), pg_catalog.unnest((SELECT $2::int8[])))
                WITH ORDINALITY AS r(id, known, i)
            LEFT JOIN clients c ON c.id = r.id
            LEFT JOIN LATERAL (
                SELECT \(AlertRow.columns) FROM alerts WHERE alerts.client = r.id AND alerts.state = 'displayed'
                UNION ALL
                SELECT \(AlertRow.columns) FROM escalations e0 JOIN alerts ON alerts.id = e0.alert_id
                WHERE e0.client = r.id AND e0.displayed_at IS NOT NULL AND alerts.state IN ('queued', 'displayed')
                LIMIT 1
            ) a ON true
            WHERE COALESCE(c.version, -1) <> r.known
            """
        typealias Row = PostgresRow

        var clients: [String]
        var versions: [Int64]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(clients)
            bindings.append(versions)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    private func run(_ requests: [Request], store: PostgresAlertStore) async {
        // Each client and version asked once, however many reads name it (a dashboard's
        // readers all ask for the same client).
        var pairs: [(client: String, version: Int64?)] = []
        var asked: [String: [Int64?: Int]] = [:]
        for (client, version) in requests.lazy.flatMap(\.known) where asked[client]?[version] == nil {
            asked[client, default: [:]][version] = pairs.count
            pairs.append((client, version))
        }
        // -1: no version known (versions are values of a sequence, from 1).
        let names = pairs.map(\.client)
        let versions = pairs.map { $0.version ?? -1 }
        var changed: [Int: VersionedDisplay] = [:]
        do {
            for try await row in try await store.client.execute(Check(clients: names, versions: versions), logger: logger) {
                let cells = row.makeRandomAccess()
                // After the alert's columns, however many it has.
                let index = Int(try cells[AlertRow.names.count].decode(Int64.self)) - 1
                let version = try cells[AlertRow.names.count + 1].decode(Int64?.self)
                guard pairs.indices.contains(index) else { continue }
                let alert = try cells[0].decode(String?.self) == nil ? nil : try AlertRow.alert(row).viewed(from: pairs[index].client)
                changed[index] = VersionedDisplay(client: pairs[index].client, alert: alert, version: version)
            }
        } catch {
            let failure = store.unavailable(error)
            for request in requests { request.completion(.failure(failure)) }
            return
        }
        for request in requests {
            request.completion(.success(request.known.compactMap { asked[$0.client]?[$0.version].flatMap { changed[$0] } }))
        }
    }
}
