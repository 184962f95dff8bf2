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
            The daemon is --url or $ALERTD_URL (default http://127.0.0.1:8080); the token is \
            --token or $ALERTD_TOKEN. --json prints the daemon's answer as JSON for scripts.

            Exit codes: 0 done (post --wait: a button other than cancel was chosen); \
            1 post --wait: the cancel button was chosen; 2 post --wait: dismissed, expired or \
            withdrawn; 3 the daemon refused the request (its problem is printed on stderr); \
            4 the daemon could not be reached or answered nonsense; 64 bad usage.
            """,
        version: AlertdVersion.string,
        subcommands: [
            Post.self, Current.self, Choose.self, Get.self, List.self, Withdraw.self, Clients.self, Webhooks.self,
            Deliveries.self, Watch.self,
        ])
}

/// The exit codes of `alertctl`, so a shell script can gate on a person.
enum Exit {
    static let chosen: Int32 = 0
    static let cancelled: Int32 = 1
    static let noDecision: Int32 = 2
    static let refused: Int32 = 3
    static let unreachable: Int32 = 4
}

/// `--url`, `--token`, `--json`: on every command.
struct Connection: ParsableArguments {
    @Option(name: .long, help: "The daemon's URL (default: $ALERTD_URL, else http://127.0.0.1:8080).")
    var url: String?

    @Option(name: .long, help: "The Bearer token (default: $ALERTD_TOKEN).")
    var token: String?

    @Flag(name: .long, help: "Print the answer as JSON.")
    var json = false

    func client() throws -> AlertdClient {
        let environment = ProcessInfo.processInfo.environment
        let url = url ?? environment["ALERTD_URL"] ?? "http://127.0.0.1:8080"
        do {
            return try AlertdClient(url: url, token: token ?? environment["ALERTD_TOKEN"])
        } catch {
            throw Failure(error)
        }
    }

    /// Runs `body`, turning an ``AlertdError`` into its message on stderr and exit code.
    func run<T>(_ body: (AlertdClient) async throws -> T) async throws -> T {
        let client = try client()
        do {
            return try await body(client)
        } catch let error as AlertdError {
            throw Failure(error)
        }
    }

    func print<T: Encodable>(json value: T) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        Swift.print(String(decoding: data, as: UTF8.self))
    }
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
            code = error.kind == .invalidURL ? Exit.refused : Exit.unreachable
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
            FileHandle.standardError.write(Data("alertctl: \(failure.description)\n".utf8))
            throw ExitCode(failure.code)
        }
    }
}

/// Human-readable lines for alerts, clients, webhooks and deliveries.
enum Text {
    static func summary(_ alert: AlertResource) -> String {
        var line = "\(alert.id)  \(alert.state.rawValue)"
        if let position = alert.position, alert.state == .queued { line += " #\(position)" }
        line += "  \(quoted(alert.title))"
        if !alert.buttons.isEmpty { line += "  " + alert.buttons.map(button).joined(separator: " ") }
        if let result = alert.result, let chosen = result.button { line += "  → \(chosen)" }
        return line
    }

    static func details(_ alert: AlertResource) -> String {
        var lines = [
            "id:        \(alert.id)",
            "client:    \(alert.client)",
            "state:     \(alert.state.rawValue)" + (alert.position.map { " (position \($0))" } ?? ""),
            "title:     \(alert.title)",
        ]
        if let message = alert.message { lines.append("message:   \(message)") }
        if !alert.buttons.isEmpty { lines.append("buttons:   " + alert.buttons.map(button).joined(separator: " ")) }
        lines.append("priority:  \(alert.priority)")
        lines.append("created:   \(alert.createdAt)")
        if let displayed = alert.displayedAt { lines.append("displayed: \(displayed)") }
        if let decided = alert.decidedAt { lines.append("decided:   \(decided)") }
        lines.append("expires:   \(alert.expiresAt)")
        if let result = alert.result {
            var text = result.outcome.rawValue
            if let chosen = result.button { text += ": \(chosen)" + (result.cancelled ? " (cancel)" : "") }
            if let by = result.decidedBy { text += " by \(by)" }
            lines.append("result:    \(text)")
        }
        if let metadata = alert.metadata {
            let data = (try? JSONEncoder().encode(metadata)) ?? Data()
            lines.append("metadata:  \(String(decoding: data, as: UTF8.self))")
        }
        return lines.joined(separator: "\n")
    }

    static func button(_ button: Button) -> String {
        switch button.style {
        case .default: "[\(button.title)]"
        case .cancel: "[\(button.title) (cancel)]"
        case .destructive: "[\(button.title) (destructive)]"
        }
    }

    static func quoted(_ text: String) -> String { "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
}
