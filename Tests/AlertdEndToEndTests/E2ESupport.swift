import AlertdClient
import AlertdWire
import AlertdTestSupport
import Foundation
import Testing

/// How long a test waits for something the daemon or a program will do: generous for a
/// loaded CI machine, short enough to end a run whose awaited thing never comes.
let asyncWaitTimeout: Duration = .seconds(30)

/// The secret every test webhook and `callback_url` is signed with.
let callbackSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

/// A config with fast retries, the signing secret and the given webhooks. The tests' receivers
/// listen on loopback, which the default `callbacks.deny` refuses: `allow` names it.
func callbackConfig(
    webhooks: [(client: String, url: String)] = [], timeout: Double = 5, retryInitial: Double = 0.2, retryMax: Double = 0.8
) -> String {
    var text = """
        durability: full
        callbacks:
          signing_secret: "\(callbackSecret)"
          timeout: \(timeout)
          retry_initial_seconds: \(retryInitial)
          retry_max_interval_seconds: \(retryMax)
          allow: ["127.0.0.0/8", "::1"]

        """
    if !webhooks.isEmpty {
        text += "webhooks:\n"
        for hook in webhooks { text += "  - {client: \(hook.client), url: \"\(hook.url)\", secret: \"\(callbackSecret)\"}\n" }
    }
    return text
}

let oneButton = #"{"title":"Deploy?","buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#

/// Polls the deliveries API until `done` holds (attempts are recorded just after the receiver answers).
func deliveries(
    _ http: any TestClient, _ client: String, _ alertID: String, timeout: Duration = .seconds(20),
    until done: ([[String: Any]]) -> Bool
) async throws -> [[String: Any]] {
    let deadline = ContinuousClock.now + timeout
    while true {
        let response = try await http.get("/v1/clients/\(client)/alerts/\(alertID)/deliveries")
        try #require(response.status == 200, "deliveries answered \(response.status): \(response.text)")
        let list = try #require(try response.jsonObject()["deliveries"] as? [[String: Any]])
        if done(list) { return list }
        guard ContinuousClock.now < deadline else {
            Issue.record("deliveries never reached the expected state: \(list)")
            return list
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

func attempts(_ delivery: [String: Any]) -> [[String: Any]] { delivery["attempts"] as? [[String: Any]] ?? [] }

/// The alert of a callback, once its signature checked out.
func verifiedAlert(_ request: WebhookReceiver.Received) throws -> [String: Any] {
    let verifier = try WebhookVerifier(secret: callbackSecret)
    _ = try verifier.verify(headers: Dictionary(request.headers, uniquingKeysWith: { first, _ in first }), body: request.body)
    let event = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
    return try #require((event["data"] as? [String: Any])?["alert"] as? [String: Any])
}

/// Long-polls `current` until something is displayed on `client`; its id.
func awaitDisplayed(_ daemon: Daemon, _ client: String, timeout: Duration = .seconds(30)) async throws -> String {
    let alertd = try AlertdClient(url: daemon.baseURL)
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if let id = try await alertd.current(on: client, wait: 20)?.id { return id }
    }
    throw ProcessError("nothing displayed on \(client) after \(timeout)", stderr: daemon.stderrText)
}

/// Waits until the daemon's stderr holds `count` request lines for `path` (debug level logs one per request).
func awaitRequests(_ daemon: Daemon, path: String, count: Int) async throws {
    try await daemon.waitForStderr(containing: "path=\(path) ", count: count, timeout: .seconds(30))
}
