public import AlertdWire

/// One question posted to one client, with everything the daemon knows of it.
public struct Alert: Sendable, Hashable {
    public var id: AlertID
    public var client: String
    public var title: String
    public var message: String?
    public var style: AlertStyle
    public var buttons: [Button]
    public var priority: Int
    public var callbackURL: String?
    /// Kept as posted (member order and number literals included), encoded.
    public var metadata: CompactJSON?
    public var state: AlertState
    public var createdAt: Timestamp
    public var displayedAt: Timestamp?
    public var decidedAt: Timestamp?
    public var expiresAt: Timestamp
    /// For a buttonless alert: how long it stays displayed, in milliseconds.
    public var dismissAfterMilliseconds: Int64?
    public var result: AlertResult?
    /// Its place among alerts of equal priority in its queue: from a shared
    /// store's database sequence (never from an instance's clock); 0 in the
    /// embedded store, where ids give the order.
    public var sequence: Int64
    /// How many different deciders must choose the same button before it is answered (SPEC §10).
    public var quorum: Int
    /// Every choice made on it, in commit order (SPEC §10): the votes of an alert of
    /// several deciders, or the one choice that answered an alert of `quorum` 1. Kept
    /// once it is terminal; ``AlertResult/votes`` of its result holds the same.
    public var votes: [Vote]
    /// The name of the token that posted it (SPEC §10); nil without tokens. With a
    /// `quorum` above 1 that token may not vote for one of its non-cancel buttons.
    public var postedBy: String?
    /// The values the person answering is asked for (SPEC §13), each with the buttons it
    /// belongs to (resolved when posted); empty when none.
    public var fields: [AlertField]
    /// Its escalation policy (SPEC §12), fixed when posted: its own, or its client's then
    /// (steps at or past its expiry left out); empty when none.
    public var escalation: [EscalationStep]
    /// The steps taken so far, in step order (SPEC §12): the other clients it is queued on,
    /// each with its place there. ``state`` and ``displayedAt`` are its own client's; a
    /// view through another client (``viewed(from:)``) takes that client's.
    public var escalatedTo: [Escalation]

    public init(
        id: AlertID, client: String, title: String, message: String? = nil, style: AlertStyle = .alert,
        buttons: [Button] = [], priority: Int = 0, callbackURL: String? = nil, metadata: CompactJSON? = nil,
        state: AlertState = .queued, createdAt: Timestamp, displayedAt: Timestamp? = nil,
        decidedAt: Timestamp? = nil, expiresAt: Timestamp, dismissAfterMilliseconds: Int64? = nil,
        result: AlertResult? = nil, sequence: Int64 = 0, quorum: Int = 1, votes: [Vote] = [], postedBy: String? = nil,
        fields: [AlertField] = [], escalation: [EscalationStep] = [], escalatedTo: [Escalation] = []
    ) {
        self.escalation = escalation
        self.escalatedTo = escalatedTo
        self.id = id
        self.client = client
        self.title = title
        self.message = message
        self.style = style
        self.buttons = buttons
        self.priority = priority
        self.callbackURL = callbackURL
        self.metadata = metadata
        self.state = state
        self.createdAt = createdAt
        self.displayedAt = displayedAt
        self.decidedAt = decidedAt
        self.expiresAt = expiresAt
        self.dismissAfterMilliseconds = dismissAfterMilliseconds
        self.result = result
        self.sequence = sequence
        self.quorum = quorum
        self.votes = votes
        self.postedBy = postedBy
        self.fields = fields
    }

    /// When a displayed buttonless alert is dismissed: `dismiss_after` after it was
    /// displayed, on its own client or (escalated, SPEC §12) on another, whichever display
    /// came first of those it holds now.
    public var dismissAt: Timestamp? {
        guard isPending, let dismissAfterMilliseconds else { return nil }
        var first = state == .displayed ? displayedAt : nil
        for escalation in escalatedTo {
            if let shown = escalation.displayedAt, first.map({ shown < $0 }) ?? true { first = shown }
        }
        return first?.adding(milliseconds: dismissAfterMilliseconds)
    }

    /// When a buttonless alert displayed on its own client is dismissed, counting that display only.
    public var ownDismissAt: Timestamp? {
        guard state == .displayed, let displayedAt, let dismissAfterMilliseconds else { return nil }
        return displayedAt.adding(milliseconds: dismissAfterMilliseconds)
    }

    public var isPending: Bool { !state.isTerminal }

    /// The memory one pending alert takes itself: what its text takes in UTF-8 — title,
    /// message, button titles, callback URL, metadata — plus ``fixedFootprint`` for the
    /// rest. `limits.max_pending_bytes` counts it with the alert's rendered copy
    /// (``renderedFootprint``, which grows with its votes): ``AlertBoard/pendingBytes``. A
    /// budget, not a measurement of the process: see README's limits for what it came to in RSS.
    public var footprint: Int {
        Self.footprint(title: title, message: message, buttons: buttons, callbackURL: callbackURL, metadata: metadata, fields: fields)
    }

    /// The ``footprint`` of an alert with these fields (a draft's, before it is one).
    public static func footprint(
        title: String, message: String?, buttons: [Button], callbackURL: String?, metadata: CompactJSON?, fields: [AlertField] = []
    ) -> Int {
        var bytes = fixedFootprint + title.utf8.count + (message?.utf8.count ?? 0) + (callbackURL?.utf8.count ?? 0)
        bytes += metadata?.bytes.count ?? 0
        for button in buttons { bytes += buttonFootprint + button.title.utf8.count }
        for field in fields {
            bytes += buttonFootprint + field.name.utf8.count + (field.label?.utf8.count ?? 0) + (field.placeholder?.utf8.count ?? 0)
        }
        return bytes
    }

    /// What an alert holds besides its text: its fields, its place in the queue, its
    /// deadlines and the store's row (1 KiB; measured in bench/RESULTS.md, issue 27).
    public static let fixedFootprint = 1024
    /// What a button holds besides its title.
    public static let buttonFootprint = 32
}

extension Alert {
    /// The votes of an alert read from a store: those stored (nil: none). A row answered
    /// before votes were stored (SPEC §10 came later) had one choice, which answered it:
    /// that is its vote, as it is of every alert of `quorum` 1 answered since.
    public static func votes(stored: [Vote]?, result: AlertResult?, decidedAt: Timestamp?) -> [Vote] {
        if let stored { return stored }
        guard let result, result.outcome == .answered, let button = result.button, let index = result.buttonIndex,
            let decidedAt
        else { return [] }
        return [Vote(decidedBy: result.decidedBy, button: button, buttonIndex: index, at: decidedAt)]
    }

    /// `result` as read from a store, with `votes` and the words of the choice that decided
    /// it (SPEC §13): the comment and values of its deciding vote, the last one (a decision
    /// ends the voting), when the alert was answered with that vote's button. The stores
    /// keep words in the votes only, so the result's cannot disagree with them.
    public static func result(_ result: AlertResult?, votes: [Vote]) -> AlertResult? {
        guard var result else { return nil }
        result.votes = votes
        if result.outcome == .answered, let deciding = votes.last, deciding.buttonIndex == result.buttonIndex {
            result.comment = deciding.comment
            result.values = deciding.values
        }
        return result
    }
}

/// A client id: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
public enum ClientID {
    public static func isValid(_ id: String) -> Bool {
        var id = id
        return id.withUTF8 { bytes in
            guard let first = bytes.first, bytes.count <= 64, isAlnum(first) else { return false }
            return bytes.allSatisfy { isAlnum($0) || $0 == 46 || $0 == 95 || $0 == 45 }
        }
    }

    public static func isValid(_ id: Substring) -> Bool { isValid(String(id)) }

    private static func isAlnum(_ b: UInt8) -> Bool {
        (48...57).contains(b) || (65...90).contains(b) || (97...122).contains(b)
    }
}

extension JSONWriter {
    /// `[{"title": …, "style": …}, …]`: how buttons look in the API and in the store.
    public mutating func buttons(_ buttons: [Button]) {
        beginArray()
        for button in buttons { button.write(into: &self) }
        endArray()
    }
}
