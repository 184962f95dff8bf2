public import AlertdCore
import AlertdWire
import NIOConcurrencyHelpers

/// The webhooks of every client: the config file's (present while listed
/// there) and the API's (stored, removable through the API). Config ones come
/// first, as everywhere they are listed.
struct WebhookRegistry: Sendable {
    private(set) var byClient: [String: [Webhook]] = [:]
    private var ids = AlertIDGenerator()

    init(config: [Webhook], api: [Webhook]) {
        byClient = Self.byClient(config + api)
    }

    func webhooks(of client: String) -> [Webhook] { byClient[client] ?? [] }

    mutating func newID(at time: Timestamp) -> String { Webhook.newID(&ids, at: time) }

    mutating func add(_ webhook: Webhook) { byClient[webhook.client, default: []].append(webhook) }

    mutating func remove(id: String, client: String) {
        byClient[client]?.removeAll { $0.id == id }
        if byClient[client]?.isEmpty == true { byClient[client] = nil }
    }

    /// The config file's webhooks replaced (a reload); the API's stay.
    mutating func replaceConfigWebhooks(with config: [Webhook]) {
        byClient = Self.byClient(config + byClient.values.joined().filter { $0.source == .api })
    }

    /// The API's webhooks replaced with what the store holds (after a failed commit).
    mutating func replaceAPIWebhooks(with api: [Webhook]) {
        byClient = Self.byClient(byClient.values.joined().filter { $0.source == .config } + api)
    }

    private static func byClient(_ webhooks: [Webhook]) -> [String: [Webhook]] {
        var byClient: [String: [Webhook]] = [:]
        for webhook in webhooks { byClient[webhook.client, default: []].append(webhook) }
        return byClient
    }
}

extension Engine {
    /// Registers a webhook for every alert of `client` (§5); `secret` nil: a new
    /// `whsec_` secret is generated. Registered once committed.
    public func createWebhook(
        client: String, url: String, secret: String?, respond: @escaping @Sendable (Result<Webhook, EngineError>) -> Void
    ) {
        if let problem = CallbackURL.problem(url) {
            return respond(.failure(EngineError(.invalidWebhook, "url \(problem)")))
        }
        if let secret {
            do {
                _ = try WebhookKey(secret: secret)
            } catch {
                return respond(.failure(EngineError(.invalidWebhook, "secret: \(error)")))
            }
        }
        if let refusal = refusal() { return respond(.failure(refusal)) }
        let now = clock.now()
        let id = registry.withLockedValue { $0.newID(at: now) }
        let webhook = Webhook(
            id: id, client: client, url: url, secret: secret ?? WebhookSignature.generateSecret(), createdAt: now, source: .api)
        store.saveWebhook(webhook) { [registry] result in
            if case .success = result { registry.withLockedValue { $0.add(webhook) } }
            respond(result.map { webhook })
        }
    }

    /// A client's webhooks, config ones first.
    public func webhooks(of client: String) -> [Webhook] {
        registry.withLockedValue { $0.webhooks(of: client) }
    }

    /// Removes an API webhook; a config one is refused, an unknown one not found.
    public func deleteWebhook(client: String, id: String, respond: @escaping @Sendable (Result<Void, EngineError>) -> Void) {
        guard let webhook = webhooks(of: client).first(where: { $0.id == id }) else {
            return respond(.failure(EngineError(.notFound, "no webhook \(id) on client \(client)")))
        }
        guard webhook.source == .api else {
            return respond(.failure(EngineError(.configWebhook, "webhook \(id) is defined in the config file; remove it there")))
        }
        if let refusal = refusal() { return respond(.failure(refusal)) }
        store.deleteWebhook(id: id) { [registry] result in
            if case .success = result { registry.withLockedValue { $0.remove(id: id, client: client) } }
            respond(result)
        }
    }

    /// Replaces the config file's webhooks (a reload); the API's stay. Events
    /// already written keep their targets.
    public func replaceConfigWebhooks(with webhooks: [Webhook]) {
        registry.withLockedValue { $0.replaceConfigWebhooks(with: webhooks) }
    }
}
