public import AlertdWire

/// A URL registered to receive the terminal event of every alert of a client (§5).
public struct Webhook: Sendable, Hashable {
    /// Where a webhook was defined.
    public enum Source: String, Sendable, Hashable {
        /// `POST /v1/clients/{client}/webhooks`: stored, removable through the API.
        case api
        /// The `webhooks:` list of the config file: present while it is listed there.
        case config
    }

    /// `wh_` + 26 sortable characters for API webhooks; `wh_cfg_` + a digest for config ones.
    public var id: String
    public var client: String
    public var url: String
    /// Signs the deliveries: `whsec_<base64>` (key: the decoded bytes) or any text (its UTF-8 bytes).
    public var secret: String
    public var createdAt: Timestamp
    public var source: Source

    public init(id: String, client: String, url: String, secret: String, createdAt: Timestamp, source: Source) {
        self.id = id
        self.client = client
        self.url = url
        self.secret = secret
        self.createdAt = createdAt
        self.source = source
    }

    public static let idPrefix = "wh_"

    /// A new id for an API webhook.
    public static func newID(_ ids: inout AlertIDGenerator, at time: Timestamp) -> String {
        idPrefix + ids.next(at: time).description
    }
}
