import Foundation
import Testing

/// Runs `alertd token new` and returns the secret and the config entry it printed.
private func newToken(_ name: String, roles: String, clients: String) throws -> (secret: String, entry: String) {
    let run = try Program.alertd(["token", "new", name, "--roles", roles, "--clients", clients])
    try #require(run.status == 0, "alertd token new: \(run.stderr)")
    let text = run.stdout
    let secret = try #require(text.split(separator: "\n").first { $0.hasPrefix("secret: ") }).dropFirst("secret: ".count)
    let entry = text.components(separatedBy: "# under auth.tokens in the config:\n").last ?? ""
    return (String(secret), entry)
}

@Suite("Tokens and roles (§7) on the real daemon", .serialized, .ownThreads)
struct AuthTests {
    /// A daemon with four tokens made by `alertd token new`, and their secrets.
    static func start() throws -> (Daemon, [String: String]) {
        var secrets: [String: String] = [:]
        var config = "auth:\n  tokens:\n"
        for (name, roles, clients) in [
            ("reader", "read", "*"), ("deployer", "post", "ops,team-*"), ("console", "answer", "ops"), ("root", "admin", "*"),
        ] {
            let (secret, entry) = try newToken(name, roles: roles, clients: clients)
            secrets[name] = secret
            config += entry
        }
        return (try Daemon.start(.init(config: config)), secrets)
    }

    static func bearer(_ secret: String?) -> [(String, String)] { secret.map { [("Authorization", "Bearer \($0)")] } ?? [] }

    @Test("without a token, or with a wrong one, every /v1 request is 401 — before 404 and 405; health stays open")
    func unauthorized() throws {
        let (daemon, _) = try Self.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        for (method, path) in [("GET", "/v1/clients"), ("GET", "/v1/nowhere"), ("PUT", "/v1/clients"), ("GET", "/v1")] {
            for headers in [[], [("Authorization", "Bearer wrong")], [("Authorization", "Basic YTpi")]] {
                let response = try http.request(method, path, headers: headers)
                #expect(response.status == 401, "\(method) \(path) \(headers)")
                #expect(try response.jsonObject()["code"] as? String == "unauthorized")
                #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            }
        }
        #expect(try http.get("/healthz").status == 200)
        #expect(try http.get("/readyz").status == 200)
        #expect(!daemon.stderrText.contains("Bearer wrong"), "no token value in the logs")
    }

    @Test("each role may do what §7 says, on its clients only; decided_by is the token's name")
    func roles() throws {
        let (daemon, secrets) = try Self.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let as_: (String) -> [(String, String)] = { Self.bearer(secrets[$0]) }
        let alert = #"{"title":"Deploy?","buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#

        // post: the deployer on its clients; not the reader, not on another client.
        #expect(try http.post("/v1/clients/ops/alerts", json: alert, headers: as_("reader")).status == 403)
        #expect(try http.post("/v1/clients/db/alerts", json: alert, headers: as_("deployer")).status == 403)
        let posted = try http.post("/v1/clients/ops/alerts", json: alert, headers: as_("deployer"))
        #expect(posted.status == 201)
        let id = try posted.jsonObject()["id"] as! String
        #expect(try http.post("/v1/clients/team-a/alerts", json: alert, headers: as_("deployer")).status == 201)

        // read: everyone reads; GET /v1/clients lists only a token's clients.
        #expect(try http.get("/v1/clients/ops/alerts/\(id)", headers: as_("reader")).status == 200)
        let forConsole = try http.get("/v1/clients", headers: as_("console")).jsonObject()["clients"] as! [[String: Any]]
        #expect(forConsole.map { $0["client"] as? String } == ["ops"])
        let forReader = try http.get("/v1/clients", headers: as_("reader")).jsonObject()["clients"] as! [[String: Any]]
        #expect(Set(forReader.map { $0["client"] as! String }) == ["ops", "team-a"])
        #expect(try http.get("/v1/clients/team-a/alerts", headers: as_("console")).status == 403)

        // answer: the console chooses; the deployer may not.
        let denied = try http.post("/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Deploy"}"#, headers: as_("deployer"))
        #expect(denied.status == 403)
        #expect(try denied.jsonObject()["code"] as? String == "forbidden")
        let chosen = try http.post("/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Deploy"}"#, headers: as_("console"))
        #expect(chosen.status == 200)
        #expect((try chosen.jsonObject()["result"] as? [String: Any])?["decided_by"] as? String == "console")

        // withdraw is post's; decided_by names the deployer.
        let other = try http.post("/v1/clients/team-a/alerts", json: alert, headers: as_("deployer")).jsonObject()["id"] as! String
        #expect(try http.delete("/v1/clients/team-a/alerts/\(other)", headers: as_("reader")).status == 403)
        let withdrawn = try http.delete("/v1/clients/team-a/alerts/\(other)", headers: as_("deployer"))
        #expect(withdrawn.status == 200)
        #expect((try withdrawn.jsonObject()["result"] as? [String: Any])?["decided_by"] as? String == "deployer")

        // webhooks are admin's.
        let hook = #"{"url":"http://127.0.0.1:9/hook"}"#
        #expect(try http.post("/v1/clients/ops/webhooks", json: hook, headers: as_("deployer")).status == 403)
        #expect(try http.get("/v1/clients/ops/webhooks", headers: as_("reader")).status == 403)
        #expect(try http.post("/v1/clients/ops/webhooks", json: hook, headers: as_("root")).status == 201)
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
        ("POST", "/v1/clients/{c}/webhooks", #"{"url": "http://127.0.0.1:9/hook"}"#, "admin"),
        ("GET", "/v1/clients/{c}/webhooks", nil, "admin"),
        ("GET", "/v1/clients/{c}/webhooks/wh_x", nil, "admin"),
        ("DELETE", "/v1/clients/{c}/webhooks/wh_x", nil, "admin"),
    ]

    /// What each role grants (§7): read reads; post and answer add their own; admin everything.
    static let grants: [String: Set<String>] = [
        "read": ["read"], "post": ["read", "post"], "answer": ["read", "answer"], "admin": ["read", "post", "answer", "admin"],
    ]

    @Test("the auth matrix: every role × every /v1 route × a client in its glob and one outside it")
    func matrix() throws {
        var secrets: [String: String] = [:]
        var config = "auth:\n  tokens:\n"
        for role in Self.grants.keys.sorted() {
            let (secret, entry) = try newToken(role + "-token", roles: role, clients: "ops-*")
            secrets[role] = secret
            config += entry
        }
        let daemon = try Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        let http = daemon.client()
        for role in Self.grants.keys.sorted() {
            let headers = Self.bearer(secrets[role])
            for route in Self.permissionTable {
                for client in ["ops-1", "db"] {
                    let path = route.path.replacingOccurrences(of: "{c}", with: client)
                    let names = route.path.contains("{c}")
                    let allowed = Self.grants[role]!.contains(route.needs) && (!names || client == "ops-1")
                    let typed = route.body == nil ? headers : headers + [("Content-Type", "application/json")]
                    let response = try http.request(route.method, path, headers: typed, body: route.body.map { Array($0.utf8) })
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

    @Test("without tokens alertd refuses a non-loopback address unless allow_anonymous; with tokens it serves there")
    func exposure() throws {
        var options = Daemon.Options(config: "log: { level: info }\n")
        options.listen = "0.0.0.0:0"
        #expect {
            try Daemon.start(options)
        } throws: { error in
            (error as? DaemonError)?.stderr.contains("refusing to listen on 0.0.0.0:0") == true
        }
        let (_, entry) = try newToken("ops", roles: "read", clients: "*")
        options.config = "auth:\n  tokens:\n" + entry
        let daemon = try Daemon.start(options)
        defer { daemon.cleanup() }
        #expect(try daemon.client().get("/v1/clients").status == 401)
    }

    @Test("over its rate a token gets 429 rate-limited with Retry-After; other tokens are not slowed; after the wait it is served")
    func rateLimited() throws {
        let (fast, fastEntry) = try newToken("fast", roles: "read", clients: "*")
        let (calm, calmEntry) = try newToken("calm", roles: "read", clients: "*")
        let daemon = try Daemon.start(
            .init(config: "limits: { rate_per_second: 1, rate_burst: 2 }\nauth:\n  tokens:\n" + fastEntry + calmEntry))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let statuses = try (0..<3).map { _ in try http.get("/v1/clients", headers: Self.bearer(fast)).status }
        #expect(statuses == [200, 200, 429])
        let limited = try http.get("/v1/clients", headers: Self.bearer(fast))
        #expect(limited.status == 429)
        #expect(try limited.jsonObject()["code"] as? String == "rate-limited")
        let wait = try #require(limited.header("Retry-After").flatMap(Int.init))
        #expect(wait >= 1 && wait <= 2)
        #expect(try http.get("/v1/clients", headers: Self.bearer(calm)).status == 200, "another token has its own bucket")
        #expect(try http.get("/healthz").status == 200)
        // Retry-After is the contract: after it, the token is served again.
        Thread.sleep(forTimeInterval: Double(wait))
        #expect(try http.get("/v1/clients", headers: Self.bearer(fast)).status == 200)
    }
}
