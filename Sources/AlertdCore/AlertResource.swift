public import AlertdWire

/// The alert resource of §2, written straight to JSON bytes: what the API
/// answers, what `current` serves and what a callback event carries. The
/// SDK's Codable `AlertResource` (AlertdWire) reads it; a property test holds
/// the two to the same bytes.
extension Alert {
    /// The resource with its `position` (nil: `null`, as for a terminal alert).
    public func json(position: Int?) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        write(position: position, into: &json)
        return json.bytes
    }

    /// Writes the resource into `json`.
    public func write(position: Int?, into json: inout JSONWriter) {
        let alert = self
        json.beginObject()
        json.key("id")
        json.string(alert.id.description)
        json.key("client")
        json.string(alert.client)
        json.key("state")
        json.string(alert.state.rawValue)
        json.key("position")
        if let position, alert.isPending { json.int(position) } else { json.null() }
        json.key("title")
        json.string(alert.title)
        json.key("message")
        json.string(alert.message)
        json.key("style")
        json.string(alert.style.rawValue)
        json.key("buttons")
        json.buttons(alert.buttons)
        json.key("priority")
        json.int(alert.priority)
        json.key("expires_in")
        Self.seconds(alert.expiresAt.milliseconds - alert.createdAt.milliseconds, into: &json)
        json.key("dismiss_after")
        if let ms = alert.dismissAfterMilliseconds { Self.seconds(ms, into: &json) } else { json.null() }
        json.key("callback_url")
        json.string(alert.callbackURL)
        json.key("metadata")
        if let metadata = alert.metadata { json.raw(metadata.bytes) } else { json.null() }
        json.key("created_at")
        json.timestamp(alert.createdAt)
        json.key("displayed_at")
        json.timestamp(alert.displayedAt)
        json.key("decided_at")
        json.timestamp(alert.decidedAt)
        json.key("expires_at")
        json.timestamp(alert.expiresAt)
        json.key("result")
        if let result = alert.result {
            json.beginObject()
            json.key("outcome")
            json.string(result.outcome.rawValue)
            json.key("button")
            json.string(result.button)
            json.key("button_index")
            if let index = result.buttonIndex { json.int(index) } else { json.null() }
            json.key("cancelled")
            json.bool(result.cancelled)
            json.key("decided_by")
            json.string(result.decidedBy)
            json.endObject()
        } else {
            json.null()
        }
        json.endObject()
    }

    /// Whole seconds as an integer, otherwise seconds with milliseconds.
    private static func seconds(_ milliseconds: Int64, into json: inout JSONWriter) {
        if milliseconds % 1000 == 0 {
            json.int64(milliseconds / 1000)
        } else {
            json.double(Double(milliseconds) / 1000)
        }
    }
}
