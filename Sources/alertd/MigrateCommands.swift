import AlertdDaemon
import AlertdPostgres
import ArgumentParser
import Foundation
import Logging

/// `alertd migrate [--config FILE]`: the store's schema brought up to date, then exit.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Applies the store's schema migrations and exits, without serving.",
        discussion: """
            alertd migrates at every start too (instances starting together on one PostgreSQL \
            database migrate once, under an advisory lock); run this first to migrate before a \
            rollout, or to see that the database is reachable. With the embedded store it takes \
            the state directory's lock: alertd must not be running on it.
            """)

    /// `--config` and `--state-dir` are alertd's own (`alertd migrate --config FILE`).
    @ParentCommand var alertd: AlertdCommand

    func run() throws {
        var config = try AlertdCommand.configFile(alertd.config)
        if let stateDir = alertd.stateDir { config.stateDir = stateDir }
        let loaded = config
        print(try blocking { try await StoreMaintenance.migrate(loaded, logger: commandLogger()) })
    }
}

/// `alertd migrate-store --from sqlite:DIR --to postgres://…`: the embedded store copied into PostgreSQL.
struct MigrateStoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-store",
        abstract: "Copies the embedded store into an empty PostgreSQL database.",
        discussion: """
            Copies every alert (pending and decided), idempotency key, client, webhook registered \
            through the API, callback event and delivery with its attempts, in one transaction: \
            all or nothing. Refuses a database that already holds alertd's data. Stop alertd \
            first (the state directory's lock is taken); then point the config's store at \
            PostgreSQL and start the instances. Deliveries still pending are attempted by the first \
            instance that finds them.
            """)

    @Option(help: ArgumentHelp("sqlite:DIR, the state directory alertd ran on.", valueName: "sqlite:dir"))
    var from: String

    @Option(
        help: ArgumentHelp(
            "The PostgreSQL connection URL (as store.postgres.url), best without its password: "
                + "PGPASSWORD or --password-file supplies it.", valueName: "url"))
    var to: String

    @Option(
        help: ArgumentHelp(
            "A file whose first line is the database password (a command line is visible to every user of the machine).",
            valueName: "file"))
    var passwordFile: String?

    func validate() throws {
        guard from.hasPrefix("sqlite:"), from.count > "sqlite:".count else {
            throw ValidationError("--from must be sqlite:DIR (the state directory), not \(from)")
        }
        let url: PostgresURL
        do {
            url = try PostgresURL(to, environment: [:])
        } catch {
            throw ValidationError("--to: \(error)")
        }
        if url.password != nil {
            FileHandle.standardError.write(
                Data(
                    ("alertd migrate-store: warning: the password in --to is visible to every user of this machine while this runs "
                        + "(ps, /proc); give it in PGPASSWORD or --password-file instead\n").utf8))
        }
    }

    func run() throws {
        let directory = String(from.dropFirst("sqlite:".count))
        var url = try PostgresURL(to)
        if let passwordFile {
            do {
                try url.readPassword(fromFile: passwordFile)
            } catch {
                throw ValidationError("--password-file: \(error)")
            }
        }
        let target = url
        print(try blocking { try await StoreMaintenance.copy(sqlite: directory, to: target, logger: commandLogger()) })
    }
}

/// Warnings and errors on stderr, as logfmt lines: these commands print their outcome on stdout.
private func commandLogger() -> Logger {
    var logger = Logger(label: "alertd") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = .warning
    return logger
}
