import AlertdCore
import AlertdWire
import Logging
import PostgresNIO

/// An alert as one row of `alerts`, both ways.
enum AlertRow {
    /// The columns ``alert(_:)`` reads, by position.
    static let columns = """
        id, client, seq, state, priority, title, message, style, buttons, callback_url, metadata, created_at, \
        displayed_at, decided_at, expires_at, dismiss_after_ms, button_index, decided_by
        """

    struct Corrupt: Error, CustomStringConvertible {
        let description: String
    }

    static func alert(_ row: PostgresRow) throws -> Alert { try alert(row.makeRandomAccess(), from: 0) }

    /// The alert in `row`'s cells from `offset` on, in ``columns``' order.
    static func alert(_ row: PostgresRandomAccessRow, from offset: Int) throws -> Alert {
        func cell(_ index: Int) -> PostgresCell { row[offset + index] }
        let idText = try cell(0).decode(String.self)
        guard let id = AlertID(idText) else { throw Corrupt(description: "bad alert id \(idText)") }
        guard let state = AlertState(rawValue: try cell(3).decode(String.self)),
            let style = AlertStyle(rawValue: try cell(7).decode(String.self))
        else { throw Corrupt(description: "bad state or style in alert \(idText)") }
        var buttons: [Button] = []
        if case .array(let items) = try JSONParser.parse(Array(try cell(8).decode(String.self).utf8)) {
            for case .object(let fields) in items {
                guard case .string(let title)? = fields["title"], case .string(let name)? = fields["style"],
                    let buttonStyle = ButtonStyle(rawValue: name)
                else { throw Corrupt(description: "bad button in alert \(idText)") }
                buttons.append(Button(title: title, style: buttonStyle))
            }
        }
        func time(_ index: Int) throws -> Timestamp? { try cell(index).decode(Int64?.self).map(Timestamp.init(milliseconds:)) }
        var result: AlertResult?
        if state.isTerminal {
            let index = try cell(16).decode(Int?.self)
            let button = index.flatMap { buttons.indices.contains($0) ? buttons[$0] : nil }
            result = AlertResult(
                outcome: state, button: button?.title, buttonIndex: button == nil ? nil : index, cancelled: button?.style == .cancel,
                decidedBy: try cell(17).decode(String?.self))
        }
        guard let createdAt = try time(11), let expiresAt = try time(14) else {
            throw Corrupt(description: "alert \(idText) lacks created_at or expires_at")
        }
        return Alert(
            id: id, client: try cell(1).decode(String.self), title: try cell(5).decode(String.self),
            message: try cell(6).decode(String?.self), style: style, buttons: buttons, priority: try cell(4).decode(Int.self),
            callbackURL: try cell(9).decode(String?.self),
            // Written by alertd from a validated object: no need to parse it again.
            metadata: try cell(10).decode(String?.self).map { CompactJSON(trusting: Array($0.utf8)) },
            state: state, createdAt: createdAt, displayedAt: try time(12), decidedAt: try time(13), expiresAt: expiresAt,
            dismissAfterMilliseconds: try cell(15).decode(Int64?.self), result: result, sequence: try cell(2).decode(Int64.self))
    }
}

extension AlertRow {
    /// Writes `alert` as one JSON object of `json_to_recordset` (the columns of
    /// ``columns``, `dismiss_at` and `version`): the body of an object already begun.
    static func write(_ alert: Alert, version: Int64, into json: inout JSONWriter) {
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
        number("dismiss_at", alert.dismissAt?.milliseconds)
        number("version", version)
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
