import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdWire

/// Web Push's endpoints (SPEC §11): the VAPID key, the subscriptions a token makes, and
/// the answers a notification sends back through its `answer_url`.
extension API {
    /// `GET /v1/push/key`: `{"public_key": …}`, a browser's `applicationServerKey`.
    func pushKey(_ call: Call) throws {
        _ = try call.query()
        guard let key = engine.pushPublicKey else { throw Problem(Engine.pushOff) }
        var out = JSONWriter(capacity: 128)
        out.beginObject()
        out.key("public_key")
        out.string(key)
        out.endObject()
        call.respond(json(200, out.bytes))
    }

    /// `POST /v1/push/subscriptions`: a browser's `PushSubscription` and what to push to it.
    /// The token needs a role on each client it names (any role reads), and `answer` or
    /// `admin` on each when `answer` is true. The same endpoint again replaces it: 200.
    func createPushSubscription(_ call: Call) throws {
        _ = try call.query()
        try Self.requireJSON(call.request)
        let body = try Self.subscriptionBody(call.request.body)
        if let principal = call.principal {
            for client in body.clients where ClientID.isValid(client) {
                guard principal.mayTouch(client) else {
                    throw Problem(.forbidden, "token \(principal.name) may not touch client \(client)")
                }
                if body.answer, !principal.allows(.answer) {
                    throw Problem(
                        .forbidden,
                        "token \(principal.name) may not answer (it needs the answer or admin role): subscribe with \"answer\": false")
                }
            }
        }
        let decider = call.principal?.name
        call.answer(
            inline: false,
            { [engine] () async throws(EngineError) in
                try await engine.subscribe(
                    endpoint: body.endpoint, p256dh: body.p256dh, auth: body.auth, clients: body.clients, answer: body.answer,
                    decider: decider)
            }
        ) { [self] result in
            switch result {
            case .success(let (subscription, replaced)):
                var response = json(replaced ? 200 : 201, Self.subscription(subscription))
                response.headers.append(("Location", "/v1/push/subscriptions/\(subscription.id)"))
                return response
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }

    /// `GET /v1/push/subscriptions`: the token's own (`admin`: every one).
    func listPushSubscriptions(_ call: Call) throws {
        _ = try call.query()
        let (decider, admin) = (call.principal?.name, call.principal.map { $0.roles.contains(.admin) } ?? true)
        call.answer({ [engine] () async throws(EngineError) in try await engine.pushSubscriptions(of: decider, all: admin) }) {
            [self] result in
            switch result {
            case .success(let subscriptions):
                var out = JSONWriter(capacity: 64 + subscriptions.count * 256)
                PushSubscriptionList(subscriptions: subscriptions.map(Self.resource)).write(into: &out)
                return json(200, out.bytes)
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }

    /// `DELETE /v1/push/subscriptions/{id}`: 204; another token's is 404 (unless `admin`).
    func deletePushSubscription(_ call: Call) throws {
        _ = try call.query()
        let id = call.captures["id"] ?? ""
        let (decider, admin) = (call.principal?.name, call.principal.map { $0.roles.contains(.admin) } ?? true)
        call.answer(
            inline: false, { [engine] () async throws(EngineError) in try await engine.unsubscribe(id: id, by: decider, admin: admin) }
        ) {
            [self] result in
            switch result {
            case .success: HTTPResponse(status: 204, headers: [("Cache-Control", "no-store")])
            case .failure(let error): render(Problem(error))
            }
        }
    }

    /// `POST /v1/answers/{token}` with `{"button": …}` or `{"button_index": …}`, and
    /// `"confirm": true` for a destructive button: no `Authorization`, the link is the
    /// capability (single use). Never logged with its token (``RequestID``'s log line
    /// shows `/v1/answers/…`).
    func answerThroughLink(_ call: Call) throws {
        _ = try call.query()
        try Self.requireJSON(call.request)
        let token = call.captures["token"] ?? ""
        let object = try Self.jsonObject(call.request.body)
        var confirmed = false
        switch object["confirm"] {
        case nil, .null?: break
        case .bool(let value)?: confirmed = value
        default: throw Problem(.badRequest, "confirm must be true or false")
        }
        let selection = try Self.selection(object, also: ["confirm"])
        call.answer(
            inline: false,
            { [engine, confirmed] () async throws(EngineError) in
                try await engine.answer(token: Substring(token), selection, confirmed: confirmed)
            }
        ) { [self] result in alertResponse(result, whole: false) }
    }

    // MARK: - Decoding and rendering

    struct SubscriptionBody {
        var endpoint: String
        var p256dh: String
        var auth: String
        var clients: [String]
        var answer: Bool
    }

    /// A subscription as posted: a `PushSubscription`'s JSON (its `expirationTime` is
    /// taken and ignored) with `clients` and `answer`; anything else is refused by name.
    static func subscriptionBody(_ body: [UInt8]) throws(Problem) -> SubscriptionBody {
        let object = try jsonObject(body)
        let known: Set<String> = ["endpoint", "keys", "clients", "answer", "expirationTime"]
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw Problem(
                .badRequest, "unknown field \(unknown); send {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}, \"clients\", \"answer\"}")
        }
        guard case .string(let endpoint)? = object["endpoint"] else {
            throw Problem(.badRequest, "endpoint is required and must be a string (the PushSubscription's endpoint)")
        }
        guard case .object(let keys)? = object["keys"], case .string(let p256dh)? = keys["p256dh"], case .string(let auth)? = keys["auth"]
        else { throw Problem(.badRequest, "keys is required: {\"p256dh\": …, \"auth\": …}, as the PushSubscription gives them") }
        if let unknown = keys.keys.first(where: { $0 != "p256dh" && $0 != "auth" }) {
            throw Problem(.badRequest, "unknown field keys.\(unknown)")
        }
        guard case .array(let list)? = object["clients"] else {
            throw Problem(.badRequest, "clients is required: the client ids to push, [\"ops\", …]")
        }
        var clients: [String] = []
        for item in list {
            guard case .string(let client) = item else { throw Problem(.badRequest, "clients must hold strings") }
            clients.append(client)
        }
        var answer = false
        switch object["answer"] {
        case nil, .null?: break
        case .bool(let value)?: answer = value
        default: throw Problem(.badRequest, "answer must be true or false")
        }
        return SubscriptionBody(endpoint: endpoint, p256dh: p256dh, auth: auth, clients: clients, answer: answer)
    }

    /// `{id, endpoint, clients, answer, decider, created_at}`: never the device's keys.
    static func resource(_ subscription: PushSubscription) -> PushSubscriptionResource {
        PushSubscriptionResource(
            id: subscription.id, endpoint: subscription.endpoint, clients: subscription.clients, answer: subscription.answer,
            decider: subscription.decider, createdAt: subscription.createdAt)
    }

    static func subscription(_ subscription: PushSubscription) -> [UInt8] {
        var out = JSONWriter(capacity: 256)
        resource(subscription).write(into: &out)
        return out.bytes
    }
}
