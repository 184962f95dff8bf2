public import AlertdClient
public import AlertdWire

/// The three calls of alertd's API the MCP tools make. ``AlertdClient`` is the real one;
/// the tests give the server a double that answers as each test says.
public protocol AlertsAPI: Sendable {
    /// `POST /v1/clients/{client}/alerts` with an `Idempotency-Key`.
    func post(_ alert: NewAlert, to client: String, idempotencyKey: String?) async throws -> AlertResource
    /// `GET /v1/clients/{client}/alerts/{id}?wait=N`: at once when terminal, else after `wait` seconds at most.
    func alert(on client: String, id: String, wait: Int?) async throws -> AlertResource
    /// `DELETE /v1/clients/{client}/alerts/{id}`.
    func withdraw(on client: String, id: String) async throws -> AlertResource
}

extension AlertdClient: AlertsAPI {}
