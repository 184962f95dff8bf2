import AlertdCore
import AlertdStore
import Foundation
import Testing

@testable import AlertdAPI
import AlertdWire
import Logging

@Suite("The config file")
struct ConfigTests {
    @Test("the commented example in config/ is a valid config with the defaults")
    func shippedExample() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let config = try Config.load(path: repository.appendingPathComponent("config/alertd.yaml").path)
        #expect(config.listen == Config().listen)
        #expect(config.durability == .full)
        #expect(config.limits.maxWaitSeconds == 60)
        #expect(config.alertRules == AlertRules())
        #expect(config.webhooks.isEmpty)
    }

    @Test("an empty file means every default of §8")
    func defaults() throws {
        let config = try Config.parse(yaml: "")
        #expect(config.listen == "127.0.0.1:8080")
        #expect(config.stateDir == "./alertd-state")
        #expect(config.durability == .full)
        #expect(config.limits.maxBodyBytes == 65_536)
        #expect(config.limits.maxPendingPerClient == 10_000)
        #expect(config.limits.maxWaitSeconds == 60)
        #expect(config.limits.maxWaiters == 20_000)
        #expect(config.limits.maxConnections == 30_000)
        #expect(config.alertRules == AlertRules(defaultExpiresIn: 86_400, maxExpiresIn: 604_800, defaultDismissAfter: 2))
        #expect(config.retentionSeconds == 604_800)
        #expect(config.callbacks.deny == ["169.254.0.0/16", "fe80::/10"])
    }

    @Test("every key this version supports is read")
    func everyKey() throws {
        let config = try Config.parse(
            yaml: """
                listen: "0.0.0.0:9000"
                state_dir: /var/lib/alertd
                durability: normal
                limits:
                  max_body_bytes: 32768
                  max_pending_per_client: 50
                  max_wait_seconds: 30
                  max_waiters: 100
                  max_connections: 1000
                log: { level: debug }
                metrics: { require_token: true }
                alerts: { default_expires_in: 60, max_expires_in: 120, default_dismiss_after: 0.5, retention: 3600 }
                clients:
                  ops: { policy: stack, max_pending: 100 }
                  kiosk: { policy: fifo }
                auth: { allow_anonymous: true }
                callbacks: { signing_secret: s, timeout: 5, max_age: 60, retry_initial_seconds: 2, retry_max_interval_seconds: 30, deny: ["10.0.0.0/8"] }
                """)
        #expect(config.listen == "0.0.0.0:9000")
        #expect(config.durability == .normal)
        #expect(config.limits.maxWaitSeconds == 30)
        #expect(config.logLevel == .debug)
        #expect(config.metricsRequireToken)
        #expect(config.alertRules.defaultDismissAfter == 0.5)
        #expect(config.clients["ops"] == ClientSettings(policy: .stack, maxPending: 100))
        #expect(
            config.clients["kiosk"] == ClientSettings(policy: .fifo, maxPending: 50),
            "max_pending defaults to limits.max_pending_per_client")
        #expect(config.allowAnonymous)
        #expect(config.callbacks.deny == ["10.0.0.0/8"])
        #expect(config.queueSettings["other"] == ClientSettings(policy: .fifo, maxPending: 50))
    }

    @Test(
        "an unknown or misplaced key is an error that names it",
        arguments: [
            ("listn: x", "listn"),
            ("limits: { max_wiat_seconds: 5 }", "limits.max_wiat_seconds"),
            ("clients: { ops: { polcy: stack } }", "clients.ops.polcy"),
            ("log: { level: info, format: json }", "log.format"),
            ("alerts: { retention_days: 3 }", "alerts.retention_days"),
        ])
    func unknownKey(yaml: String, key: String) {
        #expect {
            try Config.parse(yaml: yaml)
        } throws: { error in
            "\(error)".contains("unknown key \(key)")
        }
    }

    @Test(
        "a wrong value is an error naming the key",
        arguments: [
            ("durability: fast", "durability"),
            ("limits: { max_wait_seconds: soon }", "limits.max_wait_seconds"),
            ("limits: { max_wait_seconds: -1 }", "limits.max_wait_seconds"),
            ("log: { level: loud }", "log.level"),
            ("clients: { ops: { policy: lifo } }", "clients.ops.policy"),
            ("clients: { '-bad': { policy: fifo } }", "clients.-bad"),
            ("alerts: { default_expires_in: 0 }", "alerts.default_expires_in"),
            ("alerts: { default_expires_in: 100, max_expires_in: 50 }", "alerts.default_expires_in"),
            ("metrics: { require_token: maybe }", "metrics.require_token"),
            ("limits: [1, 2]", "limits"),
            ("durability: full\ndurability: normal", "durability"),
            ("callbacks: { deny: ['10.0.0.0/33'] }", "10.0.0.0/33"),
            ("callbacks: { deny: ['db*.internal'] }", "callbacks.deny"),
            ("callbacks: { retry_initial_seconds: 600 }", "callbacks.retry_max_interval_seconds"),
            ("callbacks: { timeout: 0 }", "callbacks.timeout"),
        ])
    func wrongValue(yaml: String, key: String) {
        #expect {
            try Config.parse(yaml: yaml)
        } throws: { error in
            "\(error)".contains(key)
        }
    }

    @Test("per-token rate limits: rate_per_second and rate_burst")
    func rateLimits() throws {
        let config = try Config.parse(yaml: "limits: { rate_per_second: 2.5, rate_burst: 10 }")
        #expect(config.limits.ratePerSecond == 2.5 && config.limits.rateBurst == 10)
        #expect(try Config.parse(yaml: "").limits.ratePerSecond == nil)
        for (yaml, named) in [
            ("limits: { rate_burst: 10 }", "rate_burst needs limits.rate_per_second"),
            ("limits: { rate_per_second: 0 }", "limits.rate_per_second"),
            ("limits: { rate_per_second: 1, rate_burst: 0 }", "limits.rate_burst"),
        ] {
            #expect(performing: { try Config.parse(yaml: yaml) }, throws: { "\($0)".contains(named) })
        }
    }

    @Test("webhooks lists client, url and secret per entry")
    func webhooks() throws {
        let config = try Config.parse(
            yaml: """
                webhooks:
                  - client: ops
                    url: "http://127.0.0.1:9000/hook"
                    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
                  - { client: team-1, url: "https://hooks.example/a", secret: "plain text secret" }
                """)
        #expect(
            config.webhooks == [
                .init(client: "ops", url: "http://127.0.0.1:9000/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
                .init(client: "team-1", url: "https://hooks.example/a", secret: "plain text secret"),
            ])
        #expect(try Config.parse(yaml: "webhooks: []").webhooks.isEmpty)
    }

    @Test(
        "a bad webhooks entry is an error naming it",
        arguments: [
            ("webhooks: [{ client: ops, url: 'ftp://x/y', secret: s }]", "webhooks[0].url"),
            ("webhooks: [{ client: '-x', url: 'http://x/y', secret: s }]", "webhooks[0].client"),
            ("webhooks: [{ client: ops, url: 'http://x/y' }]", "webhooks[0].secret"),
            ("webhooks: [{ client: ops, url: 'http://x/y', secret: 'whsec_!!' }]", "webhooks[0].secret"),
            ("webhooks: [{ client: ops, url: 'http://x/y', secret: s, colour: red }]", "webhooks[0].colour"),
            ("webhooks: { client: ops }", "webhooks"),
        ])
    func badWebhook(yaml: String, key: String) {
        #expect {
            try Config.parse(yaml: yaml)
        } throws: { error in
            "\(error)".contains(key)
        }
    }

    @Test("listen parses host and port, IPv6 in brackets")
    func listen() throws {
        var config = Config()
        config.listen = "[::1]:8081"
        #expect(try config.listenAddress() == ("::1", 8081))
        config.listen = "127.0.0.1:0"
        #expect(try config.listenAddress() == ("127.0.0.1", 0))
        for bad in ["8080", ":8080", "host:", "host:70000", "host:x"] {
            config.listen = bad
            #expect(throws: ConfigError.self) { try config.listenAddress() }
        }
        #expect(Config.isLoopback("127.0.0.1") && Config.isLoopback("::1") && Config.isLoopback("localhost"))
        #expect(!Config.isLoopback("0.0.0.0") && !Config.isLoopback("10.1.2.3") && !Config.isLoopback("::"))
    }
}

@Suite("Routing and problem codes")
struct RoutingTests {
    @Test("the problem codes are exactly §4's, with their statuses, plus alertd's own 500 internal")
    func codes() {
        let table = Dictionary(uniqueKeysWithValues: Problem.Code.all.map { ($0.rawValue, $0.status) })
        #expect(
            table == [
                "bad-request": 400, "invalid-alert": 400, "unauthorized": 401, "forbidden": 403, "not-found": 404,
                "method-not-allowed": 405, "not-displayed": 409, "already-decided": 409, "payload-too-large": 413,
                "unsupported-media-type": 415, "unknown-button": 422, "idempotency-mismatch": 422, "queue-full": 429,
                "rate-limited": 429, "too-many-waiters": 503, "unavailable": 503, "internal": 500,
            ])
    }

    @Test("every domain error maps to the problem code of its name and status")
    func domainErrors() {
        for code in BoardError.Code.allCases {
            let problem = Problem(BoardError(code, "detail"))
            #expect(problem.code.rawValue == code.rawValue, "\(code)")
            #expect(problem.code.status != 400 && problem.code.status != 500, "\(code) is not a generic error")
        }
    }

    @Test("an error that is not a problem is 500 internal naming the request id, never its own text")
    func unexpectedErrors() {
        struct SecretLeak: Error, CustomStringConvertible {
            var description: String { "cannot open /var/lib/alertd/alertd.sqlite at 10.0.0.5" }
        }
        let problem = Problem.of(SecretLeak(), requestID: "req-123")
        #expect(problem.code == .internal)
        #expect(problem.code.status == 500)
        #expect(problem.detail.contains("req-123"))
        #expect(!problem.detail.contains("alertd.sqlite") && !problem.detail.contains("10.0.0.5"))
        let known = Problem(.notFound, "no such alert")
        #expect(Problem.of(known, requestID: "req-1").detail == "no such alert")
    }

    @Test(
        "each path and method reaches its endpoint",
        arguments: [
            ("GET", "/healthz", Endpoint.healthz),
            ("GET", "/readyz", .readyz),
            ("GET", "/v1/clients", .listClients),
            ("POST", "/v1/clients/ops/alerts", .postAlert(client: "ops")),
            ("GET", "/v1/clients/ops/alerts", .listAlerts(client: "ops")),
            ("HEAD", "/v1/clients/ops/alerts", .listAlerts(client: "ops")),
            ("GET", "/v1/clients/ops/alerts/current", .currentAlert(client: "ops")),
            ("GET", "/v1/clients/ops/alerts/X1", .getAlert(client: "ops", id: "X1")),
            ("DELETE", "/v1/clients/ops/alerts/X1", .withdrawAlert(client: "ops", id: "X1")),
            ("POST", "/v1/clients/ops/alerts/X1/choice", .choose(client: "ops", id: "X1")),
            ("POST", "/v1/clients/ops/webhooks", .createWebhook(client: "ops")),
            ("GET", "/v1/clients/ops/webhooks", .listWebhooks(client: "ops")),
            ("GET", "/v1/clients/ops/webhooks/wh_1", .getWebhook(client: "ops", id: "wh_1")),
            ("DELETE", "/v1/clients/ops/webhooks/wh_1", .deleteWebhook(client: "ops", id: "wh_1")),
            ("GET", "/v1/clients/ops/alerts/X1/deliveries", .deliveries(client: "ops", id: "X1")),
            ("HEAD", "/v1/clients/ops/alerts/current", .currentAlert(client: "ops")),
            ("GET", "/", .dashboard),
            ("GET", "/ui/app.js", .dashboardAsset(name: "app.js")),
            // A capture is the segment's text as decoded, not only ASCII; the handler judges it.
            ("GET", "/v1/clients/öps/alerts/current", .currentAlert(client: "öps")),
            // `current` is a literal: it wins over `{id}`, but only in that position.
            ("GET", "/v1/clients/current/alerts/current", .currentAlert(client: "current")),
        ])
    func routes(method: String, path: String, endpoint: Endpoint) {
        guard case .found(let found, _) = Router.api.match(method: method, path: path) else {
            Issue.record("no route for \(method) \(path)")
            return
        }
        #expect(found == endpoint)
    }

    @Test("a known path with another method is 405 with the methods it allows")
    func methodNotAllowed() {
        guard case .methodNotAllowed(let allow) = Router.api.match(method: "PUT", path: "/v1/clients/ops/alerts/X1") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allow) == ["GET", "HEAD", "DELETE"])
    }

    @Test("405 lists each method once, in table order, with HEAD after GET")
    func allowOrder() {
        guard case .methodNotAllowed(let allow) = Router.api.match(method: "PATCH", path: "/v1/clients/ops/alerts") else {
            Issue.record("expected 405")
            return
        }
        #expect(allow == ["POST", "GET", "HEAD"])
    }

    @Test(
        "unknown paths are 404",
        arguments: [
            "/v1", "/v1/clients/", "/v1/clients//alerts", "/v2/clients", "/v1/clients/ops/alerts/X1/choice/x", "healthz", "",
            "//", "/v1/clients/ops/alerts/X1/choice/x/y/z/w", "/v1/clients/ops/alert", "/v1/clients/ops/alertsx", "/V1/clients",
        ])
    func notFound(path: String) {
        guard case .notFound = Router.api.match(method: "GET", path: path) else {
            Issue.record("expected 404 for \(path)")
            return
        }
    }
}

struct RequestIDTests {
    @Test("a sane X-Request-Id is kept; anything else gets a new id")
    func keepsSaneIDs() {
        #expect(RequestID.of("abc-123_X.y") == "abc-123_X.y")
        for bad in [nil, "", "has space", "ü", String(repeating: "a", count: 65)] {
            #expect(RequestID.of(bad) != bad)
        }
    }

    @Test("new ids are a hex prefix, a dash and a base-36 counter, all different")
    func newIDs() {
        let ids = (0..<2_000).map { _ in RequestID.of(nil) }
        #expect(Set(ids).count == ids.count)
        let prefixes = Set(ids.map { $0.split(separator: "-")[0] })
        #expect(prefixes.count == 1)
        for id in ids {
            let parts = id.split(separator: "-", omittingEmptySubsequences: false)
            #expect(parts.count == 2)
            #expect(!parts[0].isEmpty && parts[0].allSatisfy(\.isHexDigit))
            #expect(!parts[1].isEmpty && parts[1].allSatisfy { $0.isNumber || ("a"..."z").contains($0) })
            // The counter reads back as a number in base 36.
            #expect(UInt64(parts[1], radix: 36) != nil)
        }
        // Ids taken one after another count up (other tests may take ids in between).
        let counters = ids.map { UInt64($0.split(separator: "-")[1], radix: 36)! }
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $1 > $0 })
    }
}
