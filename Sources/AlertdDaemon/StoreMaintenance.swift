import AlertdEngine
public import AlertdPostgres
import AlertdSQLite
import Foundation
public import Logging

/// `alertd migrate` and `alertd migrate-store`: the store's schema and its
/// contents, changed without serving.
public enum StoreMaintenance {
    /// Brings the configured store's schema up to date; one line saying what it did.
    /// The embedded store is migrated under the state directory's lock (not while alertd runs on it).
    public static func migrate(_ config: Config, logger: Logger) async throws -> String {
        switch config.store {
        case .sqlite:
            let lock = try StateLock(directory: config.stateDir)
            defer { lock.release() }
            _ = try SQLiteStore(directory: config.stateDir, durability: config.durability)
            return "\(config.stateDir)/\(SQLiteStore.fileName): schema is current"
        case .postgres(let url, _):
            let applied = try await PostgresAdministration.migrate(url, logger: logger)
            return applied.isEmpty
                ? "\(url): schema was already current"
                : "\(url): applied migration\(applied.count == 1 ? "" : "s") \(applied.map(String.init).joined(separator: ", "))"
        }
    }

    /// Copies the embedded store in `directory` into the PostgreSQL database at
    /// `url` (migrated first, and empty: else nothing is written); what was copied.
    /// Holds the state directory's lock throughout: alertd must not run on it.
    public static func copy(sqlite directory: String, to url: PostgresURL, logger: Logger) async throws -> String {
        let file = directory + "/" + SQLiteStore.fileName
        guard FileManager.default.fileExists(atPath: file) else {
            throw ConfigError("\(file) does not exist: --from sqlite:DIR names the state directory alertd ran on")
        }
        let lock = try StateLock(directory: directory)
        defer { lock.release() }
        let dump = try SQLiteStore(directory: directory, durability: .full).dump()
        try await PostgresAdministration.load(dump, into: url, logger: logger)
        return "copied \(dump.summary) from \(file) to \(url)"
    }
}
