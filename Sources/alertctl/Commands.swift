import AlertdClient
import AlertdReceipts
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

struct Choose: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Choose a button of the displayed alert.",
        usage: """
            alertctl choose <client> <id> <button> [--number] [--yes] [--comment <text>] [--value <name=text> ...]
            alertctl choose <client> --current <button> [--number] [--yes] [--comment <text>] [--value <name=text> ...]
            """,
        discussion: """
            BUTTON is the button's title, or with --number the label that alertctl watch, \
            get, list and the dashboard show beside it: counted from 1 in the order they show \
            the buttons (the cancel button last), 1 to 9, then a to g for the tenth to the \
            sixteenth button; --number 10 is the same as --number a. (The API's button_index counts from 0 in \
            the order the alert was posted with; alertctl never takes it.)

            A destructive button is chosen only after a confirmation: on a terminal alertctl \
            asks (y chooses it); without a terminal on stdin it refuses (exit 64) unless --yes.

            On an alert that needs several people (posted with a quorum above 1) a choice is \
            a vote: it prints the alert, still displayed, with the votes so far ("1 of 2 \
            approvals — alice: Deploy"), and says so; the vote that completes the quorum, or \
            a vote for the cancel button, answers it. A token that voted cannot choose \
            another button (exit 3, Already voted).

            With --current it answers whatever alert the client displays now, without its id, \
            and prints which alert that was.

            --comment says why (any choice may carry one, at most 1000 characters); --value \
            name=text gives a value the alert asks for (SPEC §13; get shows its fields). On a \
            terminal, alertctl asks for the values of the chosen button's fields that no \
            --value gave (a required one until it is given), then for a comment unless \
            --comment gave one; without a terminal it sends what was given, and the daemon \
            refuses a required field left out (exit 3, Invalid answer, each field named).

            Exit codes: 0 chosen; 1 a destructive button was not confirmed; 3 the daemon \
            refused (or there is no such button); 64 bad usage (a destructive button without \
            a terminal and without --yes).
            """)

    @OptionGroup var connection: Connection

    @Argument(help: "The client.")
    var client: String

    @Argument(
        help: ArgumentHelp(
            "The alert's id, then the button's title (or with --number its number, from 1); with --current, only the button.",
            valueName: "id-and-button"))
    var words: [String] = []

    @Flag(name: .long, help: "Answer the alert the client displays now.")
    var current = false

    @Flag(
        name: .long,
        help:
            "BUTTON is the label shown beside the button by watch, get, list and the dashboard: 1 is the first, a the tenth, the cancel button last."
    )
    var number = false

    @Flag(name: [.customShort("y"), .long], help: "Choose a destructive button without asking.")
    var yes = false

    @Option(name: .long, help: "Why: a comment kept with the choice (at most 1000 characters).")
    var comment: String?

    @Option(
        name: .long,
        help: ArgumentHelp("A value of one of the alert's fields (repeatable): name=text.", valueName: "name=text"))
    var value: [String] = []

    /// The 0-based `--index` that alertctl took before issue 32: gone, so that a script written
    /// for it stops instead of answering the button after the one it meant.
    @Flag(name: .long, help: .private)
    var index = false

    func validate() throws {
        if index {
            throw ValidationError(
                "--index is gone: it counted from 0, unlike the numbers watch and the dashboard show; "
                    + "use --number N (1 is the first button shown, the cancel button last) or the button's title")
        }
        if current, words.count != 1 {
            throw ValidationError("with --current, give the client and the button: choose <client> --current <button>")
        }
        if !current, words.count != 2 {
            throw ValidationError("give the client, the alert's id and the button: choose <client> <id> <button>")
        }
        _ = try values()
    }

    /// `--value name=text` by name; a name given twice, or a value without `=`, is bad usage.
    func values() throws -> [String: String] {
        var values: [String: String] = [:]
        for entry in value {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                throw ValidationError("--value takes name=text (the field's name, then its value), not \(entry)")
            }
            let name = String(entry[..<equals])
            guard values.updateValue(String(entry[entry.index(after: equals)...]), forKey: name) == nil else {
                throw ValidationError("--value \(name)= is given twice")
            }
        }
        return values
    }

    func run() async throws {
        try await guarded {
            let word = words[words.count - 1]
            var wanted: Int?
            if number {
                guard let position = ButtonNumbers.position(word) else {
                    throw Failure(
                        "--number needs the number or key shown beside the button (1 is the first; a is the tenth), not \(word)",
                        code: Exit.usage)
                }
                wanted = position + 1
            }
            let alertd = try connection.client()
            let alert: AlertResource
            do {
                if current {
                    guard let displayed = try await alertd.current(on: client) else {
                        throw Failure("\(client) displays no alert: nothing to answer")
                    }
                    alert = displayed
                } else {
                    alert = try await alertd.alert(on: client, id: words[0])
                }
            } catch let error as AlertdError {
                throw connection.failure(error)
            }
            let shown = ButtonNumbers.shown(alert.buttons)
            var choice = ButtonChoice.title(word)
            var button = alert.buttons.first { $0.title == word }
            if let wanted {
                guard wanted >= 1, wanted <= shown.count else {
                    throw Failure(Self.noSuchNumber(word, wanted, alert, shown))
                }
                let entry = shown[wanted - 1]
                button = entry.button
                choice = .index(entry.index)
            }
            if let button, button.style == .destructive, !alert.state.isTerminal, !yes {
                try confirm(button, of: alert)
            }
            var given = try values()
            var said = comment
            if let button, alert.state == .displayed, isatty(STDIN_FILENO) == 1 {
                (given, said) = Self.ask(for: button, of: alert, given: given, comment: said)
            }
            if said != nil || !given.isEmpty { choice = choice.with(comment: said, values: given.isEmpty ? nil : given) }
            // On an alert of several deciders, this token's vote as it stood before: the same
            // vote again is answered 200 and changes nothing, and is said as such, not as a new vote.
            var earlier: Vote?
            if alert.quorum > 1, !alert.state.isTerminal, let me = try? await alertd.whoAmI(), me.auth {
                earlier = alert.votes.first { $0.decidedBy == me.name }
            }
            let answered: AlertResource
            do {
                answered = try await alertd.choose(on: client, id: alert.id, choice)
            } catch let error as AlertdError {
                throw connection.failure(error)
            }
            if connection.json {
                connection.printAnswer()
            } else {
                print(Text.summary(answered))
                if let vote = Self.vote(answered, earlier: earlier) { print(Terminal.safe(vote)) }
            }
        }
    }

    /// What to say when the choice was a vote that did not decide the alert: nil when it did.
    /// `earlier`: this token's vote before the choice, if it had one (the choice repeated it).
    static func vote(_ alert: AlertResource, earlier: Vote? = nil) -> String? {
        guard !alert.isTerminal, alert.quorum > 1 else { return nil }
        let rule =
            "it is answered when \(alert.quorum) deciders choose the same button, or at once by a vote for the cancel button"
        if let earlier {
            return "already voted: your vote for \(earlier.button) of \(earlier.at) stands, and nothing new was recorded; "
                + "not decided yet; " + rule
        }
        return "voted: not decided yet; " + rule
    }

    /// On a terminal: the values of `button`'s fields that `given` lacks, each asked for on
    /// stderr (a required one again until it is given; Enter skips another), then a comment
    /// when anything was asked and none was given. Returns the values and the comment.
    static func ask(
        for button: Button, of alert: AlertResource, given: [String: String], comment: String?
    ) -> ([String: String], String?) {
        var values = given
        let asked = alert.fields.filter { $0.belongs(to: button.title, style: button.style) && values[$0.name] == nil }
        guard !asked.isEmpty else { return (values, comment) }
        func prompt(_ text: String) -> String? {
            FileHandle.standardError.write(Data(Terminal.safe(text).utf8))
            return readLine()
        }
        for field in asked {
            let hint = field.placeholder.map { " (e.g. \($0))" } ?? ""
            while true {
                guard let line = prompt("\(field.shownLabel)\(hint)\(field.required ? " (required)" : ""): ") else { break }
                if !line.isEmpty {
                    values[field.name] = line
                    break
                }
                if !field.required { break }
            }
        }
        var said = comment
        if said == nil, let line = prompt("Comment (optional, Enter for none): "), !line.isEmpty { said = line }
        return (values, said)
    }

    /// Asks on the terminal; refuses without one.
    private func confirm(_ button: Button, of alert: AlertResource) throws {
        let what = "“\(button.title)” is destructive"
        guard isatty(STDIN_FILENO) == 1 else {
            throw Failure(
                "\(what): alertctl asks before choosing it, and stdin is not a terminal; nothing was chosen. "
                    + "Pass --yes to choose it without asking.",
                code: Exit.usage)
        }
        let question = Terminal.safe("\(what). Answer “\(alert.title)” (\(alert.id)) with it? [y/N] ")
        FileHandle.standardError.write(Data(question.utf8))
        let reply = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard reply == "y" || reply == "yes" else {
            throw Failure(Terminal.safe("kept: “\(button.title)” was not chosen"), code: Exit.cancelled)
        }
    }

    /// `no button 0: buttons are numbered from 1 …`: `typed` as given, `wanted` the number it stands for.
    static func noSuchNumber(_ typed: String, _ wanted: Int, _ alert: AlertResource, _ shown: [ButtonNumbers.Entry]) -> String {
        if shown.isEmpty { return "no button \(typed): “\(alert.title)” has no buttons" }
        let list = shown.enumerated().map { "\(ButtonNumbers.label($0.offset)) \($0.element.button.title)" }.joined(separator: ", ")
        let from = wanted < 1 ? "buttons are numbered from 1, as watch and the dashboard show them; " : ""
        return "no button \(typed): \(from)“\(alert.title)” has \(list)"
    }
}

/// The one numbering people see and type: from 1, in the order watch and the dashboard show the
/// buttons (the cancel button set apart, last), each with one label — `1`–`9`, then `a`–`g` for
/// the tenth to the sixteenth, the key that watch and the dashboard take — shown the same by
/// get, list, watch and the dashboard. The API's `button_index` is the 0-based position in the
/// alert's `buttons`; `index` keeps it.
enum ButtonNumbers {
    struct Entry: Equatable {
        var button: Button
        var index: Int
    }

    static func shown(_ buttons: [Button]) -> [Entry] {
        let entries = buttons.enumerated().map { Entry(button: $0.element, index: $0.offset) }
        return entries.filter { $0.button.style != .cancel } + entries.filter { $0.button.style == .cancel }
    }

    /// The labels in display order: 1–9, then letters (never q, which quits watch; at most 16
    /// buttons reach g).
    static let labels: [Character] = Array("123456789abcdefghijklmnoprstuvwxyz")

    /// The label of the button shown at `position` (from 0): `1`, …, `9`, `a`, …
    static func label(_ position: Int) -> String { position < labels.count ? String(labels[position]) : "\(position + 1)" }

    /// The position (from 0) a label or number names: `3` → 2; `a` or `10` → 9; nil for neither.
    static func position(_ text: String) -> Int? {
        if let number = Int(text) { return number - 1 }
        guard text.count == 1, let character = text.lowercased().first, let index = labels.firstIndex(of: character) else { return nil }
        return index
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

struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register, list and remove a client's webhooks (admin role).",
        subcommands: [Add.self, ListHooks.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a URL for every alert of a client; prints the secret once.")

        @OptionGroup var connection: Connection

        @Argument(help: "The client.")
        var client: String

        @Argument(help: "The http(s) URL that receives terminal events.")
        var url: String

        @Option(name: .long, help: "The signing secret (default: a generated whsec_ secret).")
        var secret: String?

        func run() async throws {
            try await guarded {
                let hook = try await connection.run { try await $0.addWebhook(on: client, url: url, secret: secret) }
                if connection.json {
                    connection.printAnswer()
                } else {
                    print(
                        Terminal.safe(
                            "id:     \(hook.id)\nurl:    \(URLRedaction.redacted(hook.url))\nsecret: \(hook.secret ?? "-")  (shown once)",
                            newlines: true))
                }
            }
        }
    }

    struct ListHooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List a client's webhooks.")

        @OptionGroup var connection: Connection

        @Argument(help: "The client.")
        var client: String

        func run() async throws {
            try await guarded {
                let hooks = try await connection.run { try await $0.webhooks(on: client) }
                if connection.json {
                    connection.printAnswer()
                } else {
                    for hook in hooks {
                        print(Terminal.safe("\(hook.id)  \(URLRedaction.redacted(hook.url))  \(hook.source ?? "")"))
                    }
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Remove a webhook; its deliveries still pending are cancelled, and it says how many.",
            aliases: ["remove"])

        @OptionGroup var connection: Connection

        @Argument(help: "The client.")
        var client: String

        @Argument(help: "The webhook's id.")
        var id: String

        func run() async throws {
            try await guarded {
                let cancelled = try await connection.run { try await $0.removeWebhook(on: client, id: id) }
                if connection.json {
                    print("{\"cancelled_deliveries\":\(cancelled)}")
                } else {
                    print(Terminal.safe("removed \(id); \(Self.cancelled(cancelled))"))
                }
            }
        }

        /// `cancelled 3 pending deliveries`, `no pending delivery to cancel`.
        static func cancelled(_ count: Int) -> String {
            count == 0 ? "no pending delivery to cancel" : "cancelled \(Text.count(count, "pending delivery", "pending deliveries"))"
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

/// Set once by a presentation's progress, read after it ended (Ctrl-C).
final class PostedAlert: Sendable {
    private let value = NIOLockedValueBox<String?>(nil)

    var id: String? {
        get { value.withLockedValue { $0 } }
        set { value.withLockedValue { $0 = newValue } }
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

struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List and remove the devices subscribed to Web Push (SPEC §11; docs/push.md).",
        discussion: """
            A device subscribes from the dashboard ("Notify this device"); these commands list the \
            subscriptions the token made (an admin token: every one) and remove one.
            """,
        subcommands: [ListSubscriptions.self, Remove.self])

    struct ListSubscriptions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the push subscriptions.")

        @OptionGroup var connection: Connection

        func run() async throws {
            try await guarded {
                let subscriptions = try await connection.run { try await $0.pushSubscriptions() }
                if connection.json {
                    connection.printAnswer()
                } else if subscriptions.isEmpty {
                    print("no push subscription")
                } else {
                    for subscription in subscriptions { print(Terminal.safe(Self.line(subscription))) }
                }
            }
        }

        /// `ps_…  clients: ops, web  answers as alice  push service: fcm.googleapis.com  since …`: the
        /// endpoint's host only (the rest of it identifies the device).
        static func line(_ subscription: PushSubscriptionResource) -> String {
            let host = URLComponents(string: subscription.endpoint)?.host ?? "?"
            let answers = subscription.answer ? "answers as \(subscription.decider ?? "anyone")" : "notifies only"
            return
                "\(subscription.id)  clients: \(subscription.clients.joined(separator: ", "))  \(answers)  push service: \(host)  since \(subscription.createdAt)"
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Remove a push subscription: the device is pushed nothing more.", aliases: ["remove"])

        @OptionGroup var connection: Connection

        @Argument(help: "The subscription's id (ps_…, from push list).")
        var id: String

        func run() async throws {
            try await guarded {
                try await connection.run { try await $0.removePushSubscription(id: id) }
                if connection.json {
                    print("{\"removed\":\"\(id)\"}")
                } else {
                    print(Terminal.safe("removed \(id)"))
                }
            }
        }
    }
}
