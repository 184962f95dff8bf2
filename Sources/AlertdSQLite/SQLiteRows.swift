import AlertdCore
import AlertdWire
import GRDB
import GRDBSQLite

/// An alert as one row of `alerts`, both ways.
extension SQLiteStore {
    /// The columns `alert(from:)` reads, by position (reading by name searches the row each time).
    /// The last two: the alert's escalation policy and the steps it took (SPEC §12), those
    /// as one JSON array of `[step, client, at, seq, displayed_at]` from `escalations`.
    static let columns = """
        id, client, state, priority, title, message, style, buttons, callback_url, metadata, created_at, \
        displayed_at, decided_at, expires_at, dismiss_after_ms, button_index, decided_by, quorum, votes, posted_by, fields, \
        escalation, (SELECT json_group_array(json_array(e.step, e.client, e.at, e.seq, e.displayed_at)) \
        FROM escalations e WHERE e.alert_id = alerts.id)
        """

    static let upsertAlert = """
        INSERT OR REPLACE INTO alerts (id, client, state, priority, title, message, style, buttons, callback_url,
            metadata, created_at, displayed_at, decided_at, expires_at, dismiss_after_ms, button_index, decided_by, quorum, votes,
            posted_by, size, fields, escalation)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// One step an alert took (SPEC §12), written whole with the alert each time.
    static let upsertEscalation = """
        INSERT OR REPLACE INTO escalations (alert_id, step, client, at, seq, displayed_at) VALUES (?, ?, ?, ?, ?, ?)
        """

    /// Writes one alert row: its columns bound straight onto the cached statement
    /// with SQLite's own calls. Every post and decision passes here on the store
    /// writer's thread, and building GRDB `StatementArguments` for 17 columns was a
    /// fifth of that thread's time.
    ///
    /// `eventBytes`: the bodies of the events written with it, counted in its `size` (the
    /// bytes its retention holds, `alerts.retention_max_bytes`).
    static func upsert(_ alert: Alert, eventBytes: Int = 0, _ statement: Statement, _ db: Database) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        var column: Int32 = 0
        func text(_ value: String?) {
            column += 1
            guard var value else { return _ = sqlite3_bind_null(handle, column) }
            value.withUTF8 { bytes in bind(bytes) }
        }
        func bytes(_ value: [UInt8]?) {
            column += 1
            guard let value else { return _ = sqlite3_bind_null(handle, column) }
            value.withUnsafeBufferPointer { bytes in bind(bytes) }
        }
        func bind(_ bytes: UnsafeBufferPointer<UInt8>) {
            // SQLITE_TRANSIENT: SQLite copies the bytes before this returns. An empty
            // buffer may have no address; bind an empty string then, not NULL.
            guard let start = bytes.baseAddress, !bytes.isEmpty else {
                return _ = "".withCString { sqlite3_bind_text(handle, column, $0, 0, Self.transient) }
            }
            _ = UnsafeRawPointer(start).withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, column, $0, Int32(bytes.count), Self.transient)
            }
        }
        func integer(_ value: Int64?) {
            column += 1
            _ = value.map { sqlite3_bind_int64(handle, column, $0) } ?? sqlite3_bind_null(handle, column)
        }
        var buttons = JSONWriter(capacity: 64)
        buttons.buttons(alert.buttons)
        text(alert.id.description)
        text(alert.client)
        text(alert.state.rawValue)
        integer(Int64(alert.priority))
        text(alert.title)
        text(alert.message)
        text(alert.style.rawValue)
        bytes(buttons.bytes)
        text(alert.callbackURL)
        bytes(alert.metadata?.bytes)
        integer(alert.createdAt.milliseconds)
        integer(alert.displayedAt?.milliseconds)
        integer(alert.decidedAt?.milliseconds)
        integer(alert.expiresAt.milliseconds)
        integer(alert.dismissAfterMilliseconds)
        integer(alert.result?.buttonIndex.map(Int64.init))
        text(alert.result?.decidedBy)
        integer(Int64(alert.quorum))
        if alert.votes.isEmpty {
            bytes(nil)
        } else {
            var votes = JSONWriter(capacity: 96 * alert.votes.count)
            votes.votes(alert.votes)
            bytes(votes.bytes)
        }
        text(alert.postedBy)
        integer(Int64(alert.renderedFootprint + eventBytes))
        // `fields` (SPEC §13): their JSON array, NULL for none (most alerts).
        if alert.fields.isEmpty {
            bytes(nil)
        } else {
            var fields = JSONWriter(capacity: 128 * alert.fields.count)
            fields.fields(alert.fields)
            bytes(fields.bytes)
        }
        // `escalation` (SPEC §12): the policy's JSON array, NULL for none.
        if alert.escalation.isEmpty {
            bytes(nil)
        } else {
            var steps = JSONWriter(capacity: 48 * alert.escalation.count)
            steps.escalation(alert.escalation)
            bytes(steps.bytes)
        }
        let code = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard code == SQLITE_DONE else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                sql: upsertAlert)
        }
    }

    /// SQLite's "copy the value now" destructor.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    struct CorruptRow: Error, CustomStringConvertible {
        let description: String
    }

    static func alert(from row: Row) throws -> Alert {
        let idText: String = row[0]
        guard let id = AlertID(idText) else { throw CorruptRow(description: "bad alert id \(idText)") }
        let stateText: String = row[2]
        let styleText: String = row[6]
        guard let state = AlertState(rawValue: stateText), let style = AlertStyle(rawValue: styleText) else {
            throw CorruptRow(description: "bad state or style in alert \(idText)")
        }
        let buttonsText: String = row[7]
        var buttons: [Button] = []
        if case .array(let items) = try JSONParser.parse(Array(buttonsText.utf8)) {
            buttons.reserveCapacity(items.count)
            for case .object(let fields) in items {
                guard case .string(let title)? = fields["title"], case .string(let styleName)? = fields["style"],
                    let buttonStyle = ButtonStyle(rawValue: styleName)
                else { throw CorruptRow(description: "bad button in alert \(idText)") }
                buttons.append(Button(title: title, style: buttonStyle))
            }
        }
        // Written by this store from a validated object: no need to parse it again.
        let metadata = (row[9] as String?).map { CompactJSON(trusting: Array($0.utf8)) }
        func time(_ column: Int) -> Timestamp? {
            (row[column] as Int64?).map { Timestamp(milliseconds: $0) }
        }
        let quorum: Int = row[17]
        var stored: [Vote]?
        if let text = row[18] as String? {
            guard let votes = Vote.votes(from: try JSONParser.parse(Array(text.utf8))) else {
                throw CorruptRow(description: "bad votes in alert \(idText)")
            }
            stored = votes
        }
        var fields: [AlertField] = []
        if let text = row[20] as String? {
            guard let parsed = AlertField.fields(from: try JSONParser.parse(Array(text.utf8))) else {
                throw CorruptRow(description: "bad fields in alert \(idText)")
            }
            fields = parsed
        }
        var result: AlertResult?
        if state.isTerminal {
            let index: Int? = row[15]
            let button = index.flatMap { buttons.indices.contains($0) ? buttons[$0] : nil }
            result = AlertResult(
                outcome: state, button: button?.title, buttonIndex: button == nil ? nil : index,
                cancelled: button?.style == .cancel, decidedBy: row[16])
        }
        guard let createdAt = time(10), let expiresAt = time(13) else {
            throw CorruptRow(description: "alert \(idText) lacks created_at or expires_at")
        }
        let votes = Alert.votes(stored: stored, result: result, decidedAt: time(12))
        result = Alert.result(result, votes: votes)
        var escalation: [EscalationStep] = []
        if let text = row[21] as String? {
            guard let steps = EscalationStep.steps(from: try JSONParser.parse(Array(text.utf8))) else {
                throw CorruptRow(description: "bad escalation in alert \(idText)")
            }
            escalation = steps
        }
        var escalatedTo: [Escalation] = []
        if let text = row[22] as String?, text != "[]" {
            guard let taken = Escalation.rows(from: try JSONParser.parse(Array(text.utf8))) else {
                throw CorruptRow(description: "bad escalations of alert \(idText)")
            }
            escalatedTo = taken
        }
        return Alert(
            id: id, client: row[1], title: row[4], message: row[5], style: style,
            buttons: buttons, priority: row[3], callbackURL: row[8], metadata: metadata,
            state: state, createdAt: createdAt, displayedAt: time(11),
            decidedAt: time(12), expiresAt: expiresAt,
            dismissAfterMilliseconds: row[14], result: result, quorum: quorum, votes: votes, postedBy: row[19], fields: fields,
            escalation: escalation, escalatedTo: escalatedTo)
    }

    /// Writes the steps an alert took (SPEC §12), one row each.
    static func upsertEscalations(of alert: Alert, _ db: Database) throws {
        guard !alert.escalatedTo.isEmpty else { return }
        let statement = try db.cachedStatement(sql: upsertEscalation)
        for (step, escalation) in alert.escalatedTo.enumerated() {
            try statement.execute(arguments: [
                alert.id.description, step, escalation.client, escalation.at.milliseconds, escalation.sequence,
                escalation.displayedAt?.milliseconds,
            ])
        }
    }
}
