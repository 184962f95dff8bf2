import AlertdClient
import AlertdMCP
import AlertdWire
import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `alertctl hook …`: commands that coding agents' hooks run.
struct Hook: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hooks for coding agents: a person on alertd decides whether the agent may use a tool.",
        subcommands: [ClaudeCode.self])

    /// `alertctl hook claude-code`: Claude Code's `PreToolUse` hook.
    struct ClaudeCode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "claude-code",
            abstract: "Claude Code's PreToolUse hook: asks a person on alertd whether the agent may use a tool.",
            discussion: """
                Claude Code runs it before each tool use (a PreToolUse hook) with the event as JSON on \
                stdin; it asks a person on --client (the tool in the title, its input in the message, \
                Allow and Deny, an optional comment), and prints Claude Code's decision on stdout:

                  {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "allow" | "deny" | "ask",
                    "permissionDecisionReason": "…"}}

                Allow chosen by a person (by --quorum different people) allows; Deny denies, with the \
                person's comment as the reason Claude reads. When nobody answers within --timeout, or \
                alertd cannot be reached or refuses, it answers ask: Claude Code's own prompt decides \
                (--on-timeout deny denies instead). It never allows by itself. A question nobody \
                answered in time is withdrawn. Input that is not a PreToolUse event is said on stderr \
                and answered ask. With --only, a tool not named is not asked about: the hook prints \
                nothing, and Claude Code goes on as without it.

                --print-config prints the settings.json fragment that installs the hook with these \
                flags (alertd's URL and token come from ~/.config/alertd/alertctl.yaml or the \
                environment Claude Code runs hooks in, never from the fragment):

                  alertctl hook claude-code --client agents --only Bash,Edit,Write \\
                    --print-config

                Exit status 0 whenever a decision is printed; 64 for bad flags. See docs/agents.md.
                """)

        @OptionGroup var connection: Connection

        @Option(name: .long, help: "The client (display target) the question goes to.")
        var client: String

        @Option(
            name: .long, help: "How long to wait for a person: seconds, or a duration (90s, 10m).", transform: Seconds.positive)
        var timeout: Double = 600

        @Option(name: .long, help: "How many different people must choose Allow (1–10); one Deny denies.")
        var quorum: Int = 1

        @Option(name: .long, help: "Ask only about these tools (comma-separated, e.g. Bash,Edit,Write); others pass untouched.")
        var only: String?

        @Option(name: .customLong("on-timeout"), help: "ask (default: Claude Code's own prompt decides) or deny.")
        var onTimeout: String = "ask"

        @Flag(name: .customLong("print-config"), help: "Print the settings.json fragment that installs this hook, and exit.")
        var printConfig = false

        func validate() throws {
            guard client.range(of: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", options: .regularExpression) != nil else {
                throw ValidationError("--client must be a client id (letters, digits, '.', '_', '-'; at most 64), not \(client)")
            }
            guard (1...10).contains(quorum) else { throw ValidationError("--quorum must be 1 to 10") }
            guard timeout <= 86_400 else { throw ValidationError("--timeout must be at most a day (86400 seconds)") }
            guard ["ask", "deny"].contains(onTimeout) else { throw ValidationError("--on-timeout must be ask or deny, not \(onTimeout)") }
            if let only, tools(only).isEmpty { throw ValidationError("--only needs tool names: --only Bash,Edit,Write") }
        }

        func tools(_ list: String) -> [String] {
            list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }

        func run() async throws {
            if printConfig {
                print(Self.config(client: client, timeout: timeout, quorum: quorum, only: only.map(tools), onTimeout: onTimeout))
                complain(
                    "paste this into .claude/settings.json (or ~/.claude/settings.json); the hook finds alertd and its token "
                        + "as alertctl does: ~/.config/alertd/alertctl.yaml, or ALERTD_URL and ALERTD_TOKEN in Claude Code's environment")
                return
            }
            let event: PermissionRequest
            var metadata: [(key: String, value: String)] = []
            var key: String?
            switch Self.read(FileHandle.standardInput.readDataToEndOfFile()) {
            case .failure(let problem):
                complain("hook claude-code: \(problem); answering ask (Claude Code's own prompt decides)")
                return Self.answer(.ask, "alertctl hook claude-code could not read the event: \(problem)")
            case .success(let read):
                event = read.request
                metadata = read.metadata
                key = read.key
            }
            if let only, !tools(only).contains(event.toolName) { return }
            let decision = await ask(event, metadata: metadata, key: key)
            switch decision {
            case .allow(let by, let comment):
                Self.answer(.allow, "Allowed by \(by ?? "a person") on alertd" + (comment.map { ": \($0)" } ?? "."))
            case .deny(let reason):
                Self.answer(.deny, reason)
            case .noAnswer(let reason):
                Self.answer(onTimeout == "deny" ? .deny : .ask, reason + (onTimeout == "deny" ? "" : " Asking here instead."))
            }
        }

        /// Posts the question and waits for it (each long-poll at most a minute) until a person
        /// decided or `timeout` passed; then withdraws it. Any failure is a ``PermissionDecision/noAnswer(_:)``.
        private func ask(_ request: PermissionRequest, metadata: [(key: String, value: String)], key: String?) async -> PermissionDecision {
            let alertd: AlertdClient
            do {
                alertd = try connection.client()
            } catch {
                return .noAnswer("alertctl cannot reach alertd: \(error.description).")
            }
            let alert = request.alert(askedVia: "alertctl hook claude-code", metadata: metadata, quorum: quorum, waiting: timeout)
            let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
            let posted: AlertResource
            do {
                posted = try await alertd.post(
                    alert, to: client,
                    idempotencyKey: key.map { PermissionRequest.idempotencyKey(for: alert, scope: $0) } ?? UUID().uuidString)
            } catch let error as AlertdError {
                return .noAnswer("alertd could not ask a person: \(connection.failure(error).description).")
            } catch {
                return .noAnswer("alertd could not ask a person: \(error).")
            }
            // Claude Code ends a hook that runs past its own timeout with a signal: the question goes too.
            let interrupts = Interrupts {
                Task {
                    _ = try? await alertd.withdraw(on: client, id: posted.id)
                    Foundation.exit(Exit.interrupted)
                }
            }
            defer { interrupts.stop() }
            var current = posted
            while !current.isTerminal {
                let left = deadline - ContinuousClock.now
                let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
                if seconds <= 0 { break }
                do {
                    current = try await alertd.alert(on: client, id: posted.id, wait: max(1, min(60, Int(seconds.rounded(.up)))))
                } catch let error as AlertdError where error.isTransient {
                    try? await Task.sleep(for: .milliseconds(Int64(min(1, max(0.05, seconds)) * 1000)))
                } catch let error as AlertdError {
                    return .noAnswer("alertd stopped answering about alert \(posted.id): \(connection.failure(error).description).")
                } catch {
                    return .noAnswer("alertd stopped answering about alert \(posted.id): \(error).")
                }
            }
            if !current.isTerminal {
                // Nobody answered in time: taken back, so that nobody allows what Claude Code no longer waits for.
                do {
                    current = try await alertd.withdraw(on: client, id: posted.id)
                } catch let error as AlertdError where error.code == .alreadyDecided && error.problem?.alert != nil {
                    current = error.problem!.alert!
                } catch {}
                if current.state != .answered {
                    return .noAnswer("Nobody answered on alertd within \(Text.seconds(timeout)) (alert \(posted.id)).")
                }
            }
            return PermissionRequest.decision(current) ?? .noAnswer("Nobody answered on alertd (alert \(posted.id)).")
        }

        enum Verdict: String {
            case allow, deny, ask
        }

        /// Prints Claude Code's hook output on stdout.
        static func answer(_ verdict: Verdict, _ reason: String) {
            print(output(verdict, reason))
        }

        /// `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":…,"permissionDecisionReason":…}}`.
        static func output(_ verdict: Verdict, _ reason: String) -> String {
            var json = JSONWriter()
            json.beginObject()
            json.key("hookSpecificOutput")
            json.beginObject()
            json.key("hookEventName")
            json.string("PreToolUse")
            json.key("permissionDecision")
            json.string(verdict.rawValue)
            json.key("permissionDecisionReason")
            json.string(Terminal.safe(reason, newlines: true))
            json.endObject()
            json.endObject()
            return String(decoding: json.bytes, as: UTF8.self)
        }

        /// What the hook read from a PreToolUse event.
        struct Event {
            var request: PermissionRequest
            var metadata: [(key: String, value: String)]
            /// The scope of the Idempotency-Key: the session and the tool use, so a hook run again
            /// for the same tool use (with the same flags) waits for the same question; nil without
            /// a tool_use_id.
            var key: String?
        }

        /// Why the input is not a PreToolUse event.
        struct BadEvent: Error, CustomStringConvertible {
            var description: String
        }

        /// The most a hook event may weigh (a Write's content, an Edit's strings).
        static let maxEventBytes = 4 << 20

        /// Reads Claude Code's PreToolUse event: `tool_name` (a string) and `tool_input` (an
        /// object) are needed; `hook_event_name`, when present, must be `PreToolUse`;
        /// `session_id`, `tool_use_id` and `cwd` go into the alert's metadata.
        static func read(_ data: Data) -> Result<Event, BadEvent> {
            guard !data.isEmpty else {
                return .failure(BadEvent(description: "no event on stdin (Claude Code sends the PreToolUse event as JSON)"))
            }
            guard data.count <= maxEventBytes else {
                return .failure(BadEvent(description: "the event on stdin is over \(maxEventBytes >> 20) MiB"))
            }
            let value: JSONValue
            do {
                value = try JSONParser.parse(Array(data))
            } catch {
                return .failure(BadEvent(description: "the event on stdin is not JSON (\(error.reason) at byte \(error.offset))"))
            }
            guard case .object(let event) = value else { return .failure(BadEvent(description: "the event on stdin is not a JSON object")) }
            if let name = event["hook_event_name"], name != .string("PreToolUse") {
                return .failure(BadEvent(description: "the event is \(name), not a PreToolUse event: install the hook under PreToolUse"))
            }
            guard case .string(let tool)? = event["tool_name"], !tool.isEmpty else {
                return .failure(BadEvent(description: "the event has no tool_name (a string)"))
            }
            guard case .object(let input)? = event["tool_input"] else {
                return .failure(BadEvent(description: "the event has no tool_input (an object)"))
            }
            var toolUseID: String?
            if case .string(let id)? = event["tool_use_id"] { toolUseID = id }
            var metadata: [(key: String, value: String)] = []
            var session: String?
            if case .string(let id)? = event["session_id"] {
                session = id
                metadata.append((key: "session_id", value: id))
            }
            if case .string(let cwd)? = event["cwd"] { metadata.append((key: "cwd", value: cwd)) }
            let key = toolUseID.map { "claude-code/\(session ?? "")/\($0)" }
            return .success(
                Event(request: PermissionRequest(toolName: tool, input: input, toolUseID: toolUseID), metadata: metadata, key: key))
        }

        /// The settings.json fragment that installs the hook with these flags.
        static func config(client: String, timeout: Double, quorum: Int, only: [String]?, onTimeout: String) -> String {
            let seconds = timeout.rounded() == timeout && timeout < 1e9 ? String(Int(timeout)) : String(timeout)
            var command = ["alertctl", "hook", "claude-code", "--client", client, "--timeout", seconds]
            if quorum > 1 { command += ["--quorum", String(quorum)] }
            if let only { command += ["--only", only.joined(separator: ",")] }
            if onTimeout != "ask" { command += ["--on-timeout", onTimeout] }
            var json = JSONWriter()
            json.beginObject()
            json.key("hooks")
            json.beginObject()
            json.key("PreToolUse")
            json.beginArray()
            json.beginObject()
            json.key("matcher")
            json.string(only.map { $0.joined(separator: "|") } ?? "*")
            json.key("hooks")
            json.beginArray()
            json.beginObject()
            json.key("type")
            json.string("command")
            json.key("command")
            json.string(command.map(Self.shellWord).joined(separator: " "))
            json.key("timeout")
            // Claude Code's own limit on the hook (60 s by default): past ours, so ours decides.
            json.int(Int(timeout.rounded(.up)) + 30)
            json.endObject()
            json.endArray()
            json.endObject()
            json.endArray()
            json.endObject()
            json.endObject()
            return pretty(json.bytes)
        }

        /// `word` as one shell word: as it is when it is plain, else in single quotes.
        static func shellWord(_ word: String) -> String {
            if !word.isEmpty, word.allSatisfy({ $0.isLetter || $0.isNumber || "-_.,/:=+@".contains($0) }), word.allSatisfy(\.isASCII) {
                return word
            }
            return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }

        /// JSON indented two spaces, members in the order written, as people keep settings.json.
        static func pretty(_ bytes: [UInt8]) -> String {
            guard let value = try? JSONParser.parse(bytes) else { return String(decoding: bytes, as: UTF8.self) }
            func scalar(_ value: JSONValue) -> String {
                var json = JSONWriter()
                json.value(value)
                return String(decoding: json.bytes, as: UTF8.self)
            }
            func text(_ value: JSONValue, _ indent: String) -> String {
                let inner = indent + "  "
                switch value {
                case .object(let members) where !members.isEmpty:
                    let lines = members.map { inner + scalar(.string($0.key)) + ": " + text($0.value, inner) }
                    return "{\n" + lines.joined(separator: ",\n") + "\n" + indent + "}"
                case .array(let items) where !items.isEmpty:
                    return "[\n" + items.map { inner + text($0, inner) }.joined(separator: ",\n") + "\n" + indent + "]"
                default:
                    return scalar(value)
                }
            }
            return text(value, "")
        }
    }
}
