import AlertdClient
import AlertdWire
import ArgumentParser
import Foundation

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
