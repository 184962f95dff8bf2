import Foundation
import Testing

/// How long an async test waits for something the daemon or a program will do.
///
/// Every suite here has the `.ownThreads` trait: each test runs on threads of its own, so a
/// test that blocks no longer freezes the async ones (it used to, for ~25 s stretches, when
/// they all shared the cooperative pool). The bound is generous for a loaded CI machine and
/// short enough to end a run whose awaited thing never comes.
let asyncWaitTimeout: Double = 30

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
