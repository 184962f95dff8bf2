import AlertdDaemon
import ArgumentParser
import Foundation

/// `alertd check-config PATH`: loads a config file as alertd would, without running.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Checks a config file: prints ok, or the reason it is refused and exits 1.")

    @Argument(help: "The YAML config file.")
    var path: String

    func run() throws {
        do {
            let config = try Config.load(path: path)
            _ = try config.listenAddress()
            print("\(path): ok (\(config.tokens.count) tokens, \(config.webhooks.count) webhooks, listen \(config.listen))")
        } catch {
            FileHandle.standardError.write(Data("alertd: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
