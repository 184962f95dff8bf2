import AlertdCore
import AlertdWire
import Foundation
import Logging
import PostgresNIO

/// An alert as one row of `alerts`, both ways.
enum AlertRow {
    /// The table's columns ``alert(_:)`` reads, by position (what a write inserts).
    static let tableColumns = """
        id, client, seq, state, priority, title, message, style, buttons, callback_url, metadata, created_at, \
        displayed_at, decided_at, expires_at, dismiss_after_ms, button_index, decided_by, quorum, votes, posted_by, fields, \
        escalation
        """

    /// The steps an alert took (SPEC §12), from `escalations`, as one JSON array of
    /// `[step, client, at, seq, displayed_at]` (NULL for none): the last column ``alert(_:)``
    /// reads, after ``tableColumns``. `table` names the alerts table or its alias.
    static func escalated(of table: String) -> String {
        """
        (SELECT pg_catalog.json_agg(pg_catalog.json_build_array(x.step, x.client, x.at, x.seq, x.displayed_at))::text \
        FROM escalations x WHERE x.alert_id = \(table).id) AS escalated
        """
    }

    /// The columns ``alert(_:)`` reads, by position, from `alerts` (unaliased; qualified, so
    /// that a join with `escalations` reads them too).
    static let columns = select("alerts")

    /// The names of what ``alert(_:)`` reads, in order: ``tableColumns`` and `escalated`.
    static let names = tableColumns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } + ["escalated"]

    /// What ``alert(_:)`` reads, from a derived table (or alias) `table` that has them all
    /// by name (`a.id, a.client, …, a.escalated`).
    static func qualified(_ table: String) -> String { names.map { "\(table).\($0)" }.joined(separator: ", ") }

    /// What ``alert(_:)`` reads, from the alerts table under alias `table`.
    static func select(_ table: String) -> String {
        names.dropLast().map { "\(table).\($0)" }.joined(separator: ", ") + ", " + escalated(of: table)
    }

    /// A NULL for each of ``columns`` (the other rows of a `UNION` that reads alerts).
    static let nulls = Array(repeating: "NULL", count: names.count).joined(separator: ", ")

    struct Corrupt: Error, CustomStringConvertible {
        let description: String
    }

    static func alert(_ row: PostgresRow) throws -> Alert { try alert(row.makeRandomAccess(), from: 0) }

    /// The alert in `row`'s cells from `offset` on, in ``columns``' order.
    static func alert(_ row: PostgresRandomAccessRow, from offset: Int) throws -> Alert {
        try alert { index in
            let cell = row[offset + index]
            if numeric.contains(index) { return try cell.decode(Int64?.self).map(Cell.number) }
            return try cell.decode(String?.self).map(Cell.text)
        }
    }

    /// The alert of an object ``write(_:version:into:)`` wrote (a notification carries it).
    static func alert(json bytes: [UInt8]) throws -> Alert {
        guard case .object(let fields) = try JSONParser.parse(bytes) else { throw Corrupt(description: "not an alert row object") }
        return try alert { index in
            switch fields[names[index]] {
            case .string(let text)?: .text(text)
            case .number(let number)?:
                try Int64(number.literal).map(Cell.number) ?? { throw Corrupt(description: "bad number \(number)") }()
            case .null?, nil: nil
            default: throw Corrupt(description: "bad \(names[index])")
            }
        }
    }

    /// The positions of ``columns`` that are integers (the others are text).
    static let numeric: Set<Int> = [2, 4, 11, 12, 13, 14, 15, 16, 18]

    /// One column's value: text or an integer (nil: NULL).
    enum Cell {
        case text(String)
        case number(Int64)
    }

    /// The alert of the values of ``columns``, by position.
    private static func alert(_ cell: (Int) throws -> Cell?) throws -> Alert {
        func text(_ index: Int) throws -> String? {
            switch try cell(index) {
            case .text(let value)?: value
            case .number(let value)?: String(value)
            case nil: nil
            }
        }
        func number(_ index: Int) throws -> Int64? {
            switch try cell(index) {
            case .number(let value)?: value
            case .text(let value)?: try Int64(value) ?? { throw Corrupt(description: "not a number: \(value)") }()
            case nil: nil
            }
        }
        func required<T>(_ value: T?, _ name: String) throws -> T {
            guard let value else { throw Corrupt(description: "alert without \(name)") }
            return value
        }
        let idText = try required(text(0), "id")
        guard let id = AlertID(idText) else { throw Corrupt(description: "bad alert id \(idText)") }
        guard let state = AlertState(rawValue: try required(text(3), "state")),
            let style = AlertStyle(rawValue: try required(text(7), "style"))
        else { throw Corrupt(description: "bad state or style in alert \(idText)") }
        var buttons: [Button] = []
        if case .array(let items) = try JSONParser.parse(Array(try required(text(8), "buttons").utf8)) {
            for case .object(let fields) in items {
                guard case .string(let title)? = fields["title"], case .string(let name)? = fields["style"],
                    let buttonStyle = ButtonStyle(rawValue: name)
                else { throw Corrupt(description: "bad button in alert \(idText)") }
                buttons.append(Button(title: title, style: buttonStyle))
            }
        }
        func time(_ index: Int) throws -> Timestamp? { try number(index).map(Timestamp.init(milliseconds:)) }
        var result: AlertResult?
        if state.isTerminal {
            let index = try number(16).map(Int.init)
            let button = index.flatMap { buttons.indices.contains($0) ? buttons[$0] : nil }
            result = AlertResult(
                outcome: state, button: button?.title, buttonIndex: button == nil ? nil : index, cancelled: button?.style == .cancel,
                decidedBy: try text(17))
        }
        guard let createdAt = try time(11), let expiresAt = try time(14) else {
            throw Corrupt(description: "alert \(idText) lacks created_at or expires_at")
        }
        // Absent from a notification of an instance older than votes (a rolling upgrade): 1 and none.
        let quorum = Int(try number(18) ?? 1)
        var stored: [Vote]?
        if let text = try text(19) {
            guard let votes = Vote.votes(from: try JSONParser.parse(Array(text.utf8))) else {
                throw Corrupt(description: "bad votes in alert \(idText)")
            }
            stored = votes
        }
        let votes = Alert.votes(stored: stored, result: result, decidedAt: try time(13))
        result = Alert.result(result, votes: votes)
        // Absent from a notification of an instance older than fields (a rolling upgrade): none.
        var fields: [AlertField] = []
        if let text = try text(21) {
            guard let parsed = AlertField.fields(from: try JSONParser.parse(Array(text.utf8))) else {
                throw Corrupt(description: "bad fields in alert \(idText)")
            }
            fields = parsed
        }
        // Absent from a notification of an instance older than escalation (SPEC §12): none.
        var escalation: [EscalationStep] = []
        if let text = try text(22) {
            guard let steps = EscalationStep.steps(from: try JSONParser.parse(Array(text.utf8))) else {
                throw Corrupt(description: "bad escalation in alert \(idText)")
            }
            escalation = steps
        }
        var escalatedTo: [Escalation] = []
        if let text = try text(23) {
            guard let taken = Escalation.rows(from: try JSONParser.parse(Array(text.utf8))) else {
                throw Corrupt(description: "bad escalations of alert \(idText)")
            }
            escalatedTo = taken
        }
        return Alert(
            id: id, client: try required(text(1), "client"), title: try required(text(5), "title"),
            message: try text(6), style: style, buttons: buttons, priority: Int(try required(number(4), "priority")),
            callbackURL: try text(9),
            // Written by alertd from a validated object: no need to parse it again.
            metadata: try text(10).map { CompactJSON(trusting: Array($0.utf8)) },
            state: state, createdAt: createdAt, displayedAt: try time(12), decidedAt: try time(13), expiresAt: expiresAt,
            dismissAfterMilliseconds: try number(15), result: result, sequence: try required(number(2), "seq"), quorum: quorum,
            votes: votes, postedBy: try text(20), fields: fields, escalation: escalation, escalatedTo: escalatedTo)
    }
}

extension AlertRow {
    /// Writes `alert` as one JSON object of `json_to_recordset` (the columns of
    /// ``tableColumns``, `escalated`, `dismiss_at`, `escalate_at`, `version` and, when given,
    /// `size`): the body of an object already begun. `dismiss_at` is its own client's
    /// display's (SPEC §12: each step's row has its own); `escalated`, which the alerts
    /// table has no column for, travels in notifications.
    static func write(_ alert: Alert, version: Int64, size: Int? = nil, into json: inout JSONWriter) {
        func text(_ key: StaticString, _ value: String?) {
            json.key(key)
            json.string(value)
        }
        func number(_ key: StaticString, _ value: Int64?) {
            json.key(key)
            json.int64(value)
        }
        var buttons = JSONWriter(capacity: 64)
        buttons.buttons(alert.buttons)
        text("id", alert.id.description)
        text("client", alert.client)
        number("seq", alert.sequence)
        text("state", alert.state.rawValue)
        number("priority", Int64(alert.priority))
        text("title", alert.title)
        text("message", alert.message)
        text("style", alert.style.rawValue)
        text("buttons", String(decoding: buttons.bytes, as: UTF8.self))
        text("callback_url", alert.callbackURL)
        text("metadata", alert.metadata.map { String(decoding: $0.bytes, as: UTF8.self) })
        number("created_at", alert.createdAt.milliseconds)
        number("displayed_at", alert.displayedAt?.milliseconds)
        number("decided_at", alert.decidedAt?.milliseconds)
        number("expires_at", alert.expiresAt.milliseconds)
        number("dismiss_after_ms", alert.dismissAfterMilliseconds)
        number("button_index", alert.result?.buttonIndex.map(Int64.init))
        text("decided_by", alert.result?.decidedBy)
        number("quorum", Int64(alert.quorum))
        if alert.votes.isEmpty {
            text("votes", nil)
        } else {
            var votes = JSONWriter(capacity: 96 * alert.votes.count)
            votes.votes(alert.votes)
            text("votes", String(decoding: votes.bytes, as: UTF8.self))
        }
        text("posted_by", alert.postedBy)
        if alert.fields.isEmpty {
            text("fields", nil)
        } else {
            var fields = JSONWriter(capacity: 128 * alert.fields.count)
            fields.fields(alert.fields)
            text("fields", String(decoding: fields.bytes, as: UTF8.self))
        }
        if alert.escalation.isEmpty {
            text("escalation", nil)
        } else {
            var steps = JSONWriter(capacity: 48 * alert.escalation.count)
            steps.escalation(alert.escalation)
            text("escalation", String(decoding: steps.bytes, as: UTF8.self))
        }
        if alert.escalatedTo.isEmpty {
            text("escalated", nil)
        } else {
            var taken = JSONWriter(capacity: 64 * alert.escalatedTo.count)
            taken.beginArray()
            for (step, escalation) in alert.escalatedTo.enumerated() {
                taken.beginArray()
                taken.int(step)
                taken.string(escalation.client)
                taken.int64(escalation.at.milliseconds)
                taken.int64(escalation.sequence)
                taken.int64(escalation.displayedAt?.milliseconds)
                taken.endArray()
            }
            taken.endArray()
            text("escalated", String(decoding: taken.bytes, as: UTF8.self))
        }
        number("dismiss_at", alert.ownDismissAt?.milliseconds)
        number("escalate_at", alert.nextEscalation?.at.milliseconds)
        number("version", version)
        if let size { number("size", Int64(size)) }
    }
}

extension PostgresConnection {
    /// Runs a statement that returns rows and reads them to the end. Its error arrives with
    /// its rows: a statement whose rows are left unread fails silently, and the COMMIT that
    /// follows ends its transaction as a ROLLBACK without an error.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}

extension Array where Element == UInt8 {
    /// As `bytea` (a `[UInt8]` bind would be `"char"[]`).
    var bytea: ByteBuffer { ByteBuffer(bytes: self) }

    /// The bytes of a `bytea` cell.
    init(bytea buffer: ByteBuffer) { self = Array(buffer.readableBytesView) }
}
