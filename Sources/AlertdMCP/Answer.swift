import AlertdWire
import Foundation
import MCP

/// What ask_human, check_answer and withdraw_question return: the alert's outcome as
/// structured content (``Tools/answerSchema``) and the same in a sentence for the model.
///
/// Text that people wrote (a button's title, a token's name, a comment, a value) reaches the
/// agent with its control characters and escape sequences shown as `�`: its host shows it on
/// a terminal (``Terminal/safe(_:newlines:)``; issue 44, item 10).
struct Answer {
    let alert: AlertResource
    /// How long the call waited, for "not answered yet" (nil: it did not wait).
    var waited: Double?

    /// `answered`, `not_answered_yet`, `dismissed`, `expired` or `withdrawn`.
    var status: String {
        alert.isTerminal ? alert.state.rawValue : "not_answered_yet"
    }

    var structured: Value {
        let result = alert.result
        func optional(_ text: String?) -> Value { text.map { .string(Terminal.safe($0, newlines: true)) } ?? .null }
        func values(_ values: [String: String]) -> Value {
            .object(values.reduce(into: [String: Value]()) { $0[$1.key] = .string(Terminal.safe($1.value, newlines: true)) })
        }
        let votes: [Value] = alert.votes.map { vote in
            ["decided_by": optional(vote.decidedBy), "button": optional(vote.button), "comment": optional(vote.comment)]
        }
        return [
            "status": .string(status),
            "alert_id": .string(alert.id),
            "client": .string(alert.client),
            "state": .string(alert.state.rawValue),
            "position": alert.position.map(Value.int) ?? .null,
            "button": optional(result?.button),
            "button_index": result?.buttonIndex.map(Value.int) ?? .null,
            "cancelled": .bool(result?.cancelled ?? false),
            "decided_by": optional(result?.decidedBy),
            "decided_at": optional(alert.decidedAt?.rfc3339),
            "expires_at": .string(alert.expiresAt.rfc3339),
            "comment": optional(result?.comment),
            "values": values(result?.values ?? [:]),
            "votes": .array(votes),
        ]
    }

    /// ` Values: ticket="OPS-123". Comment: "…"`: what the person said besides the button,
    /// after the sentence that names it.
    var words: String {
        var text = ""
        let values = alert.result?.values ?? [:]
        if !values.isEmpty {
            let order =
                alert.fields.map(\.name).filter { values[$0] != nil }
                + values.keys.sorted().filter { name in !alert.fields.contains { $0.name == name } }
            text += " Values: " + order.map { "\($0)=\"\(values[$0]!)\"" }.joined(separator: ", ") + "."
        }
        if let comment = alert.result?.comment { text += " Comment: \"\(comment)\"" }
        return text
    }

    var text: String { Terminal.safe(sentence, newlines: true) }

    private var sentence: String {
        let id = "alert \(alert.id) on \(alert.client)"
        var by = alert.result?.decidedBy.map { " by \($0)" } ?? ""
        if alert.quorum > 1, let result = alert.result, result.outcome == .answered {
            let voters = result.votes.filter { $0.button == result.button }.compactMap(\.decidedBy)
            if voters.count > 1 { by = " by " + voters.joined(separator: " and ") }
        }
        switch alert.state {
        case .answered:
            let button = alert.result?.button ?? "?"
            if alert.result?.cancelled == true {
                return "Answered\(by): \"\(button)\", the cancel button — the person said no. Do not go ahead. (\(id))\(words)"
            }
            return "Answered\(by): \"\(button)\". (\(id))\(words)"
        case .expired:
            return "Nobody answered: the question expired at \(alert.expiresAt.rfc3339). Do not take it as a yes. (\(id))"
        case .withdrawn:
            return "The question was withdrawn\(by) before anyone answered. (\(id))"
        case .dismissed:
            return "The notice was shown and dismissed. (\(id))"
        case .queued, .displayed:
            var place = "displayed on the dashboard now"
            if alert.state == .queued {
                let ahead = alert.position ?? 0
                place = "queued behind \(ahead) other question\(ahead == 1 ? "" : "s")"
            }
            let after = waited.map { " after \(Arguments.format($0.rounded())) s" } ?? ""
            return "Not answered yet\(after): the question is \(place). Call check_answer with alert_id \(alert.id) "
                + "(and wait_seconds) to keep waiting, or withdraw_question to take it back. (\(id))"
        }
    }

    var result: CallTool.Result {
        Self.result(text, structured)
    }

    /// A result with text and structured content. (The `Value?` is spelled out: given a plain
    /// `Value`, the SDK's generic, throwing `init<Output: Codable>` would be chosen.)
    static func result(_ text: String, _ structured: Value?) -> CallTool.Result {
        CallTool.Result(content: [.text(text: text, annotations: nil, _meta: nil)], structuredContent: structured, isError: nil)
    }

    /// request_permission's result: as text, exactly the JSON Claude Code's permission prompt
    /// tool contract reads (`{"behavior":"allow","updatedInput":…}` or
    /// `{"behavior":"deny","message":…}`), and the same as structured content. Never an
    /// error result: whatever went wrong is a denial that says so.
    static func permission(_ decision: PermissionDecision, input: Value) -> CallTool.Result {
        let structured: Value
        switch decision {
        case .allow: structured = ["behavior": "allow", "updatedInput": input]
        case .deny(let message), .noAnswer(let message):
            structured = ["behavior": "deny", "message": .string(Terminal.safe(message, newlines: true))]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text =
            (try? encoder.encode(structured)).map { String(decoding: $0, as: UTF8.self) }
            ?? #"{"behavior":"deny","message":"internal error"}"#
        return result(text, structured)
    }

    /// notify_human's result (``Tools/noticeSchema``).
    static func notice(_ alert: AlertResource) -> CallTool.Result {
        let position = alert.position ?? 0
        let shown =
            switch alert.state {
            case .displayed: "displayed now"
            case .queued: "queued behind \(position) alert\(position == 1 ? "" : "s")"
            default: alert.state.rawValue
            }
        let structured: Value = [
            "alert_id": .string(alert.id), "client": .string(alert.client), "state": .string(alert.state.rawValue),
            "position": alert.position.map(Value.int) ?? .null,
        ]
        return result("Notice \(alert.id) on \(alert.client): \(shown).", structured)
    }
}
