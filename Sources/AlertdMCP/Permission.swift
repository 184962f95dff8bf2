public import AlertdWire
import Crypto
import Foundation

/// A coding agent's request to use one of its tools, put to a person as an alert: what
/// `request_permission` (Claude Code's `--permission-prompt-tool`) and `alertctl hook
/// claude-code` (its `PreToolUse` hook) ask (docs/agents.md).
///
/// The alert's title names the tool and what it acts on (`Allow Bash: npm test?`), its
/// message shows the tool's input member by member, its buttons are `Allow` and `Deny` (the
/// cancel-style one), and the person may say why in a comment. Only `Allow` chosen by a
/// person allows: a denial, an expiry, a withdrawal, no answer in time or any failure never
/// does.
///
/// ```swift
/// let request = PermissionRequest(toolName: "Bash", input: ["command": "rm -rf build"])
/// let alert = request.alert(askedVia: "alertctl mcp", metadata: [])
/// // alert.title == "Allow Bash: rm -rf build?"
/// ```
public struct PermissionRequest: Sendable, Hashable {
    /// The tool the agent wants to use (`Bash`, `Edit`, `mcp__github__create_issue`).
    public var toolName: String
    /// Its input, as the agent's host gave it (a JSON object).
    public var input: JSONObject
    /// The host's id of this use of the tool, when it sent one.
    public var toolUseID: String?

    public init(toolName: String, input: JSONObject, toolUseID: String? = nil) {
        self.toolName = toolName
        self.input = input
        self.toolUseID = toolUseID
    }

    /// The title of the button that allows.
    public static let allow = "Allow"
    /// The title of the button that denies (the cancel-style one: it also stops a quorum at once).
    public static let deny = "Deny"

    /// The input member that says what a well-known tool acts on, shown in the title.
    static let subjects: [String: String] = [
        "Bash": "command", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path", "Read": "file_path",
        "NotebookEdit": "notebook_path", "WebFetch": "url", "WebSearch": "query", "Glob": "pattern", "Grep": "pattern",
    ]

    /// `Allow Bash: npm test?`: the tool, and for a well-known one the first line of what it
    /// acts on, within the 256 characters of a title.
    public var title: String {
        let tool = Self.oneLine(toolName, limit: 80)
        var subject = ""
        if let member = Self.subjects[toolName], case .string(let text)? = input[member] {
            subject = Self.oneLine(text.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? "", limit: 160)
        }
        let title = subject.isEmpty ? "Allow \(tool)?" : "Allow \(tool): \(subject)?"
        return title.count <= 1 ? "Allow a tool?" : title
    }

    /// The input, member by member, as a person reads it: a string as it is (its lines
    /// indented), anything else as compact JSON; cut at alertd's 4096 characters.
    public var message: String {
        var lines = ["\(Self.oneLine(toolName, limit: 200)) wants to run with:"]
        for (name, value) in input {
            switch value {
            case .string(let text) where text.contains("\n"):
                lines.append("\(name):")
                lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
            case .string(let text):
                lines.append("\(name): \(text)")
            default:
                var json = JSONWriter()
                json.value(value)
                lines.append("\(name): " + String(decoding: json.bytes, as: UTF8.self))
            }
        }
        if input.isEmpty { lines.append("(no input)") }
        // alertd refuses U+0000 in text.
        let text = String(String.UnicodeScalarView(lines.joined(separator: "\n").unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : $0 }))
        let limit = NewAlert.messageLimitForTools
        guard text.unicodeScalars.count > limit else { return text }
        let cut = String(String.UnicodeScalarView(text.unicodeScalars.prefix(limit - 40)))
        return cut + "\n… (\(text.unicodeScalars.count - (limit - 40)) more characters)"
    }

    /// The alert that asks: ``title``, ``message``, Allow and Deny, `quorum` when above 1,
    /// and metadata saying who asks (`asked_via`, then `metadata`, then the tool and its id).
    /// `waiting`: how long the asker waits; the alert expires a minute after, so that a
    /// request nobody waits for any more (its asker killed) leaves the dashboard by itself.
    public func alert(
        askedVia: String, metadata: [(key: String, value: String)], quorum: Int? = nil, waiting: Double? = nil
    ) -> NewAlert {
        var members: [(key: String, value: JSONValue)] = [(key: "asked_via", value: .string(askedVia))]
        for (key, value) in metadata { members.append((key: key, value: .string(Terminal.stripped(value, limit: 256)))) }
        members.append((key: "tool", value: .string(Terminal.stripped(toolName, limit: 256))))
        if let toolUseID { members.append((key: "tool_use_id", value: .string(Terminal.stripped(toolUseID, limit: 256)))) }
        return NewAlert(
            title: title, message: message, buttons: [.default(Self.allow), .cancel(Self.deny)],
            expiresIn: waiting.map { min($0 + 60, 86_400) }, metadata: JSONObject(members), quorum: quorum.flatMap { $0 > 1 ? $0 : nil })
    }

    /// An `Idempotency-Key` for `alert` asked in `scope` (a hook's session and tool use): the
    /// same request asked again the same way — a hook run twice for one tool use — waits for
    /// the same question; asked with other flags (another timeout, quorum), it is a new one.
    public static func idempotencyKey(for alert: NewAlert, scope: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var hash = SHA256()
        hash.update(data: Array(scope.utf8) + [0])
        hash.update(data: (try? encoder.encode(alert)) ?? Data())
        return "alertctl-permission-" + hash.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// What a person decided about it, from the alert (nil while it is pending).
    public static func decision(_ alert: AlertResource) -> PermissionDecision? {
        guard alert.isTerminal else { return nil }
        let who = alert.result?.decidedBy.map { Terminal.stripped($0, limit: 64) }
        let comment = alert.result?.comment.map { Terminal.safe($0, newlines: true) }
        switch alert.state {
        case .answered where alert.result?.cancelled == false && alert.result?.button == allow:
            return .allow(by: who, comment: comment)
        case .answered:
            return .deny(comment ?? "Denied by \(who ?? "a person") on alertd (no reason given). Do not retry it; ask the user.")
        case .expired:
            return .noAnswer("Nobody answered on alertd before the request expired (alert \(alert.id)): not allowed.")
        case .withdrawn:
            return .noAnswer("The request was withdrawn on alertd before anyone answered (alert \(alert.id)): not allowed.")
        default:
            return .noAnswer("Nobody answered on alertd (alert \(alert.id) is \(alert.state.rawValue)): not allowed.")
        }
    }

    /// `text` on one line without control characters, at most `limit` characters.
    static func oneLine(_ text: String, limit: Int) -> String {
        Terminal.stripped(text, limit: limit).trimmingSpaces
    }
}

/// What came of a ``PermissionRequest``.
public enum PermissionDecision: Sendable, Hashable {
    /// A person chose Allow: by whom (a token's name), and their comment.
    case allow(by: String?, comment: String?)
    /// A person chose Deny: why (their comment, or a default sentence).
    case deny(String)
    /// Nobody decided (expired, withdrawn, no answer in time, alertd unreachable): why.
    /// Never an allow; `request_permission` denies, the hook asks the terminal.
    case noAnswer(String)
}

extension NewAlert {
    /// The longest message (SPEC §2), for what builds one.
    static let messageLimitForTools = 4096
}

extension String {
    /// Without leading and trailing spaces.
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first == " " { scalars = scalars.dropFirst() }
        while scalars.last == " " { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
