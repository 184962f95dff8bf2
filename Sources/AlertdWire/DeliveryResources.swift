/// `POST /v1/clients/{client}/webhooks`: a URL and, optionally, the secret to sign with.
public struct WebhookRegistration: Sendable, Hashable, Codable {
    /// The http(s) URL that receives terminal events.
    public var url: String
    /// Nil: the daemon generates `whsec_` + base64 of 32 random bytes.
    public var secret: String?

    /// A value with every field given.
    public init(url: String, secret: String? = nil) {
        self.url = url
        self.secret = secret
    }
}

/// A registered webhook: its secret only in the answer to its registration.
public struct WebhookResource: Sendable, Hashable, Codable {
    /// Its id.
    public var id: String
    /// The http(s) URL that receives terminal events.
    public var url: String
    /// Shown once, when the webhook is registered; nil afterwards.
    public var secret: String?
    /// `api` or `config`: where the webhook was registered. Nil in the registration's answer.
    public var source: String?

    /// A value with every field given.
    public init(id: String, url: String, secret: String? = nil, source: String? = nil) {
        self.id = id
        self.url = url
        self.secret = secret
        self.source = source
    }

    /// Writes the webhook as the daemon answers it: `id`, `url`, then `secret` and
    /// `source` where they are given (the registration's answer has the secret, a list
    /// the source).
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id")
        json.string(id)
        json.key("url")
        json.string(url)
        if let secret {
            json.key("secret")
            json.string(secret)
        }
        if let source {
            json.key("source")
            json.string(source)
        }
        json.endObject()
    }
}

/// `GET /v1/clients/{client}/webhooks`.
public struct WebhookList: Sendable, Hashable, Codable {
    /// The client's webhooks, without secrets.
    public var webhooks: [WebhookResource]

    /// A value with every field given.
    public init(webhooks: [WebhookResource]) { self.webhooks = webhooks }

    /// `{"webhooks":[…]}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("webhooks")
        json.beginArray()
        for webhook in webhooks { webhook.write(into: &json) }
        json.endArray()
        json.endObject()
    }
}

/// A push subscription as the API shows it (SPEC §11): never the device's keys.
public struct PushSubscriptionResource: Sendable, Hashable, Codable {
    /// `ps_…`.
    public var id: String
    /// The push service's URL for the device.
    public var endpoint: String
    /// The clients whose displayed alerts it is pushed.
    public var clients: [String]
    /// Whether its pushes carry an `answer_url`.
    public var answer: Bool
    /// The name of the token that made it (nil without tokens): who answers through it.
    public var decider: String?
    public var createdAt: Timestamp

    /// A value with every field given.
    public init(id: String, endpoint: String, clients: [String], answer: Bool, decider: String?, createdAt: Timestamp) {
        self.id = id
        self.endpoint = endpoint
        self.clients = clients
        self.answer = answer
        self.decider = decider
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, endpoint, clients, answer, decider
        case createdAt = "created_at"
    }

    /// `{id, endpoint, clients, answer, decider, created_at}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id")
        json.string(id)
        json.key("endpoint")
        json.string(endpoint)
        json.key("clients")
        json.beginArray()
        for client in clients { json.string(client) }
        json.endArray()
        json.key("answer")
        json.bool(answer)
        json.key("decider")
        json.string(decider)
        json.key("created_at")
        json.timestamp(createdAt)
        json.endObject()
    }
}

/// `GET /v1/push/subscriptions`.
public struct PushSubscriptionList: Sendable, Hashable, Codable {
    public var subscriptions: [PushSubscriptionResource]

    public init(subscriptions: [PushSubscriptionResource]) { self.subscriptions = subscriptions }

    /// `{"subscriptions":[…]}`.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("subscriptions")
        json.beginArray()
        for subscription in subscriptions { subscription.write(into: &json) }
        json.endArray()
        json.endObject()
    }
}

/// `GET /v1/clients/{client}/alerts/{id}/deliveries`.
public struct DeliveryList: Sendable, Hashable, Codable {
    /// One per target of the alert's terminal event.
    public var deliveries: [DeliveryRecord]

    /// A value with every field given.
    public init(deliveries: [DeliveryRecord]) { self.deliveries = deliveries }

    /// `{"deliveries":[…]}`, each as ``DeliveryRecord/write(into:)`` writes it.
    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("deliveries")
        json.beginArray()
        for record in deliveries { record.write(into: &json) }
        json.endArray()
        json.endObject()
    }
}
