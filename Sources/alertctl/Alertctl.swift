import AlertdClient
import AlertdVersion
import AlertdWire
import ArgumentParser
import Foundation

@main
struct Alertctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alertctl",
        abstract: "The command-line client of alertd: post alerts, answer them, watch a client.",
        discussion: """
            The daemon is --url, else $ALERTD_URL, else url in ~/.config/alertd/alertctl.yaml, else \
            http://127.0.0.1:8080; the token is --token, else $ALERTD_TOKEN, else token or token_file \
            in that file; an https daemon's CA is --cacert, else $ALERTD_CACERT, else cacert in that \
            file. --url, --token, --cacert, --insecure and --json go before the command or after it. \
            --json prints the daemon's answer as it wrote it, on stdout; when the daemon refuses \
            (exit 3) it prints the problem+json object there (read its code: alertctl --json … | jq -r .code), \
            and the one-line explanation still goes to stderr. Seconds (--expires-in, --dismiss-after, \
            --retry-for, and the --wait of get and current) may be written as durations: 90s, 5m, 1h30m.

            Exit codes: 0 done (post --wait: a button other than cancel was chosen); \
            1 post --wait: the cancel button was chosen (choose: a destructive button was not \
            confirmed); 2 post --wait: dismissed, expired or \
            withdrawn (get --wait: still pending when the wait ended); 3 the daemon refused the request (its problem is printed on stderr; with --json its problem+json on stdout); \
            4 the daemon could not be reached or answered nonsense; 64 bad usage (flags, URL, \
            config file); 130 interrupted.
            """,
        version: AlertdVersion.printed,
        subcommands: [
            Post.self, Current.self, Choose.self, Get.self, List.self, Withdraw.self, Clients.self, Webhooks.self,
            Deliveries.self, Push.self, Watch.self, WhoAmI.self, MCPCommand.self, Hook.self, Audit.self,
        ])

    /// Parses the command line with the global options hoisted after the command's name, runs
    /// the command, and exits. Without a command (`alertctl`, `alertctl webhooks`) it prints
    /// the help on stderr and exits 64: a script that forgot its command fails.
    static func main() async {
        let arguments = hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))
        do {
            var command = try parseAsRoot(arguments)
            if command is Alertctl || command is Webhooks || command is Push || command is Hook || command is Audit {
                FileHandle.standardError.write(Data(helpMessage(for: type(of: command)).utf8 + [UInt8(ascii: "\n")]))
                Foundation.exit(Exit.usage)
            }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
        Foundation.exit(0)
    }

    /// `arguments` with every global option (``Connection/globalOptions``) that comes before
    /// the command's name (or between `webhooks` and `add`) moved after it, where the command
    /// parses it: `--url U post ops …` becomes `post --url U ops …`. Everything from the first
    /// argument that is neither a global option nor a command name on stays in place.
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        var path: [String] = []
        var global: [String] = []
        var command: any ParsableCommand.Type = Alertctl.self
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = String(argument.prefix { $0 != "=" })
            if let values = Connection.globalOptions[name] {
                let count = argument.contains("=") || values == 0 ? 1 : 2
                let end = min(index + count, arguments.count)
                global += arguments[index..<end]
                index = end
            } else if let sub = command.configuration.subcommands.first(where: {
                $0._commandName == argument || $0.configuration.aliases.contains(argument)
            }) {
                path.append(argument)
                command = sub
                index += 1
            } else {
                break
            }
        }
        return path + global + arguments[index...]
    }
}

/// The exit codes of `alertctl`, so a shell script can gate on a person.
enum Exit {
    static let chosen: Int32 = 0
    static let cancelled: Int32 = 1
    static let noDecision: Int32 = 2
    static let refused: Int32 = 3
    static let unreachable: Int32 = 4
    static let usage: Int32 = 64
    static let interrupted: Int32 = 130
}

/// An error already explained: its lines go to stderr, its code is the exit status.
struct Failure: Error, CustomStringConvertible {
    var description: String
    var code: Int32

    init(_ error: AlertdError) {
        if let problem = error.problem {
            var lines = ["\(problem.title): \(problem.detail)"]
            for field in problem.errors ?? [] { lines.append("  \(field.field): \(field.reason)") }
            description = lines.joined(separator: "\n")
            code = Exit.refused
        } else {
            description = error.message
            switch error.certificateProblem {
            case .untrusted:
                description += "; trust its CA with --cacert FILE (or $ALERTD_CACERT), or skip the check with --insecure"
            case .wrongHost:
                description += "; use a URL with a host name the certificate holds, or skip the check with --insecure"
            case nil: break
            }
            switch error.kind {
            case .invalidURL, .invalidCertificates: code = Exit.usage
            default: code = Exit.unreachable
            }
        }
    }

    init(_ message: String, code: Int32 = Exit.refused) {
        description = message
        self.code = code
    }
}

extension AsyncParsableCommand {
    /// Runs the command's work; a ``Failure`` prints to stderr and exits with its code.
    func guarded(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let failure as Failure {
            // --json: a refusal's problem+json on stdout as the daemon wrote it, for a script to read its code.
            if failure.code == Exit.refused, let connection = (self as? any ConnectedCommand)?.connection, connection.json,
                let refusal = connection.answers.lastRefusal
            {
                Connection.write(json: refusal.body)
            }
            complain(failure.description)
            throw ExitCode(failure.code)
        }
    }
}

/// A command that talks to the daemon through the global options.
protocol ConnectedCommand {
    var connection: Connection { get }
}

extension Post: ConnectedCommand {}
extension Current: ConnectedCommand {}
extension Choose: ConnectedCommand {}
extension Get: ConnectedCommand {}
extension List: ConnectedCommand {}
extension Withdraw: ConnectedCommand {}
extension Clients: ConnectedCommand {}
extension Webhooks.Add: ConnectedCommand {}
extension Webhooks.ListHooks: ConnectedCommand {}
extension Webhooks.Remove: ConnectedCommand {}
extension Deliveries: ConnectedCommand {}
extension Push.ListSubscriptions: ConnectedCommand {}
extension Push.Remove: ConnectedCommand {}
extension WhoAmI: ConnectedCommand {}

/// `alertctl: …` on stderr, each line safe for a terminal (a problem's detail can quote an alert).
func complain(_ message: String) {
    FileHandle.standardError.write(Data("alertctl: \(Terminal.safe(message, newlines: true))\n".utf8))
}
