import AlertdClient
import AlertdWire
import Foundation

/// Text from the daemon made harmless for a terminal.
///
/// An alert's title, message, buttons and metadata are anyone's input: an escape sequence in
/// them could recolour, move the cursor, retitle the window or hide text on the screen of
/// whoever runs `alertctl list`. Every human-readable line goes through ``safe(_:newlines:)``.
enum Terminal {
    /// `text` with each control character (C0, DEL, C1: escape sequences among them) and each
    /// bidirectional override, which can make text read differently than it is, shown as `�`.
    /// A tab becomes a space; with `newlines`, line feeds stay.
    static func safe(_ text: String, newlines: Bool = false) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A where newlines: scalars.append(scalar)
            case 0x09: scalars.append(" ")
            case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                scalars.append("\u{FFFD}")
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }
}

extension Terminal {
    /// JSON bytes with each C1 control and bidirectional override inside its strings written as
    /// a `\\u` escape: the same JSON value, harmless on a terminal. (The daemon escapes C0
    /// controls, ESC among them, itself; C1 and bidi characters it writes as UTF-8.) Outside
    /// strings JSON is ASCII, so replacing their UTF-8 sequences touches strings only.
    static func safe(json bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        func escape(_ value: UInt32) { out += Array(String(format: "\\u%04x", value).utf8) }
        while index < bytes.count {
            let byte = bytes[index]
            // U+0080–U+009F: C2 80–C2 9F. U+061C: D8 9C. U+200E/F, U+202A–E: E2 80 8E/8F/AA–AE.
            // U+2066–9: E2 81 A6–A9.
            if byte == 0xC2, index + 1 < bytes.count, (0x80...0x9F).contains(bytes[index + 1]) {
                escape(UInt32(bytes[index + 1]))
                index += 2
            } else if byte == 0xD8, index + 1 < bytes.count, bytes[index + 1] == 0x9C {
                escape(0x061C)
                index += 2
            } else if byte == 0xE2, index + 2 < bytes.count,
                (bytes[index + 1] == 0x80 && [0x8E, 0x8F, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE].contains(bytes[index + 2]))
                    || (bytes[index + 1] == 0x81 && (0xA6...0xA9).contains(bytes[index + 2]))
            {
                escape(0x2000 + UInt32(bytes[index + 1] & 0x3F) << 6 + UInt32(bytes[index + 2] & 0x3F))
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }
}

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
        lines.append("priority:  \(alert.priority)")
        if let tally = tally(alert) { lines.append(Terminal.safe("votes:     \(tally)")) }
        lines.append("created:   \(alert.createdAt)")
        if let displayed = alert.displayedAt { lines.append("displayed: \(displayed)") }
        if let decided = alert.decidedAt { lines.append("decided:   \(decided)") }
        lines.append("expires:   \(alert.expiresAt)")
        if let result = alert.result {
            var text = result.outcome.rawValue
            if let chosen = result.button { text += ": \(chosen)" + (result.cancelled ? " (cancel)" : "") }
            if let by = deciders(alert) { text += " by \(by)" }
            lines.append(Terminal.safe("result:    \(text)"))
        }
        if let callback = alert.callbackURL { lines.append(Terminal.safe("callback:  \(callback)")) }
        if let metadata = alert.metadata {
            // JSON escapes control characters itself; the writer keeps the posted member order.
            var writer = JSONWriter()
            writer.value(.object(metadata))
            lines.append(Terminal.safe("metadata:  \(String(decoding: writer.bytes, as: UTF8.self))"))
        }
        return lines.joined(separator: "\n")
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
