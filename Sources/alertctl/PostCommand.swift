import AlertdClient
import AlertdWire
import ArgumentParser
import Foundation
import NIOConcurrencyHelpers

struct Post: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Post an alert; with --wait, wait for a person's answer.",
        discussion: """
            Buttons appear in the order given; --cancel adds the cancel button. With --wait \
            it prints the chosen button and exits 0 for a button other than cancel, 1 for the \
            cancel button, 2 when dismissed, expired or withdrawn — so a script can gate on a person:

              alertctl post ops --title "Deploy?" --button Deploy --cancel Cancel \\
                --wait && ./deploy.sh

            Ctrl-C while waiting withdraws the alert. When the daemon cannot be reached for the \
            first post, it exits 4 at once; once the alert is posted, it keeps trying for \
            --retry-for seconds, saying so on stderr, then exits 4 naming the alert.

            --quorum N asks N different people (token names) to choose the same button before \
            the alert is answered; one vote for the --cancel button stops it at once. It needs \
            buttons and a daemon with tokens. --wait waits through the votes and ends as above \
            (with --json, the answered alert lists every vote):

              alertctl post ops --title "Deploy to production?" --button Deploy \\
                --cancel Cancel --quorum 2 --wait && ./deploy.sh

            --field asks the person for a value with their answer (SPEC §13): \
            name[:label][:required], belonging to every button but the cancel one. \
            With --wait, the values follow the button, one name=value line each, \
            and the person's comment, if any, on a last comment: line:

              alertctl post ops --title "Deploy?" --button Deploy --cancel Cancel \\
                --field "ticket:Change ticket:required" --wait

            --escalate after:client asks another client when nobody answers (SPEC §12): \
            still pending that long after it was posted, the alert is also queued on that \
            client, and an answer there answers it. Repeat it for more steps (at most 5, each \
            later than the one before); it replaces the client's policy from the daemon's \
            config, and --no-escalation turns that off for this alert:

              alertctl post ops --title "Deploy?" --button Deploy --cancel Cancel \\
                --escalate 5m:ops-lead --escalate 15m:cto --wait
            """)

    @OptionGroup var connection: Connection

    @Argument(help: "The client (display target) to post to.")
    var client: String

    @Option(name: .long, help: "The question, 1–256 characters.")
    var title: String

    @Option(name: .long, help: "More text, at most 4096 characters.")
    var message: String?

    @Option(name: .long, help: "A button (repeatable).")
    var button: [String] = []

    @Option(name: .long, help: "A destructive button, shown in red (repeatable).")
    var destructive: [String] = []

    @Option(name: .long, help: "The cancel button, shown last.")
    var cancel: String?

    @Option(name: .long, help: "alert (default) or action_sheet.")
    var style: String?

    @Option(name: .long, help: "−100…100; higher is displayed earlier.")
    var priority: Int?

    @Option(
        name: .customLong("expires-in"), help: "Until it expires if no one answers: seconds, or a duration (90s, 5m, 1h30m).",
        transform: Seconds.positive)
    var expiresIn: Double?

    @Option(
        name: .customLong("dismiss-after"), help: "Without buttons: how long it stays displayed, seconds or a duration (90s, 5m).",
        transform: Seconds.positive)
    var dismissAfter: Double?

    @Option(name: .long, help: "A URL that receives the terminal event.")
    var callback: String?

    @Option(name: .long, help: "A JSON object echoed back with the alert.")
    var metadata: String?

    @Option(
        name: .long,
        help: "How many different deciders (token names) must choose the same button: 1–10, default 1. Above 1 needs buttons and tokens.")
    var quorum: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A value to ask for with the answer (repeatable, at most 5): name[:label][:required]; name is a-z, 0-9, _.",
            valueName: "name[:label][:required]"))
    var field: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "When nobody answers, also ask another client (repeatable, at most 5): after:client, after in seconds or a duration (5m).",
            valueName: "after:client"),
        transform: EscalationText.step)
    var escalate: [EscalationStep] = []

    @Flag(name: .customLong("no-escalation"), help: "Ask no other client, whatever the client's policy in the daemon's config says.")
    var noEscalation = false

    @Option(
        name: .customLong("idempotency-key"),
        help: "Posting again with this key within 24 h returns (with --wait: waits for) the first alert.")
    var idempotencyKey: String?

    @Flag(name: .long, help: "Wait until the alert is answered, dismissed, expired or withdrawn.")
    var wait = false

    @Option(
        name: .customLong("retry-for"),
        help: "With --wait: how long (seconds, or 90s, 5m, 1h) in a row to keep trying while the daemon is unreachable or busy.",
        transform: Seconds.zeroOrMore)
    var retryFor: Double = 300

    func validate() throws {
        guard retryFor >= 0, retryFor.isFinite else { throw ValidationError("--retry-for must be 0 or more seconds") }
        if noEscalation, !escalate.isEmpty { throw ValidationError("--no-escalation and --escalate contradict each other: give one") }
    }

    func run() async throws {
        try await guarded {
            let alert = try newAlert(arguments: CommandLine.arguments)
            if wait {
                try await postAndWait(alert)
            } else {
                let posted = try await connection.run { try await $0.post(alert, to: client, idempotencyKey: idempotencyKey) }
                if connection.json { connection.printAnswer() } else { print(Terminal.safe(posted.id)) }
            }
        }
    }

    private func postAndWait(_ alert: NewAlert) async throws {
        var configured = try connection.client()
        configured.retryFor = retryFor
        let alertd = configured
        let posted = PostedAlert()
        // Ctrl-C or SIGTERM cancels the wait, and cancelling withdraws the alert.
        let task = Task { [client, idempotencyKey] in
            try await withThrowingTaskGroup(of: AlertResource?.self) { group in
                group.addTask {
                    try await alertd.presentUntilTerminal(alert, on: client, idempotencyKey: idempotencyKey) { progress in
                        switch progress {
                        case .posted(let alert):
                            // Said once (a retried post of the same key is the same alert), so that a
                            // wait that may last hours never looks hung.
                            if posted.id == nil { complain("alert \(alert.id): waiting for an answer on \(client) (Ctrl-C withdraws it)") }
                            posted.id = alert.id
                        case .retrying(let notice):
                            // Nothing was posted and nothing could be: fail now, not after --retry-for.
                            if notice.alertID == nil, notice.error.neverSent { throw notice.error }
                            complain(Self.retrying(notice))
                        }
                    }
                }
                group.addTask {
                    await Self.sayStillWaiting(on: client, posted: posted)
                    return nil
                }
                while let outcome = try await group.next() {
                    if let terminal = outcome {
                        group.cancelAll()
                        return terminal
                    }
                }
                throw CancellationError()
            }
        }
        let interrupts = Interrupts { task.cancel() }
        defer { interrupts.stop() }
        let terminal: AlertResource
        do {
            terminal = try await task.value
        } catch let error as AlertdError {
            var failure = connection.failure(error)
            // A transient error that ends the wait is --retry-for running out (or, before the
            // first post, a daemon that cannot be reached at all: said as is).
            if error.isTransient, !(error.neverSent && error.alertID == nil) {
                failure.description = "gave up after \(Text.seconds(retryFor)) of failures: " + failure.description
            }
            if let id = error.alertID {
                failure.description += "\nthe alert \(id) stays pending on \(client); look it up with: alertctl get \(client) \(id)"
            }
            throw failure
        } catch is CancellationError {
            throw Failure(await interrupted(alertd, posted.id), code: Exit.interrupted)
        }
        let outcome = AlertOutcome(terminal) ?? .expired
        if connection.json {
            connection.printAnswer()
        } else {
            print(Terminal.safe(outcome.chosenButton ?? terminal.state.rawValue))
            for line in Self.words(terminal) { print(Terminal.safe(line)) }
        }
        switch outcome {
        case .button: return
        case .cancel: throw ExitCode(Exit.cancelled)
        case .dismissed, .expired, .withdrawn: throw ExitCode(Exit.noDecision)
        }
    }

    /// The lines after the button of `post --wait` (SPEC §13): `name=value` for each value, in
    /// the alert's field order, then `comment: …` when the person gave one.
    static func words(_ alert: AlertResource) -> [String] {
        guard let result = alert.result else { return [] }
        var lines = alert.fields.compactMap { field in result.values[field.name].map { "\(field.name)=\($0)" } }
        lines += result.values.keys.sorted().filter { name in !alert.fields.contains { $0.name == name } }.map {
            "\($0)=\(result.values[$0]!)"
        }
        if let comment = result.comment { lines.append("comment: " + comment.replacingOccurrences(of: "\n", with: " ")) }
        return lines
    }

    /// `ticket:Change ticket:required` → a field named ticket, labelled, required. The last
    /// part is the flag when it says `required`; what is between the name and it, the label
    /// (which may hold colons).
    static func field(_ text: String) throws -> AlertField {
        var parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let name = parts.removeFirst()
        var required = false
        if parts.last == "required" {
            required = true
            parts.removeLast()
        }
        let label = parts.joined(separator: ":")
        guard !name.isEmpty else { throw Failure("--field needs a name: name[:label][:required], not \(text)", code: Exit.usage) }
        return AlertField(name: name, label: label.isEmpty ? nil : label, required: required)
    }

    /// When a long wait says it is still waiting, in seconds since it began: after 1, 2, 5,
    /// 10, 20 and 30 minutes, then every 30 minutes.
    static func stillWaitingMark(_ index: Int) -> Double {
        let marks: [Double] = [60, 120, 300, 600, 1200, 1800]
        return index < marks.count ? marks[index] : marks[marks.count - 1] + Double(index - marks.count + 1) * 1800
    }

    /// `alertctl: alert 01M…: still waiting for an answer on ops after 5 min` on stderr at each
    /// ``stillWaitingMark(_:)``, once the alert is posted, until cancelled.
    static func sayStillWaiting(on client: String, posted: PostedAlert) async {
        let start = ContinuousClock.now
        var index = 0
        while !Task.isCancelled {
            let mark = stillWaitingMark(index)
            try? await Task.sleep(until: start + .milliseconds(Int64(mark * 1000)))
            if Task.isCancelled { return }
            if let id = posted.id { complain("alert \(id): still waiting for an answer on \(client) after \(Text.seconds(mark))") }
            index += 1
        }
    }

    /// `cannot reach alertd: connection refused (127.0.0.1:8080); retrying in 4 s (alert 01M…, 296 s left)`.
    static func retrying(_ notice: RetryNotice) -> String {
        var line = notice.error.description + "; retrying in \(Text.seconds(notice.delay))"
        var context: [String] = []
        if let id = notice.alertID { context.append("alert \(id)") }
        if let left = notice.giveUpIn { context.append("giving up in \(Text.seconds(left))") }
        if !context.isEmpty { line += " (" + context.joined(separator: ", ") + ")" }
        return line
    }

    /// What became of the alert after Ctrl-C: the presentation withdrew it, if it could.
    private func interrupted(_ alertd: AlertdClient, _ id: String?) async -> String {
        guard let id else { return "interrupted before the daemon took the alert" }
        do {
            let alert = try await alertd.alert(on: client, id: id)
            if alert.state == .withdrawn { return "interrupted: the alert \(id) was withdrawn" }
            return "interrupted: the alert \(id) is \(alert.state.rawValue)"
        } catch {
            return "interrupted: the alert \(id) may still be pending (\(error))"
        }
    }

    /// The alert the flags describe. Buttons keep the order they were given in on the command line.
    func newAlert(arguments: [String]) throws -> NewAlert {
        var plain = button[...]
        var red = destructive[...]
        var buttons: [Button] = []
        for argument in arguments.dropFirst() {
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if name == "--button", let title = plain.popFirst() { buttons.append(.default(title)) }
            if name == "--destructive", let title = red.popFirst() { buttons.append(.destructive(title)) }
        }
        buttons += plain.map(Button.default) + red.map(Button.destructive)
        if let cancel { buttons.append(.cancel(cancel)) }
        var parsedStyle: AlertStyle?
        if let style {
            guard let value = AlertStyle(rawValue: style) else {
                throw Failure("--style must be alert or action_sheet, not \(style)", code: Exit.usage)
            }
            parsedStyle = value
        }
        var object: JSONObject?
        if let metadata {
            let value: JSONValue
            do {
                value = try JSONParser.parse(metadata)
            } catch {
                throw Failure("--metadata is not valid JSON: \(error)", code: Exit.usage)
            }
            guard case .object(let members) = value else {
                throw Failure("--metadata must be a JSON object ({\"key\": \"value\"}), not \(value.typeName)", code: Exit.usage)
            }
            object = members
        }
        let fields = try field.map(Self.field)
        return NewAlert(
            title: title, message: message, style: parsedStyle, buttons: buttons.isEmpty ? nil : buttons, priority: priority,
            expiresIn: expiresIn, dismissAfter: dismissAfter, callbackURL: callback, metadata: object, quorum: quorum,
            fields: fields.isEmpty ? nil : fields, escalation: noEscalation ? [] : (escalate.isEmpty ? nil : escalate))
    }
}

/// `--escalate 5m:ops-lead`: a step of an alert's escalation (SPEC §12).
enum EscalationText {
    static func step(_ text: String) throws -> EscalationStep {
        guard let colon = text.firstIndex(of: ":") else {
            throw ValidationError("not after:client (5m:ops-lead): \(text) has no colon")
        }
        let after = String(text[..<colon])
        let client = String(text[text.index(after: colon)...])
        guard let seconds = DurationText.seconds(after) else {
            throw ValidationError("\(after) is not a number of seconds or a duration (90s, 5m, 1h30m) greater than 0")
        }
        guard !client.isEmpty else { throw ValidationError("after \(after): no client to ask (5m:ops-lead)") }
        return EscalationStep(after: seconds, to: client)
    }
}

/// Set once by a presentation's progress, read after it ended (Ctrl-C).
final class PostedAlert: Sendable {
    private let value = NIOLockedValueBox<String?>(nil)

    var id: String? {
        get { value.withLockedValue { $0 } }
        set { value.withLockedValue { $0 = newValue } }
    }
}
