import AlertdInProcess
import AlertdTestSupport
import AlertdEngine
import Crypto
import Foundation
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdHTTP

/// `Sources/AlertdAPI/Dashboard/`, found from this file's path.
private let dashboardDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Sources/AlertdAPI/Dashboard")

private func sourceFiles() throws -> [String: Data] {
    let names = try FileManager.default.contentsOfDirectory(atPath: dashboardDirectory.path).filter { !$0.hasPrefix(".") }
    var files: [String: Data] = [:]
    for name in names { files[name] = try Data(contentsOf: dashboardDirectory.appendingPathComponent(name)) }
    return files
}

private func hex(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

@Suite("The embedded dashboard is Sources/AlertdAPI/Dashboard/, byte for byte")
struct DashboardEmbeddingTests {
    @Test("every file of Dashboard/ is embedded with its exact bytes and a SHA-256 ETag")
    func upToDate() async throws {
        let files = try sourceFiles()
        #expect(files.keys.contains("index.html"))
        #expect(Set(Dashboard.all.map(\.name)) == Set(files.keys), "a file of Dashboard/ is not declared in Package.swift's resources")
        for asset in Dashboard.all {
            let file = try #require(files[asset.name], "\(asset.name) is embedded but not in Dashboard/")
            #expect(Data(asset.body) == file, "\(asset.name) differs from Dashboard/\(asset.name)")
            #expect(asset.etag == "\"\(hex(file))\"", "\(asset.name)'s ETag is not the SHA-256 of the file")
        }
    }

    @Test("content types follow the file extensions")
    func contentTypes() async {
        let expected = [
            "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
            "svg": "image/svg+xml; charset=utf-8", "png": "image/png", "webmanifest": "application/manifest+json",
        ]
        for asset in Dashboard.all {
            let ext = String(asset.name.split(separator: ".").last ?? "")
            #expect(asset.contentType == expected[ext], "\(asset.name)")
        }
    }

    @Test("the page loads script and style from /ui/ only, with no inline script, style or event handler")
    func noInlineCode() async throws {
        let page = Dashboard.page.text
        let scripts = page.ranges(of: "<script").map { page[$0.lowerBound...] }
        #expect(!scripts.isEmpty)
        for script in scripts {
            let tag = script.prefix { $0 != ">" }
            #expect(tag.contains(#"src="/ui/"#), "inline script: \(tag)")
            #expect(script.dropFirst(tag.count + 1).hasPrefix("</script>"), "a script with a body: \(tag)")
        }
        #expect(!page.contains("<style"), "inline <style>")
        #expect(!page.contains(" style="), "style attribute")
        #expect(page.firstMatch(of: /\son[a-z]+=/) == nil, "inline event handler")
        // Every /ui/ file the page names is embedded.
        for match in page.matches(of: /"\/ui\/([A-Za-z0-9._-]+)"/) {
            #expect(Dashboard.asset(named: String(match.output.1)) != nil, "/ui/\(match.output.1) is not embedded")
        }
    }

    @Test("the scripts never turn text into HTML or code", arguments: ["dashboard.js", "sw.js"])
    func noHTMLSinks(name: String) async throws {
        let script = try #require(Dashboard.all.first { $0.name == name }).text
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setTimeout(\""] {
            let uses = script.contains(sink)
            #expect(!uses, "\(name) uses \(sink)")
        }
    }

    @Test("the page names its manifest, and the manifest an app whose icons are embedded PNGs of the sizes it says")
    func manifest() async throws {
        #expect(Dashboard.page.text.contains(#"<link rel="manifest" href="/ui/manifest.webmanifest">"#))
        let asset = try #require(Dashboard.asset(named: "manifest.webmanifest"))
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(asset.body)) as? [String: Any])
        #expect(manifest["start_url"] as? String == "/")
        #expect(manifest["scope"] as? String == "/")
        #expect(manifest["display"] as? String == "standalone")
        #expect((manifest["name"] as? String)?.isEmpty == false)
        let icons = try #require(manifest["icons"] as? [[String: String]])
        var pngs: [(size: Int, purpose: String)] = []
        for icon in icons {
            let src = try #require(icon["src"])
            #expect(src.hasPrefix("/ui/"), "\(src) is not one of the dashboard's files")
            let file = try #require(Dashboard.asset(named: String(src.dropFirst(4))), "\(src) is not embedded")
            #expect(file.contentType.hasPrefix(icon["type"] ?? "?"), "\(src): type \(icon["type"] ?? "none")")
            guard icon["type"] == "image/png" else { continue }
            // PNG: the signature, then IHDR with the width and height, big-endian.
            let bytes = file.body
            #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "\(src) is not a PNG")
            let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
            let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
            #expect(icon["sizes"] == "\(width)x\(height)", "\(src) is \(width)x\(height), the manifest says \(icon["sizes"] ?? "nothing")")
            pngs.append((width, icon["purpose"] ?? "any"))
        }
        // What Chromium needs to install it, and a launcher that cuts icons into its own shape.
        #expect(pngs.contains { $0.size == 192 && $0.purpose == "any" })
        #expect(pngs.contains { $0.size == 512 && $0.purpose == "any" })
        #expect(pngs.contains { $0.size >= 192 && $0.purpose == "maskable" })
    }
}

@Suite("The dashboard is served at / and /ui/")
struct DashboardServingTests {
    static let policy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; manifest-src 'self'; "
        + "worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    @Test("GET / is the page, with a strict Content-Security-Policy, nosniff, no-referrer, no-cache and a strong ETag")
    func page() async throws {
        try await withAlertd { daemon in
            let response = try await daemon.send("GET", "/")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "text/html; charset=utf-8")
            #expect(response.text == Dashboard.page.text)
            #expect(response.text.hasPrefix("<!doctype html>"))
            #expect(response.header("Content-Security-Policy") == Self.policy)
            #expect(response.header("X-Content-Type-Options") == "nosniff")
            #expect(response.header("Referrer-Policy") == "no-referrer")
            #expect(response.header("Cache-Control") == "no-cache")
            let etag = try #require(response.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count == 66)
            #expect(try await daemon.send("HEAD", "/").status == 200)
        }
    }

    @Test(
        "each asset has its content type and the same security headers",
        arguments: [
            ("/ui/dashboard.js", "text/javascript; charset=utf-8"), ("/ui/dashboard.css", "text/css; charset=utf-8"),
            ("/ui/icon.svg", "image/svg+xml; charset=utf-8"), ("/ui/manifest.webmanifest", "application/manifest+json"),
            ("/ui/icon-192.png", "image/png"), ("/ui/icon-512.png", "image/png"), ("/ui/icon-maskable-512.png", "image/png"),
            ("/ui/apple-touch-icon.png", "image/png"),
        ])
    func asset(path: String, type: String) async throws {
        try await withAlertd { daemon in
            let response = try await daemon.send("GET", path)
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == type)
            #expect(response.body.count > 100)
            #expect(response.header("Content-Security-Policy") == Self.policy)
            #expect(response.header("X-Content-Type-Options") == "nosniff")
            #expect(response.header("Cache-Control") == "no-cache")
            #expect(response.header("ETag") == Dashboard.asset(named: String(path.dropFirst(4)))?.etag)
        }
    }

    @Test(
        "the service worker is served at /sw.js, so that its scope can be the whole origin, like the other files",
        arguments: ["GET", "HEAD"])
    func worker(method: String) async throws {
        try await withAlertd { daemon in
            let response = try await daemon.send(method, "/sw.js")
            #expect(response.status == 200)
            // A service worker must come as JavaScript, or the browser refuses to register it.
            #expect(response.header("Content-Type") == "text/javascript; charset=utf-8")
            if method == "GET" { #expect(response.text == Dashboard.worker.text && response.text.contains("addEventListener(\"push\"")) }
            #expect(response.header("Content-Security-Policy") == Self.policy)
            #expect(response.header("X-Content-Type-Options") == "nosniff")
            #expect(response.header("Cache-Control") == "no-cache")
            #expect(response.header("ETag") == Dashboard.worker.etag)
            // At the root no Service-Worker-Allowed is needed, and none widens anything.
            #expect(response.header("Service-Worker-Allowed") == nil)
            // Nowhere else: the one address is the one scope.
            #expect(try await daemon.send("GET", "/ui/sw.js").status == 404)
        }
    }

    @Test("If-None-Match naming the ETag is 304 without a body; another tag gets the file", arguments: ["/", "/ui/dashboard.js", "/sw.js"])
    func conditional(path: String) async throws {
        try await withAlertd { daemon in
            let etag = try #require(try await daemon.send("GET", path).header("ETag"))
            for matching in [etag, "W/\(etag)", "\"other\", \(etag)", "*"] {
                let response = try await daemon.send("GET", path, headers: [("If-None-Match", matching)])
                #expect(response.status == 304, "If-None-Match: \(matching)")
                #expect(response.body.count == 0)
                #expect(response.header("ETag") == etag)
                #expect(response.header("Cache-Control") == "no-cache")
            }
            let other = try await daemon.send("GET", path, headers: [("If-None-Match", "\"0123\"")])
            #expect(other.status == 200 && !other.body.isEmpty)
        }
    }

    @Test(
        "unknown files are 404 problem+json; the page has one address",
        arguments: ["/ui/nothing.js", "/ui/index.html", "/ui/", "/ui", "/ui/a/b", "/index.html", "/ui/dashboard.js/"])
    func unknown(path: String) async throws {
        try await withAlertd { daemon in
            let response = try await daemon.send("GET", path)
            #expect(response.status == 404)
            #expect(response.header("Content-Type") == "application/problem+json")
        }
    }

    @Test("other methods are 405 with Allow: GET, HEAD")
    func methods() async throws {
        try await withAlertd { daemon in
            for (method, path) in [("POST", "/"), ("DELETE", "/ui/dashboard.js")] {
                let response = try await daemon.send(method, path)
                #expect(response.status == 405)
                #expect(response.header("Allow") == "GET, HEAD")
            }
        }
    }

    @Test("the page and its files need no token, even when the daemon has tokens")
    func openWithTokens() async throws {
        let hex = Token.hex(Array(SHA256.hash(data: Array("s3cret".utf8))))
        try await withAlertd(
            config: """
                auth:
                  tokens:
                    - { name: console, sha256: "\(hex)", roles: [answer], clients: ["*"] }
                """
        ) { daemon async throws in
            for path in ["/", "/ui/dashboard.js", "/ui/dashboard.css", "/sw.js", "/ui/manifest.webmanifest", "/ui/icon-192.png"] {
                #expect(try await daemon.send("GET", path).status == 200, "\(path)")
            }
            #expect(try await daemon.send("GET", "/v1/clients").status == 401)
        }
    }

    @Test("the routes have their own bounded metric labels")
    func routeNames() async {
        let cases: [(String, String)] = [
            ("/", "dashboard"), ("/ui/dashboard.js", "dashboard_asset"), ("/ui/anything", "dashboard_asset"),
            ("/sw.js", "dashboard_worker"),
        ]
        for (path, name) in cases {
            guard case .found(let route, _) = Router(API.routes).match(method: "GET", path: path) else {
                Issue.record("no route for \(path)")
                continue
            }
            #expect(route.name == name)
            #expect(route.permission == .open)
            #expect(route.isDashboard)
        }
    }

    @Test(
        "If-None-Match is compared weakly, as a list, with * matching anything",
        arguments: [
            ("\"a\"", true), ("W/\"a\"", true), (" \"b\" , \"a\" ", true), ("*", true), ("\"b\"", false), ("a", false), ("", false),
        ])
    func ifNoneMatch(header: String, matches: Bool) async {
        #expect(Dashboard.matches(header, etag: "\"a\"") == matches)
    }
}
