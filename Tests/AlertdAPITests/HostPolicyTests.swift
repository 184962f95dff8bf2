import AlertdInProcess
import AlertdTestSupport
import AlertdEngine
import AlertdHTTP
import Crypto
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdWire

@Suite("Without tokens, Host and Origin keep rebound names and foreign pages out")
struct HostPolicyTests {
    let policy = HostPolicy(allowedHosts: ["alerts.example.com."])

    @Test(
        "Loopback names, IP address literals and allowed names pass as Host",
        arguments: [
            "localhost", "localhost:8080", "LOCALHOST:8080", "app.localhost:1", "127.0.0.1", "127.0.0.1:8080", "[::1]:8080",
            "[::1]", "10.1.2.3:8080", "alerts.example.com", "Alerts.Example.Com.:443",
        ])
    func trustedHosts(host: String) async {
        #expect(policy.check(method: "POST", isDashboard: false, host: host, origin: nil) == nil, "\(host)")
    }

    @Test(
        "Any other Host is 403: a rebound name, a look-alike, junk",
        arguments: [
            "evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io:8080", "example.com",
            "alerts.example.com.evil", "", ":8080", "[::1", "[nothost]:80", "localhost:99999", "a b", "user@localhost",
        ])
    func refusedHosts(host: String) async throws {
        let problem = try #require(policy.check(method: "GET", isDashboard: false, host: host, origin: nil), "\(host)")
        #expect(problem.code == .forbidden)
        #expect(problem.detail.contains("http.allowed_hosts"))
    }

    @Test(
        "The fast path takes exactly the plain loopback forms",
        arguments: [
            ("127.0.0.1", true), ("127.0.0.1:8080", true), ("localhost:1", true), ("[::1]:65535", true), ("localhost", true),
            ("127.0.0.1.evil.example", false), ("localhost.evil.example:80", false), ("127.0.0.1:", false),
            ("127.0.0.1:8080x", false), ("127.0.0.1:1234567", false), ("localhost:99999", false), ("LOCALHOST", false), ("[::1]x", false),
        ])
    func fastPath(host: String, plain: Bool) async {
        #expect(HostPolicy.isPlainLoopback(host) == plain, "\(host)")
    }

    @Test("A request without Host (HTTP/1.0) passes")
    func noHost() async {
        #expect(policy.check(method: "POST", isDashboard: false, host: nil, origin: nil) == nil)
    }

    @Test(
        "Origin must be alertd's own (default ports filled in) or an allowed host's",
        arguments: [
            ("127.0.0.1:8080", "http://127.0.0.1:8080", true), ("localhost:8080", "http://localhost:8080", true),
            ("localhost", "http://localhost:80", true), ("localhost:80", "http://localhost", true),
            ("127.0.0.1:8080", "https://alerts.example.com", true),
            ("127.0.0.1:8080", "http://127.0.0.1:9090", false), ("127.0.0.1:8080", "https://127.0.0.1:8080", false),
            ("127.0.0.1:8080", "http://evil.example", false), ("127.0.0.1:8080", "null", false),
            ("127.0.0.1:8080", "http://localhost:8080", false), ("127.0.0.1:8080", "file://", false),
        ])
    func origins(host: String, origin: String, allowed: Bool) async {
        let problem = policy.check(method: "POST", isDashboard: false, host: host, origin: origin)
        #expect((problem == nil) == allowed, "\(host) \(origin)")
        if let problem { #expect(problem.code == .forbidden) }
    }

    @Test("The dashboard's own files load from any origin with GET and HEAD, nothing else does")
    func dashboard() async {
        for method in ["GET", "HEAD"] {
            #expect(policy.check(method: method, isDashboard: true, host: "127.0.0.1:8080", origin: "http://evil.example") == nil)
        }
        #expect(policy.check(method: "POST", isDashboard: true, host: "127.0.0.1:8080", origin: "http://evil.example") != nil)
        #expect(policy.check(method: "GET", isDashboard: false, host: "127.0.0.1:8080", origin: "http://evil.example") != nil)
        // A rebound name is refused even for the dashboard: Host comes first.
        #expect(policy.check(method: "GET", isDashboard: true, host: "evil.example:8080", origin: nil) != nil)
    }

    @Test("Over TLS, alertd's own origin is https")
    func tls() async {
        let https = HostPolicy(tls: true)
        #expect(https.check(method: "POST", isDashboard: false, host: "localhost:8443", origin: "https://localhost:8443") == nil)
        #expect(https.check(method: "POST", isDashboard: false, host: "localhost:8443", origin: "http://localhost:8443") != nil)
    }
}

@Suite("Without tokens, the API refuses requests through a rebound name or from a foreign page")
struct RebindingAPITests {
    @Test("A rebound Host cannot read, post, answer or register a webhook; nothing is changed")
    func reboundHost() async throws {
        try await withAlertd { daemon in
            let alert = try await daemon.postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#)
            let id = try #require(alert["id"] as? String)
            let evil = [("Host", "attacker.example:8080")]
            let attempts: [(String, String, String?)] = [
                ("GET", "/v1/clients", nil), ("GET", "/v1/clients/ops/alerts/current", nil),
                ("POST", "/v1/clients/ops/alerts", #"{"title":"x"}"#),
                ("POST", "/v1/clients/ops/alerts/\(id)/choice", #"{"button":"Deploy"}"#),
                ("DELETE", "/v1/clients/ops/alerts/\(id)", nil),
                ("POST", "/v1/clients/ops/webhooks", #"{"url":"http://attacker.example/"}"#),
                ("GET", "/metrics", nil), ("GET", "/", nil),
            ]
            for (method, path, json) in attempts {
                let response = try await daemon.send(method, path, json: json, headers: evil)
                #expect(response.status == 403, "\(method) \(path)")
                #expect(try response.jsonObject()["code"] as? String == "forbidden")
                #expect(response.header("X-Request-Id") != nil)
            }
            let current = try await daemon.send("GET", "/v1/clients/ops/alerts/current", headers: [("Host", "localhost:8080")])
            #expect(current.status == 200)
            #expect(try current.jsonObject()["state"] as? String == "displayed")
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts?state=queued,displayed").jsonObject()["alerts"] as? [Any] != nil)
            #expect(try await daemon.send("GET", "/v1/clients/ops/webhooks").text == #"{"webhooks":[]}"#)
        }
    }

    @Test("A foreign Origin cannot post or answer; alertd's own origin can")
    func foreignOrigin() async throws {
        try await withAlertd { daemon in
            let foreign = [("Host", "127.0.0.1:8080"), ("Origin", "https://evil.example")]
            let refused = try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"x"}"#, headers: foreign)
            #expect(refused.status == 403)
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").status == 204)
            let own = [("Host", "127.0.0.1:8080"), ("Origin", "http://127.0.0.1:8080")]
            #expect(try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"x"}"#, headers: own).status == 201)
            #expect(try await daemon.send("GET", "/", headers: foreign).status == 200)
        }
    }

    @Test("http.allowed_hosts admits a name; a config without tokens is the only one checked")
    func allowedHostsAndTokens() async throws {
        try await withAlertd(config: "http:\n  allowed_hosts: [alerts.internal]\n") { named async throws in
            #expect(try await named.send("GET", "/v1/clients", headers: [("Host", "alerts.internal:8080")]).status == 200)
            #expect(try await named.send("GET", "/v1/clients", headers: [("Host", "other.internal:8080")]).status == 403)
        }
    }

    @Test("http.allowed_hosts takes host names only", arguments: ["a.example:80", "http://a.example", "10.0.0.1", "a b"])
    func allowedHostsConfig(entry: String) async {
        #expect(throws: ConfigErrors.self) { try Config.parse(yaml: "http:\n  allowed_hosts: [\"\(entry)\"]\n") }
    }
}

@Suite("With tokens, the token is the check")
struct TokenHostTests {
    @Test("A token works whatever Host and Origin say; without one, every /v1 request is 401 first")
    func tokensDecide() async throws {
        let secret = "s3cret-reader"
        let hex = Token.hex(Array(Crypto.SHA256.hash(data: Array(secret.utf8))))
        try await withAlertd(config: "auth:\n  tokens:\n    - { name: reader, sha256: \"\(hex)\", roles: [read], clients: ['*'] }\n") {
            daemon async throws in
            let elsewhere = [("Host", "alerts.example.com"), ("Origin", "https://dashboards.example.com")]
            #expect(try await daemon.send("GET", "/v1/clients", headers: elsewhere + [("Authorization", "Bearer \(secret)")]).status == 200)
            #expect(try await daemon.send("GET", "/v1/clients", headers: elsewhere).status == 401)
        }
    }
}
