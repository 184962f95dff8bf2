public import AlertdWire

/// The alert resource of §2, written straight to JSON bytes by the one writer of its
/// shape (AlertdWire's `AlertResource.write`): what the API answers, what `current`
/// serves and what a callback event carries. The SDK's Codable `AlertResource` reads it.
extension Alert {
    /// The resource with its `position` (nil: `null`, as for a terminal alert).
    public func json(position: Int?) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        write(position: position, into: &json)
        return json.bytes
    }

    /// Writes the resource into `json`, with the one writer of its shape (``AlertResource/write(id:client:state:position:title:message:style:buttons:fields:priority:quorum:expiresIn:dismissAfter:callbackURL:metadata:createdAt:displayedAt:decidedAt:expiresAt:votes:result:into:)``).
    public func write(position: Int?, into json: inout JSONWriter) {
        AlertResource.write(
            id: id.description, client: client, state: state, position: position, title: title, message: message, style: style,
            buttons: buttons, fields: fields, priority: priority, quorum: quorum,
            expiresIn: .milliseconds(expiresAt.milliseconds - createdAt.milliseconds),
            dismissAfter: dismissAfterMilliseconds.map(AlertResource.Interval.milliseconds), callbackURL: callbackURL,
            metadata: metadata, createdAt: createdAt, displayedAt: displayedAt, decidedAt: decidedAt, expiresAt: expiresAt,
            votes: votes, result: result, into: &json)
    }
}
