import Foundation
import Testing

/// How long an async test waits for something the daemon or a program will do.
///
/// Swift's cooperative thread pool has one thread per CPU (two on CI), and many of the
/// end-to-end tests are synchronous: they block their thread in socket reads, waits for a
/// daemon's "listening" line or deliberate slowness (slow clients, start timeouts). When
/// two of them run at once, every async test is frozen until one ends; a run showed such
/// stretches of ~25 s near the start, and async waits of 20 s failed with nothing wrong
/// with alertd. The async waits are therefore measured against this bound, long enough to
/// outlast that and short enough to end a run whose awaited thing never comes.
let asyncWaitTimeout: Double = 90

/// Small conveniences over the harness for the end-to-end suites.
extension TestHTTPClient {
    /// Posts an alert and returns its resource; fails the test unless it is 201.
    func postAlert(_ client: String, _ json: String, headers: [(String, String)] = []) throws -> [String: Any] {
        let response = try post("/v1/clients/\(client)/alerts", json: json, headers: headers)
        try #require(response.status == 201, "post answered \(response.status): \(response.text)")
        return try response.jsonObject()
    }

    func choose(_ client: String, _ id: String, _ json: String) throws -> TestResponse {
        try post("/v1/clients/\(client)/alerts/\(id)/choice", json: json)
    }

    /// The number of parked waiters, from `/readyz`.
    func waiters() throws -> Int {
        try get("/readyz").jsonObject()["waiters"] as? Int ?? -1
    }

    /// Polls `/readyz` until `count` requests are parked (bounded): the only way
    /// to observe from outside that the daemon has parked them.
    func awaitWaiters(_ count: Int, timeout: Double = 20) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while try waiters() < count {
            guard Date() < deadline else {
                Issue.record("only \(try waiters()) of \(count) waiters parked after \(timeout) s")
                return
            }
            usleep(2_000)
        }
    }
}

func id(_ alert: [String: Any]) -> String { alert["id"] as! String }
