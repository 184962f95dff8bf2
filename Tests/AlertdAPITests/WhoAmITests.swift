import AlertdInProcess
import AlertdTestSupport
import AlertdEngine
import Crypto
import Foundation
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdHTTP

@Suite("GET /v1/whoami tells a token what it may do")
struct WhoAmITests {
    static func hex(_ secret: String) -> String { Token.hex(Array(SHA256.hash(data: Array(secret.utf8)))) }

    static let config = """
        auth:
          tokens:
            - { name: ops-console, sha256: "\(hex("console-secret"))", roles: [read, answer], clients: [ops, "team-*"] }
            - { name: wallboard, sha256: "\(hex("wall-secret"))", roles: [read], clients: ["*"] }
            - { name: root, sha256: "\(hex("root-secret"))", roles: [admin, post], clients: ["*"] }
        """

    @Test("without tokens everyone may do everything: no name, every role, every client, auth false")
    func open() async throws {
        try await withAlertd { daemon in
            let response = try await daemon.send("GET", "/v1/whoami")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.text == #"{"name":null,"roles":["read","post","answer","admin","alertmanager"],"clients":["*"],"auth":false}"#)
        }
    }

    @Test(
        "a token gets its name, its roles in the order of §7's table, its client patterns as configured, and auth true",
        arguments: [
            ("console-secret", #"{"name":"ops-console","roles":["read","answer"],"clients":["ops","team-*"],"auth":true}"#),
            ("wall-secret", #"{"name":"wallboard","roles":["read"],"clients":["*"],"auth":true}"#),
            ("root-secret", #"{"name":"root","roles":["post","admin"],"clients":["*"],"auth":true}"#),
        ])
    func token(secret: String, expected: String) async throws {
        try await withAlertd(config: Self.config) { daemon in
            let response = try await daemon.send("GET", "/v1/whoami", headers: [("Authorization", "Bearer \(secret)")])
            #expect(response.status == 200)
            #expect(response.text == expected)
        }
    }

    @Test("with tokens, a missing or wrong token is 401 like every /v1 request", arguments: [nil, "Bearer nope", "Basic x"] as [String?])
    func refused(header: String?) async throws {
        try await withAlertd(config: Self.config) { daemon in
            let response = try await daemon.send("GET", "/v1/whoami", headers: header.map { [("Authorization", $0)] } ?? [])
            #expect(response.status == 401)
            #expect(try response.jsonObject()["code"] as? String == "unauthorized")
            #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        }
    }

    @Test("it takes no query and no other method")
    func strict() async throws {
        try await withAlertd { daemon in
            #expect(try await daemon.send("GET", "/v1/whoami?x=1").status == 400)
            let post = try await daemon.send("POST", "/v1/whoami", json: "{}")
            #expect(post.status == 405)
            #expect(post.header("Allow") == "GET, HEAD")
        }
    }

    @Test("its route is open to any valid token and named whoami in metrics")
    func route() async {
        guard case .found(let route, _) = Router(API.routes).match(method: "GET", path: "/v1/whoami") else {
            Issue.record("no route for /v1/whoami")
            return
        }
        #expect(route.name == "whoami" && route.permission == .open)
    }
}
