public import AlertdWire

/// One escalation step an alert took (SPEC §12): it is also queued on ``client`` since
/// ``at``, in that queue's order from then on. One alert, one id, one result: a decision
/// through any of its clients decides it everywhere.
public struct Escalation: Sendable, Hashable {
    /// The client it was queued on besides its own.
    public var client: String
    /// When the step was taken: when it joined ``client``'s queue.
    public var at: Timestamp
    /// Its place among equal priorities in ``client``'s queue: a shared store's database
    /// sequence, drawn when it joined (0 in the embedded store, where ``at`` gives the order).
    public var sequence: Int64
    /// When it was displayed on ``client`` (nil while queued there).
    public var displayedAt: Timestamp?

    public init(client: String, at: Timestamp, sequence: Int64 = 0, displayedAt: Timestamp? = nil) {
        self.client = client
        self.at = at
        self.sequence = sequence
        self.displayedAt = displayedAt
    }
}

extension Escalation {
    /// Reads the steps an alert took from a store's aggregate of its rows: a JSON array of
    /// `[step, client, at, seq, displayed_at]` in any order, put in step order; nil when
    /// `value` is not one.
    public static func rows(from value: JSONValue) -> [Escalation]? {
        guard case .array(let items) = value else { return nil }
        var rows: [(step: Int, escalation: Escalation)] = []
        for item in items {
            guard case .array(let cells) = item, cells.count == 5, case .number(let step) = cells[0], let index = step.wholeInt,
                case .string(let client) = cells[1], case .number(let at) = cells[2], let atMilliseconds = Int64(at.literal)
            else { return nil }
            var sequence: Int64 = 0
            if case .number(let number) = cells[3] { sequence = Int64(number.literal) ?? 0 }
            var displayedAt: Timestamp?
            if case .number(let number) = cells[4], let milliseconds = Int64(number.literal) {
                displayedAt = Timestamp(milliseconds: milliseconds)
            }
            rows.append(
                (
                    index,
                    Escalation(client: client, at: Timestamp(milliseconds: atMilliseconds), sequence: sequence, displayedAt: displayedAt)
                ))
        }
        return rows.sorted { $0.step < $1.step }.map(\.escalation)
    }
}

extension Alert {
    /// Every client it is queued on: its own first, then those it escalated to, in step order.
    public var clients: [String] {
        escalatedTo.isEmpty ? [client] : [client] + escalatedTo.map(\.client)
    }

    /// Whether `client` is its own or one it escalated to: paths under it reach the alert.
    public func isOn(_ client: String) -> Bool {
        self.client == client || escalatedTo.contains { $0.client == client }
    }

    /// Whether it came to `client` by escalation (false for its own client).
    public func isEscalated(to client: String) -> Bool {
        escalatedTo.contains { $0.client == client }
    }

    /// The alert as `client`'s queue holds it: while pending, `state` and `displayed_at`
    /// are that queue's (displayed there or queued there); its own client's view is the
    /// alert itself, and so is a terminal alert (one result, whatever the path).
    public func viewed(from client: String) -> Alert {
        guard client != self.client, isPending, let escalation = escalatedTo.first(where: { $0.client == client }) else { return self }
        var view = self
        view.state = escalation.displayedAt == nil ? .queued : .displayed
        view.displayedAt = escalation.displayedAt
        return view
    }

    /// Whether it is displayed on `client` (its own or one it escalated to).
    public func isDisplayed(on client: String) -> Bool {
        guard isPending else { return false }
        if client == self.client { return state == .displayed }
        return escalatedTo.first { $0.client == client }?.displayedAt != nil
    }

    /// Whether it is displayed on any of its clients.
    public var isDisplayedAnywhere: Bool {
        isPending && (state == .displayed || escalatedTo.contains { $0.displayedAt != nil })
    }

    /// The clients it is displayed on now.
    public var displayedOn: [String] {
        guard isPending else { return [] }
        return (state == .displayed ? [client] : []) + escalatedTo.filter { $0.displayedAt != nil }.map(\.client)
    }

    /// The next step it would take while pending, and when: `after` seconds after its
    /// creation. Nil when every step is taken (or it is terminal).
    public var nextEscalation: (index: Int, step: EscalationStep, at: Timestamp)? {
        guard isPending, escalatedTo.count < escalation.count else { return nil }
        let step = escalation[escalatedTo.count]
        return (escalatedTo.count, step, createdAt.adding(milliseconds: Int64((step.after * 1000).rounded())))
    }

    /// Sets where it stands on `client`: displayed since `displayedAt`, or queued (nil). Its
    /// own client's is ``state`` and ``displayedAt``; another's, that step's.
    mutating func place(on client: String, displayedAt: Timestamp?) {
        if client == self.client {
            state = displayedAt == nil ? .queued : .displayed
            self.displayedAt = displayedAt
        } else if let index = escalatedTo.firstIndex(where: { $0.client == client }) {
            escalatedTo[index].displayedAt = displayedAt
        }
    }

    /// `escalated_to` as the resource writes it.
    public var escalatedRecords: [EscalatedTo] {
        escalatedTo.map { EscalatedTo(client: $0.client, at: $0.at) }
    }
}

/// The rules of an escalation policy (SPEC §12), for an alert's own and for a client's in
/// the config.
public enum EscalationRules {
    /// Every violation of a policy: at most ``EscalationStep/limit`` steps; each `after`
    /// above 0, greater than the step before and below `expiresIn` (when known); each `to`
    /// a valid client id, not `client` (the alert's own, when known), and not a client an
    /// earlier step asks already. Paths are `<field>[i].after`, `<field>[i].to`.
    public static func problems(
        _ steps: [EscalationStep], field: String = "escalation", client: String?, expiresIn: Double?
    ) -> [FieldError] {
        var errors: [FieldError] = []
        if steps.count > EscalationStep.limit {
            errors.append(FieldError(field: field, reason: "at most \(EscalationStep.limit) steps, got \(steps.count)"))
        }
        var previous: Double?
        var asked = Set<String>()
        for (index, step) in steps.enumerated() {
            let path = "\(field)[\(index)]"
            if !step.after.isFinite || step.after < NewAlert.minimumSeconds {
                errors.append(FieldError(field: "\(path).after", reason: "must be a number of seconds, at least 0.001"))
            } else if let previous, step.after <= previous {
                errors.append(
                    FieldError(field: "\(path).after", reason: "must be greater than the step before (\(format(previous)) seconds)"))
            } else if let expiresIn, step.after >= expiresIn {
                errors.append(
                    FieldError(
                        field: "\(path).after",
                        reason: "must be below the alert's expiry (\(format(expiresIn)) seconds): it would never be taken"))
            }
            if step.after.isFinite { previous = max(previous ?? step.after, step.after) }
            if !ClientID.isValid(step.to) {
                errors.append(FieldError(field: "\(path).to", reason: "is not a valid client id"))
            } else if step.to == client {
                errors.append(FieldError(field: "\(path).to", reason: "is the alert's own client; escalate to another"))
            } else if !asked.insert(step.to).inserted {
                errors.append(FieldError(field: "\(path).to", reason: "is asked by an earlier step already"))
            }
        }
        return errors
    }

    /// The policy an alert posted to `client` takes: its own when it has one, else its
    /// client's, without the steps at or past its expiry (they would never be taken) or
    /// to the alert's own client (a config's policy is checked at load; a default one
    /// applies to every client).
    public static func resolve(own: [EscalationStep]?, client: String, settings: ClientSettings, expiresIn: Double) -> [EscalationStep] {
        if let own { return own }
        return settings.escalation.filter { $0.after < expiresIn && $0.to != client }
    }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
    }
}
