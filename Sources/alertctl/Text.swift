import AlertdClient
import AlertdWire
import Foundation

/// Human-readable lines for alerts, clients, webhooks and deliveries; each one safe for a terminal.
enum Text {
    static func summary(_ alert: AlertResource) -> String {
        var line = "\(alert.id)  \(alert.state.rawValue)"
        if let position = alert.position, alert.state == .queued { line += " #\(position)" }
        line += "  \(quoted(alert.title))"
        // Labelled as get, watch and the dashboard label them (the labels choose --number takes).
        if !alert.buttons.isEmpty {
            line +=
                "  "
                + ButtonNumbers.shown(alert.buttons).enumerated().map { "[\(ButtonNumbers.label($0.offset))] " + label($0.element.button) }
                .joined(separator: "  ")
        }
        if let result = alert.result, let chosen = result.button { line += "  → \(chosen)" }
        if let comment = alert.result?.comment { line += "  " + quoted(comment.replacingOccurrences(of: "\n", with: " ")) }
        if let tally = tally(alert) { line += "  (\(tally))" }
        return Terminal.safe(line)
    }

    /// `1 of 2 approvals — alice: Deploy`: for an alert that needs several deciders (`quorum`
    /// above 1), how many chose each button so far and who chose what, as the dashboard says
    /// it; nil for quorum 1. Votes for two buttons count apart (`Deploy 1 of 2, Roll back 1
    /// of 2 — alice: Deploy, bob: Roll back`); a cancel-style vote needs no count (it
    /// answers at once) and is only named.
    static func tally(_ alert: AlertResource) -> String? {
        guard alert.quorum > 1 else { return nil }
        let isCancel = { (vote: Vote) in
            alert.buttons.indices.contains(vote.buttonIndex) && alert.buttons[vote.buttonIndex].style == .cancel
        }
        var counted: [String] = []
        for vote in alert.votes where !isCancel(vote) && !counted.contains(vote.button) { counted.append(vote.button) }
        let count = { (button: String) in alert.votes.filter { $0.button == button }.count }
        let head =
            switch counted.count {
            case 0: "0 of \(alert.quorum) approvals"
            case 1: "\(count(counted[0])) of \(alert.quorum) approvals"
            default: counted.map { "\($0) \(count($0)) of \(alert.quorum)" }.joined(separator: ", ")
            }
        if alert.votes.isEmpty { return head }
        return head + " — " + alert.votes.map { "\($0.decidedBy ?? "anonymous"): \($0.button)" }.joined(separator: ", ")
    }

    /// Who decided a terminal alert, for people: the deciders who chose its button when it
    /// needed several (`alice and bob`), else the one who decided; nil when no one is named.
    static func deciders(_ alert: AlertResource) -> String? {
        guard let result = alert.result else { return nil }
        let voters = result.votes.filter { $0.button == result.button }.compactMap(\.decidedBy)
        if alert.quorum > 1, voters.count > 1 { return names(voters) }
        return result.decidedBy
    }

    /// `5m ops-lead (asked 11:06:40Z), 15m cto`: an alert's escalation (SPEC §12), each step
    /// with when it was taken, if it was.
    static func escalation(_ alert: AlertResource) -> String {
        alert.escalation.map { step in
            let taken = alert.escalatedTo.first { $0.client == step.to }
            return "\(duration(step.after)) \(step.to)" + (taken.map { " (asked \($0.at))" } ?? "")
        }.joined(separator: ", ")
    }

    /// `escalated from ops` when `alert` came to `client` by escalation (SPEC §12); nil otherwise.
    static func escalatedFrom(_ alert: AlertResource, on client: String) -> String? {
        guard alert.client != client, alert.escalatedTo.contains(where: { $0.client == client }) else { return nil }
        return "escalated from \(alert.client)"
    }

    /// `90s`, `5m`, `1h30m`, `1.5s`: seconds as the config and --escalate write them.
    static func duration(_ seconds: Double) -> String {
        guard seconds == seconds.rounded(), seconds >= 1, seconds < 1e9 else { return "\(seconds)s" }
        var rest = Int(seconds)
        var text = ""
        for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] where rest >= size {
            text += "\(rest / size)\(unit)"
            rest %= size
        }
        return text
    }

    /// `alice`, `alice and bob`, `alice, bob and carol`.
    static func names(_ names: [String]) -> String {
        guard let last = names.last, names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " and " + last
    }

    static func details(_ alert: AlertResource) -> String {
        var lines = [
            "id:        \(alert.id)",
            "client:    \(alert.client)",
            "state:     \(alert.state.rawValue)" + (alert.position.map { " (position \($0))" } ?? ""),
            "title:     \(Terminal.safe(alert.title))",
        ]
        if let message = alert.message {
            // Each line of a message keeps the column of the first.
            let text = Terminal.safe(message, newlines: true).replacingOccurrences(of: "\n", with: "\n           ")
            lines.append("message:   \(text)")
        }
        if !alert.buttons.isEmpty {
            // Numbered as watch and the dashboard number them, the numbers `choose --number` takes.
            let numbered = ButtonNumbers.shown(alert.buttons).enumerated().map {
                "[\(ButtonNumbers.label($0.offset))] " + label($0.element.button)
            }
            lines.append(Terminal.safe("buttons:   " + numbered.joined(separator: "  ")))
        }
        for (index, field) in alert.fields.enumerated() {
            lines.append(Terminal.safe((index == 0 ? "fields:    " : "           ") + fieldLine(field, of: alert)))
        }
        lines.append("priority:  \(alert.priority)")
        if !alert.escalation.isEmpty {
            lines.append(Terminal.safe("escalation: " + escalation(alert)))
        }
        if let tally = tally(alert) { lines.append(Terminal.safe("votes:     \(tally)")) }
        // Under a quorum, each vote's words (the result shows the deciding one's).
        if alert.quorum > 1 {
            for vote in alert.votes where vote.comment != nil || !vote.values.isEmpty {
                lines.append(Terminal.safe("           \(vote.decidedBy ?? "anonymous"): " + words(vote.values, vote.comment, of: alert)))
            }
        }
        lines.append("created:   \(alert.createdAt)")
        if let displayed = alert.displayedAt { lines.append("displayed: \(displayed)") }
        if let decided = alert.decidedAt { lines.append("decided:   \(decided)") }
        lines.append("expires:   \(alert.expiresAt)")
        if let result = alert.result {
            var text = result.outcome.rawValue
            if let chosen = result.button { text += ": \(chosen)" + (result.cancelled ? " (cancel)" : "") }
            if let by = deciders(alert) { text += " by \(by)" }
            lines.append(Terminal.safe("result:    \(text)"))
            for (name, value) in ordered(result.values, of: alert) {
                lines.append(Terminal.safe("value:     \(name)=\(value)"))
            }
            if let comment = result.comment {
                let text = Terminal.safe(comment, newlines: true).replacingOccurrences(of: "\n", with: "\n           ")
                lines.append("comment:   \(text)")
            }
        }
        if let callback = alert.callbackURL { lines.append(Terminal.safe("callback:  \(URLRedaction.redacted(callback))")) }
        if let metadata = alert.metadata {
            // JSON escapes control characters itself; the writer keeps the posted member order.
            var writer = JSONWriter()
            writer.value(.object(metadata))
            lines.append(Terminal.safe("metadata:  \(String(decoding: writer.bytes, as: UTF8.self))"))
        }
        return Terminal.safe(lines.joined(separator: "\n"), newlines: true)
    }

    /// `ticket (Change ticket) required, for Deploy, Roll back, at most 40`: a field as get shows it.
    static func fieldLine(_ field: AlertField, of alert: AlertResource) -> String {
        var line = field.name
        if let label = field.label { line += " (\(label))" }
        var notes: [String] = []
        if field.required { notes.append("required") }
        let every = alert.buttons.filter { $0.style != .cancel }.map(\.title)
        if let buttons = field.buttons, buttons != every { notes.append("for " + buttons.joined(separator: ", ")) }
        if field.maxLength != AlertField.defaultMaxLength { notes.append("at most \(field.maxLength)") }
        if let placeholder = field.placeholder { notes.append("e.g. \(placeholder)") }
        return notes.isEmpty ? line : line + " " + notes.joined(separator: ", ")
    }

    /// Values in the alert's field order (then any other, by name).
    static func ordered(_ values: [String: String], of alert: AlertResource) -> [(String, String)] {
        var list = alert.fields.compactMap { field in values[field.name].map { (field.name, $0) } }
        list += values.keys.sorted().filter { name in !alert.fields.contains { $0.name == name } }.map { ($0, values[$0]!) }
        return list
    }

    /// `ticket=OPS-1 "looks fine"`: a vote's values and comment on one line.
    static func words(_ values: [String: String], _ comment: String?, of alert: AlertResource) -> String {
        var parts = ordered(values, of: alert).map { "\($0.0)=\($0.1)" }
        if let comment { parts.append(quoted(comment.replacingOccurrences(of: "\n", with: " "))) }
        return parts.joined(separator: " ")
    }

    static func client(_ client: ClientSummary) -> String {
        Terminal.safe("\(client.client)  pending \(client.pending)  displayed \(client.displayed ?? "-")")
    }

    /// `Drop tables (destructive)`.
    static func label(_ button: Button) -> String {
        switch button.style {
        case .default: button.title
        case .cancel: "\(button.title) (cancel)"
        case .destructive: "\(button.title) (destructive)"
        }
    }

    static func quoted(_ text: String) -> String { "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }

    /// A count and its noun: `1 alert`, `2 alerts`.
    static func count(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

    /// A count and its noun with an irregular plural: `1 pending delivery`, `2 pending deliveries`.
    static func count(_ count: Int, _ singular: String, _ plural: String) -> String { "\(count) \(count == 1 ? singular : plural)" }

    /// Seconds for people: `0.4 s`, `4 s`, `4 min 10 s`.
    static func seconds(_ value: Double) -> String {
        if value < 1 { return String(format: "%.1f s", max(0.1, (value * 10).rounded(.up) / 10)) }
        let whole = Int(value.rounded(.up))
        return whole < 60 ? "\(whole) s" : "\(whole / 60) min" + (whole % 60 == 0 ? "" : " \(whole % 60) s")
    }
}
