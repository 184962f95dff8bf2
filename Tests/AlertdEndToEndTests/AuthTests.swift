import AlertdTestSupport
import Foundation
import Testing

/// What needs the process of §7: the logs, and where the daemon agrees to listen. Roles,
/// the route matrix and rate limits are contract tests (AlertdAPIContractTests/AuthTests).
@Suite("Tokens on the real daemon")
struct AuthTests {
    /// A daemon with a token per role (``roleTokens()``), and their secrets.
    static func start() async throws -> (Daemon, [String: String]) {
        let (config, secrets) = try await roleTokens()
        return (try await Daemon.start(.init(config: config)), secrets)
    }

    @Test("without a token, or with a wrong one, every /v1 request is 401 — before 404 and 405; health stays open")
    func unauthorized() async throws {
        let (daemon, _) = try await Self.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        for (method, path) in [("GET", "/v1/clients"), ("GET", "/v1/nowhere"), ("PUT", "/v1/clients"), ("GET", "/v1")] {
            for headers in [[], [("Authorization", "Bearer wrong")], [("Authorization", "Basic YTpi")]] {
                let response = try await http.request(method, path, headers: headers)
                #expect(response.status == 401, "\(method) \(path) \(headers)")
                #expect(try response.jsonObject()["code"] as? String == "unauthorized")
                #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            }
        }
        #expect(try await http.get("/healthz").status == 200)
        #expect(try await http.get("/readyz").status == 200)
        #expect(!daemon.stderrText.contains("Bearer wrong"), "no token value in the logs")
    }

    @Test("without tokens alertd refuses a non-loopback address unless allow_anonymous; with tokens it serves there")
    func exposure() async throws {
        var options = Daemon.Options(config: "log: { level: info }\n")
        options.listen = "0.0.0.0:0"
        let refused = try await Daemon.refusal(options)
        #expect(refused.exitStatus == 1, "\(refused)")
        #expect(
            refused.stderr.contains("msg=\"cannot run\"") && refused.stderr.contains("refusing to listen on 0.0.0.0:0"), "\(refused.stderr)"
        )
        let (_, entry) = try await newToken("ops", roles: "read", clients: "*")
        options.config = "auth:\n  tokens:\n" + entry
        let daemon = try await Daemon.start(options)
        defer { daemon.cleanup() }
        #expect(try await daemon.client().get("/v1/clients").status == 401)
    }
}
