import AlertdCore
import AlertdDelivery
import AlertdEngine
import AlertdHTTP
import AlertdInProcess
import AlertdSQLite
import AlertdTestSupport
import Foundation
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdWire
import Logging

@Suite("The config file")
struct ConfigTests {
    @Test("the commented example in config/ is a valid config with the defaults")
    func shippedExample() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let config = try Config.load(path: repository.appendingPathComponent("config/alertd.yaml").path)
        #expect(config.listen == Config().listen)
        #expect(config.durability == .full)
        #expect(config.limits.maxWaitSeconds == 60)
        #expect(config.alertRules == AlertRules())
        #expect(config.webhooks.isEmpty)
    }

    @Test("an empty file means every default of §8")
    func defaults() async throws {
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
        #expect(config.callbacks.deny == DenyList.defaultEntries && DenyList.defaultEntries.contains("127.0.0.0/8"))
        #expect(config.callbacks.allow.isEmpty)
    }

    @Test("every key this version supports is read")
    func everyKey() async throws {
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
                callbacks: { signing_secret: s, timeout: 5, max_age: 60, retry_initial_seconds: 2, retry_max_interval_seconds: 30, deny: ["10.0.0.0/8"], allow: ["10.1.0.0/16", "hooks.internal"] }
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
        #expect(config.callbacks.allow == ["10.1.0.0/16", "hooks.internal"])
        #expect(config.queueSettings["other"] == ClientSettings(policy: .fifo, maxPending: 50))
    }

    @Test(
        "keys in seconds take durations as Alertmanager writes them (90s, 5m, 1h, 7d) through the one parser; a wrong one names the forms")
    func durations() throws {
        let config = try Config.parse(
            yaml: """
                alerts: { default_expires_in: 5m, max_expires_in: 1h, default_dismiss_after: 1500ms, retention: 7d }
                callbacks: { timeout: 90s, max_age: 1d, retry_initial_seconds: 2, retry_max_interval_seconds: 5m }
                """)
        #expect(config.alertRules.defaultExpiresIn == 300 && config.alertRules.maxExpiresIn == 3600)
        #expect(config.alertRules.defaultDismissAfter == 1.5 && config.retentionSeconds == 604_800)
        #expect(config.callbacks.timeout == 90 && config.callbacks.maxAge == 86_400 && config.callbacks.retryMaxIntervalSeconds == 300)
        #expect {
            try Config.parse(yaml: "alerts: { retention: 5 min }")
        } throws: { error in
            "\(error)".contains("alerts.retention") && "\(error)".contains("90s, 5m")
        }
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
    func unknownKey(yaml: String, key: String) async {
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
            ("callbacks: { allow: ['db*.internal'] }", "callbacks.allow"),
            ("callbacks: { allow: ['10.0.0.0/33'] }", "10.0.0.0/33"),
            ("callbacks: { retry_initial_seconds: 600 }", "callbacks.retry_max_interval_seconds"),
            ("callbacks: { timeout: 0 }", "callbacks.timeout"),
        ])
    func wrongValue(yaml: String, key: String) async {
        #expect {
            try Config.parse(yaml: yaml)
        } throws: { error in
            "\(error)".contains(key)
        }
    }

    @Test("per-token rate limits: rate_per_second and rate_burst")
    func rateLimits() async throws {
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
    func webhooks() async throws {
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
    func badWebhook(yaml: String, key: String) async {
        #expect {
            try Config.parse(yaml: yaml)
        } throws: { error in
            "\(error)".contains(key)
        }
    }

    @Test("listen parses host and port, IPv6 in brackets")
    func listen() async throws {
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
    @Test("the problem codes are exactly §4's, §11's and §13's, with their statuses, plus alertd's own 500 internal")
    func codes() async {
        let table = Dictionary(uniqueKeysWithValues: Problem.Code.all.map { ($0.rawValue, $0.status) })
        #expect(
            table == [
                "bad-request": 400, "invalid-alert": 400, "invalid-answer": 400, "unauthorized": 401, "forbidden": 403, "not-found": 404,
                "method-not-allowed": 405, "not-displayed": 409, "already-decided": 409, "already-voted": 409, "webhook-exists": 409,
                "confirmation-required": 409, "answer-used": 410,
                "payload-too-large": 413,
                "unsupported-media-type": 415, "unknown-button": 422, "idempotency-mismatch": 422, "queue-full": 429,
                "rate-limited": 429, "too-many-waiters": 503, "unavailable": 503, "internal": 500,
            ])
    }

    @Test("every engine error maps to its problem code; the board's keep their names; none is a 500")
    func domainErrors() async {
        let expected: [EngineError.Code: Problem.Code] = [
            .notFound: .notFound, .notDisplayed: .notDisplayed, .alreadyDecided: .alreadyDecided, .alreadyVoted: .alreadyVoted,
            .unknownButton: .unknownButton,
            .queueFull: .queueFull, .forbidden: .forbidden, .invalidAlert: .invalidAlert, .idempotencyMismatch: .idempotencyMismatch,
            .invalidWebhook: .badRequest, .configWebhook: .forbidden, .webhookExists: .webhookExists, .tooManyWaiters: .tooManyWaiters,
            .unavailable: .unavailable, .invalidSubscription: .badRequest, .confirmationRequired: .confirmationRequired,
            .answerUsed: .answerUsed, .invalidAnswer: .invalidAnswer,
        ]
        #expect(Set(expected.keys) == Set(EngineError.Code.allCases))
        for code in EngineError.Code.allCases {
            let problem = Problem(EngineError(code, "detail", retryAfter: 3))
            #expect(problem.code == expected[code], "\(code)")
            #expect(problem.code.status != 500, "\(code) is not a bug")
            #expect(problem.headers.contains { $0.name == "Retry-After" && $0.value == "3" })
        }
        for code in BoardError.Code.allCases {
            #expect(Problem(EngineError(BoardError(code, "detail"))).code.rawValue == code.rawValue, "\(code)")
        }
    }

    @Test("an error that is not a problem is 500 internal naming the request id, never its own text")
    func unexpectedErrors() async throws {
        struct SecretLeak: Error, CustomStringConvertible {
            var description: String { "cannot open /var/lib/alertd/alertd.sqlite at 10.0.0.5" }
        }
        try await withAlertd { daemon in
            let failing = Route("GET", "/boom", .open, "boom") { _ in { _ in throw SecretLeak() } }
            let api = API(
                engine: daemon.alertd.engine, routes: [failing], access: API.Access(), metrics: API.Metrics(), metricsNeedToken: false,
                logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
            let answer = Observed<HTTPResponse?>(nil)
            api.handle(
                HTTPRequest(method: "GET", path: "/boom", headers: [("X-Request-Id", "req-123")]),
                responder: .inProcess { response in answer.update { $0 = response } })
            let response = try #require(await answer.wait(timeout: .seconds(10)) { $0 }, "no answer")
            #expect(response.status == 500)
            let text = String(decoding: response.body, as: UTF8.self)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any], "\(text)")
            #expect(body["code"] as? String == "internal")
            #expect((body["detail"] as? String)?.contains("req-123") == true)
            #expect(!text.contains("alertd.sqlite") && !text.contains("10.0.0.5"))
            #expect(response.header("X-Request-Id") == "req-123")
        }
    }

    @Test(
        "each path and method reaches its route, with its client and id",
        arguments: [
            ("GET", "/healthz", "healthz", nil, nil),
            ("GET", "/readyz", "readyz", nil, nil),
            ("GET", "/v1/clients", "list_clients", nil, nil),
            ("POST", "/v1/clients/ops/alerts", "post_alert", "ops", nil),
            ("GET", "/v1/clients/ops/alerts", "list_alerts", "ops", nil),
            ("HEAD", "/v1/clients/ops/alerts", "list_alerts", "ops", nil),
            ("GET", "/v1/clients/ops/alerts/current", "current_alert", "ops", nil),
            ("GET", "/v1/clients/ops/alerts/X1", "get_alert", "ops", "X1"),
            ("DELETE", "/v1/clients/ops/alerts/X1", "withdraw_alert", "ops", "X1"),
            ("POST", "/v1/clients/ops/alerts/X1/choice", "choose", "ops", "X1"),
            ("POST", "/v1/clients/ops/webhooks", "create_webhook", "ops", nil),
            ("GET", "/v1/clients/ops/webhooks", "list_webhooks", "ops", nil),
            ("GET", "/v1/clients/ops/webhooks/wh_1", "get_webhook", "ops", "wh_1"),
            ("DELETE", "/v1/clients/ops/webhooks/wh_1", "delete_webhook", "ops", "wh_1"),
            ("GET", "/v1/clients/ops/alerts/X1/deliveries", "deliveries", "ops", "X1"),
            ("HEAD", "/v1/clients/ops/alerts/current", "current_alert", "ops", nil),
            ("GET", "/", "dashboard", nil, nil),
            ("GET", "/ui/app.js", "dashboard_asset", nil, nil),
            // A capture is the segment's text as decoded, not only ASCII; the handler judges it.
            ("GET", "/v1/clients/öps/alerts/current", "current_alert", "öps", nil),
            // `current` is a literal: it wins over `{id}`, but only in that position.
            ("GET", "/v1/clients/current/alerts/current", "current_alert", "current", nil),
        ] as [(String, String, String, String?, String?)])
    func routes(method: String, path: String, name: String, client: String?, id: String?) async {
        guard case .found(let route, let captures) = Router(API.routes).match(method: method, path: path) else {
            Issue.record("no route for \(method) \(path)")
            return
        }
        #expect(route.name == name)
        #expect(captures["client"] == client)
        #expect(captures["id"] == id)
        if name == "dashboard_asset" { #expect(captures["asset"] == "app.js") }
    }

    @Test("route names are unique: each is one metrics label")
    func routeNames() async {
        #expect(Set(API.routes.map(\.name)).count == API.routes.count)
    }

    @Test("a known path with another method is 405 with the methods it allows")
    func methodNotAllowed() async {
        guard case .methodNotAllowed(let allow) = Router(API.routes).match(method: "PUT", path: "/v1/clients/ops/alerts/X1") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allow) == ["GET", "HEAD", "DELETE"])
    }

    @Test("405 lists each method once, in table order, with HEAD after GET")
    func allowOrder() async {
        guard case .methodNotAllowed(let allow) = Router(API.routes).match(method: "PATCH", path: "/v1/clients/ops/alerts") else {
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
    func notFound(path: String) async {
        guard case .notFound = Router(API.routes).match(method: "GET", path: path) else {
            Issue.record("expected 404 for \(path)")
            return
        }
    }
}

struct RequestIDTests {
    @Test("a sane X-Request-Id is kept; anything else gets a new id")
    func keepsSaneIDs() async {
        #expect(RequestID.of("abc-123_X.y") == "abc-123_X.y")
        for bad in [nil, "", "has space", "ü", String(repeating: "a", count: 65)] {
            #expect(RequestID.of(bad) != bad)
        }
    }

    @Test("new ids are a hex prefix, a dash and a base-36 counter, all different")
    func newIDs() async {
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
