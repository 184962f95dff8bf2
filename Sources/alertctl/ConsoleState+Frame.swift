import AlertdWire
import Foundation

// MARK: The frame

extension ConsoleState {
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
