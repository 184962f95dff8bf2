import AlertdTestSupport
import Foundation
import Testing

/// The dashboard and `whoami` over real HTTP; the page itself is tested in a
/// browser by Tests/Browser.
@Suite("The dashboard on the real daemon")
struct DashboardE2ETests {
    @Test("/ and /ui/ files are served from the binary with their headers; HEAD has no body; If-None-Match gets 304")
    func served() async throws {
        let daemon = try await Daemon.start(.init())
        defer { daemon.cleanup() }
        let http = daemon.client()
        let page = try await http.get("/")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.text.contains(#"<script src="/ui/dashboard.js" defer></script>"#))
        #expect(page.header("Content-Security-Policy")?.hasPrefix("default-src 'none'; script-src 'self';") == true)
        #expect(page.header("X-Content-Type-Options") == "nosniff")
        #expect(page.header("Referrer-Policy") == "no-referrer")
        #expect(page.header("Cache-Control") == "no-cache")
        let etag = try #require(page.header("ETag"))

        let head = try await http.request("HEAD", "/")
        #expect(head.status == 200 && head.body.count == 0 && head.header("ETag") == etag)

        let revalidated = try await http.get("/", headers: [("If-None-Match", etag)])
        #expect(revalidated.status == 304, "If-None-Match must reach the handler")
        #expect(revalidated.body.count == 0)

        for (path, type) in [("/ui/dashboard.js", "text/javascript"), ("/ui/dashboard.css", "text/css"), ("/ui/icon.svg", "image/svg+xml")]
        {
            let asset = try await http.get(path)
            #expect(asset.status == 200, "\(path)")
            #expect(asset.header("Content-Type")?.hasPrefix(type) == true, "\(path)")
        }
        #expect(try await http.get("/ui/missing.js").status == 404)
    }

    @Test("whoami answers any valid token with its name, roles and clients, and 401 without one; the page stays open")
    func whoAmI() async throws {
        let secret = "alertd_dashboard-e2e-secret"
        let hex = await Program.sha256Hex(secret)
        let daemon = try await Daemon.start(
            .init(
                config: """
                    auth:
                      tokens:
                        - { name: wallboard, sha256: "\(hex)", roles: [read], clients: ["ops", "team-*"] }
                    """))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let me = try await http.get("/v1/whoami", headers: [("Authorization", "Bearer \(secret)")])
        #expect(me.status == 200)
        #expect(me.text == #"{"name":"wallboard","roles":["read"],"clients":["ops","team-*"],"auth":true}"#)
        #expect(try await http.get("/v1/whoami").status == 401)
        #expect(try await http.get("/v1/whoami", headers: [("Authorization", "Bearer wrong")]).status == 401)
        #expect(try await http.get("/").status == 200)
        #expect(try await http.get("/ui/dashboard.js").status == 200)
    }
}
