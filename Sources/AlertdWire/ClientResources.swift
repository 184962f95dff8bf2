/// `GET /v1/clients/{client}/alerts`: one page and the cursor of the next (nil on the last page).
public struct AlertPage: Sendable, Hashable, Codable {
    /// The alerts of this page.
    public var alerts: [AlertResource]
    /// Pass as `cursor` for the next page; nil on the last one.
    public var nextCursor: String?

    /// A value with every field given.
    public init(alerts: [AlertResource], nextCursor: String?) {
        self.alerts = alerts
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey {
        case alerts
        case nextCursor = "next_cursor"
    }

    /// Writes the page: `{"alerts":[…],"next_cursor":…}`.
    public func write(into json: inout JSONWriter) {
        Self.write(nextCursor: nextCursor, into: &json) { json in
            for alert in alerts { alert.write(into: &json) }
        }
    }

    /// The one writer of a page: `alerts` writes each alert resource in turn (the daemon
    /// writes them from its domain alerts, the decoded page from its resources).
    public static func write(nextCursor: String?, into json: inout JSONWriter, alerts: (inout JSONWriter) -> Void) {
        json.beginObject()
        json.key(CodingKeys.alerts.rawValue)
        json.beginArray()
        alerts(&json)
        json.endArray()
        json.key(CodingKeys.nextCursor.rawValue)
        json.string(nextCursor)
        json.endObject()
    }
}

/// One client in `GET /v1/clients`.
public struct ClientSummary: Sendable, Hashable, Codable {
    /// The client (display target) it belongs to.
    public var client: String
    /// Displayed plus queued alerts.
    public var pending: Int
    /// The displayed alert's id, nil when nothing is displayed.
    public var displayed: String?

    /// A value with every field given.
    public init(client: String, pending: Int, displayed: String?) {
        self.client = client
        self.pending = pending
        self.displayed = displayed
    }

    /// `{"client":…,"pending":…,"displayed":…}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("client")
        json.string(client)
        json.key("pending")
        json.int(pending)
        json.key("displayed")
        json.string(displayed)
        json.endObject()
    }
}

/// `GET /v1/clients`: one page of the clients the token may see, by id, and the
/// cursor of the next page (nil on the last).
public struct ClientList: Sendable, Hashable, Codable {
    public var clients: [ClientSummary]
    /// Pass as `cursor` for the next page; nil on the last one.
    public var nextCursor: String?

    /// A value with every field given.
    public init(clients: [ClientSummary], nextCursor: String?) {
        self.clients = clients
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey {
        case clients
        case nextCursor = "next_cursor"
    }

    /// Writes the page as the daemon answers it: `{"clients":[…],"next_cursor":…}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key(CodingKeys.clients.rawValue)
        json.beginArray()
        for summary in clients { summary.write(into: &json) }
        json.endArray()
        json.key(CodingKeys.nextCursor.rawValue)
        json.string(nextCursor)
        json.endObject()
    }
}
