import AlertdDaemon
import ArgumentParser
import Foundation

/// `alertd check-config PATH`: every check alertd runs before it serves, without serving.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Checks a config file as alertd would at start: prints ok, or every problem and exits 1.",
        discussion: """
            Runs every check the start runs: the file's keys and values, listen, TLS files (readable, a valid \
            certificate and its key), the state directory (writable by this user), anonymous access on a \
            non-loopback address. Each problem is one line naming its key; a misspelt key gets a suggestion.
            """)

    @Argument(help: "The YAML config file.")
    var path: String

    func run() throws {
        let config: Config
        do {
            config = try Config.load(path: path)
        } catch let errors as ConfigErrors {
            // What could be read still gets the start's checks, for keys the file did not get wrong.
            Self.report(errors.withStartCheck().errors.map(\.description))
            throw ExitCode(1)
        } catch {
            Self.report(["\(error)"])
            throw ExitCode(1)
        }
        let check = config.startCheck()
        let problems = check.errors
        for warning in check.warnings { FileHandle.standardError.write(Data("\(path): warning: \(warning)\n".utf8)) }
        guard problems.isEmpty else {
            Self.report(problems.map(\.description))
            throw ExitCode(1)
        }
        print(
            "\(path): ok (\(Self.count(config.tokens.count, "token")), \(Self.count(config.webhooks.count, "webhook")), "
                + "listen \(config.listen))")
    }

    static func report(_ lines: [String]) {
        FileHandle.standardError.write(Data(lines.map { $0 + "\n" }.joined().utf8))
    }

    /// "1 token", "2 tokens".
    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}
