import AlertdClient
import AlertdWire
import AlertdTestSupport
import Foundation
import Testing

/// How long a test waits for something the daemon or a program will do: generous for a
/// loaded CI machine, short enough to end a run whose awaited thing never comes.
let asyncWaitTimeout: Duration = .seconds(30)

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
