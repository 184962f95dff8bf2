import AlertdDaemon
import AlertdVersion
import ArgumentParser
import Foundation
import Logging

struct AlertdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alertd",
        abstract: "Lets programs ask people questions over HTTP.",
        usage: """
            alertd [--config <file>] [--listen <host:port>] [--state-dir <dir>]
            alertd token new <name> --roles <roles> --clients <clients> [--json]
            alertd check-config <file>
            alertd migrate [--config <file>]
            alertd migrate-store --from sqlite:<dir> --to <postgres-url>
            alertd receipts keygen <path>
            """,
        discussion: """
            Without a command alertd serves the API and the dashboard until SIGTERM (there is no \
            `serve` command). It reads the YAML config at --config (default \(Config.defaultPath)); \
            with no config file at all it serves 127.0.0.1:8080 with its state in ./alertd-state. \
            --listen and --state-dir override the file.
            """,
        version: AlertdVersion.printed,
        subcommands: [TokenCommand.self, CheckConfigCommand.self, MigrateCommand.self, MigrateStoreCommand.self, ReceiptsCommand.self])

    @Option(name: .long, help: ArgumentHelp("The YAML config file.", valueName: "file"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("HOST:PORT to listen on (port 0: any free port).", valueName: "host:port"))
    var listen: String?

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Where the SQLite store lives.", valueName: "dir"))
    var stateDir: String?

    /// The file at `path`; without one, the default path if it exists, else the defaults.
    static func configFile(_ path: String?) throws -> Config {
        if let path { return try Config.load(path: path) }
        if FileManager.default.fileExists(atPath: Config.defaultPath) { return try Config.load(path: Config.defaultPath) }
        return Config()
    }

    func run() async throws {
        let settings: Config
        let (path, listen, stateDir) = (config, self.listen, self.stateDir)
        // The same reading at start and on SIGHUP: the file, then the flags over it.
        let read: @Sendable () throws -> Config = {
            var settings: Config
            let overrides: (inout Config) -> Void = { settings in
                if let listen { settings.listen = listen }
                if let stateDir { settings.stateDir = stateDir }
            }
            do {
                settings = try Self.configFile(path)
            } catch let errors as ConfigErrors {
                // Everything wrong at once: what the start's checks find too.
                throw errors.withStartCheck(overrides)
            }
            overrides(&settings)
            _ = try settings.listenAddress()
            // Absolute from here on, so that every log line names the same file and directory
            // whatever directory alertd was started in (--state-dir and the default
            // ./alertd-state are the working directory's; the file's own paths are already).
            settings.stateDir = Config.absolute(settings.stateDir)
            settings.source = settings.source.map(Config.absolute)
            return settings
        }
        do {
            settings = try read()
        } catch {
            Self.fail("\(error)")
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in LogfmtHandler(label: label, level: level) }
        let logger = Logger(label: "alertd")
        do {
            try await Application.run(config: settings, logger: logger, reload: read)
        } catch {
            logger.critical("cannot run", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
    }

    static func fail(_ message: String) -> Never {
        // One line per problem (a config file may have several), each saying who speaks.
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false).map { "alertd: \($0)\n" }
        FileHandle.standardError.write(Data(lines.joined().utf8))
        Foundation.exit(2)
    }
}
