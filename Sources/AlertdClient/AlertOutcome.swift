public import AlertdReceipts
public import AlertdWire

/// How a presented alert ended: the button a person chose, or why no one chose one.
///
/// A timeout is never disguised as a "no": an alert that expired is ``expired``,
/// not ``cancel(_:)``.
///
/// ```swift
/// switch try await alerts.present(on: "ops", title: "Restart db-3?", buttons: [.destructive("Restart"), .cancel("Keep")]) {
/// case .button("Restart"): try await restart()
/// case .cancel: print("kept")
/// case .dismissed, .expired, .withdrawn, .button: print("no decision")
/// }
/// ```
public enum AlertOutcome: Sendable, Hashable, CustomStringConvertible {
    /// A button of style `default` or `destructive` was chosen; its title.
    case button(String)
    /// The alert's `cancel` button was chosen; its title.
    case cancel(String)
    /// A buttonless alert was dismissed after its `dismiss_after`.
    case dismissed
    /// No one answered before `expires_at`.
    case expired
    /// Withdrawn by its poster (or by cancelling the presenting task).
    case withdrawn

    /// The chosen button's title, for ``button(_:)`` and ``cancel(_:)``.
    public var chosenButton: String? {
        switch self {
        case .button(let title), .cancel(let title): title
        case .dismissed, .expired, .withdrawn: nil
        }
    }

    /// The outcome of a terminal alert resource; nil while it is pending.
    public init?(_ alert: AlertResource) {
        switch alert.state {
        case .queued, .displayed: return nil
        case .dismissed: self = .dismissed
        case .expired: self = .expired
        case .withdrawn: self = .withdrawn
        case .answered:
            guard let title = alert.result?.button else { return nil }
            self = alert.result?.cancelled == true ? .cancel(title) : .button(title)
        }
    }

    public var description: String {
        switch self {
        case .button(let title): "button \(title)"
        case .cancel(let title): "cancel \(title)"
        case .dismissed: "dismissed"
        case .expired: "expired"
        case .withdrawn: "withdrawn"
        }
    }
}

/// How a presented alert ended, with every vote: what ``AlertPresenting/presentForDecision(_:on:)``
/// and `present(…, quorum:)` return.
///
/// For an alert that needs several people (`quorum` above 1, SPEC §10) the outcome is the
/// button that `quorum` different deciders chose, or the `cancel`-style button one of them
/// chose (a veto), and ``votes`` says who chose what, in the order the daemon committed it:
///
/// ```swift
/// let decision = try await alerts.present(
///     on: "ops", title: "Deploy build 1234 to production?",
///     buttons: [.default("Deploy"), .cancel("Cancel")], quorum: 2)
/// if decision.outcome == .button("Deploy") {
///     log("approved by \(decision.chosenBy.joined(separator: " and "))")   // "alice and bob"
///     try await deploy()
/// }
/// ```
public struct AlertDecision: Sendable, Hashable, CustomStringConvertible {
    /// The button chosen, or why none was.
    public var outcome: AlertOutcome
    /// Every vote the alert had, in the order they were committed. An alert of `quorum` 1
    /// answered by a button has one (its choice); votes short of the quorum stay on an alert
    /// that then expired or was withdrawn; none when no one chose.
    public var votes: [Vote]
    /// The decider whose vote decided it (the one that completed the quorum, or cancelled);
    /// for a withdrawn alert, who withdrew it. nil without tokens, or when no one did.
    public var decidedBy: String?
    /// The reason given with the choice that decided it (SPEC §13); nil when none.
    public var comment: String?
    /// The values of the alert's fields given with the choice that decided it (SPEC §13),
    /// by field name; empty when none. Each vote carries its own in ``votes``.
    public var values: [String: String]
    /// The escalation steps the alert took before it was decided (SPEC §12): the clients it
    /// was also queued on because nobody answered, in order; empty when none.
    public var escalatedTo: [EscalatedTo]
    /// The decision's signed receipt (SPEC §14), as the daemon answered it with the decision;
    /// nil from a daemon that writes none (or a test double). ``AlertdClient`` has checked it
    /// against the alert it presented (``SignedReceipt/verify(with:for:)`` without the key:
    /// that it is this alert's and says this decision); check the signature with the
    /// deployment's keys, ``AlertdClient/receiptKeys()``, or keep it for whoever audits.
    public var receipt: SignedReceipt?

    /// A decision with every field given.
    public init(
        outcome: AlertOutcome, votes: [Vote] = [], decidedBy: String? = nil, comment: String? = nil, values: [String: String] = [:],
        escalatedTo: [EscalatedTo] = [], receipt: SignedReceipt? = nil
    ) {
        self.receipt = receipt
        self.escalatedTo = escalatedTo
        self.outcome = outcome
        self.votes = votes
        self.decidedBy = decidedBy
        self.comment = comment
        self.values = values
    }

    /// The decision of a terminal alert resource; nil while it is pending.
    public init?(_ alert: AlertResource) {
        guard let outcome = AlertOutcome(alert) else { return nil }
        self.outcome = outcome
        // A terminal alert's votes are its result's; the resource's own list is the same.
        votes = alert.result.map { $0.votes.isEmpty ? alert.votes : $0.votes } ?? alert.votes
        decidedBy = alert.result?.decidedBy
        comment = alert.result?.comment
        values = alert.result?.values ?? [:]
        escalatedTo = alert.escalatedTo
    }

    /// The deciders who chose the outcome's button, in the order they voted: for a deploy
    /// approved by two people, both names; for a veto, the one who cancelled; empty when no
    /// button was chosen (or without tokens, where choices have no name).
    public var chosenBy: [String] {
        guard let button = outcome.chosenButton else { return [] }
        return votes.filter { $0.button == button }.compactMap(\.decidedBy)
    }

    public var description: String {
        let names = chosenBy
        var text = names.isEmpty ? outcome.description : "\(outcome) by \(names.joined(separator: ", "))"
        if !values.isEmpty { text += " " + values.keys.sorted().map { "\($0)=\(values[$0]!)" }.joined(separator: " ") }
        if let comment { text += ": \(comment)" }
        if !escalatedTo.isEmpty { text += " (escalated to \(escalatedTo.map(\.client).joined(separator: ", ")))" }
        return text
    }
}
