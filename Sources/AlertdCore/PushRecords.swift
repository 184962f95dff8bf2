public import AlertdWire

/// A device that asked to be told (SPEC §11): a browser's `PushSubscription` (its push
/// service's endpoint and its keys), the clients it follows, and whether it may answer
/// from the notification. Bound to the token that made it: that token's name is the
/// subscription's decider, and only it (or an admin) lists or removes it.
public struct PushSubscription: Sendable, Hashable {
    /// `ps_…`.
    public var id: String
    /// The push service's URL for this device (https, or http with `push.allow_http`).
    public var endpoint: String
    /// The device's P-256 public key, uncompressed (65 bytes).
    public var p256dh: [UInt8]
    /// The device's authentication secret (16 bytes).
    public var auth: [UInt8]
    /// The clients whose displayed alerts it is pushed.
    public var clients: [String]
    /// Whether its pushes carry an `answer_url`.
    public var answer: Bool
    /// The name of the token that made it (nil without auth): who answers through it.
    public var decider: String?
    public var createdAt: Timestamp

    public init(
        id: String, endpoint: String, p256dh: [UInt8], auth: [UInt8], clients: [String], answer: Bool, decider: String?,
        createdAt: Timestamp
    ) {
        self.id = id
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.clients = clients
        self.answer = answer
        self.decider = decider
        self.createdAt = createdAt
    }

    /// A new subscription id at `time`.
    public static func newID(_ ids: inout AlertIDGenerator, at time: Timestamp) -> String {
        "ps_" + ids.next(at: time).description
    }

    /// The most clients one subscription names.
    public static let maxClients = 100

    /// The clients as a store keeps them: comma-separated (client ids hold no comma).
    public var storedClients: String { clients.joined(separator: ",") }

    /// The clients of a stored subscription.
    public static func clients(stored: String) -> [String] {
        stored.split(separator: ",").map(String.init)
    }
}

/// An `answer_url`'s capability as stored: the SHA-256 of its token (never the token), the
/// alert and subscription it was made for, who answers through it, until when, and when it
/// was used (once: a second use is 410 `answer-used`).
public struct AnswerToken: Sendable, Hashable {
    public var hash: [UInt8]
    public var alertID: AlertID
    public var client: String
    public var subscriptionID: String
    /// The subscription's decider (nil without auth).
    public var decider: String?
    public var expiresAt: Timestamp
    public var usedAt: Timestamp?

    public init(
        hash: [UInt8], alertID: AlertID, client: String, subscriptionID: String, decider: String?, expiresAt: Timestamp,
        usedAt: Timestamp? = nil
    ) {
        self.hash = hash
        self.alertID = alertID
        self.client = client
        self.subscriptionID = subscriptionID
        self.decider = decider
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }

    /// An answer token lives at most a day (SPEC §11), or until its alert is terminal.
    public static let lifetimeMilliseconds: Int64 = 86_400_000
}
