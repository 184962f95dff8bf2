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
