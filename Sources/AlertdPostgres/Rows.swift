import AlertdCore
import AlertdWire
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

    static func alert(_ row: PostgresRow) throws -> Alert {
        let cells = row.makeRandomAccess()
        let idText = try cells[0].decode(String.self)
        guard let id = AlertID(idText) else { throw Corrupt(description: "bad alert id \(idText)") }
        guard let state = AlertState(rawValue: try cells[3].decode(String.self)),
            let style = AlertStyle(rawValue: try cells[7].decode(String.self))
        else { throw Corrupt(description: "bad state or style in alert \(idText)") }
        var buttons: [Button] = []
        if case .array(let items) = try JSONParser.parse(Array(try cells[8].decode(String.self).utf8)) {
            for case .object(let fields) in items {
                guard case .string(let title)? = fields["title"], case .string(let name)? = fields["style"],
                    let buttonStyle = ButtonStyle(rawValue: name)
                else { throw Corrupt(description: "bad button in alert \(idText)") }
                buttons.append(Button(title: title, style: buttonStyle))
            }
        }
        func time(_ index: Int) throws -> Timestamp? { try cells[index].decode(Int64?.self).map(Timestamp.init(milliseconds:)) }
        var result: AlertResult?
        if state.isTerminal {
            let index = try cells[16].decode(Int?.self)
            let button = index.flatMap { buttons.indices.contains($0) ? buttons[$0] : nil }
            result = AlertResult(
                outcome: state, button: button?.title, buttonIndex: button == nil ? nil : index, cancelled: button?.style == .cancel,
                decidedBy: try cells[17].decode(String?.self))
        }
        guard let createdAt = try time(11), let expiresAt = try time(14) else {
            throw Corrupt(description: "alert \(idText) lacks created_at or expires_at")
        }
        return Alert(
            id: id, client: try cells[1].decode(String.self), title: try cells[5].decode(String.self),
            message: try cells[6].decode(String?.self), style: style, buttons: buttons, priority: try cells[4].decode(Int.self),
            callbackURL: try cells[9].decode(String?.self),
            // Written by alertd from a validated object: no need to parse it again.
            metadata: try cells[10].decode(String?.self).map { CompactJSON(trusting: Array($0.utf8)) },
            state: state, createdAt: createdAt, displayedAt: try time(12), decidedAt: try time(13), expiresAt: expiresAt,
            dismissAfterMilliseconds: try cells[15].decode(Int64?.self), result: result, sequence: try cells[2].decode(Int64.self))
    }
}

extension AlertRow {
    /// Inserts or updates every alert in one statement: the rows travel as one
    /// JSON array (`json_to_recordset`), one round trip however many there are.
    static func upsert(_ alerts: [Alert], version: Int64) -> PostgresQuery {
        var json = JSONWriter(capacity: 512 * alerts.count)
        json.beginArray()
        func text(_ key: StaticString, _ value: String?) {
            json.key(key)
            json.string(value)
        }
        func number(_ key: StaticString, _ value: Int64?) {
            json.key(key)
            json.int64(value)
        }
        for alert in alerts {
            var buttons = JSONWriter(capacity: 64)
            buttons.buttons(alert.buttons)
            json.beginObject()
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
            json.endObject()
        }
        json.endArray()
        let rows = String(decoding: json.bytes, as: UTF8.self)
        return """
            INSERT INTO alerts (\(unescaped: columns), dismiss_at, version)
            SELECT \(unescaped: columns), dismiss_at, \(version) FROM json_to_recordset(\(rows)::json) AS r(
                id text, client text, seq bigint, state text, priority integer, title text, message text, style text,
                buttons text, callback_url text, metadata text, created_at bigint, displayed_at bigint, decided_at bigint,
                expires_at bigint, dismiss_after_ms bigint, button_index integer, decided_by text, dismiss_at bigint)
            ON CONFLICT (id) DO UPDATE SET state = excluded.state, displayed_at = excluded.displayed_at,
                decided_at = excluded.decided_at, button_index = excluded.button_index, decided_by = excluded.decided_by,
                dismiss_at = excluded.dismiss_at, version = excluded.version
            """
    }
}

extension Array where Element == UInt8 {
    /// As `bytea` (a `[UInt8]` bind would be `"char"[]`).
    var bytea: ByteBuffer { ByteBuffer(bytes: self) }

    /// The bytes of a `bytea` cell.
    init(bytea buffer: ByteBuffer) { self = Array(buffer.readableBytesView) }
}
