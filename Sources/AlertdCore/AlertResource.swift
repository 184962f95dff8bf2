public import AlertdWire

/// The alert resource of §2, written straight to JSON bytes by the one writer of its
/// shape (AlertdWire's `AlertResource.write`): what the API answers, what `current`
/// serves and what a callback event carries. The SDK's Codable `AlertResource` reads it.
extension Alert {
    /// The resource with its `position` (nil: `null`, as for a terminal alert), in a buffer
    /// of ``renderedFootprint`` bytes: written without growing, and never holding more than
    /// the budget counts for it (a buffer grown by doubling held up to twice its bytes: a
    /// display of the largest alert took 53 KiB, issue 44).
    public func json(position: Int?) -> [UInt8] {
        var json = JSONWriter(capacity: renderedFootprint)
        write(position: position, into: &json)
        return json.bytes
    }

    /// Writes the resource into `json`, with the one writer of its shape (``AlertResource/write(id:client:state:position:title:message:style:buttons:fields:priority:quorum:expiresIn:dismissAfter:callbackURL:metadata:createdAt:displayedAt:decidedAt:expiresAt:postedBy:votes:result:into:)``).
    public func write(position: Int?, into json: inout JSONWriter) {
        AlertResource.write(
            id: id.description, client: client, state: state, position: position, title: title, message: message, style: style,
            buttons: buttons, fields: fields, priority: priority, quorum: quorum,
            expiresIn: .milliseconds(expiresAt.milliseconds - createdAt.milliseconds),
            dismissAfter: dismissAfterMilliseconds.map(AlertResource.Interval.milliseconds), callbackURL: callbackURL,
            metadata: metadata, createdAt: createdAt, displayedAt: displayedAt, decidedAt: decidedAt, expiresAt: expiresAt,
            postedBy: postedBy, votes: votes, escalation: escalation, escalatedTo: escalatedRecords, result: result, into: &json)
    }
}

extension Alert {
    /// At least the bytes of the alert's resource as ``json(position:)`` writes it,
    /// counted without writing it (and never far above: its fixed members are counted at
    /// their longest): its strings as written, with their escapes (a control character
    /// takes six bytes), metadata as posted, every vote twice once terminal (in `votes`
    /// and `result.votes`).
    ///
    /// What a rendered copy of it holds: the displayed alert each client's `current`
    /// serves is kept rendered, and ``AlertBoard`` counts that copy for every pending alert
    /// in `limits.max_pending_bytes` besides the alert itself (issue 44). A store keeps it
    /// as the alert's `size`, which bounds its terminal alerts' bytes
    /// (`alerts.retention_max_bytes`).
    public var renderedFootprint: Int {
        var bytes = Self.renderedFootprint(
            client: client, title: title, message: message, buttons: buttons, callbackURL: callbackURL, metadata: metadata,
            postedBy: postedBy, fields: fields)
        var votes = 0
        for vote in self.votes {
            votes += Self.renderedVote + JSONWriter.quotedLength(vote.decidedBy) + JSONWriter.quotedLength(vote.button)
            votes += Self.renderedWords(comment: vote.comment, values: vote.values)
        }
        bytes += votes
        bytes += Self.renderedEscalation(escalation, taken: escalatedTo)
        if let result {
            bytes += Self.renderedResult + votes + JSONWriter.quotedLength(result.button) + JSONWriter.quotedLength(result.decidedBy)
            bytes += Self.renderedWords(comment: result.comment, values: result.values)
        }
        return bytes
    }

    /// An escalation policy and the steps taken (SPEC §12) as written, beyond the `[]`s
    /// that ``renderedOverhead`` counts: each step's client and numbers at their longest.
    static func renderedEscalation(_ steps: [EscalationStep], taken: [Escalation]) -> Int {
        var bytes = 0
        for step in steps { bytes += renderedStep + JSONWriter.quotedLength(step.to) }
        for entry in taken { bytes += renderedTaken + JSONWriter.quotedLength(entry.client) }
        return bytes
    }

    /// A step besides its client: `{"after":604800.001,"to":},` at its longest (a double's
    /// shortest form up to 24 characters).
    static let renderedStep = 40
    /// A step taken besides its client: `{"client":,"at":"2026-11-21T19:01:00.123Z"},`.
    static let renderedTaken = 48

    /// A choice's `comment` and `values` as written (SPEC §13), beyond the `null` and `{}`
    /// that ``renderedVote`` and ``renderedResult`` count.
    static func renderedWords(comment: String?, values: [String: String]) -> Int {
        var bytes = comment == nil ? 0 : JSONWriter.quotedLength(comment)
        for (name, value) in values { bytes += JSONWriter.quotedLength(name) + JSONWriter.quotedLength(value) + 2 }
        return bytes
    }

    /// The ``renderedFootprint`` of an alert with these fields, no votes and no result
    /// (a draft's, before it is one).
    public static func renderedFootprint(
        client: String, title: String, message: String?, buttons: [Button], callbackURL: String?, metadata: CompactJSON?,
        postedBy: String?, fields: [AlertField] = []
    ) -> Int {
        var bytes = renderedOverhead
        bytes += JSONWriter.quotedLength(client) + JSONWriter.quotedLength(title) + JSONWriter.quotedLength(message)
        bytes += JSONWriter.quotedLength(callbackURL) + (metadata?.bytes.count ?? 4) + JSONWriter.quotedLength(postedBy)
        for button in buttons { bytes += renderedButton + JSONWriter.quotedLength(button.title) }
        for field in fields {
            bytes += renderedField + JSONWriter.quotedLength(field.name) + JSONWriter.quotedLength(field.label)
            bytes += JSONWriter.quotedLength(field.placeholder)
            for title in field.buttons ?? [] { bytes += JSONWriter.quotedLength(title) + 1 }
        }
        return bytes
    }

    /// The members of a resource besides its strings, buttons, votes and result, at their
    /// longest: the names, punctuation, id, state, position, style, numbers and four times,
    /// and `"escalation":[],"escalated_to":[],` (SPEC §12).
    static let renderedOverhead = 528 + 34
    /// A button besides its title: `{"title":,"style":"destructive"},`.
    static let renderedButton = 36
    /// A field besides its name, label, placeholder and button titles:
    /// `{"name":,"label":,"placeholder":,"required":false,"max_length":1000,"buttons":[]},`.
    static let renderedField = 96
    /// A vote besides its decider and button, its words at their least:
    /// `{"decided_by":,"button":,"button_index":15,"at":"…","comment":null,"values":{}},`.
    static let renderedVote = 108
    /// A result besides its button, decider, votes and words: `{"outcome":"withdrawn","button_index":15,…}`.
    static let renderedResult = 148
}
