import AlertdClient
import AlertdWire
import Foundation

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
