/// An object that keeps its members in input order and answers lookups by key.
///
/// Keys are unique. Equality ignores member order, as JSON does: `{"a":1,"b":2}`
/// equals `{"b":2,"a":1}`; iteration and ``keys`` follow the order of insertion.
///
/// ```swift
/// let object: JSONObject = ["title": "Disk full", "level": 2]
/// object["title"]   // .string("Disk full")
/// object.keys       // ["title", "level"]
/// ```
public struct JSONObject: Sendable, Hashable, Sequence {
    /// One member.
    public typealias Element = (key: String, value: JSONValue)

    /// Objects with more members than this get a hash index; smaller ones are scanned.
    static var linearLimit: Int { 12 }

    /// One stored member: a struct rather than the `Element` tuple, so copies and
    /// destruction are specialized instead of going through generic tuple witnesses.
    struct Member {
        var key: String
        var value: JSONValue
    }

    private var members: [Member]
    /// Member position by key; only present when `members.count > linearLimit`.
    private var index: [String: Int]?

    /// Creates an object from members in order. When a key repeats, the later value
    /// replaces the earlier one, which keeps its position.
    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = []
        self.index = nil
        self.members.reserveCapacity(members.count)
        for member in members {
            self[member.key] = member.value
        }
    }

    /// Creates an object from members already known to have distinct keys.
    init(uniqueMembers members: [Member], index: [String: Int]?) {
        self.members = members
        self.index = index
        if index == nil && members.count > Self.linearLimit {
            self.index = Self.makeIndex(members)
        }
    }

    /// Member position (counted from the first of `members`) by key.
    static func makeIndex(_ members: some Collection<Member>) -> [String: Int] {
        var index: [String: Int] = [:]
        index.reserveCapacity(members.count)
        for (i, member) in members.enumerated() { index[member.key] = i }
        return index
    }

    /// The position of the member named `key`.
    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return members.firstIndex { $0.key == key }
    }

    /// The value of the member named `key`, or `nil` when there is none.
    ///
    /// Setting a value replaces the member in place or appends a new one;
    /// setting `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let i = position(of: key) else { return nil }
            return members[i].value
        }
        set {
            if let i = position(of: key) {
                if let newValue {
                    members[i].value = newValue
                } else {
                    members.remove(at: i)
                    index = members.count > Self.linearLimit ? Self.makeIndex(members) : nil
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
                if index != nil {
                    index![key] = members.count - 1
                } else if members.count > Self.linearLimit {
                    index = Self.makeIndex(members)
                }
            }
        }
    }

    /// The member names in order.
    public var keys: [String] { members.map(\.key) }

    /// The number of members.
    public var count: Int { members.count }

    /// `true` when the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The number of members.
    public var underestimatedCount: Int { members.count }

    /// Iterates the members in order.
    public func makeIterator() -> Iterator {
        Iterator(base: members.makeIterator())
    }

    /// Iterates the members of an object in order.
    public struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[Member]>

        /// The next member, or `nil` after the last.
        public mutating func next() -> (key: String, value: JSONValue)? {
            guard let member = base.next() else { return nil }
            return (key: member.key, value: member.value)
        }
    }

    /// Whether both objects have the same members, in any order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (i, member) in lhs.members.enumerated() {
            // Fast path: same key at the same position.
            if rhs.members[i].key == member.key {
                guard rhs.members[i].value == member.value else { return false }
            } else {
                guard let value = rhs[member.key], value == member.value else { return false }
            }
        }
        return true
    }

    /// Hashes the members without regard to their order, to agree with `==`.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for member in members {
            var h = Hasher()
            h.combine(member.key)
            h.combine(member.value)
            combined = combined &+ h.finalize()
        }
        hasher.combine(members.count)
        hasher.combine(combined)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// Creates an object with the members in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension JSONObject: Codable {
    /// Decodes an object: as parsed from ``JSONValueDecoder``; from other decoders
    /// through a keyed container, in the order of the decoder's `allKeys`.
    public init(from decoder: any Decoder) throws {
        if let parsed = decoder as? JSONValueDecoding, case .object(let object) = parsed.value {
            self = object
            return
        }
        try self.init(from: decoder.container(keyedBy: JSONCodingKey.self))
    }

    init(from container: KeyedDecodingContainer<JSONCodingKey>) throws {
        var members: [Element] = []
        members.reserveCapacity(container.allKeys.count)
        for key in container.allKeys {
            members.append((key: key.stringValue, value: try container.decode(JSONValue.self, forKey: key)))
        }
        self.init(members)
    }

    /// Encodes the members in order into a keyed container.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONCodingKey.self)
        for member in members {
            try container.encode(member.value, forKey: JSONCodingKey(stringValue: member.key))
        }
    }
}
