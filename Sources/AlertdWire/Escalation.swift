/// One step of an escalation policy (SPEC §12): an alert still pending `after` seconds
/// after it was created is also queued on client `to`, as if posted there at that moment.
///
/// ```swift
/// let alert = NewAlert(
///     title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")],
///     escalation: [EscalationStep(after: 300, to: "ops-lead"), EscalationStep(after: 900, to: "cto")])
/// ```
///
/// A client's policy lives in alertd's config (`clients.<id>.escalation`); an alert's own
/// `escalation` replaces it, and `[]` turns it off for that alert.
public struct EscalationStep: Sendable, Hashable, Codable {
    /// Seconds after the alert's creation; each step's greater than the one before, and
    /// below the alert's expiry.
    public var after: Double
    /// The client asked next: a valid client id other than the alert's own.
    public var to: String

    /// A step `after` seconds to client `to`.
    public init(after: Double, to: String) {
        self.after = after
        self.to = to
    }

    /// At most this many steps per policy.
    public static let limit = 5

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case after, to
    }

    /// Every member name a step has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// `{"after":300,"to":"ops-lead"}`: whole seconds as an integer.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("after")
        json.seconds(after)
        json.key("to")
        json.string(to)
        json.endObject()
    }

    /// Reads steps as ``JSONWriter/escalation(_:)`` writes them (a store's column); nil when
    /// `value` is not such an array.
    public static func steps(from value: JSONValue) -> [EscalationStep]? {
        guard case .array(let items) = value else { return nil }
        var steps: [EscalationStep] = []
        for item in items {
            guard case .object(let fields) = item, case .number(let after)? = fields["after"], case .string(let to)? = fields["to"]
            else { return nil }
            steps.append(EscalationStep(after: after.double, to: to))
        }
        return steps
    }
}

/// One escalation step taken (the alert resource's `escalated_to`, SPEC §12): the alert was
/// also queued on `client` at `at`.
public struct EscalatedTo: Sendable, Hashable, Codable {
    /// The client it was queued on besides its own.
    public var client: String
    /// When the step was taken.
    public var at: Timestamp

    /// A step taken to `client` at `at`.
    public init(client: String, at: Timestamp) {
        self.client = client
        self.at = at
    }

    /// The member names, in the order the daemon writes them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case client, at
    }

    /// Every member name an entry has, in the order the daemon writes them.
    public static var memberNames: [String] { CodingKeys.allCases.map(\.rawValue) }

    /// `{"client":"ops-lead","at":"…"}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("client")
        json.string(client)
        json.key("at")
        json.timestamp(at)
        json.endObject()
    }
}

extension JSONWriter {
    /// `[{"after":300,"to":"ops-lead"}, …]`: an escalation policy as the API and the stores write it.
    public mutating func escalation(_ steps: [EscalationStep]) {
        beginArray()
        for step in steps { step.write(into: &self) }
        endArray()
    }

    /// `[{"client":"ops-lead","at":"…"}, …]`: the steps an alert took.
    public mutating func escalatedTo(_ entries: [EscalatedTo]) {
        beginArray()
        for entry in entries { entry.write(into: &self) }
        endArray()
    }
}
