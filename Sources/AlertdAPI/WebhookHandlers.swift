import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdWire

/// The webhook endpoints of §4 (admin only: they are configuration, and their
/// URLs name internal receivers).
extension API {
    /// `POST /v1/clients/{client}/webhooks` with `{"url": …, "secret": optional}`:
    /// 201 with the secret, shown this once.
    func createWebhook(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        try Self.requireJSON(call.request)
        let (url, secret) = try Self.webhookBody(call.request.body)
        call.answer(
            inline: false,
            { [engine] () async throws(EngineError) in try await engine.createWebhook(client: client, url: url, secret: secret) }
        ) {
            [self] result in
            switch result {
            case .success(let webhook):
                var response = json(201, Rendering.createdWebhook(webhook))
                response.headers.append(("Location", "/v1/clients/\(client)/webhooks/\(webhook.id)"))
                return response
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }

    /// `GET /v1/clients/{client}/webhooks`: secrets are never shown again.
    func listWebhooks(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        call.answer({ [engine] () async throws(EngineError) in try await engine.currentWebhooks(of: client) }) { [self] result in
            switch result {
            case .success(let webhooks):
                return json(200, Rendering.webhooks(webhooks))
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }

    /// `GET /v1/clients/{client}/webhooks/{id}`.
    func getWebhook(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        let id = call.captures["id"] ?? ""
        call.answer({ [engine] () async throws(EngineError) in try await engine.currentWebhooks(of: client) }) { [self] result in
            switch result {
            case .success(let webhooks):
                guard let webhook = webhooks.first(where: { $0.id == id }) else {
                    return render(Problem(.notFound, "no webhook \(id) on client \(client)"))
                }
                return json(200, Rendering.webhook(webhook))
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }

    /// `DELETE /v1/clients/{client}/webhooks/{id}`: 204, with `Alertd-Cancelled-Deliveries`:
    /// how many of its deliveries still pending were cancelled with it (§4 keeps the 204, so
    /// the count is a header); a config file's webhook is 403.
    func deleteWebhook(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        let id = call.captures["id"] ?? ""
        call.answer(inline: false, { [engine] () async throws(EngineError) in try await engine.deleteWebhook(client: client, id: id) }) {
            [self] result in
            switch result {
            case .success(let cancelled):
                HTTPResponse(
                    status: 204, headers: [("Cache-Control", "no-store"), (API.cancelledDeliveriesHeader, String(cancelled))])
            case .failure(let error): render(Problem(error))
            }
        }
    }

    /// The header of a webhook's removal that says how many deliveries it cancelled.
    public static let cancelledDeliveriesHeader = "Alertd-Cancelled-Deliveries"

    static func webhookBody(_ body: [UInt8]) throws(Problem) -> (url: String, secret: String?) {
        let object = try jsonObject(body)
        if let unknown = object.keys.first(where: { $0 != "url" && $0 != "secret" }) {
            throw Problem(.badRequest, "unknown field \(unknown); send {\"url\": …, \"secret\": optional}")
        }
        guard case .string(let url)? = object["url"] else { throw Problem(.badRequest, "url is required and must be a string") }
        switch object["secret"] {
        case nil, .null?: return (url, nil)
        case .string(let secret)?: return (url, secret)
        default: throw Problem(.badRequest, "secret must be a string")
        }
    }
}
