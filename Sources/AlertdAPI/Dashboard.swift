import AlertdHTTP
import Crypto
import Foundation

/// The operator dashboard: `Dashboard/index.html` at `/`, its service worker
/// `Dashboard/sw.js` at `/sw.js` (so that its scope is the whole origin), its
/// other files under `/ui/`. The files (in `Sources/AlertdAPI/Dashboard/`) are compiled into the
/// binary by SwiftPM (`.embedInCode` resources, `PackageResources`), so a fresh
/// install serves them with nothing beside the executable.
///
/// They load without a token — the page asks for one — and are revalidated on
/// every load (`Cache-Control: no-cache` with a strong `ETag`), so an upgrade
/// shows at once and an unchanged file costs a 304.
enum Dashboard {
    /// One embedded file.
    struct Asset: Sendable {
        /// The file's name in `Dashboard/`, and in `/ui/`.
        let name: String
        let contentType: String
        /// A strong validator: `"` + hex SHA-256 of the file + `"`.
        let etag: String
        let body: [UInt8]

        init(name: String, contentType: String, body: [UInt8]) {
            self.name = name
            self.contentType = contentType
            self.body = body
            etag = "\"" + SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined() + "\""
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Every embedded file (ETags computed once, at first use).
    static let all: [Asset] = [
        Asset(name: "index.html", contentType: "text/html; charset=utf-8", body: PackageResources.index_html),
        Asset(name: "dashboard.css", contentType: "text/css; charset=utf-8", body: PackageResources.dashboard_css),
        Asset(name: "dashboard.js", contentType: "text/javascript; charset=utf-8", body: PackageResources.dashboard_js),
        Asset(name: "icon.svg", contentType: "image/svg+xml; charset=utf-8", body: PackageResources.icon_svg),
        Asset(name: "sw.js", contentType: "text/javascript; charset=utf-8", body: PackageResources.sw_js),
        Asset(name: "manifest.webmanifest", contentType: "application/manifest+json", body: PackageResources.manifest_webmanifest),
        Asset(name: "icon-192.png", contentType: "image/png", body: PackageResources.icon_192_png),
        Asset(name: "icon-512.png", contentType: "image/png", body: PackageResources.icon_512_png),
        Asset(name: "icon-maskable-512.png", contentType: "image/png", body: PackageResources.icon_maskable_512_png),
        Asset(name: "apple-touch-icon.png", contentType: "image/png", body: PackageResources.apple_touch_icon_png),
    ]

    /// The page's own file, served at `/` only.
    static let pageName = "index.html"

    /// The service worker, served at `/sw.js` only: a worker's scope is at most the
    /// folder of its script, and the dashboard's is the whole origin (`/`).
    static let workerName = "sw.js"

    /// No inline script or style, nothing from other origins, no framing; the web app
    /// manifest and the service worker from this origin only.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    private static let byName: [String: Asset] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The file `/ui/{name}` serves; nil for an unknown name (and for the page and
    /// the service worker, whose one addresses are `/` and `/sw.js`).
    static func asset(named name: String) -> Asset? {
        name == pageName || name == workerName ? nil : byName[name]
    }

    static var page: Asset { byName[pageName]! }

    static var worker: Asset { byName[workerName]! }

    /// 200 with the file, or 304 when `If-None-Match` names its ETag.
    static func response(_ asset: Asset, ifNoneMatch: String?) -> HTTPResponse {
        var headers: [(name: String, value: String)] = [
            ("Cache-Control", "no-cache"),
            ("ETag", asset.etag),
            ("Content-Security-Policy", contentSecurityPolicy),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
        ]
        if let ifNoneMatch, matches(ifNoneMatch, etag: asset.etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.insert(("Content-Type", asset.contentType), at: 0)
        return HTTPResponse(status: 200, headers: headers, body: asset.body)
    }

    /// RFC 9110 §13.1.2: `*`, or a list of entity tags compared weakly
    /// (`W/"x"` matches `"x"`).
    static func matches(_ ifNoneMatch: String, etag: String) -> Bool {
        let wanted = etag.hasPrefix("W/") ? etag.dropFirst(2) : Substring(etag)
        for part in ifNoneMatch.split(separator: ",") {
            var tag = part.drop { $0 == " " || $0 == "\t" }
            while let last = tag.last, last == " " || last == "\t" { tag = tag.dropLast() }
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag == wanted { return true }
        }
        return false
    }
}
