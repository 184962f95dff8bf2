public import AlertdCore
import AlertdDelivery
import AlertdPush
public import AlertdWire
import Logging
import NIOConcurrencyHelpers

/// `push:` (SPEC §11): Web Push is on when it has a subject.
public struct PushSettings: Sendable, Hashable {
    /// VAPID's contact, `mailto:` or `https:`.
    public var subject: String
    /// Pushes again, as a reminder, while an alert stays displayed and unanswered; nil: never.
    public var remindEvery: Double?
    /// Whether endpoints may be `http:` (tests, a private push service).
    public var allowHTTP: Bool
    /// Subscriptions one token (one decider) may hold (`push.max_subscriptions_per_token`):
    /// each is a delivery at every display, so a token that may only read cannot make a
    /// display cost thousands.
    public var maxPerToken: Int
    /// Subscriptions in all (`push.max_subscriptions`).
    public var maxTotal: Int

    public static let defaultMaxPerToken = 10
    public static let defaultMaxTotal = 10_000

    public init(
        subject: String, remindEvery: Double? = nil, allowHTTP: Bool = false, maxPerToken: Int = PushSettings.defaultMaxPerToken,
        maxTotal: Int = PushSettings.defaultMaxTotal
    ) {
        self.subject = subject
        self.remindEvery = remindEvery
        self.allowHTTP = allowHTTP
        self.maxPerToken = maxPerToken
        self.maxTotal = maxTotal
    }
}

/// The subscriptions of every client, kept at hand: a display change writes its pushes in its
/// own transaction, without a read.
struct PushRegistry: Sendable {
    private(set) var byID: [String: PushSubscription] = [:]
    private var byClient: [String: [String]] = [:]
    var ids = AlertIDGenerator()

    init(_ subscriptions: [PushSubscription] = []) {
        replace(with: subscriptions)
    }

    var isEmpty: Bool { byID.isEmpty }

    func subscriptions(of client: String) -> [PushSubscription] {
        (byClient[client] ?? []).compactMap { byID[$0] }
    }

    func subscription(endpoint: String) -> PushSubscription? {
        byID.values.first { $0.endpoint == endpoint }
    }

    mutating func replace(with subscriptions: [PushSubscription]) {
        byID = Dictionary(subscriptions.map { ($0.id, $0) }, uniquingKeysWith: { _, new in new })
        reindex()
    }

    mutating func add(_ subscription: PushSubscription) {
        byID = byID.filter { $0.value.endpoint != subscription.endpoint }
        byID[subscription.id] = subscription
        reindex()
    }

    mutating func remove(id: String) {
        guard byID.removeValue(forKey: id) != nil else { return }
        reindex()
    }

    private mutating func reindex() {
        var index: [String: [String]] = [:]
        for subscription in byID.values.sorted(by: { $0.id < $1.id }) {
            for client in subscription.clients { index[client, default: []].append(subscription.id) }
        }
        byClient = index
    }
}

/// What the delivery worker asks of the engine to send a push: the request of an attempt
/// (encrypted for its subscription, signed with alertd's VAPID key), and what to do when
/// the push service says the subscription is gone.
public protocol PushPreparing: AnyObject, Sendable {
    /// The body and headers of `delivery`'s next attempt at `now`; or why it ends: its
    /// subscription is gone (removed since the push was written), push is off, or a
    /// reminder's alert no longer waits for an answer.
    func preparePush(_ delivery: PendingDelivery, now: Timestamp) async throws(EngineError) -> PushPreparation
    /// The push service answered 404 or 410: the device unsubscribed; its subscription ends.
    func pushSubscriptionGone(_ delivery: PendingDelivery) async
}

/// A push request as sent: the `aes128gcm` body and RFC 8030's and 8292's headers.
public struct PreparedPush: Sendable {
    public var body: [UInt8]
    public var headers: [(String, String)]
    /// Past this no attempt is made: the alert expired, so the push would only mislead.
    public var giveUpAt: Timestamp?
    /// A reminder's next time, once this one is sent (`push.remind_every` on).
    public var repeatAt: Timestamp?

    public init(body: [UInt8], headers: [(String, String)], giveUpAt: Timestamp?, repeatAt: Timestamp?) {
        self.body = body
        self.headers = headers
        self.giveUpAt = giveUpAt
        self.repeatAt = repeatAt
    }
}

/// What the engine makes of a push's next attempt.
public enum PushPreparation: Sendable {
    /// Send this request.
    case send(PreparedPush)
    /// Send nothing, and no more: the subscription is gone, or a reminder's alert is no longer waiting.
    case end(String)
}

extension Engine {
    /// The secret that holds the VAPID key in the store (every instance of §9 reads the same).
    static let vapidSecretName = "vapid"
    /// The event type of a reminder (its payload is an `alert.displayed` one with `"reminder": true`).
    static let reminderType = "alert.reminder"

    /// Loads (or makes, at first start) the VAPID key and the subscriptions, with push on.
    func startPush() async throws(EngineError) {
        guard let push = settings.push else { return }
        let scalar = try await store.secret(named: Self.vapidSecretName) { VAPID.newPrivateKey() }
        do {
            let key = try VAPID(privateKey: scalar, subject: push.subject)
            vapid.withLockedValue { $0 = key }
        } catch {
            throw EngineError(.unavailable, "the VAPID key in the store is not a P-256 key: \(error)")
        }
        let subscriptions = try await store.pushSubscriptions()
        pushRegistry.withLockedValue { $0.replace(with: subscriptions) }
    }

    /// Reads the subscriptions again (another instance changed them).
    func rereadPushSubscriptions() async {
        guard settings.push != nil else { return }
        do {
            let subscriptions = try await store.pushSubscriptions()
            pushRegistry.withLockedValue { $0.replace(with: subscriptions) }
        } catch {
            logger.warning("push subscriptions not read again", metadata: ["error": "\(error)"])
        }
    }

    /// `GET /v1/push/key`: the VAPID public key, base64url of the uncompressed point; nil with push off.
    public var pushPublicKey: String? { vapid.withLockedValue { $0?.publicKeyBase64URL } }

    /// The push subscriptions this instance pushes to (`alertd_push_subscriptions`): with
    /// several instances, one made through another counts here once its notification came.
    public var pushSubscriptionCount: Int { pushRegistry.withLockedValue { $0.byID.count } }

    public static let pushOff = EngineError(.notFound, "Web Push is off: set push.subject in alertd's config (docs/push.md)")

    /// A subscription as posted (SPEC §11), checked: the endpoint an `https` URL (or `http`
    /// with `push.allow_http`) that `callbacks.deny` allows, the keys a browser's, at least
    /// one valid client. Roles are the API's to check. The same endpoint again replaces
    /// the subscription it had (`replaced`).
    public func subscribe(
        endpoint: String, p256dh: String, auth: String, clients: [String], answer: Bool, decider: String?
    ) async throws(EngineError) -> (subscription: PushSubscription, replaced: Bool) {
        guard let push = settings.push else { throw Self.pushOff }
        var errors: [FieldError] = []
        if let problem = CallbackURL.problem(endpoint) {
            errors.append(FieldError(field: "endpoint", reason: problem))
        } else if endpoint.lowercased().hasPrefix("http:"), !push.allowHTTP {
            errors.append(FieldError(field: "endpoint", reason: "must be https (push.allow_http permits http, for tests)"))
        } else if endpoint.utf8.count > 2048 {
            errors.append(FieldError(field: "endpoint", reason: "is longer than 2048 bytes"))
        } else if let refused = await refusedTarget(endpoint) {
            errors.append(FieldError(field: "endpoint", reason: refused))
        }
        var keys: PushKeys?
        do {
            keys = try PushKeys(p256dh: p256dh, auth: auth)
        } catch {
            errors.append(FieldError(field: error.field, reason: error.reason))
        }
        if clients.isEmpty { errors.append(FieldError(field: "clients", reason: "must name at least one client")) }
        if clients.count > PushSubscription.maxClients {
            errors.append(FieldError(field: "clients", reason: "names more than \(PushSubscription.maxClients) clients"))
        }
        for (index, client) in clients.enumerated() where !ClientID.isValid(client) {
            errors.append(FieldError(field: "clients[\(index)]", reason: "is not a valid client id"))
        }
        if Set(clients).count != clients.count { errors.append(FieldError(field: "clients", reason: "names a client twice")) }
        guard errors.isEmpty, let keys else {
            throw EngineError(
                .invalidSubscription, errors.count == 1 ? "1 field is invalid" : "\(errors.count) fields are invalid", fieldErrors: errors)
        }
        if let refusal = refusal() { throw refusal }
        // Bounded as committed (every instance's), the endpoint's own subscription aside: a
        // browser subscribing again replaces it. Two subscriptions made at once may both pass.
        let others = try await store.pushSubscriptions().filter { $0.endpoint != endpoint }
        if others.count(where: { $0.decider == decider }) >= push.maxPerToken {
            throw EngineError(
                .queueFull,
                "\(decider.map { "token \($0)" } ?? "alertd without tokens") has \(push.maxPerToken) push subscriptions "
                    + "(push.max_subscriptions_per_token); remove one first (alertctl push rm ID)")
        }
        if others.count >= push.maxTotal {
            throw EngineError(
                .queueFull, "alertd holds its maximum of \(push.maxTotal) push subscriptions (push.max_subscriptions)")
        }
        let now = clock.now()
        let id = pushRegistry.withLockedValue { PushSubscription.newID(&$0.ids, at: now) }
        let subscription = PushSubscription(
            id: id, endpoint: endpoint, p256dh: keys.p256dh, auth: keys.auth, clients: clients, answer: answer, decider: decider,
            createdAt: now)
        let replaced = try await store.savePushSubscription(subscription)
        pushRegistry.withLockedValue { $0.add(subscription) }
        return (subscription, replaced != nil)
    }

    /// The subscriptions `decider` made (`all`: every one, for an admin).
    public func pushSubscriptions(of decider: String?, all: Bool) async throws(EngineError) -> [PushSubscription] {
        guard settings.push != nil else { throw Self.pushOff }
        // The store's: another instance's subscriptions count (SPEC §9).
        let stored = try await store.pushSubscriptions()
        return stored.filter { all || $0.decider == decider }.sorted { $0.id < $1.id }
    }

    /// Removes a subscription: its maker's or, `admin`, anyone's.
    public func unsubscribe(id: String, by decider: String?, admin: Bool) async throws(EngineError) {
        guard settings.push != nil else { throw Self.pushOff }
        let stored = try await store.pushSubscriptions()
        guard let subscription = stored.first(where: { $0.id == id }), admin || subscription.decider == decider else {
            throw EngineError(.notFound, "no push subscription \(id) of this token")
        }
        _ = try await store.deletePushSubscription(id: id)
        pushRegistry.withLockedValue { $0.remove(id: id) }
    }

    // MARK: - Pushes as outbox events

    /// The pushes of a change, written in its transaction: `alert.displayed` to each
    /// subscription of a client where an alert became displayed, `alert.decided` to each
    /// of the client of an alert that became terminal.
    func pushEvents(for change: BoardChange, now: Timestamp) -> [OutboxEvent] {
        // No subscription (push off, or nobody subscribed): one lock, nothing copied; a post pays no more.
        guard let registry = pushRegistry.withLockedValue({ $0.isEmpty ? nil : $0 }) else { return [] }
        var events: [OutboxEvent] = []
        // Each client where an alert became displayed: its own, or one it escalated to (SPEC
        // §12), whose subscriptions are pushed the alert as that client holds it.
        for (index, alert) in change.saved.enumerated() where alert.isDisplayedAnywhere {
            for client in alert.displayedOn {
                if let before = change.replaced[index], before.isDisplayed(on: client) { continue }
                let subscriptions = registry.subscriptions(of: client)
                guard !subscriptions.isEmpty else { continue }
                let shown = alert.viewed(from: client)
                events += pushEvents(
                    of: PushPayload.displayed(shown, on: client), type: PushPayload.displayedType, alert: alert, client: client,
                    to: subscriptions, now: now)
                // `push.remind_every`: one reminder a subscription, due that long after the display;
                // each one sent schedules the next while the alert waits (``preparePush(_:now:)``).
                if let remindEvery = settings.push?.remindEvery {
                    let first = now.adding(seconds: remindEvery)
                    if first < alert.expiresAt {
                        events += pushEvents(
                            of: PushPayload.displayed(shown, on: client, reminder: true), type: Self.reminderType, alert: alert,
                            client: client, to: subscriptions, now: first)
                    }
                }
            }
        }
        // Only an alert decided while displayed was pushed as displayed: a queued one withdrawn
        // or expired was never shown on a device, and a push about it would only wake it up.
        // Each device once, however many of the alert's clients it follows.
        for (index, alert) in change.saved.enumerated() where alert.state.isTerminal {
            guard let before = change.replaced[index] ?? nil, before.isPending else { continue }
            var pushed = Set<String>()
            for client in before.clients where before.viewed(from: client).displayedAt != nil {
                let subscriptions = registry.subscriptions(of: client).filter { pushed.insert($0.id).inserted }
                guard !subscriptions.isEmpty else { continue }
                events += pushEvents(
                    of: PushPayload.decided(alert, on: client), type: PushPayload.decidedType, alert: alert, client: client,
                    to: subscriptions, now: now)
            }
        }
        return events
    }

    /// One event of the payload in clear, a delivery per subscription (encrypted for each at
    /// its attempt): a display on a client of a hundred devices writes one body, not a hundred.
    /// `client`: where it was displayed (an answer link chooses there).
    private func pushEvents(
        of payload: [UInt8], type: String, alert: Alert, client: String, to subscriptions: [PushSubscription], now: Timestamp
    ) -> [OutboxEvent] {
        [
            OutboxEvent(
                id: outbox.eventID(at: now).description, alertID: alert.id, client: client,
                type: DeliveryKind.pushTypePrefix + type, createdAt: now, body: payload,
                deliveries: subscriptions.map { subscription in
                    OutboxDelivery(id: outbox.deliveryID(at: now), target: subscription.endpoint, webhookID: nil, secret: subscription.id)
                })
        ]
    }
}

extension Engine: PushPreparing {
    public func preparePush(_ delivery: PendingDelivery, now: Timestamp) async throws(EngineError) -> PushPreparation {
        guard let vapid = vapid.withLockedValue({ $0 }) else { return .end("not sent: push is off (push.subject)") }
        guard let subscription = pushRegistry.withLockedValue({ $0.byID[delivery.secret] }) else {
            return .end("not sent: the push subscription is gone")
        }
        guard let summary = PushPayload.summary(of: delivery.body) else { return .end("not sent: not a push payload") }
        var payload = delivery.body
        var giveUpAt: Timestamp?
        var repeatAt: Timestamp?
        var ttl = Int64(86_400)
        if let displayedAt = summary.reminderOf {
            // A reminder goes while the alert waits, displayed since the display it was made for.
            guard let id = AlertID(summary.alertID), let alert = try await store.alert(id, on: delivery.client)?.alert,
                alert.state == .displayed,
                alert.displayedAt == displayedAt
            else { return .end("not sent: the alert no longer waits for an answer") }
            if let remindEvery = settings.push?.remindEvery, now.adding(seconds: remindEvery) < alert.expiresAt {
                repeatAt = now.adding(seconds: remindEvery)
            }
        }
        if summary.type == PushPayload.displayedType {
            let expiresAt = summary.expiresAt ?? now.adding(seconds: 86_400)
            giveUpAt = expiresAt
            ttl = min(86_400, max(0, (expiresAt.milliseconds - now.milliseconds) / 1000))
            if subscription.answer {
                // A capability for this alert and this subscription, made now: the outbox keeps none.
                let (token, hash) = AnswerTokens.mint()
                let tokenExpiry = Timestamp(milliseconds: min(expiresAt.milliseconds, now.milliseconds + AnswerToken.lifetimeMilliseconds))
                guard let alertID = AlertID(summary.alertID) else { return .end("not sent: not a push payload") }
                try await store.saveAnswerToken(
                    AnswerToken(
                        hash: hash, alertID: alertID, client: delivery.client, subscriptionID: subscription.id,
                        decider: subscription.decider,
                        expiresAt: tokenExpiry))
                payload = PushPayload.withAnswer(payload, url: "/v1/answers/" + token, expiresAt: tokenExpiry) ?? payload
            }
        }
        let body: [UInt8]
        let authorization: String
        do {
            body = try WebPushEncryption.encrypt(payload, for: PushKeys(checkedP256dh: subscription.p256dh, auth: subscription.auth))
            authorization = try vapidAuthorization(vapid, endpoint: subscription.endpoint, now: now)
        } catch {
            throw EngineError(.unavailable, "the push could not be made: \(error)")
        }
        return .send(
            PreparedPush(
                body: body,
                headers: [
                    ("content-type", "application/octet-stream"), ("content-encoding", "aes128gcm"), ("ttl", String(ttl)),
                    ("urgency", summary.priority >= 50 ? "high" : "normal"),
                    // The alert's id (26 characters of base32, all in base64url's alphabet): a newer
                    // push about the alert replaces an older one still queued at the push service.
                    ("topic", summary.alertID), ("authorization", authorization),
                ],
                giveUpAt: giveUpAt, repeatAt: repeatAt))
    }

    /// The `Authorization` for a push to `endpoint`: one token per push service (the JWT's
    /// `aud` is its origin), signed again once it is an hour old (it is valid twelve), so a
    /// display pushed to a hundred devices signs once, not a hundred times.
    private func vapidAuthorization(_ vapid: VAPID, endpoint: String, now: Timestamp) throws -> String {
        guard let origin = VAPID.origin(of: endpoint) else {
            return try vapid.authorization(endpoint: endpoint, now: now.milliseconds / 1000)
        }
        if let cached = vapidTokens.withLockedValue({ $0[origin] }), now.milliseconds - cached.madeAt < 3_600_000,
            cached.madeAt <= now.milliseconds
        {
            return cached.authorization
        }
        let made = try vapid.authorization(endpoint: endpoint, now: now.milliseconds / 1000)
        vapidTokens.withLockedValue { tokens in
            if tokens.count > 1000 { tokens.removeAll() }  // push services are few; bound it all the same
            tokens[origin] = (made, now.milliseconds)
        }
        return made
    }

    public func pushSubscriptionGone(_ delivery: PendingDelivery) async {
        let id = delivery.secret
        do {
            if try await store.deletePushSubscription(id: id) {
                logger.info("push subscription ended: its push service says it is gone", metadata: ["subscription": "\(id)"])
            }
        } catch {
            logger.warning("push subscription not removed", metadata: ["subscription": "\(id)", "error": "\(error)"])
        }
        pushRegistry.withLockedValue { $0.remove(id: id) }
    }
}
