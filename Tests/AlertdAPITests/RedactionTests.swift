import AlertdInProcess
import AlertdTestSupport
import AlertdEngine
import Crypto
import Foundation
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdHTTP

@Suite("Callback URLs are redacted for tokens without admin")
struct RedactionTests {
    @Test(
        "user info, path and query values become ***, the fragment goes; scheme, host and port stay",
        arguments: [
            ("https://hooks.example.com/alerts", "https://hooks.example.com/***"),
            ("https://hooks.example.com/", "https://hooks.example.com/"),
            ("https://hooks.slack.com/services/T0/B0/XXXXSECRET", "https://hooks.slack.com/***"),
            ("https://bot:pw@hooks.example.com/a?token=abc&v=2#top", "https://***@hooks.example.com/***?token=***&v=***"),
            ("http://u@h:8080", "http://***@h:8080"),
            ("http://a@b@h/x", "http://***@h/***"),
            ("http://h?s3cret", "http://h?***"),
            ("http://h/p?a=&b=1=2&&c", "http://h/***?a=***&b=***&&***"),
            ("http://h/p?", "http://h/***?"),
            ("http://h/p#frag?x=1", "http://h/***"),
            ("http://[::1]:9000/h?k=v", "http://[::1]:9000/***?k=***"),
            ("http://h/path@with/at", "http://h/***"),
        ])
    func redacted(url: String, expected: String) async {
        #expect(Redaction.callbackURL(url) == expected)
    }
}

@Suite("The deliveries API shows targets whole to admin only")
struct DeliveryTargetTests {
    static func hex(_ secret: String) -> String { Token.hex(Array(SHA256.hash(data: Array(secret.utf8)))) }

    static let hooks = """
        callbacks: { signing_secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", allow: ["127.0.0.1"] }
        webhooks:
          - { client: ops, url: "http://hook:p4ss@127.0.0.1:9/config-hook?token=s3cret#f", secret: "s" }
        """

    static let tokens = """
        auth:
          tokens:
            - { name: root, sha256: "\(hex("root-secret"))", roles: [admin], clients: ["*"] }
            - { name: wall, sha256: "\(hex("wall-secret"))", roles: [read], clients: ["*"] }
            - { name: console, sha256: "\(hex("console-secret"))", roles: [read, post, answer], clients: [ops] }
        """

    /// The targets of the deliveries of a decided alert, as `secret`'s token sees them (nil: no token).
    func targets(config: String, as secret: String?) async throws -> [String] {
        try await withAlertd(config: config) { daemon in
            let auth = [("Authorization", "Bearer root-secret")]
            let headers = secret.map { [("Authorization", "Bearer \($0)")] } ?? []
            let alert = try await daemon.send(
                "POST", "/v1/clients/ops/alerts",
                json: #"{"title":"Q","buttons":[{"title":"OK"}],"callback_url":"https://u:pw@127.0.0.1:9/cb?sig=abc"}"#,
                headers: config.contains("auth:") ? auth : [])
            let id = try #require(try alert.jsonObject()["id"] as? String, "\(alert.text)")
            #expect(
                try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#, headers: auth).status == 200
            )
            let response = try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)/deliveries", headers: headers)
            #expect(response.status == 200, "\(response.text)")
            let deliveries = try response.jsonObject()["deliveries"] as! [[String: Any]]
            return deliveries.compactMap { $0["target"] as? String }.sorted()
        }
    }

    @Test("read, post and answer tokens see user info and query values redacted, and no fragment")
    func redactedForReaders() async throws {
        for secret in ["wall-secret", "console-secret"] {
            let seen = try await targets(config: Self.hooks + "\n" + Self.tokens, as: secret)
            #expect(
                seen == ["http://***@127.0.0.1:9/***?token=***", "https://***@127.0.0.1:9/***?sig=***"], "\(secret): \(seen)")
        }
    }

    @Test("an admin token sees targets whole, and so does everyone without tokens")
    func wholeForAdmin() async throws {
        let whole = ["http://hook:p4ss@127.0.0.1:9/config-hook?token=s3cret#f", "https://u:pw@127.0.0.1:9/cb?sig=abc"]
        #expect(try await targets(config: Self.hooks + "\n" + Self.tokens, as: "root-secret") == whole)
        #expect(try await targets(config: Self.hooks, as: nil) == whole)
    }
}

@Suite("An alert's callback_url is whole for admin and post tokens, redacted for the others")
struct AlertCallbackURLTests {
    static let tokens = """
        callbacks: { signing_secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", allow: ["127.0.0.1"] }
        auth:
          tokens:
            - { name: root, sha256: "\(DeliveryTargetTests.hex("root-secret"))", roles: [admin], clients: ["*"] }
            - { name: poster, sha256: "\(DeliveryTargetTests.hex("poster-secret"))", roles: [post], clients: ["*"] }
            - { name: wall, sha256: "\(DeliveryTargetTests.hex("wall-secret"))", roles: [read], clients: ["*"] }
            - { name: desk, sha256: "\(DeliveryTargetTests.hex("desk-secret"))", roles: [answer], clients: ["*"] }
        """
    static let url = "https://u:pw@127.0.0.1:9/cb?sig=abc"
    static let redacted = "https://***@127.0.0.1:9/***?sig=***"

    /// Every way the alert is read, as `secret`'s token sees its callback_url.
    func seen(as secret: String) async throws -> [String: String] {
        try await withAlertd(config: Self.tokens) { daemon in
            let poster = [("Authorization", "Bearer poster-secret")]
            let reader = [("Authorization", "Bearer \(secret)")]
            // The title and the metadata hold the key's own text: only the resource's own value is touched.
            let posted = try await daemon.send(
                "POST", "/v1/clients/ops/alerts",
                json:
                    #"{"title":"\"callback_url\":\"x\"","buttons":[{"title":"OK"}],"callback_url":"\#(Self.url)","metadata":{"callback_url":"keep"}}"#,
                headers: poster)
            let id = try #require(try posted.jsonObject()["id"] as? String, "\(posted.text)")
            var seen: [String: String] = [:]
            let current = try await daemon.send("GET", "/v1/clients/ops/alerts/current", headers: reader)
            seen["current"] = try current.jsonObject()["callback_url"] as? String
            #expect(try current.jsonObject()["title"] as? String == #""callback_url":"x""#)
            #expect((try current.jsonObject()["metadata"] as? [String: Any])?["callback_url"] as? String == "keep")
            let one = try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)", headers: reader)
            seen["get"] = try one.jsonObject()["callback_url"] as? String
            let list = try await daemon.send("GET", "/v1/clients/ops/alerts", headers: reader)
            seen["list"] = (try list.jsonObject()["alerts"] as? [[String: Any]])?.first?["callback_url"] as? String
            let withdrawn = try await daemon.send("DELETE", "/v1/clients/ops/alerts/\(id)", headers: reader)
            if withdrawn.status == 200 {
                seen["withdraw"] = try withdrawn.jsonObject()["callback_url"] as? String
            } else {
                #expect(try await daemon.send("DELETE", "/v1/clients/ops/alerts/\(id)", headers: poster).status == 200)
            }
            // Choosing an alert already withdrawn: 409 already-decided, carrying the alert.
            let late = try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#, headers: reader)
            if late.status == 409 {
                seen["already-decided"] = (try late.jsonObject()["alert"] as? [String: Any])?["callback_url"] as? String
            }
            return seen
        }
    }

    @Test("read and answer tokens see it redacted wherever the alert is read")
    func redactedForReaders() async throws {
        for secret in ["wall-secret", "desk-secret"] {
            let seen = try await seen(as: secret)
            var expected = ["current": Self.redacted, "get": Self.redacted, "list": Self.redacted]
            if secret == "desk-secret" { expected["already-decided"] = Self.redacted }
            #expect(seen == expected, "\(secret): \(seen)")
        }
    }

    @Test("admin and post tokens see it whole")
    func wholeForPosters() async throws {
        let admin = try await seen(as: "root-secret")
        #expect(admin == ["current": Self.url, "get": Self.url, "list": Self.url, "withdraw": Self.url, "already-decided": Self.url])
        let poster = try await seen(as: "poster-secret")
        #expect(poster == ["current": Self.url, "get": Self.url, "list": Self.url, "withdraw": Self.url])
    }

    @Test("the current alert's bytes: only the resource's own callback_url changes; none, and nothing changes")
    func alertJSON() {
        let body = Array(
            #"{"id":"x","title":"a\"callback_url\":\"no","callback_url":"http://h/s3cret?k=v","metadata":{"callback_url":"m"}}"#.utf8)
        #expect(
            String(decoding: Redaction.alertJSON(body), as: UTF8.self)
                == #"{"id":"x","title":"a\"callback_url\":\"no","callback_url":"http://h/***?k=***","metadata":{"callback_url":"m"}}"#)
        let none = Array(#"{"id":"x","callback_url":null,"metadata":{"callback_url":"m"}}"#.utf8)
        #expect(Redaction.alertJSON(none) == none)
    }
}
