public import AlertdCore
public import AlertdWire
import Logging
import NIOConcurrencyHelpers

/// The webhooks of every client: the config file's (present while listed
/// there) and the API's (stored, removable through the API). Config ones come
/// first, as everywhere they are listed.
struct WebhookRegistry: Sendable {
    private(set) var byClient: [String: [Webhook]] = [:]
    private var ids = AlertIDGenerator()
    /// URLs being registered (their commit in flight), by client: a second
    /// registration of one is refused like one already registered.
    private var registering: [String: Set<String>] = [:]

    init(config: [Webhook], api: [Webhook]) {
        byClient = Self.byClient(config + api)
    }

    func webhooks(of client: String) -> [Webhook] { byClient[client] ?? [] }

    mutating func newID(at time: Timestamp) -> String { Webhook.newID(&ids, at: time) }

    /// Takes `url` for a new webhook of `client`: false when the client has it already
    /// (the existing one's id, or nil while another registration of it commits).
    mutating func reserve(_ url: String, for client: String) -> (taken: Bool, existing: String?) {
        if let existing = webhooks(of: client).first(where: { $0.url == url }) { return (false, existing.id) }
        guard registering[client, default: []].insert(url).inserted else { return (false, nil) }
        return (true, nil)
    }

    /// The registration of `url` is over (committed and added, or failed).
    mutating func release(_ url: String, for client: String) {
        registering[client]?.remove(url)
        if registering[client]?.isEmpty == true { registering[client] = nil }
    }

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
    /// `whsec_` secret is generated. Registered once committed. A URL the client
    /// has already (from the API or the config file) is refused: each event would
    /// be delivered to it twice.
    public func createWebhook(client: String, url: String, secret: String?) async throws(EngineError) -> Webhook {
        if let problem = CallbackURL.problem(url) {
            throw EngineError(.invalidWebhook, "url \(problem)")
        }
        if let refused = await refusedTarget(url) {
            throw EngineError(.invalidWebhook, "url \(refused)")
        }
        if let secret {
            // As in an alert's text (NewAlert.validate): PostgreSQL's text cannot hold it.
            if secret.unicodeScalars.contains("\u{0}") {
                throw EngineError(.invalidWebhook, "secret must not contain U+0000")
            }
            let key: WebhookKey
            do {
                key = try WebhookKey(secret: secret)
            } catch {
                throw EngineError(.invalidWebhook, "secret: \(error)")
            }
            if let weak = Self.weakSecret(key) {
                throw EngineError(.invalidWebhook, "secret \(weak); leave it out and alertd generates one (whsec_ + 32 random bytes)")
            }
        }
        if let refusal = refusal() { throw refusal }
        let now = clock.now()
        let reserved = registry.withLockedValue { registry -> Result<String, EngineError> in
            let (taken, existing) = registry.reserve(url, for: client)
            guard taken else {
                return .failure(
                    EngineError(
                        .webhookExists,
                        "client \(client) already has a webhook for \(URLRedaction.redacted(url))\(existing.map { " (\($0))" } ?? ""); each event would be delivered twice"
                    ))
            }
            return .success(registry.newID(at: now))
        }
        let id = try reserved.get()
        let webhook = Webhook(
            id: id, client: client, url: url, secret: secret ?? WebhookSignature.generateSecret(), createdAt: now, source: .api)
        let saved: Result<Void, EngineError>
        do throws(EngineError) {
            saved = .success(try await store.saveWebhook(webhook))
        } catch {
            saved = .failure(error)
        }
        registry.withLockedValue { registry in
            if case .success = saved { registry.add(webhook) }
            registry.release(url, for: client)
        }
        try saved.get()
        return webhook
    }

    /// Why a secret is too weak to sign with (shorter than ``WebhookKey/minimumBytes``), or nil.
    public static func weakSecret(_ key: WebhookKey) -> String? {
        guard key.byteCount < WebhookKey.minimumBytes else { return nil }
        return "is \(key.byteCount) byte\(key.byteCount == 1 ? "" : "s"), fewer than the \(WebhookKey.minimumBytes) a signing key needs"
    }

    /// A client's webhooks as last read, config ones first.
    public func webhooks(of client: String) -> [Webhook] {
        registry.withLockedValue { $0.webhooks(of: client) }
    }

    /// A client's webhooks as committed, config ones first: with a shared store the
    /// API's are read again first, so one registered or removed through another
    /// instance shows at once (SPEC §9).
    public func currentWebhooks(of client: String) async throws(EngineError) -> [Webhook] {
        try await synchronizeWebhooks()
        return webhooks(of: client)
    }

    /// Reads the API's webhooks again when other processes may have changed them.
    private func synchronizeWebhooks() async throws(EngineError) {
        guard let api = try await store.webhooksIfChangedElsewhere() else { return }
        registry.withLockedValue { $0.replaceAPIWebhooks(with: api) }
    }

    /// Removes an API webhook; a config one is refused, an unknown one not found. Its
    /// deliveries still pending are cancelled with it (state `cancelled`, never attempted
    /// again, no longer counted against `callbacks.max_pending_per_client`): how many.
    @discardableResult
    public func deleteWebhook(client: String, id: String) async throws(EngineError) -> Int {
        try await synchronizeWebhooks()
        guard let webhook = webhooks(of: client).first(where: { $0.id == id }) else {
            throw EngineError(.notFound, "no webhook \(id) on client \(client)")
        }
        guard webhook.source == .api else {
            throw EngineError(.configWebhook, "webhook \(id) is defined in the config file; remove it there")
        }
        if let refusal = refusal() { throw refusal }
        let cancelled = try await store.deleteWebhook(id: id)
        registry.withLockedValue { $0.remove(id: id, client: client) }
        cancelDeliveries(cancelled)
        logger.info(
            "webhook removed", metadata: ["client": "\(client)", "webhook": "\(id)", "deliveries_cancelled": "\(cancelled.count)"])
        return cancelled.count
    }

    /// Replaces the config file's webhooks (a reload); the API's stay. Events
    /// already written keep their targets.
    public func replaceConfigWebhooks(with webhooks: [Webhook]) {
        registry.withLockedValue { $0.replaceConfigWebhooks(with: webhooks) }
    }
}
