import AlertdClient
import AlertdWire
import ArgumentParser
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An operator console in the terminal: shows a client's alert live and answers it.",
        discussion: """
            Shows the displayed alert (title, message, every button with its key: 1-9, then a, b, … \
            after the ninth; destructive ones marked, the cancel button last) and how many alerts \
            wait behind it, and follows changes live. A key chooses its button (a destructive one \
            after y confirms), Esc chooses the cancel button, ↑/↓ and PgUp/PgDn scroll a long \
            message, q quits. It fits the terminal (40×12 at least) and follows its resizes.

            A token that may not answer (no answer or admin role) is shown as read-only from the \
            start: the buttons are listed without keys. An alert answered elsewhere says how, \
            and by whom.

            An alert that needs several people (a quorum above 1) shows its votes as they come \
            ("1 of 2 approvals — alice: Deploy"); a key is then this token's vote. Once it has \
            voted, its keys choose nothing more until the alert is decided.

            An answer can carry words (SPEC §13). A button whose alert asks for fields opens a \
            form: each field in turn (Enter goes on; a required one must be filled), then an \
            optional comment; Enter on the comment sends the answer (a destructive button still \
            waits for y), Esc goes back and chooses nothing. Tab writes a comment before any \
            button: it goes with the next button chosen.
            """)

    @OptionGroup var connection: Connection

    @Argument(help: "The client to watch.")
    var client: String

    func run() async throws {
        try await guarded {
            guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else {
                throw Failure("watch needs a terminal on stdin and stdout", code: Exit.usage)
            }
            let alertd = try connection.client()
            var state = ConsoleState(client: client)
            state.unauthorized = Connection.unauthorized(nil, settings: try? connection.settings())
            // Whether this token may answer, and who votes, known before the first key: unknown
            // (an error) keeps the keys. A token refused (or none given to a daemon that needs
            // one) is said before the console takes the screen: nothing could be shown.
            do {
                let me = try await alertd.whoAmI()
                state.readOnly = ConsoleState.readOnly(me)
                state.decider = .some(me.auth ? me.name : nil)
            } catch let error as AlertdError where error.code == .unauthorized {
                throw connection.failure(error)
            } catch {
                // Unreachable for now: the console says so, and reconnects.
            }
            let terminal = RawTerminal()
            defer { terminal.restore() }
            var console = Console(alertd: alertd, state: state)
            await console.run()
        }
    }
}

/// The console's loop: events in (keys, the displayed alert, the queue's length, trouble),
/// the state updated, the screen redrawn.
struct Console {
    enum Event: Sendable {
        case key([UInt8])
        case alert(AlertResource?)
        case pending(Int)
        case connection(String?)
        case denied(String)
        /// An alert that left the display without being answered here, as it is now.
        case left(AlertResource)
        /// The terminal's new size: columns, rows.
        case resize(Int, Int)
    }

    let alertd: AlertdClient
    var state: ConsoleState

    mutating func run() async {
        let (events, sink) = AsyncStream<Event>.makeStream()
        KeyReader.start(into: sink)
        if let size = TerminalSize.current() { state.resize(columns: size.columns, rows: size.rows) }
        let resizes = TerminalSize.follow { size in sink.yield(.resize(size.columns, size.rows)) }
        defer { resizes.cancel() }
        let (alertd, client, unauthorized) = (alertd, state.client, state.unauthorized)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.follow(alertd, client, unauthorized: unauthorized, into: sink) }
            group.addTask { await Self.count(alertd, client, into: sink) }
            draw()
            for await event in events {
                switch event {
                case .alert(let new):
                    if let left = state.show(new) {
                        group.addTask {
                            if let alert = try? await alertd.alert(on: client, id: left.id) { sink.yield(.left(alert)) }
                        }
                    }
                case .left(let alert): state.left(alert)
                case .pending(let count): state.pending = count
                case .connection(let problem): state.trouble = problem
                case .denied(let text): state.denied = text
                case .resize(let columns, let rows): state.resize(columns: columns, rows: rows)
                case .key(let bytes):
                    switch state.press(bytes) {
                    case .quit:
                        group.cancelAll()
                        return
                    case .choose(let button, let alert, let words): await choose(button, of: alert, words: words)
                    case .none: break
                    }
                }
                draw()
            }
        }
    }

    private mutating func choose(_ button: Button, of alert: AlertResource, words: ConsoleState.Words) async {
        do {
            let answered = try await alertd.choose(
                on: state.client, id: alert.id, button: button.title, comment: words.comment, values: words.values)
            state.comment = nil
            state.answered(answered, with: button)
        } catch let error as AlertdError where error.code == .alreadyVoted && error.problem?.alert != nil {
            state.show(error.problem!.alert!)
            state.note = ConsoleState.Note(text: "already voted: a vote is not changed; \(button.title) was not chosen")
        } catch let error as AlertdError where error.code == .alreadyDecided && error.problem?.alert != nil {
            state.answeredHere = alert.id
            state.note = ConsoleState.Note(text: "too late: " + ConsoleState.decision(error.problem!.alert!), keep: true)
        } catch let error as AlertdError where error.code == .invalidAnswer {
            // Nothing was chosen: the answer's words did not fit (the daemon names each).
            let errors = (error.problem?.errors ?? []).map { "\($0.field): \($0.reason)" }.joined(separator: "; ")
            state.note = ConsoleState.Note(text: "\(button.title) was not chosen: " + (errors.isEmpty ? error.message : errors))
        } catch {
            state.note = ConsoleState.Note(text: "could not choose \(button.title): \(ConsoleState.reason(error, state.client))")
        }
    }

    /// Follows the displayed alert with long-polls; reconnects with backoff and says so. A token
    /// the daemon refuses (401) or that may not read the client (403) stops it: no retry helps.
    /// Each poll passes the votes it shows, so a vote on the alert (SPEC §10) comes at once.
    static func follow(
        _ alertd: AlertdClient, _ client: String, unauthorized: String? = nil, into sink: AsyncStream<Event>.Continuation
    ) async {
        var shown: AlertResource?
        var first = true
        var failures = 0
        while !Task.isCancelled {
            do {
                let alert = try await alertd.current(
                    on: client, wait: first ? nil : 25, after: shown?.id, votes: first ? nil : shown?.votes.count ?? 0)
                first = false
                if failures > 0 { sink.yield(.connection(nil)) }
                failures = 0
                shown = alert
                sink.yield(.alert(alert))
            } catch {
                if Task.isCancelled { return }
                if let refusal = ConsoleState.refusal(error, client, unauthorized: unauthorized) {
                    sink.yield(.connection(nil))
                    sink.yield(.denied(refusal))
                    return
                }
                failures += 1
                let delay = min(5, 0.25 * pow(2, Double(min(failures, 6))))
                sink.yield(.connection("reconnecting in \(Int(delay.rounded(.up))) s: \(ConsoleState.reason(error, client))"))
                try? await Task.sleep(for: .seconds(delay))
                first = true
            }
        }
    }

    /// The queue's length: how many alerts the client has pending, once a second; it stops,
    /// as `follow` does, for a token the daemon refuses.
    static func count(_ alertd: AlertdClient, _ client: String, into sink: AsyncStream<Event>.Continuation) async {
        while !Task.isCancelled {
            do {
                let clients = try await alertd.clients()
                sink.yield(.pending(clients.first { $0.client == client }?.pending ?? 0))
            } catch {
                if ConsoleState.refusal(error, client) != nil { return }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func draw() {
        let frame = state.frame(now: Date())
        // Home, clear, then each line cleared to its end; no newline after the last.
        let text = "\u{1B}[H\u{1B}[2J" + frame.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n")
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// What the console shows and how keys act on it; no I/O, so it is tested without a terminal.
struct ConsoleState {
    let client: String
    var alert: AlertResource?
    var pending = 0
    /// The connection's trouble (reconnecting …), shown in red until it is over.
    var trouble: String?
    /// The daemon refused the token: the whole screen says why, and the console stops following.
    var denied: String?
    var note: Note?
    /// A destructive button waiting for `y`.
    var confirming: Button?
    /// The words that go with the confirmed destructive button.
    var confirmingWords = Words()
    /// The answer being written (SPEC §13): fields, then a comment; nil when none.
    var form: Form?
    /// A comment written with Tab before choosing: it goes with the next button chosen.
    var comment: String?

    /// What an answer carries besides its button (SPEC §13).
    struct Words: Equatable {
        var comment: String?
        var values: [String: String] = [:]
    }

    /// The answer being written: for `button` (nil: only a comment, written with Tab), each
    /// of `fields` in turn, then the comment; `line` is what is being typed.
    struct Form: Equatable {
        var alertID: String
        var button: Button?
        var fields: [AlertField]
        var step = 0
        var values: [String: String] = [:]
        var line = ""
        var problem: String?

        /// Whether the comment, the last line, is being typed.
        var onComment: Bool { step >= fields.count }

        /// The longest the current line may grow.
        var limit: Int { onComment ? 1000 : fields[step].maxLength }
    }
    /// Why this token cannot answer (`read-only: …`), shown from the start; nil when it can (or is unknown).
    var readOnly: String?
    /// Who this console votes as (SPEC §10): `.some(name)` from whoami (`.some(nil)` without
    /// tokens, the one anonymous decider); nil while unknown, which never holds a key back.
    var decider: String??
    /// The last alert answered (or found decided) from this console: its leaving needs no report.
    var answeredHere: String?
    /// What a 401 means for this console's settings: which token was refused and where it
    /// came from, or that none was given (``Connection/unauthorized(_:settings:)``).
    var unauthorized: String?
    /// The first message line shown.
    var scroll = 0

    /// The terminal's size: the frame fits it, and follows its resizes (SIGWINCH). At least
    /// ``minimumWidth``×``minimumHeight``: a smaller terminal gets that frame, cut by it.
    var width = 80
    var height = 24

    static let minimumWidth = 40
    static let minimumHeight = 12

    /// Takes the terminal's new size (columns, rows), within the minimum.
    mutating func resize(columns: Int, rows: Int) {
        width = max(Self.minimumWidth, columns)
        height = max(Self.minimumHeight, rows)
    }

    struct Note {
        var text: String
        /// Stays when the next alert comes (what was answered), until a key is pressed.
        var keep = false
    }

    enum Action: Equatable {
        case none
        case quit
        case choose(Button, AlertResource, Words)
    }

    init(client: String) { self.client = client }

    /// The keys of the buttons in display order: 1–9, then letters (never q, which quits): the
    /// labels get, list and the dashboard show (``ButtonNumbers/labels``).
    static let keys: [Character] = ButtonNumbers.labels

    /// The buttons as shown: the cancel button last, each with its key.
    var shownButtons: [(key: Character, button: Button)] {
        guard let alert, alert.state == .displayed else { return [] }
        let ordered = alert.buttons.filter { $0.style != .cancel } + alert.buttons.filter { $0.style == .cancel }
        return Array(zip(Self.keys, ordered))
    }

    /// This console's vote on the displayed alert, once it voted: its keys then choose nothing.
    var myVote: Vote? {
        guard let alert, alert.state == .displayed, alert.quorum > 1, let decider else { return nil }
        return alert.votes.first { $0.decidedBy == decider }
    }

    /// The displayed alert is `new`. Returns the one that left the display without being answered
    /// here, whose fate (answered by whom, withdrawn, expired…) is worth telling. The same alert
    /// again replaces it only with as many votes or more: an answer read before a vote never
    /// takes the vote back off the screen.
    @discardableResult
    mutating func show(_ new: AlertResource?) -> AlertResource? {
        if let new, let alert, new.id == alert.id, new.state == alert.state, new.votes.count < alert.votes.count { return nil }
        var left: AlertResource?
        if new?.id != alert?.id {
            if note?.keep != true { note = nil }
            if confirming != nil, new != nil { note = Note(text: "the alert changed before you confirmed; nothing was chosen") }
            if form != nil, new != nil { note = Note(text: "the alert changed before you answered; nothing was chosen") }
            confirming = nil
            form = nil
            comment = nil
            scroll = 0
            if let previous = alert, previous.id != answeredHere { left = previous }
        }
        alert = new
        return left
    }

    mutating func answered(_ alert: AlertResource, with button: Button) {
        guard alert.isTerminal || alert.quorum == 1 else {
            // A vote short of the quorum: the alert stays, with the vote; its decision is told when it leaves.
            if alert.id == self.alert?.id { show(alert) }
            note = Note(text: "voted \(button.title) on “\(alert.title)”: " + (Text.tally(alert) ?? ""))
            return
        }
        answeredHere = alert.id
        note = Note(text: "answered “\(alert.title)” with \(button.title)", keep: true)
        if alert.id == self.alert?.id { self.alert = alert }
    }

    /// What became of an alert that left the display without this console's answer.
    mutating func left(_ alert: AlertResource) {
        note = Note(text: Self.decision(alert), keep: true)
    }

    /// `“Deploy?” was answered “Deploy” by alice`, as the dashboard says it.
    static func decision(_ alert: AlertResource) -> String {
        let title = "“\(alert.title)”"
        guard let result = alert.result else { return "\(title) is queued again behind a newer alert" }
        let by = Text.deciders(alert).map { " by \($0)" } ?? ""
        switch result.outcome {
        case .answered: return "\(title) was answered “\(result.button ?? "?")”\(by)"
        case .withdrawn: return "\(title) was withdrawn\(by)"
        default: return "\(title) was \(result.outcome.rawValue)"
        }
    }

    /// `read-only: token wallboard (roles: read) may not answer; that needs the answer role`, or
    /// nil for a token that may answer (or a daemon without tokens).
    static func readOnly(_ me: Identity) -> String? {
        guard me.auth, !me.roles.contains("answer"), !me.roles.contains("admin") else { return nil }
        return "read-only: token \(me.name ?? "-") (roles: \(me.roles.joined(separator: ", "))) may not answer; that needs the answer role"
    }

    mutating func press(_ bytes: [UInt8]) -> Action {
        if bytes == [3] { return .quit }
        if form != nil { return type(bytes) }
        if bytes == [UInt8(ascii: "q")] || bytes == [UInt8(ascii: "Q")] { return .quit }
        if let button = confirming {
            confirming = nil
            guard bytes == [UInt8(ascii: "y")] || bytes == [UInt8(ascii: "Y")], let alert, alert.state == .displayed else {
                note = Note(text: "kept: \(button.title) was not chosen")
                return .none
            }
            return .choose(button, alert, confirmingWords)
        }
        if bytes == [9] {
            // Tab: a comment that goes with the next button chosen.
            guard let alert, alert.state == .displayed, readOnly == nil, myVote == nil, !alert.buttons.isEmpty else {
                note = Note(text: "nothing to comment on")
                return .none
            }
            form = Form(alertID: alert.id, button: nil, fields: [], line: comment ?? "")
            note = nil
            return .none
        }
        note = nil
        switch bytes {
        case [27, 91, 65]: scroll -= 1  // ↑
        case [27, 91, 66]: scroll += 1  // ↓
        case [27, 91, 53, 126]: scroll -= 5  // PgUp
        case [27, 91, 54, 126]: scroll += 5  // PgDn
        default: return pressButton(bytes)
        }
        scroll = max(0, scroll)
        return .none
    }

    private mutating func pressButton(_ bytes: [UInt8]) -> Action {
        guard let alert, alert.state == .displayed else {
            note = Note(text: "nothing to answer")
            return .none
        }
        if let readOnly {
            note = Note(text: readOnly + "; nothing was chosen")
            return .none
        }
        if let myVote {
            note = Note(text: "you voted \(myVote.button): a vote is not changed; nothing was chosen")
            return .none
        }
        let shown = shownButtons
        let button: Button
        if bytes == [27] {
            guard let cancel = shown.first(where: { $0.button.style == .cancel }) else {
                note = Note(text: "this alert has no cancel button")
                return .none
            }
            button = cancel.button
        } else if let key = Self.key(bytes), let match = shown.first(where: { $0.key == key }) {
            button = match.button
        } else {
            let name = Self.key(bytes).map { "key \($0)" } ?? "that key"
            note = Note(text: shown.isEmpty ? "\(name): this alert has no buttons" : "\(name) chooses nothing; \(keyRange)")
            return .none
        }
        let asked = alert.fields.filter { $0.belongs(to: button.title, style: button.style) }
        if !asked.isEmpty {
            form = Form(alertID: alert.id, button: button, fields: asked, line: "")
            note = nil
            return .none
        }
        return chosen(button, of: alert, words: Words(comment: comment))
    }

    /// The button chosen with `words`: at once, or after `y` for a destructive one.
    private mutating func chosen(_ button: Button, of alert: AlertResource, words: Words) -> Action {
        if button.style == .destructive {
            confirming = button
            confirmingWords = words
            note = Note(text: "\(button.title) is destructive: y chooses it, any other key keeps the alert")
            return .none
        }
        return .choose(button, alert, words)
    }

    /// A key while the form is open: text goes into the line, Backspace takes back, Enter goes
    /// on (a required field must be filled), Esc leaves the form and chooses nothing.
    private mutating func type(_ bytes: [UInt8]) -> Action {
        guard var form, let alert, alert.id == form.alertID, alert.state == .displayed else {
            self.form = nil
            return .none
        }
        defer { if self.form != nil { self.form = form } }
        switch bytes {
        case [27]:
            self.form = nil
            note = Note(text: form.button.map { "nothing was chosen: \($0.title) was not sent" } ?? "no comment")
            if form.button == nil { comment = nil }
            return .none
        case [127], [8]:
            if !form.line.isEmpty { form.line.removeLast() }
            form.problem = nil
            return .none
        case [13], [10]:
            let line = form.line
            if form.onComment {
                self.form = nil
                let said = line.isEmpty ? nil : line
                guard let button = form.button else {
                    comment = said
                    note = Note(text: said == nil ? "no comment" : "the comment goes with the next button you choose")
                    return .none
                }
                return chosen(button, of: alert, words: Words(comment: said, values: form.values))
            }
            let field = form.fields[form.step]
            if field.required, line.isEmpty {
                form.problem = "\(field.shownLabel) is required for \(form.button?.title ?? "this button")"
                return .none
            }
            if !line.isEmpty { form.values[field.name] = line }
            form.step += 1
            form.line = form.onComment ? (comment ?? "") : ""
            form.problem = nil
            return .none
        default:
            // Printable text only (an escape sequence, such as an arrow, is not text).
            guard bytes.first != 27, let text = String(validating: bytes, as: UTF8.self) else { return .none }
            let printable = String(String.UnicodeScalarView(text.unicodeScalars.filter { !Terminal.isUnsafe($0) }))
            if form.line.count + printable.count > form.limit {
                form.problem = "at most \(form.limit) characters"
                return .none
            }
            form.line += printable
            form.problem = nil
            return .none
        }
    }

    private static func key(_ bytes: [UInt8]) -> Character? {
        guard bytes.count == 1, (0x21...0x7E).contains(bytes[0]) else { return nil }
        return Character(Unicode.Scalar(bytes[0]))
    }

    /// `1-3 choose` or `1-9, a-c choose`.
    var keyRange: String {
        let keys = shownButtons.map(\.key)
        guard let last = keys.last else { return "" }
        if keys.count <= 9 { return keys.count == 1 ? "1 chooses" : "1-\(last) choose" }
        return keys.count == 10 ? "1-9, a choose" : "1-9, a-\(last) choose"
    }

    // MARK: The frame

    /// The screen: at most ``height`` lines of at most ``width`` columns (escape sequences aside).
    func frame(now: Date) -> [String] {
        var screen = Screen(width: width, height: height)
        let behind = max(0, pending - (alert?.state == .displayed ? 1 : 0))
        screen.line(
            bold: "alertd · \(client)" + (readOnly == nil ? "" : " · read-only"), right: "\(pending) pending, \(behind) queued behind")
        screen.rule()
        let status = trouble ?? form?.problem ?? note?.text ?? readOnly ?? ""
        let statusLines = Screen.wrap(Terminal.safe(status), width: width).prefix(2)
        let bodyHeight = height - 2 - 2 - statusLines.count
        var scrollable = false
        for line in body(height: bodyHeight, now: now, scrollable: &scrollable) { screen.add(line) }
        screen.fill(to: 2 + bodyHeight)
        screen.rule()
        for line in statusLines { trouble != nil ? screen.line(red: line) : screen.line(line) }
        screen.line(hints(scrollable: scrollable))
        return screen.lines
    }

    /// The keys line; on a narrow terminal in fewer words, `q quit` always last and whole.
    private func hints(scrollable: Bool) -> String {
        if form != nil { return width >= 44 ? "Enter next · Backspace erase · Esc back" : "Enter · Esc back" }
        var keys: [String] = []
        var cancel = false
        let shown = shownButtons
        if denied == nil, readOnly == nil, myVote == nil, !shown.isEmpty {
            if confirming != nil { return width >= 38 ? "y choose · any other key keep · q quit" : "y choose · q quit" }
            keys.append(keyRange)
            cancel = shown.contains { $0.button.style == .cancel }
        }
        let comment = denied == nil && readOnly == nil && myVote == nil && !shown.isEmpty
        let candidates = [
            keys + (cancel ? ["Esc cancel"] : []) + (comment ? ["Tab comment"] : []) + (scrollable ? ["↑↓ PgUp PgDn scroll"] : [])
                + ["q quit"],
            keys + (cancel ? ["Esc cancel"] : []) + (comment ? ["Tab comment"] : []) + (scrollable ? ["↑↓ scroll"] : []) + ["q quit"],
            keys + (cancel ? ["Esc cancel"] : []) + (scrollable ? ["↑↓ scroll"] : []) + ["q quit"],
            keys + (cancel ? ["Esc"] : []) + (scrollable ? ["↑↓"] : []) + ["q quit"],
        ].map { $0.joined(separator: " · ") }
        return candidates.first { $0.count <= width } ?? candidates[candidates.count - 1]
    }

    /// The lines between the header and the footer, already cut to the width.
    private func body(height: Int, now: Date, scrollable: inout Bool) -> [String] {
        var lines: [String] = [""]
        let text = width - 4
        if let denied {
            for line in Screen.wrap(Terminal.safe(denied, newlines: true), width: text) { lines.append(Screen.red("  " + line)) }
            return Array(lines.prefix(height))
        }
        guard let alert, alert.state == .displayed else {
            lines.append("  Nothing displayed. Waiting for an alert…")
            return lines
        }
        let title = Screen.wrap(Terminal.safe(alert.title), width: text).prefix(3)
        lines += title.map { Screen.bold("  " + $0) }
        // Came here because nobody answered on its own client (SPEC §12): said, and from where.
        if let from = Text.escalatedFrom(alert, on: client) {
            lines.append(Screen.cut("  " + Terminal.safe("↑ \(from): nobody answered there"), width))
        }
        lines.append("")
        if let form {
            lines += formLines(form)
            return Array(lines.prefix(height))
        }
        let buttons = buttonLines(now: now) + fieldLines() + voteLines()
        if let message = alert.message {
            let wrapped = Screen.wrap(Terminal.safe(message, newlines: true), width: text)
            // Room left for the message once the title, the buttons and the blank lines are placed.
            let room = max(1, height - lines.count - 1 - buttons.count)
            if wrapped.count <= room {
                lines += wrapped.map { "  " + $0 }
            } else {
                scrollable = true
                let window = max(1, room - 1)
                let start = min(scroll, wrapped.count - window)
                lines += wrapped[start..<(start + window)].map { "  " + $0 }
                lines.append(
                    Screen.dim(
                        Screen.cut("  (message lines \(start + 1)–\(start + window) of \(wrapped.count); ↑↓ PgUp PgDn scroll)", width)))
            }
            lines.append("")
        }
        lines += buttons
        return Array(lines.prefix(height))
    }

    /// The form (SPEC §13): the button it answers with, each field (the one being typed with
    /// a cursor), then the comment.
    private func formLines(_ form: Form) -> [String] {
        var lines: [String] = []
        lines.append(Screen.cut("  " + Terminal.safe(form.button.map { "Answer \($0.title):" } ?? "A comment for your answer:"), width))
        for (index, field) in form.fields.enumerated() {
            let label = field.shownLabel + (field.required ? " (required)" : "")
            let value: String
            if index < form.step {
                value = form.values[field.name] ?? ""
            } else if index == form.step {
                value = form.line + "▌"
            } else {
                value = field.placeholder.map { Screen.dim("e.g. " + Terminal.safe($0)) } ?? ""
            }
            lines.append(Screen.cut("  " + Terminal.safe(label) + ": " + Terminal.safe(value), width))
        }
        let commentValue = form.onComment ? form.line + "▌" : (comment ?? "")
        lines.append(Screen.cut("  Comment (optional): " + Terminal.safe(commentValue), width))
        return lines
    }

    /// Under the buttons of an alert that asks for fields: which, and for which buttons; and
    /// a comment written with Tab, waiting for a button.
    private func fieldLines() -> [String] {
        guard let alert else { return [] }
        var lines: [String] = []
        if !alert.fields.isEmpty {
            lines.append("")
            let names = alert.fields.map { $0.shownLabel + ($0.required ? "*" : "") }.joined(separator: ", ")
            lines.append(Screen.dim(Screen.cut("  Asks for: " + Terminal.safe(names) + " (a button opens the form)", width)))
        }
        if let comment {
            lines.append(Screen.cut("  Comment: " + Terminal.safe(comment), width))
        }
        return lines
    }

    /// Under the buttons of an alert that needs several deciders: the votes so far, and this
    /// console's own once it voted.
    private func voteLines() -> [String] {
        guard let alert, let tally = Text.tally(alert) else { return [] }
        var lines = ["", Screen.cut("  " + Terminal.safe(tally), width)]
        if let myVote {
            lines.append(Screen.dim(Screen.cut("  You voted " + Terminal.safe(myVote.button) + "; waiting for the others.", width)))
        }
        return lines
    }

    /// One button a line; more than eight in two columns, so that sixteen take eight lines.
    private func buttonLines(now: Date) -> [String] {
        guard let alert else { return [] }
        let shown = shownButtons
        if shown.isEmpty {
            if let dismiss = alert.dismissAfter, let displayed = alert.displayedAt {
                let left = Double(displayed.milliseconds) / 1000 + dismiss - now.timeIntervalSince1970
                return ["  (a notice: dismissed in \(max(0, Int(left.rounded(.up)))) s)"]
            }
            return ["  (a notice, no buttons)"]
        }
        let columns = shown.count > 8 ? 2 : 1
        let cellWidth = (width - 2) / columns
        func cell(_ entry: (key: Character, button: Button)) -> String {
            let marker =
                switch entry.button.style {
                case .default: ""
                case .destructive: "  (destructive)"
                case .cancel: "  (cancel, Esc)"
                }
            // Read-only, or voted: the buttons are shown, but no key offers them.
            let offered = readOnly == nil && myVote == nil
            let key = offered ? "[\(entry.key)] " : "· "
            let shownMarker = offered ? marker : marker.replacingOccurrences(of: ", Esc", with: "")
            let label = Screen.cut(Terminal.safe("\(key)\(entry.button.title)") + shownMarker, cellWidth - 2)
            let padded = label + String(repeating: " ", count: max(0, cellWidth - label.count))
            return entry.button.style == .destructive ? Screen.red(padded) : padded
        }
        let rows = (shown.count + columns - 1) / columns
        return (0..<rows).map { row in
            // Column-major, so the keys read down the first column, then the second.
            "  "
                + (0..<columns).compactMap { column in
                    let index = column * rows + row
                    return index < shown.count ? cell(shown[index]) : nil
                }.joined()
        }
    }

    /// The words for a refusal that no retry mends (401, 403), or nil for any other error.
    /// `unauthorized`: what a 401 means for this console's token (``unauthorized``).
    static func refusal(_ error: any Error, _ client: String, unauthorized: String? = nil) -> String? {
        guard let error = error as? AlertdError, let code = error.code else { return nil }
        let detail = error.problem.map { "\($0.title): \($0.detail)" } ?? error.message
        switch code {
        case .unauthorized:
            let none = unauthorized?.hasPrefix("alertd needs a token") == true
            return (none ? "The daemon needs a token.\n\n" : "The daemon does not accept this token.\n\n")
                + (unauthorized ?? "\(detail)\n\nGive another with --token, $ALERTD_TOKEN or alertctl.yaml.")
        case .forbidden:
            return "This token cannot read client \(client).\n\n\(detail)\n\n"
                + "Use a token with the read role on \(client); alertctl whoami shows this one's."
        default:
            return nil
        }
    }

    /// Why a request failed, in one line, each thing said once (a 403's detail already names the
    /// token and what it lacks).
    static func reason(_ error: any Error, _ client: String) -> String {
        if let error = error as? AlertdError, error.code == .forbidden, let detail = error.problem?.detail {
            return detail
        }
        return (error as? AlertdError)?.description ?? "\(error)"
    }
}

/// A frame of at most `height` lines of at most `width` columns.
struct Screen {
    let width: Int
    let height: Int
    private(set) var lines: [String] = []

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    mutating func line(_ text: String) { add(Self.cut(Terminal.safe(text), width)) }
    mutating func line(red text: String) { add(Self.red(Self.cut(Terminal.safe(text), width))) }
    mutating func line(bold left: String, right: String) {
        let left = Self.cut(Terminal.safe(left), width / 2)
        let right = Self.cut(Terminal.safe(right), width - left.count - 1)
        let gap = String(repeating: " ", count: max(1, width - left.count - right.count))
        add(Self.bold(left) + gap + right)
    }
    mutating func rule() { add(String(repeating: "─", count: width)) }
    mutating func fill(to count: Int) { while lines.count < count { add("") } }

    /// A line already made safe and cut (its escape sequences are the console's own).
    mutating func add(_ line: String) {
        if lines.count < height { lines.append(line) }
    }

    static func bold(_ text: String) -> String { "\u{1B}[1m" + text + "\u{1B}[0m" }
    static func red(_ text: String) -> String { "\u{1B}[31m" + text + "\u{1B}[0m" }
    static func dim(_ text: String) -> String { "\u{1B}[2m" + text + "\u{1B}[0m" }

    static func cut(_ text: String, _ width: Int) -> String {
        text.count <= width ? text : String(text.prefix(max(0, width - 1))) + "…"
    }

    /// Words wrapped at `width`, a word longer than a line cut into pieces; paragraphs kept.
    static func wrap(_ text: String, width: Int) -> [String] {
        var out: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for var word in paragraph.split(separator: " ") {
                while word.count > width {
                    if !line.isEmpty {
                        out.append(line)
                        line = ""
                    }
                    out.append(String(word.prefix(width)))
                    word = word.dropFirst(width)
                }
                if line.isEmpty {
                    line = String(word)
                } else if line.count + 1 + word.count <= width {
                    line += " " + word
                } else {
                    out.append(line)
                    line = String(word)
                }
            }
            out.append(line)
        }
        return out
    }
}

/// The terminal's size (`TIOCGWINSZ` on stdout), and its changes (SIGWINCH).
enum TerminalSize {
    static func current() -> (columns: Int, rows: Int)? {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return (Int(size.ws_col), Int(size.ws_row))
    }

    /// Calls `changed` with the new size after each SIGWINCH, until the source is cancelled.
    static func follow(_ changed: @escaping @Sendable ((columns: Int, rows: Int)) -> Void) -> any DispatchSourceSignal {
        signal(SIGWINCH, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        source.setEventHandler {
            if let size = current() { changed(size) }
        }
        source.resume()
        return source
    }
}

/// Keys without Enter and without echo while the console runs; the old mode comes back after.
final class RawTerminal {
    private var original = termios()
    private let active: Bool

    init() {
        active = tcgetattr(STDIN_FILENO, &original) == 0
        guard active else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        // The alternate screen and a hidden cursor, so the shell's screen comes back untouched.
        FileHandle.standardOutput.write(Data("\u{1B}[?1049h\u{1B}[?25l".utf8))
    }

    func restore() {
        FileHandle.standardOutput.write(Data("\u{1B}[?25h\u{1B}[?1049l".utf8))
        if active { tcsetattr(STDIN_FILENO, TCSANOW, &original) }
    }
}

/// Reads keys on a thread of its own (a blocking read has no place on the task pool).
enum KeyReader {
    static func start(into sink: AsyncStream<Console.Event>.Continuation) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 16)
            while true {
                let count = read(STDIN_FILENO, &buffer, buffer.count)
                if count <= 0 {
                    sink.yield(.key([UInt8(ascii: "q")]))
                    return
                }
                sink.yield(.key(Array(buffer[0..<count])))
            }
        }
        thread.start()
    }
}
