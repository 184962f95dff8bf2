import AlertdClient
import AlertdReceipts
import AlertdWire
import ArgumentParser
import Foundation

struct Current: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the alert a client displays now.",
        discussion: """
            With --wait it waits as long as asked (asking the daemon again each time its \
            limits.max_wait_seconds runs out) for the displayed alert to differ from --after \
            (without --after: for an alert to be displayed), then shows what is displayed.
            """)

    @OptionGroup var connection: Connection

    @Argument(help: "The client.")
    var client: String

    @Option(
        name: .long, help: "Wait up to this long (seconds, or 90s, 5m) for the displayed alert to differ from --after.",
        transform: Seconds.zeroOrMore)
    var wait: Double?

    @Option(name: .long, help: "The id you already show (with --wait).")
    var after: String?

    func run() async throws {
        try await guarded {
            let alert = try await connection.run { alertd in
                try await LongWait.until(seconds: wait) { seconds in
                    let alert = try await alertd.current(on: client, wait: seconds, after: after)
                    return (alert, (alert?.id ?? "") != (after ?? ""))
                }
            }
            if connection.json {
                connection.printAnswer()
            } else {
                print(alert.map(Text.details) ?? "nothing displayed")
            }
        }
    }
}

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show one alert.",
        discussion: """
            With --wait it waits as long as asked for the alert to be answered, dismissed, \
            expired or withdrawn, asking the daemon again each time its limits.max_wait_seconds \
            runs out. With --receipt it prints the decision's signed receipt (SPEC §14) instead, \
            one line of canonical JSON as GET …/receipt answers it (what `alertctl audit verify` \
            reads), after checking it with the daemon's keys (GET /v1/keys) and against the alert: \
            its signature, that it is this alert's, that content_sha256 is the hash of what the \
            alert asked, and that it says what the alert's result says; stderr says so. Exit codes: \
            0 shown (with --wait: the alert is decided; with --receipt: it verified); 1 with \
            --receipt, the receipt did not verify (printed all the same, and why on stderr); 2 \
            with --wait, the wait ended and the alert is still pending (shown, and said on \
            stderr); 3 the daemon refused (with --receipt: also while the alert is pending); 4 \
            it could not be reached.
            """)

    @OptionGroup var connection: Connection

    @OptionGroup var target: AlertArgument

    @Option(
        name: .long, help: "Wait up to this long (seconds, or 90s, 5m) for it to be decided; exit 2 if it is still pending then.",
        transform: Seconds.zeroOrMore)
    var wait: Double?

    @Flag(help: "Print the decision's signed receipt (SPEC §14), checked with the daemon's keys and against the alert.")
    var receipt = false

    func run() async throws {
        try await guarded {
            let alert = try await connection.run { alertd in
                try await LongWait.until(seconds: wait) { seconds in
                    let alert = try await alertd.alert(on: target.client, id: target.id, wait: seconds)
                    return (alert, alert.isTerminal)
                }
            }
            if receipt, alert.isTerminal || wait == nil { return try await showReceipt(of: alert) }
            if connection.json { connection.printAnswer() } else { print(Text.details(alert)) }
            if let wait, !alert.isTerminal {
                complain("alert \(alert.id) is still \(alert.state.rawValue) after waiting \(Text.seconds(wait))")
                throw ExitCode(Exit.noDecision)
            }
        }
    }
}

extension Get {
    /// `--receipt`: the receipt as the daemon answered it, on stdout, and what checking it found, on stderr.
    func showReceipt(of alert: AlertResource) async throws {
        let (signed, keys) = try await connection.run { alertd in
            (try await alertd.receipt(on: target.client, id: target.id), try await alertd.receiptKeys())
        }
        Connection.write(json: try signed.encoded())
        do {
            try signed.verify(with: keys, for: alert)
        } catch {
            complain("receipt seq \(signed.receipt.seq) of alert \(alert.id) does NOT verify: \(error)")
            throw ExitCode(1)
        }
        complain(
            "receipt seq \(signed.receipt.seq) of alert \(alert.id) verified: signed by key \(signed.receipt.keyID), "
                + "the alert's content and decision")
    }
}

/// A wait of any length made of the daemon's long-polls, each at most its
/// `limits.max_wait_seconds` (it clamps a longer `wait` without saying so): asked again
/// until what is waited for came, or the time is up.
enum LongWait {
    /// The most seconds one request asks for; the daemon clamps it to its own maximum.
    static let perRequest = 3600

    /// `poll(seconds)` until it says done, or `seconds` have passed; nil `seconds`: one
    /// poll without waiting. Returns the last answer.
    static func until<T>(seconds: Double?, _ poll: (Int?) async throws -> (T, done: Bool)) async throws -> T {
        guard let seconds else { return try await poll(nil).0 }
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while true {
            let asked = ContinuousClock.now
            let left = deadline - asked
            let whole = Int((Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18).rounded(.up))
            let (answer, done) = try await poll(max(0, min(whole, perRequest)))
            if done || whole <= 0 || ContinuousClock.now >= deadline { return answer }
            // A daemon that does not park (limits.max_wait_seconds: 0) is asked once a second.
            if ContinuousClock.now - asked < .seconds(1) { try await Task.sleep(until: min(asked + .seconds(1), deadline)) }
        }
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a client's alerts: the pending ones in display order, or those in --state.")

    @OptionGroup var connection: Connection

    @Argument(help: "The client.")
    var client: String

    @Option(name: .long, help: "States, comma-separated: queued,displayed,answered,dismissed,expired,withdrawn.")
    var state: String?

    @Option(name: .long, help: "At most this many alerts (all when absent).")
    var limit: Int?

    func run() async throws {
        try await guarded {
            var states: [AlertState]?
            if let state {
                states = try state.split(separator: ",").map { name in
                    guard let value = AlertState(rawValue: String(name)) else {
                        throw Failure(
                            "unknown state \(name); states are \(AlertState.allCases.map(\.rawValue).joined(separator: ","))",
                            code: Exit.usage)
                    }
                    return value
                }
            }
            let alerts = try await connection.run { alertd in
                var alerts: [AlertResource] = []
                for try await alert in alertd.list(on: client, states: states, pageSize: min(limit ?? 500, 1000)) {
                    alerts.append(alert)
                    if let limit, alerts.count >= limit { break }
                }
                return alerts
            }
            if connection.json {
                connection.printPages(member: "alerts")
            } else {
                for alert in alerts { print(Text.summary(alert)) }
            }
        }
    }
}

struct Withdraw: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Withdraw a pending alert.")

    @OptionGroup var connection: Connection

    @OptionGroup var target: AlertArgument

    func run() async throws {
        try await guarded {
            let alert = try await connection.run { try await $0.withdraw(on: target.client, id: target.id) }
            if connection.json { connection.printAnswer() } else { print(Text.summary(alert)) }
        }
    }
}

struct Clients: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the clients, their pending counts and displayed alerts.")

    @OptionGroup var connection: Connection

    func run() async throws {
        try await guarded {
            let clients = try await connection.run { try await $0.clients() }
            if connection.json {
                connection.printPages(member: "clients")
            } else {
                for client in clients { print(Text.client(client)) }
            }
        }
    }
}

struct Deliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the callback deliveries of an alert and every attempt.")

    @OptionGroup var connection: Connection

    @OptionGroup var target: AlertArgument

    func run() async throws {
        try await guarded {
            let deliveries = try await connection.run { try await $0.deliveries(on: target.client, id: target.id) }
            if connection.json {
                connection.printAnswer()
                return
            }
            for delivery in deliveries {
                var line = "\(delivery.id)  \(delivery.state.rawValue)  \(URLRedaction.redacted(delivery.target))"
                if let next = delivery.nextAttemptAt { line += "  next \(next)" }
                if let silence = delivery.silenceID { line += "  silence \(silence)" }
                print(Terminal.safe(line))
                for attempt in delivery.attempts {
                    let what = attempt.statusCode.map { "HTTP \($0)" } ?? attempt.error ?? "-"
                    print(Terminal.safe("  \(attempt.at)  \(what)"))
                }
            }
        }
    }
}

struct WhoAmI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami",
        abstract: "Show the daemon, the token in use and where it came from, and what the daemon lets it do.")

    @OptionGroup var connection: Connection

    func run() async throws {
        try await guarded {
            let settings = try connection.settings()
            let me: Identity
            do {
                me = try await connection.client().whoAmI()
            } catch let error as AlertdError where error.code == .unauthorized {
                // What alertctl knows without the daemon's word: where it looks, and for what token.
                if !connection.json { print(Terminal.safe(Self.lines(settings, refused: true).joined(separator: "\n"), newlines: true)) }
                throw connection.failure(error)
            } catch let error as AlertdError {
                throw connection.failure(error)
            }
            if connection.json {
                connection.printAnswer()
                return
            }
            var lines = Self.lines(settings, refused: false)
            if !me.auth {
                lines.append("token:   none needed: the daemon has no tokens, and lets anyone do anything")
                if let source = settings.tokenSource { lines.append("         (a token from \(source) is sent but not checked)") }
            } else {
                lines.append("token:   \(me.name ?? "-") (from \(settings.tokenSource ?? "nowhere"))")
                lines.append("roles:   \(me.roles.joined(separator: ", "))")
                lines.append("clients: \(me.clients.joined(separator: ", "))")
            }
            print(Terminal.safe(lines.joined(separator: "\n"), newlines: true))
        }
    }

    /// The daemon and config file in use; when the daemon refused the token (401), the token
    /// alertctl sent and where it came from, or that it had none.
    static func lines(_ settings: Settings, refused: Bool) -> [String] {
        var lines = ["url:     \(URLRedaction.redacted(settings.url, keepingPath: true))"]
        if let file = settings.file { lines.append("config:  \(file)") }
        guard refused else { return lines }
        if let source = settings.tokenSource, settings.token != nil {
            lines.append("token:   from \(source), refused by the daemon (401)")
        } else {
            lines.append(
                "token:   none (no --token, no $ALERTD_TOKEN, no token or token_file in alertctl.yaml); the daemon needs one (401)")
        }
        return lines
    }
}

/// `CLIENT ID`: the alert a command acts on.
struct AlertArgument: ParsableArguments {
    @Argument(help: "The client.")
    var client: String

    @Argument(help: "The alert's id.")
    var id: String
}

/// Options that take seconds: a number, or a duration as Alertmanager and the
/// config write it (`90s`, `5m`, `1h30m`), through the one parser, ``DurationText``.
enum Seconds {
    static func positive(_ text: String) throws -> Double {
        guard let seconds = DurationText.seconds(text) else {
            throw ValidationError("not a number of seconds or a duration (90s, 5m, 1h30m) greater than 0")
        }
        return seconds
    }

    static func zeroOrMore(_ text: String) throws -> Double {
        if let zero = Double(text), zero == 0 { return 0 }
        guard let seconds = DurationText.seconds(text) else {
            throw ValidationError("not 0, a number of seconds or a duration (90s, 5m, 1h)")
        }
        return seconds
    }
}
