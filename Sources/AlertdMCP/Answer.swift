import AlertdWire
import MCP

/// What ask_human, check_answer and withdraw_question return: the alert's outcome as
/// structured content (``Tools/answerSchema``) and the same in a sentence for the model.
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
        func optional(_ text: String?) -> Value { text.map { .string($0) } ?? .null }
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
        ]
    }

    var text: String {
        let id = "alert \(alert.id) on \(alert.client)"
        let by = alert.result?.decidedBy.map { " by \($0)" } ?? ""
        switch alert.state {
        case .answered:
            let button = alert.result?.button ?? "?"
            if alert.result?.cancelled == true {
                return "Answered\(by): \"\(button)\", the cancel button — the person said no. Do not go ahead. (\(id))"
            }
            return "Answered\(by): \"\(button)\". (\(id))"
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
