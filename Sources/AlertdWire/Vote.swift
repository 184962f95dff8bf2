/// One decider's choice on an alert that needs several (SPEC §10, `quorum` above 1), or
/// the one choice that answered an alert of `quorum` 1:
/// `{"decided_by":"alice","button":"Deploy","button_index":0,"at":"…"}`.
public struct Vote: Sendable, Hashable, Codable {
    /// The name of the token that chose; nil without tokens (then only an alert of
    /// `quorum` 1 can be answered).
    public var decidedBy: String?
    /// The chosen button's title.
    public var button: String
    /// The chosen button's index in `buttons`.
    public var buttonIndex: Int
    /// When the vote was made.
    public var at: Timestamp
    /// The reason the decider gave (SPEC §13); nil when none.
    public var comment: String?
    /// The values of the alert's `fields` the decider gave, by field name (SPEC §13); empty when none.
    public var values: [String: String]

    /// A vote with every field given.
    public init(
        decidedBy: String?, button: String, buttonIndex: Int, at: Timestamp, comment: String? = nil, values: [String: String] = [:]
    ) {
        self.decidedBy = decidedBy
        self.button = button
        self.buttonIndex = buttonIndex
        self.at = at
        self.comment = comment
        self.values = values
    }

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case decidedBy = "decided_by"
        case button
        case buttonIndex = "button_index"
        case at, comment, values
    }

    /// Every member name a vote has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// Decodes a vote; a daemon older than answers with words (SPEC §13) sends no `comment`
    /// or `values`: none then.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        decidedBy = try container.decodeIfPresent(String.self, forKey: .decidedBy)
        button = try container.decode(String.self, forKey: .button)
        buttonIndex = try container.decode(Int.self, forKey: .buttonIndex)
        at = try container.decode(Timestamp.self, forKey: .at)
        comment = try container.decodeIfPresent(String.self, forKey: .comment)
        values = try container.decodeIfPresent([String: String].self, forKey: .values) ?? [:]
    }

    /// Encodes every member, `null` included, as the daemon writes them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(decidedBy, forKey: .decidedBy)
        try container.encode(button, forKey: .button)
        try container.encode(buttonIndex, forKey: .buttonIndex)
        try container.encode(at, forKey: .at)
        try container.encode(comment, forKey: .comment)
        try container.encode(values, forKey: .values)
    }

    /// Writes the vote as the daemon writes it, members in ``memberNames`` order.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("decided_by")
        json.string(decidedBy)
        json.key("button")
        json.string(button)
        json.key("button_index")
        json.int(buttonIndex)
        json.key("at")
        json.timestamp(at)
        json.key("comment")
        json.string(comment)
        json.key("values")
        json.values(values)
        json.endObject()
    }

    /// Reads votes as ``JSONWriter/votes(_:)`` writes them (a store's column, a resource's
    /// member); nil when `value` is not such an array.
    public static func votes(from value: JSONValue) -> [Vote]? {
        guard case .array(let items) = value else { return nil }
        var votes: [Vote] = []
        votes.reserveCapacity(items.count)
        for item in items {
            guard case .object(let fields) = item, case .string(let button)? = fields["button"],
                case .number(let index)? = fields["button_index"], let buttonIndex = index.wholeInt,
                case .string(let time)? = fields["at"], let at = Timestamp(rfc3339: time)
            else { return nil }
            let decidedBy: String?
            switch fields["decided_by"] {
            case .string(let name)?: decidedBy = name
            case .null?, nil: decidedBy = nil
            default: return nil
            }
            // Absent from votes stored before answers with words (SPEC §13): none.
            let comment: String?
            switch fields["comment"] {
            case .string(let text)?: comment = text
            case .null?, nil: comment = nil
            default: return nil
            }
            guard let values = Self.values(from: fields["values"]) else { return nil }
            votes.append(Vote(decidedBy: decidedBy, button: button, buttonIndex: buttonIndex, at: at, comment: comment, values: values))
        }
        return votes
    }
}

extension Vote {
    /// The values of a field's answer as ``JSONWriter/values(_:)`` writes them: `{}` (or
    /// absent, or null) for none; nil when `value` is not an object of strings.
    public static func values(from value: JSONValue?) -> [String: String]? {
        switch value {
        case nil, .null?: return [:]
        case .object(let members)?:
            var values: [String: String] = [:]
            for (name, value) in members {
                guard case .string(let text) = value else { return nil }
                values[name] = text
            }
            return values
        default: return nil
        }
    }
}

extension JSONWriter {
    /// `[{"decided_by":…,"button":…,"button_index":…,"at":…,"comment":…,"values":{…}}, …]`:
    /// how votes look in the API and in the stores.
    public mutating func votes(_ votes: [Vote]) {
        beginArray()
        for vote in votes { vote.write(into: &self) }
        endArray()
    }

    /// `{"ticket":"OPS-123"}`: the values of an answer's fields (SPEC §13), names sorted so
    /// that the same values are always the same bytes.
    public mutating func values(_ values: [String: String]) {
        beginObject()
        for name in values.keys.sorted() {
            key(name)
            string(values[name]!)
        }
        endObject()
    }
}
