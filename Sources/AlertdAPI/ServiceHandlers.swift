import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdReceipts
import AlertdWire

/// Health, readiness, metrics, the dashboard, `whoami` and the list of clients.
extension API {
    /// `GET /healthz`: the process answers.
    func healthz(_ call: Call) throws {
        _ = try call.query()
        call.respond(json(200, Array(#"{"status":"ok"}"#.utf8)))
    }

    /// `GET /readyz`: the store takes writes and alertd is not shutting down.
    func readyz(_ call: Call) throws {
        _ = try call.query()
        guard engine.isReady else {
            throw Problem(.unavailable, engine.isDraining ? "alertd is shutting down" : "the store is not writable")
        }
        var out = JSONWriter(capacity: 64)
        out.beginObject()
        out.key("status")
        out.string("ready")
        out.key("pending")
        out.int(engine.pendingTotal)
        out.key("waiters")
        out.int(engine.waiterCount)
        out.endObject()
        call.respond(json(200, out.bytes))
    }

    /// `GET /metrics`: the Prometheus text exposition.
    func metricsText(_ call: Call) throws {
        _ = try call.query()
        call.respond(
            HTTPResponse(
                status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8"), ("Cache-Control", "no-store")],
                body: metrics.exposition()))
    }

    /// `GET /`: the dashboard's page. A page, not the API: its query (a kiosk's
    /// bookmark, a cache buster) is ignored.
    func dashboardPage(_ call: Call) throws {
        call.respond(Dashboard.response(Dashboard.page, ifNoneMatch: call.request.header("if-none-match")))
    }

    /// `GET /sw.js`: the dashboard's service worker (notifications, the installable app).
    func dashboardWorker(_ call: Call) throws {
        call.respond(Dashboard.response(Dashboard.worker, ifNoneMatch: call.request.header("if-none-match")))
    }

    /// `GET /ui/{asset}`: one of the dashboard's embedded files.
    func dashboardAsset(_ call: Call) throws {
        guard let asset = Dashboard.asset(named: call.captures["asset"] ?? "") else {
            throw Problem(.notFound, "no such resource: \(call.request.path)")
        }
        call.respond(Dashboard.response(asset, ifNoneMatch: call.request.header("if-none-match")))
    }

    /// `GET /v1/whoami`: `{"name", "roles", "clients", "auth"}` of the token; without
    /// tokens (no principal) everything is allowed to everyone: every role, every client.
    func whoAmI(_ call: Call) throws {
        _ = try call.query()
        let principal = call.principal
        var out = JSONWriter(capacity: 128)
        out.beginObject()
        out.key("name")
        out.string(principal?.name)
        out.key("roles")
        out.beginArray()
        for role in Role.allCases where principal?.roles.contains(role) ?? true { out.string(role.rawValue) }
        out.endArray()
        out.key("clients")
        out.beginArray()
        for pattern in principal?.clients.map(\.text) ?? ["*"] { out.string(pattern) }
        out.endArray()
        out.key("auth")
        out.bool(principal != nil)
        out.endObject()
        call.respond(json(200, out.bytes))
    }

    /// `GET /v1/clients`: the clients the token may touch, paged like the alert
    /// list: by client id, `limit` (default 100, at most 1000) and the `cursor` of
    /// the previous page (`c.<last client id>`).
    func listClients(_ call: Call) throws {
        let query = try call.query(["limit", "cursor"])
        let limit = try query.limit()
        var after: String?
        if let text = query["cursor"] {
            guard text.hasPrefix("c."), ClientID.isValid(String(text.dropFirst(2))) else {
                throw Problem(.badRequest, "cursor \"\(text)\" was not issued by this daemon")
            }
            after = String(text.dropFirst(2))
        }
        let principal = call.principal
        call.answer({ [engine, after] () async throws(EngineError) in
            try await engine.clients(after: after, limit: limit, where: { principal?.mayTouch($0) ?? true })
        }) { [self] result in
            switch result {
            case .success(let (page, more)): json(200, Rendering.clients(page, more: more))
            case .failure(let error): render(Problem(error))
            }
        }
    }

    /// `GET /v1/keys`: the public keys of signed receipts (SPEC §14) as a JWKS (RFC 7517):
    /// `{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": …, "kid": …, "alg": "EdDSA", "use": "sig"}]}`,
    /// the signing key first, then the rotated ones. `kid` is the key's RFC 7638 thumbprint,
    /// the `key_id` of the receipts it signed.
    func receiptKeySet(_ call: Call) throws {
        _ = try call.query()
        call.respond(json(200, receiptKeys.jwksBytes))
    }
}
