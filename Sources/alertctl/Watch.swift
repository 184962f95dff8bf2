import AlertdClient
import AlertdWire
import ArgumentParser
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
            Shows the displayed alert (title, message, numbered buttons, destructive ones marked, \
            the cancel button last) and how many alerts wait behind it, and follows changes live. \
            A number key chooses that button, Esc chooses the cancel button, q quits. Fits 80×24.
            """)

    @OptionGroup var connection: Connection

    @Argument(help: "The client to watch.")
    var client: String

    func run() async throws {
        try await guarded {
            guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else {
                throw Failure("watch needs a terminal on stdin and stdout", code: 64)
            }
            let alertd = try connection.client()
            let terminal = RawTerminal()
            defer { terminal.restore() }
            var console = Console(alertd: alertd, client: client)
            await console.run()
        }
    }
}

/// The console's state and its loop: events in, a redrawn screen out.
struct Console {
    enum Event: Sendable {
        case key([UInt8])
        case alert(AlertResource?)
        case pending(Int)
        case connection(String?)
    }

    let alertd: AlertdClient
    let client: String

    var alert: AlertResource?
    var pending = 0
    var trouble: String?
    var note: String?

    init(alertd: AlertdClient, client: String) {
        self.alertd = alertd
        self.client = client
    }

    mutating func run() async {
        let (events, sink) = AsyncStream<Event>.makeStream()
        KeyReader.start(into: sink)
        let (alertd, client) = (alertd, client)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Self.follow(alertd, client, into: sink) }
            group.addTask { await Self.count(alertd, client, into: sink) }
            draw()
            for await event in events {
                switch event {
                case .alert(let new):
                    if new?.id != alert?.id { note = nil }
                    alert = new
                case .pending(let count): pending = count
                case .connection(let problem): trouble = problem
                case .key(let bytes):
                    if bytes == [UInt8(ascii: "q")] || bytes == [UInt8(ascii: "Q")] || bytes == [3] {
                        group.cancelAll()
                        return
                    }
                    await press(bytes)
                }
                draw()
            }
        }
    }

    /// Follows the displayed alert with long-polls; reconnects with backoff and says so.
    static func follow(_ alertd: AlertdClient, _ client: String, into sink: AsyncStream<Event>.Continuation) async {
        var shown: String?
        var first = true
        var failures = 0
        while !Task.isCancelled {
            do {
                let alert = try await alertd.current(on: client, wait: first ? nil : 25, after: shown)
                first = false
                if failures > 0 { sink.yield(.connection(nil)) }
                failures = 0
                shown = alert?.id
                sink.yield(.alert(alert))
            } catch {
                if Task.isCancelled { return }
                failures += 1
                let delay = min(5, 0.25 * pow(2, Double(min(failures, 6))))
                sink.yield(.connection("reconnecting in \(Int(delay.rounded(.up))) s: \(Self.reason(error))"))
                try? await Task.sleep(for: .seconds(delay))
                first = true
            }
        }
    }

    /// The queue's length: how many alerts the client has pending, once a second.
    static func count(_ alertd: AlertdClient, _ client: String, into sink: AsyncStream<Event>.Continuation) async {
        while !Task.isCancelled {
            if let clients = try? await alertd.clients() {
                sink.yield(.pending(clients.first { $0.client == client }?.pending ?? 0))
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The buttons as shown: the cancel button last, numbered from 1.
    var shownButtons: [Button] {
        guard let alert else { return [] }
        return alert.buttons.filter { $0.style != .cancel } + alert.buttons.filter { $0.style == .cancel }
    }

    private mutating func press(_ bytes: [UInt8]) async {
        guard let alert, alert.state == .displayed else { return }
        let button: Button?
        if bytes == [27] {
            button = shownButtons.first { $0.style == .cancel }
            if button == nil { note = "this alert has no cancel button" }
        } else if bytes.count == 1, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(bytes[0]) {
            let index = Int(bytes[0] - UInt8(ascii: "1"))
            button = index < shownButtons.count ? shownButtons[index] : nil
        } else {
            button = nil
        }
        guard let button else { return }
        do {
            let answered = try await alertd.choose(on: client, id: alert.id, button: button.title)
            note = "chose \(Screen.clean(button.title))"
            self.alert = answered
        } catch {
            note = "could not choose \(Screen.clean(button.title)): \(Self.reason(error))"
        }
    }

    private static func reason(_ error: any Error) -> String {
        (error as? AlertdError)?.description ?? "\(error)"
    }

    private func draw() {
        var screen = Screen(width: 80, height: 24)
        let behind = max(0, pending - (alert?.state == .displayed ? 1 : 0))
        screen.line(bold: "alertd · \(client)", right: "\(pending) pending, \(behind) queued behind")
        screen.rule()
        if let alert, alert.state == .displayed {
            screen.blank()
            screen.line(bold: "  " + alert.title)
            if let message = alert.message {
                screen.blank()
                for line in Screen.wrap(message, width: 74).prefix(8) { screen.line("  " + line) }
            }
            screen.blank()
            if shownButtons.isEmpty {
                if let dismiss = alert.dismissAfter, let displayed = alert.displayedAt {
                    let left = Double(displayed.milliseconds) / 1000 + dismiss - Date().timeIntervalSince1970
                    screen.line("  (a notice: dismissed in \(max(0, Int(left.rounded(.up)))) s)")
                } else {
                    screen.line("  (a notice, no buttons)")
                }
            }
            for (number, button) in shownButtons.enumerated() {
                let label = "  [\(number + 1)] \(button.title)"
                switch button.style {
                case .default: screen.line(label)
                case .destructive: screen.line(red: label + "  (destructive)")
                case .cancel: screen.line(label + "  (cancel, Esc)")
                }
            }
        } else {
            screen.blank()
            screen.line("  Nothing displayed. Waiting for an alert…")
        }
        screen.fill(to: 21)
        screen.rule()
        if let trouble {
            screen.line(red: trouble)
        } else {
            screen.line(note ?? "")
        }
        let keys = shownButtons.isEmpty ? "q quit" : "1-\(shownButtons.count) choose · Esc cancel · q quit"
        screen.line(keys)
        screen.flush()
    }
}

/// A frame of at most `height` lines of at most `width` columns, drawn in one write.
struct Screen {
    let width: Int
    let height: Int
    private var lines: [String] = []

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    mutating func line(_ text: String) { add(Self.cut(Self.clean(text), width)) }
    mutating func line(bold text: String) { add("\u{1B}[1m" + Self.cut(Self.clean(text), width) + "\u{1B}[0m") }
    mutating func line(red text: String) { add("\u{1B}[31m" + Self.cut(Self.clean(text), width) + "\u{1B}[0m") }
    mutating func line(bold left: String, right: String) {
        let left = Self.cut(Self.clean(left), width / 2)
        let right = Self.cut(Self.clean(right), width - left.count - 1)
        let gap = String(repeating: " ", count: max(1, width - left.count - right.count))
        add("\u{1B}[1m" + left + "\u{1B}[0m" + gap + right)
    }
    mutating func rule() { add(String(repeating: "─", count: width)) }
    mutating func blank() { add("") }
    mutating func fill(to count: Int) { while lines.count < count { add("") } }

    private mutating func add(_ line: String) {
        if lines.count < height { lines.append(line) }
    }

    func flush() {
        // Home, clear, then each line cleared to its end; no newline after the last.
        let frame = "\u{1B}[H\u{1B}[2J" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n")
        FileHandle.standardOutput.write(Data(frame.utf8))
    }

    /// Text from an alert with control characters (escape sequences among them) made harmless.
    static func clean(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "\u{FFFD}" : scalar
                }))
    }

    static func cut(_ text: String, _ width: Int) -> String {
        text.count <= width ? text : String(text.prefix(max(0, width - 1))) + "…"
    }

    /// Words wrapped at `width`; paragraphs kept.
    static func wrap(_ text: String, width: Int) -> [String] {
        var out: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ") {
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
