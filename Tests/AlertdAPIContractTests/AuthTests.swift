// Tokens and roles (§7): what each role may do, route by route, and the per-token rate.
// The tokens are made by `alertd token new`, as an operator makes them. Moved from the
// end-to-end tier; what needs the process (no token in the logs, refusing a non-loopback
// address) stays there.

import AlertdTestSupport
import Foundation
import Testing

@Suite("Tokens and roles (§7)")
struct AuthTests {
    @Test("each role may do what §7 says, on its clients only; decided_by is the token's name", arguments: TestMode.both)
    func roles(mode: TestMode) async throws {
        let (config, secrets) = try await roleTokens()
        try await withTestClient(mode, config: config) { http in
            let as_: (String) -> [(String, String)] = { bearer(secrets[$0]) }
            let alert = #"{"title":"Deploy?","buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#

            // post: the deployer on its clients; not the reader, not on another client.
            #expect(try await http.post("/v1/clients/ops/alerts", json: alert, headers: as_("reader")).status == 403)
            #expect(try await http.post("/v1/clients/db/alerts", json: alert, headers: as_("deployer")).status == 403)
            let posted = try await http.post("/v1/clients/ops/alerts", json: alert, headers: as_("deployer"))
            #expect(posted.status == 201)
            let id = try #require(try posted.jsonObject()["id"] as? String)
            #expect(try await http.post("/v1/clients/team-a/alerts", json: alert, headers: as_("deployer")).status == 201)

            // read: everyone reads; GET /v1/clients lists only a token's clients.
            #expect(try await http.get("/v1/clients/ops/alerts/\(id)", headers: as_("reader")).status == 200)
            let forConsole = try await http.get("/v1/clients", headers: as_("console")).jsonObject()["clients"] as? [[String: Any]]
            #expect(forConsole?.map { $0["client"] as? String } == ["ops"])
            let forReader = try await http.get("/v1/clients", headers: as_("reader")).jsonObject()["clients"] as? [[String: Any]]
            #expect(Set(forReader?.compactMap { $0["client"] as? String } ?? []) == ["ops", "team-a"])
            #expect(try await http.get("/v1/clients/team-a/alerts", headers: as_("console")).status == 403)

            // answer: the console chooses; the deployer may not.
            let denied = try await http.post("/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Deploy"}"#, headers: as_("deployer"))
            #expect(denied.status == 403)
            #expect(try denied.jsonObject()["code"] as? String == "forbidden")
            let chosen = try await http.post("/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Deploy"}"#, headers: as_("console"))
            #expect(chosen.status == 200)
            #expect((try chosen.jsonObject()["result"] as? [String: Any])?["decided_by"] as? String == "console")

            // withdraw is post's; decided_by names the deployer.
            let other =
                try await http.post("/v1/clients/team-a/alerts", json: alert, headers: as_("deployer")).jsonObject()["id"] as? String
            let otherID = try #require(other)
            #expect(try await http.delete("/v1/clients/team-a/alerts/\(otherID)", headers: as_("reader")).status == 403)
            let withdrawn = try await http.delete("/v1/clients/team-a/alerts/\(otherID)", headers: as_("deployer"))
            #expect(withdrawn.status == 200)
            #expect((try withdrawn.jsonObject()["result"] as? [String: Any])?["decided_by"] as? String == "deployer")

            // webhooks are admin's.
            let hook = #"{"url":"https://hooks.example.com/hook"}"#
            #expect(try await http.post("/v1/clients/ops/webhooks", json: hook, headers: as_("deployer")).status == 403)
            #expect(try await http.get("/v1/clients/ops/webhooks", headers: as_("reader")).status == 403)
            #expect(try await http.post("/v1/clients/ops/webhooks", json: hook, headers: as_("root")).status == 201)
        }
    }

    /// §7's table, route by route: the role each /v1 route needs (webhooks, reading them too, are admin's).
    static let permissionTable: [(method: String, path: String, body: String?, needs: String)] = [
        ("GET", "/v1/clients", nil, "read"),
        ("GET", "/v1/whoami", nil, "read"),
        ("POST", "/v1/clients/{c}/alerts", #"{"title": "T"}"#, "post"),
        ("GET", "/v1/clients/{c}/alerts", nil, "read"),
        ("GET", "/v1/clients/{c}/alerts/current", nil, "read"),
        ("GET", "/v1/clients/{c}/alerts/01M00000000000000000000000", nil, "read"),
        ("DELETE", "/v1/clients/{c}/alerts/01M00000000000000000000000", nil, "post"),
        ("POST", "/v1/clients/{c}/alerts/01M00000000000000000000000/choice", #"{"button": "x"}"#, "answer"),
        ("GET", "/v1/clients/{c}/alerts/01M00000000000000000000000/deliveries", nil, "read"),
        ("POST", "/v1/clients/{c}/webhooks", #"{"url": "https://hooks.example.com/hook"}"#, "admin"),
        ("GET", "/v1/clients/{c}/webhooks", nil, "admin"),
        ("GET", "/v1/clients/{c}/webhooks/wh_x", nil, "admin"),
        ("DELETE", "/v1/clients/{c}/webhooks/wh_x", nil, "admin"),
        // Without integrations.alertmanager the receiver answers 404 once the token may use it.
        ("POST", "/v1/integrations/alertmanager/{c}", #"{"version": "4", "alerts": []}"#, "alertmanager"),
    ]

    /// What each role grants (§7): read reads; post, answer and alertmanager add their own; admin everything.
    static let grants: [String: Set<String>] = [
        "read": ["read"], "post": ["read", "post"], "answer": ["read", "answer"], "alertmanager": ["read", "alertmanager"],
        "admin": ["read", "post", "answer", "admin", "alertmanager"],
    ]

    @Test("the auth matrix: every role × every /v1 route × a client in its glob and one outside it")
    func matrix() async throws {
        var secrets: [String: String] = [:]
        var config = "auth:\n  tokens:\n"
        for role in Self.grants.keys.sorted() {
            let (secret, entry) = try await newToken(role + "-token", roles: role, clients: "ops-*")
            secrets[role] = secret
            config += entry
        }
        try await withTestClient(config: config) { http in
            for role in Self.grants.keys.sorted() {
                let headers = bearer(secrets[role])
                for route in Self.permissionTable {
                    for client in ["ops-1", "db"] {
                        let path = route.path.replacingOccurrences(of: "{c}", with: client)
                        let names = route.path.contains("{c}")
                        let allowed = Self.grants[role, default: []].contains(route.needs) && (!names || client == "ops-1")
                        let typed = route.body == nil ? headers : headers + [("Content-Type", "application/json")]
                        let response = try await http.request(route.method, path, headers: typed, body: route.body.map { Array($0.utf8) })
                        if allowed {
                            #expect(response.status != 403 && response.status != 401, "\(role) \(route.method) \(path): \(response.status)")
                        } else {
                            #expect(response.status == 403, "\(role) \(route.method) \(path): \(response.status)")
                            #expect(try response.jsonObject()["code"] as? String == "forbidden")
                        }
                    }
                }
            }
        }
    }

    @Test(
        "over its rate a token gets 429 rate-limited with Retry-After; other tokens are not slowed; after the wait it is served",
        // Each instance keeps its own token buckets (docs/high-availability.md: with N
        // instances a token's rate is up to N times rate_per_second): through two, the
        // burst of two is four requests.
        .disabled(if: TestMode.isBalancedPass, "rate limits are per instance"))
    func rateLimited() async throws {
        let (fast, fastEntry) = try await newToken("fast", roles: "read", clients: "*")
        let (calm, calmEntry) = try await newToken("calm", roles: "read", clients: "*")
        // One request every ten seconds: the three requests and the fourth must each come
        // within 10 s of the burst, which even a heavily loaded machine keeps (at 1/s and
        // then 0.5/s, stalls of a few seconds on busy runs refilled the bucket between them).
        let config = "limits: { rate_per_second: 0.1, rate_burst: 2 }\nauth:\n  tokens:\n" + fastEntry + calmEntry
        try await withTestClient(config: config) { http in
            var statuses: [Int] = []
            for _ in 0..<3 { statuses.append(try await http.get("/v1/clients", headers: bearer(fast)).status) }
            #expect(statuses == [200, 200, 429])
            let limited = try await http.get("/v1/clients", headers: bearer(fast))
            #expect(limited.status == 429)
            #expect(try limited.jsonObject()["code"] as? String == "rate-limited")
            let wait = try #require(limited.header("Retry-After").flatMap(Int.init))
            #expect(wait >= 1 && wait <= 10)
            #expect(try await http.get("/v1/clients", headers: bearer(calm)).status == 200, "another token has its own bucket")
            #expect(try await http.get("/healthz").status == 200)
            // Retry-After is the contract: after it, the token is served again.
            try await Task.sleep(for: .seconds(wait))
            #expect(try await http.get("/v1/clients", headers: bearer(fast)).status == 200)
        }
    }
}
