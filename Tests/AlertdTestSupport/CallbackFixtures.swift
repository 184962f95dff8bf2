// What the callback tests of the contract and end-to-end tiers share: the config that
// points alertd's deliveries at the tests' webhook receivers, and the deliveries API read
// until it shows what a test waits for.

/// The secret every test webhook and `callback_url` is signed with.
public let callbackSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

/// A config with fast retries, the signing secret and the given webhooks. The tests'
/// receivers listen on loopback, which the default `callbacks.deny` refuses: `allow` names
/// it unless told otherwise.
///
/// - Parameter durability: `normal` unless a test is about what survives a crash (`full`):
///   a full fsync per commit slowed delivery tests on a busy disk.
public func callbackConfig(
    durability: String = "normal", webhooks: [(client: String, url: String)] = [], timeout: Double = 5, retryInitial: Double = 0.2,
    retryMax: Double = 0.8, maxAge: Double? = nil, deny: [String]? = nil, allow: [String] = ["127.0.0.0/8", "::1"]
) -> String {
    var text = """
        durability: \(durability)
        callbacks:
          signing_secret: "\(callbackSecret)"
          timeout: \(timeout)
          retry_initial_seconds: \(retryInitial)
          retry_max_interval_seconds: \(retryMax)

        """
    if let maxAge { text += "  max_age: \(maxAge)\n" }
    if let deny { text += "  deny: [\(deny.map { "\"\($0)\"" }.joined(separator: ", "))]\n" }
    if !allow.isEmpty { text += "  allow: [\(allow.map { "\"\($0)\"" }.joined(separator: ", "))]\n" }
    if !webhooks.isEmpty {
        text += "webhooks:\n"
        for hook in webhooks { text += "  - {client: \(hook.client), url: \"\(hook.url)\", secret: \"\(callbackSecret)\"}\n" }
    }
    return text
}

/// An alert with two buttons, so it is never dismissed.
public let oneButton = #"{"title":"Deploy?","buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#

/// Reads an alert's deliveries (with `headers`: a token) until `done` holds: attempts are
/// recorded just after the receiver answers. Throws after `timeout`, with the last list.
public func deliveries(
    _ http: any TestClient, _ client: String, _ alertID: String, headers: [(String, String)] = [],
    timeout: Duration = .seconds(30), until done: ([[String: Any]]) -> Bool
) async throws -> [[String: Any]] {
    let deadline = ContinuousClock.now + timeout
    while true {
        let response = try await http.get("/v1/clients/\(client)/alerts/\(alertID)/deliveries", headers: headers)
        guard response.status == 200 else { throw TestFailure("deliveries answered \(response.status): \(response.text)") }
        guard let list = try response.jsonObject()["deliveries"] as? [[String: Any]] else {
            throw TestFailure("no deliveries array: \(response.text)")
        }
        if done(list) { return list }
        guard ContinuousClock.now < deadline else { throw TestFailure("deliveries never reached the expected state: \(list)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// The attempts of one delivery of the deliveries API.
public func attempts(_ delivery: [String: Any]) -> [[String: Any]] { delivery["attempts"] as? [[String: Any]] ?? [] }
