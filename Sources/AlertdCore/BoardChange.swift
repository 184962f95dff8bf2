public import AlertdWire

/// What one operation changed, for the caller to persist and publish.
public struct BoardChange: Sendable {
    /// Alerts whose stored form changed: new, displayed, queued again, terminal.
    public var saved: [Alert] = []
    /// The version each of ``saved`` replaces, in the same order: the one before the
    /// operation (nil: the alert is new). A store that shows readers committed
    /// versions only keeps these until the change commits.
    public var replaced: [Alert?] = []
    /// Clients used for the first time.
    public var newClients: [String] = []
    /// Clients whose displayed alert changed.
    public var displayChanged: [String] = []
    /// Alerts that became terminal.
    public var decided: [Alert] = []
    /// Escalation steps taken (SPEC §12), in the order taken.
    public var escalated: [EscalationTaken] = []

    public init() {}

    public var isEmpty: Bool { saved.isEmpty && newClients.isEmpty }

    mutating func merge(_ other: BoardChange) {
        saved += other.saved
        replaced += other.replaced
        newClients += other.newClients
        displayChanged += other.displayChanged
        decided += other.decided
        escalated += other.escalated
    }
}

/// An escalation step an operation took (SPEC §12): alert ``id`` was also queued on
/// ``client`` at ``at``, by step ``step`` of its policy. The alert as it stands after the
/// operation is among the change's ``BoardChange/saved``.
public struct EscalationTaken: Sendable, Hashable {
    public var id: AlertID
    /// The step's index in the alert's ``Alert/escalation``.
    public var step: Int
    public var client: String
    public var at: Timestamp

    public init(id: AlertID, step: Int, client: String, at: Timestamp) {
        self.id = id
        self.step = step
        self.client = client
        self.at = at
    }
}

/// A choice: by button title or by index (§4, exactly one).
public enum ButtonSelection: Sendable, Hashable {
    case title(String)
    case index(Int)
}

/// Alerts by id. Each is held in an immutable box, so growing the table moves
/// references, not whole alerts: with hundreds of thousands pending, a resize of
/// inline values copied ~300 bytes each under the board lock.
struct AlertTable: Sendable {
    private final class Box: Sendable {
        let alert: Alert
        init(_ alert: Alert) { self.alert = alert }
    }

    private var boxes: [AlertID: Box] = [:]

    var count: Int { boxes.count }
    var all: some Sequence<Alert> { boxes.values.lazy.map(\.alert) }

    subscript(id: AlertID) -> Alert? {
        get { boxes[id]?.alert }
        set { boxes[id] = newValue.map(Box.init) }
    }
}

/// Versions of alerts before an operation touched them.
struct Before {
    var versions: [AlertID: Alert?] = [:]
}

extension ButtonSelection: CustomStringConvertible {
    public var description: String {
        switch self {
        case .title(let title): "\"\(title)\""
        case .index(let index): "at index \(index)"
        }
    }
}
