import AlertdAPI
import AlertdAlertmanager
import AlertdCore
import AlertdDelivery
import AlertdEngine
import AlertdPostgres
import AlertdStore
import AlertdWire
import Foundation
import Logging
import Yams

/// Reading the YAML file of §8: every key checked, an unknown one refused with its path.
extension Config {
    /// Loads a config file. Unknown keys and wrong types are errors naming the key.
    public static func load(path: String) throws -> Config {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "it is not readable by this user" : "there is no such file"
            throw ConfigErrors(errors: [ConfigError("cannot read config file \(path): \(reason)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigErrors(errors: [ConfigError("cannot read config file \(path): it is not UTF-8 text")])
        }
        // Relative paths in the file are the file's: its directory, made absolute from here.
        let directory = URL(fileURLWithPath: Config.absolute(path)).deletingLastPathComponent().standardized.path
        do {
            var config = try parse(yaml: text, source: path, directory: directory)
            config.source = path
            return config
        } catch var errors as ConfigErrors {
            errors.partial?.source = path
            throw errors
        }
    }

    /// Parses config YAML. Every problem in it is reported at once
    /// (``ConfigErrors``, one line each naming its key), not only the first.
    ///
    /// - Parameter directory: what relative paths in the file (`state_dir`, `tls.cert_file`,
    ///   `tls.key_file`, `integrations.alertmanager.bearer_token_file`) are relative to: the
    ///   config file's directory. nil leaves them as written (relative to the working directory).
    public static func parse(yaml: String, source: String = "config", directory: String? = nil) throws -> Config {
        let node: Node?
        do {
            node = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw ConfigErrors(errors: [ConfigError(Self.describe(error, source: source, yaml: yaml))])
        } catch {
            throw ConfigErrors(errors: [ConfigError("\(source): not valid YAML: \(error)")])
        }
        var config = Config()
        guard let node else { return config }  // an empty file: every default
        let problems = Problems(directory: directory)
        read(node, into: &config, source: source, problems)
        if !problems.errors.isEmpty { throw ConfigErrors(errors: problems.errors, partial: config) }
        return config
    }

    /// `path` relative to `directory` when it is relative (and there is a directory), cleaned up
    /// (`./a/../b` → `b`); an absolute path, or an empty one, as it is.
    static func resolve(_ path: String, from directory: String?) -> String {
        guard let directory, !path.isEmpty, !path.hasPrefix("/") else { return path }
        // Joined as text first: a URL relative to a base loses the base when standardized.
        return URL(fileURLWithPath: directory + "/" + path).standardized.path
    }

    /// `path` made absolute from the working directory, cleaned up (`./a/../b` → `b`).
    public static func absolute(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return URL(fileURLWithPath: joined).standardized.path
    }

    /// A YAML syntax error as one line: `file:line:column: what`. A tab in the indentation
    /// of a line up to the error's is named as the tab, at its own line (libyaml says
    /// "found character that cannot start any token", or blames a later line).
    static func describe(_ error: YamlError, source: String, yaml: String = "") -> String {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            if let tab = indentationTab(in: yaml, upTo: mark.line) {
                "\(source):\(tab.line):\(tab.column): not valid YAML: a tab in the indentation; YAML indents with spaces only"
            } else {
                "\(source):\(mark.line):\(mark.column): not valid YAML: \(problem)"
            }
        default:
            "\(source): not valid YAML: \(error.description.split(separator: "\n").first ?? "")"
        }
    }

    /// The first tab among the leading blanks of lines 1 through `last` (1-based line and column).
    static func indentationTab(in yaml: String, upTo last: Int) -> (line: Int, column: Int)? {
        for (index, line) in yaml.split(separator: "\n", omittingEmptySubsequences: false).prefix(max(0, last)).enumerated() {
            let blanks = line.prefix { $0 == " " || $0 == "\t" }
            if let tab = blanks.firstIndex(of: "\t") { return (index + 1, blanks.distance(from: blanks.startIndex, to: tab) + 1) }
        }
        return nil
    }

    private static func read(_ node: Node, into config: inout Config, source: String, _ problems: Problems) {
        guard let root = problems.section(node, path: "", source: source) else { return }
        root.only([
            "listen", "state_dir", "durability", "limits", "log", "metrics", "alerts", "clients", "auth", "callbacks",
            "webhooks", "tls", "http", "store", "integrations", "push", "receipts",
        ])
        problems.check {
            if let v = try root.string("listen") {
                config.listen = v
                do {
                    _ = try config.listenAddress()
                } catch {
                    // Named by file and key, so the start's own check of listen does not say it again.
                    let text = "\(error)"
                    throw root.error("listen", text.hasPrefix("listen ") ? String(text.dropFirst("listen ".count)) : text)
                }
            }
        }
        problems.check { if let v = try root.string("state_dir") { config.stateDir = problems.path(v) } }
        problems.check {
            if let v = try root.string("durability") {
                guard let durability = Durability(rawValue: v) else {
                    throw root.error("durability", "must be full or normal, not \(v)")
                }
                config.durability = durability
            }
        }
        // A function per section, in this order: `clients` take their default from `limits`,
        // the Alertmanager integration its expiry from `alerts`.
        let sections: [(key: String, read: (Section, inout Config, String, Problems) -> Void)] = [
            ("store", readStore), ("limits", readLimits), ("tls", readTLS), ("http", readHTTP), ("log", readLogging),
            ("metrics", readMetrics), ("alerts", readAlerts), ("clients", readClients), ("auth", readAuth),
            ("callbacks", readCallbacks), ("integrations", readIntegrations), ("push", readPush), ("receipts", readReceipts),
        ]
        for (key, read) in sections {
            if let section = problems.check({ try root.section(key) }) ?? nil { read(section, &config, source, problems) }
        }
        for (index, node) in ((problems.check { try root.list("webhooks") } ?? nil) ?? []).enumerated() {
            guard let entry = problems.section(node, path: "webhooks[\(index)]", source: source) else { continue }
            problems.check { config.webhooks.append(try Self.webhook(entry)) }
        }
    }

    /// `store`: the backend, and PostgreSQL's connection.
    private static func readStore(_ store: Section, into config: inout Config, source: String, _ problems: Problems) {
        store.only(["backend", "postgres"])
        let backend = (problems.check { try store.string("backend") } ?? nil) ?? "sqlite"
        let postgres = problems.check { try store.section("postgres") } ?? nil
        switch backend {
        case "sqlite":
            if postgres != nil { problems.add(store.error("postgres", "is read only with store.backend: postgres")) }
        case "postgres":
            guard let postgres else {
                problems.add(store.error("postgres", "is required with store.backend: postgres (url, pool_size)"))
                break
            }
            postgres.only(["url", "pool_size"])
            let pool = (problems.check { try postgres.int("pool_size", min: 1, max: 1000) } ?? nil) ?? 8
            if let text = problems.check({ try postgres.string("url") }) ?? nil {
                do {
                    config.store = .postgres(url: try PostgresURL(text), poolSize: pool)
                } catch {
                    problems.add(postgres.error("url", "\(error)", separator: ": "))
                }
            } else if !problems.has("store.postgres.url") {
                problems.add(postgres.error("url", "is required: postgres://user@host/db?sslmode=… or host=/run/postgresql dbname=…"))
            }
        default:
            problems.add(store.error("backend", "must be sqlite or postgres, not \(backend)"))
        }
    }

    /// `limits`: the bounds on what callers can grow.
    private static func readLimits(_ limits: Section, into config: inout Config, source: String, _ problems: Problems) {
        limits.only([
            "max_body_bytes", "max_pending_per_client", "max_wait_seconds", "max_waiters", "max_connections",
            "rate_per_second", "rate_burst", "read_timeout_seconds", "max_connections_per_ip", "max_waiters_per_token",
            "max_clients", "max_pending_total", "max_pending_bytes", "first_byte_timeout_seconds", "write_timeout_seconds",
            "max_response_bytes_in_flight", "max_requests_per_token",
        ])
        problems.check { if let v = try limits.int("max_body_bytes", min: 1024, max: 16 << 20) { config.limits.maxBodyBytes = v } }
        problems.check { if let v = try limits.int("max_pending_per_client", min: 1) { config.limits.maxPendingPerClient = v } }
        problems.check { if let v = try limits.int("max_wait_seconds", min: 0, max: 3600) { config.limits.maxWaitSeconds = v } }
        problems.check { if let v = try limits.int("max_waiters", min: 0) { config.limits.maxWaiters = v } }
        problems.check { if let v = try limits.int("max_waiters_per_token", min: 0) { config.limits.maxWaitersPerToken = v } }
        problems.check { if let v = try limits.int("max_clients", min: 1) { config.limits.maxClients = v } }
        problems.check { if let v = try limits.int("max_pending_total", min: 1) { config.limits.maxPendingTotal = v } }
        // At least one alert of the largest kind (about 26 KiB of text, 4-byte characters).
        problems.check { if let v = try limits.int("max_pending_bytes", min: 65_536) { config.limits.maxPendingBytes = v } }
        problems.check { if let v = try limits.int("max_connections", min: 1) { config.limits.maxConnections = v } }
        problems.check { if let v = try limits.int("max_connections_per_ip", min: 0) { config.limits.maxConnectionsPerIP = v } }
        problems.check { if let v = try limits.positiveNumber("read_timeout_seconds") { config.limits.readTimeoutSeconds = v } }
        problems.check {
            if let v = try limits.positiveNumber("first_byte_timeout_seconds") { config.limits.firstByteTimeoutSeconds = v }
        }
        problems.check { if let v = try limits.positiveNumber("write_timeout_seconds") { config.limits.writeTimeoutSeconds = v } }
        problems.check {
            if let v = try limits.int("max_response_bytes_in_flight", min: 1 << 20) { config.limits.maxResponseBytesInFlight = v }
        }
        problems.check { if let v = try limits.int("max_requests_per_token", min: 0) { config.limits.maxRequestsPerToken = v } }
        problems.check { if let v = try limits.positiveNumber("rate_per_second") { config.limits.ratePerSecond = v } }
        problems.check { if let v = try limits.int("rate_burst", min: 1) { config.limits.rateBurst = v } }
        if limits.has("rate_burst"), !limits.has("rate_per_second") {
            problems.add(limits.error("rate_burst", "needs limits.rate_per_second"))
        }
    }

    /// `tls`: HTTPS's certificate, key and priorities.
    private static func readTLS(_ tls: Section, into config: inout Config, source: String, _ problems: Problems) {
        tls.only(["cert_file", "key_file", "priorities"])
        let cert = problems.check { try tls.string("cert_file") } ?? nil
        let key = problems.check { try tls.string("key_file") } ?? nil
        let priorities = problems.check { try tls.string("priorities") } ?? nil
        if priorities?.isEmpty == true { problems.add(tls.error("priorities", "must not be empty (leave it out for the default)")) }
        if let cert, let key {
            config.tls = TLSFiles(certFile: problems.path(cert), keyFile: problems.path(key), priorities: priorities)
        } else if !problems.has("tls.cert_file"), !problems.has("tls.key_file") {
            problems.add(ConfigError("\(source): tls needs both cert_file and key_file (PEM files)", key: "tls"))
        }
    }

    /// `http`: the host names the API answers to.
    private static func readHTTP(_ http: Section, into config: inout Config, source: String, _ problems: Problems) {
        http.only(["allowed_hosts"])
        for name in (problems.check { try http.strings("allowed_hosts") } ?? nil) ?? [] {
            guard HostPolicy.isHostName(name) else {
                problems.add(
                    http.error(
                        "allowed_hosts", "\(name) is not a host name (no port, no scheme; IP addresses need no entry)", separator: ": ")
                )
                continue
            }
            config.allowedHosts.append(name)
        }
    }

    /// `log`: the level.
    private static func readLogging(_ log: Section, into config: inout Config, source: String, _ problems: Problems) {
        log.only(["level"])
        problems.check {
            if let v = try log.string("level") {
                guard let level = Logger.Level(configName: v) else {
                    throw log.error("level", "must be debug, info, warning or error, not \(v)")
                }
                config.logLevel = level
            }
        }
    }

    /// `push` (SPEC §11): Web Push is on with a `subject`.
    private static func readPush(_ push: Section, into config: inout Config, source: String, _ problems: Problems) {
        push.only(["subject", "remind_every", "allow_http", "max_subscriptions_per_token", "max_subscriptions"])
        let subject = problems.check { try push.string("subject") } ?? nil
        let remindEvery = problems.check { try push.seconds("remind_every") } ?? nil
        let allowHTTP = (problems.check { try push.bool("allow_http") } ?? nil) ?? false
        let maxPerToken =
            (problems.check { try push.int("max_subscriptions_per_token", min: 1, max: 1000) } ?? nil) ?? PushSettings.defaultMaxPerToken
        let maxTotal = (problems.check { try push.int("max_subscriptions", min: 1, max: 1_000_000) } ?? nil) ?? PushSettings.defaultMaxTotal
        guard let subject else {
            if !problems.has("push.subject") {
                problems.add(push.error("subject", "is required to turn push on: a mailto: or https: contact for push services' operators"))
            }
            return
        }
        guard subject.hasPrefix("mailto:") || subject.hasPrefix("https:"), subject.count > 8, Self.isHeaderSafe(subject) else {
            problems.add(push.error("subject", "must be a mailto: or https: URI (VAPID's contact, RFC 8292), not \(subject)"))
            return
        }
        if let remindEvery, remindEvery < 60 {
            problems.add(
                push.error(
                    "remind_every",
                    "must be at least a minute (60s, 10m), not \(remindEvery.formatted(.number)) s: a reminder a second is a flood"))
            return
        }
        config.push = PushSettings(
            subject: subject, remindEvery: remindEvery, allowHTTP: allowHTTP, maxPerToken: maxPerToken, maxTotal: maxTotal)
    }

    /// `receipts` (SPEC §14): the signing key's file, the previous keys' files, the retention.
    /// The files themselves are read by the start's check (``Config/startCheck(listeningHost:)``).
    private static func readReceipts(_ receipts: Section, into config: inout Config, source: String, _ problems: Problems) {
        receipts.only(["key_file", "previous_keys", "retention"])
        problems.check {
            if let v = try receipts.string("key_file") {
                guard !v.isEmpty else {
                    throw receipts.error("key_file", "must be a path (leave it out for SQLite's own key in state_dir)")
                }
                config.receipts.keyFile = problems.path(v)
            }
        }
        problems.check {
            for path in try receipts.strings("previous_keys") ?? [] {
                guard !path.isEmpty else { throw receipts.error("previous_keys", "must list paths of PEM files, not an empty string") }
                config.receipts.previousKeys.append(problems.path(path))
            }
        }
        problems.check {
            if let v = try receipts.seconds("retention") {
                // A day at least: receipts are the record that outlives the alerts.
                guard v >= 86_400 else {
                    throw receipts.error(
                        "retention", "must be at least a day (1d, 86400), not \(v.formatted(.number)) s: receipts are the audit record")
                }
                config.receipts.retentionSeconds = v
            }
        }
    }

    /// `metrics`: whether /metrics needs a token.
    private static func readMetrics(_ metrics: Section, into config: inout Config, source: String, _ problems: Problems) {
        metrics.only(["require_token"])
        problems.check { if let v = try metrics.bool("require_token") { config.metricsRequireToken = v } }
    }

    /// `alerts`: expiry and dismissal defaults, retention.
    private static func readAlerts(_ alerts: Section, into config: inout Config, source: String, _ problems: Problems) {
        alerts.only([
            "default_expires_in", "max_expires_in", "default_dismiss_after", "retention", "retention_max", "retention_max_bytes",
            "retention_max_bytes_per_client",
        ])
        problems.check { if let v = try alerts.seconds("default_expires_in") { config.alertRules.defaultExpiresIn = v } }
        problems.check { if let v = try alerts.seconds("max_expires_in") { config.alertRules.maxExpiresIn = v } }
        problems.check { if let v = try alerts.seconds("default_dismiss_after") { config.alertRules.defaultDismissAfter = v } }
        problems.check { if let v = try alerts.seconds("retention") { config.retentionSeconds = v } }
        problems.check { if let v = try alerts.int("retention_max", min: 1) { config.retentionMax = v } }
        // At least what one of the largest alerts takes with its event (~60 KB).
        problems.check { if let v = try alerts.int("retention_max_bytes", min: 65_536) { config.retentionMaxBytes = v } }
        problems.check {
            if let v = try alerts.int("retention_max_bytes_per_client", min: 65_536) { config.retentionMaxBytesPerClient = v }
        }
        if config.alertRules.defaultExpiresIn > config.alertRules.maxExpiresIn {
            problems.add(alerts.error("default_expires_in", "is greater than alerts.max_expires_in"))
        }
    }

    /// `clients`: per-client policies and limits (after `limits`, whose default they take).
    private static func readClients(_ clients: Section, into config: inout Config, source: String, _ problems: Problems) {
        for name in clients.keys {
            guard ClientID.isValid(name) else {
                problems.add(clients.error(name, "is not a valid client id", separator: ": "))
                continue
            }
            guard let client = problems.check({ try clients.section(name) }) ?? nil else { continue }
            client.only(["policy", "max_pending", "escalation"])
            var settings = ClientSettings(policy: .fifo, maxPending: config.limits.maxPendingPerClient)
            settings.escalation = readEscalation(client, of: name, rules: config.alertRules, source: source, problems)
            problems.check {
                if let v = try client.string("policy") {
                    guard let policy = QueuePolicy(rawValue: v) else { throw client.error("policy", "must be fifo or stack, not \(v)") }
                    settings.policy = policy
                }
            }
            // max_pending defaults to limits.max_pending_per_client, wherever limits is in the file.
            problems.check { if let v = try client.int("max_pending", min: 1) { settings.maxPending = v } }
            config.clients[name] = settings
        }
    }

    /// `clients.<id>.escalation` (SPEC §12): a list of `{after, to}`, `after` a duration as the
    /// config writes them (`5m`, or seconds), checked as an alert's own policy is, each step
    /// below `alerts.max_expires_in` (a step past it is never taken).
    private static func readEscalation(
        _ client: Section, of name: String, rules: AlertRules, source: String, _ problems: Problems
    ) -> [EscalationStep] {
        guard let nodes = problems.check({ try client.list("escalation") }) ?? nil else { return [] }
        let path = "clients.\(name).escalation"
        var steps: [EscalationStep] = []
        var complete = true
        for (index, node) in nodes.enumerated() {
            guard let entry = problems.section(node, path: "\(path)[\(index)]", source: source) else {
                complete = false
                continue
            }
            entry.only(["after", "to"])
            let after = problems.check { try entry.seconds("after") } ?? nil
            let to = problems.check { try entry.string("to") } ?? nil
            if !entry.has("after") { problems.add(entry.error("after", "is required")) }
            if !entry.has("to") { problems.add(entry.error("to", "is required (the client asked next)")) }
            guard let after, let to else {
                complete = false
                continue
            }
            steps.append(EscalationStep(after: after, to: to))
        }
        guard complete else { return steps }
        for problem in EscalationRules.problems(steps, field: path, client: name, expiresIn: rules.maxExpiresIn) {
            problems.add(ConfigError("\(source): \(problem.field) \(problem.reason)", key: problem.field))
        }
        return steps
    }

    /// `auth`: anonymous access and tokens.
    private static func readAuth(_ auth: Section, into config: inout Config, source: String, _ problems: Problems) {
        auth.only(["allow_anonymous", "tokens"])
        problems.check { if let v = try auth.bool("allow_anonymous") { config.allowAnonymous = v } }
        for (index, node) in ((problems.check { try auth.list("tokens") } ?? nil) ?? []).enumerated() {
            guard let entry = problems.section(node, path: "auth.tokens[\(index)]", source: source) else { continue }
            if let token = Self.token(entry, existing: config.tokens, problems) { config.tokens.append(token) }
        }
    }

    /// `callbacks`: signing, retries, the deny and allow lists.
    private static func readCallbacks(_ callbacks: Section, into config: inout Config, source: String, _ problems: Problems) {
        callbacks.only([
            "signing_secret", "timeout", "max_age", "retry_initial_seconds", "retry_max_interval_seconds", "deny", "allow",
            "max_pending_per_client",
        ])
        problems.check {
            if let secret = try callbacks.string("signing_secret") {
                do {
                    _ = try WebhookKey(secret: secret)
                } catch {
                    throw callbacks.error("signing_secret", "\(error)", separator: ": ")
                }
                // The sample's placeholder is in every copy of config/alertd.yaml: anyone could sign with it.
                if secret.lowercased().hasPrefix(Self.placeholderSecretPrefix) {
                    throw callbacks.error(
                        "signing_secret",
                        "is the sample config's placeholder (\(secret)), which anyone can read: replace it with a secret of "
                            + "your own (openssl rand -base64 32 makes one)")
                }
                config.callbacks.signingSecret = secret
            }
        }
        problems.check { if let v = try callbacks.seconds("timeout") { config.callbacks.timeout = v } }
        problems.check { if let v = try callbacks.seconds("max_age") { config.callbacks.maxAge = v } }
        problems.check { if let v = try callbacks.seconds("retry_initial_seconds") { config.callbacks.retryInitialSeconds = v } }
        problems.check {
            if let v = try callbacks.seconds("retry_max_interval_seconds") { config.callbacks.retryMaxIntervalSeconds = v }
        }
        problems.check { if let v = try callbacks.int("max_pending_per_client", min: 1) { config.callbacks.maxPendingPerClient = v } }
        problems.check {
            if let v = try callbacks.strings("deny") {
                do {
                    _ = try DenyList(v)
                } catch {
                    throw callbacks.error("deny", "\(error)", separator: ": ")
                }
                config.callbacks.deny = v
            }
        }
        problems.check {
            if let v = try callbacks.strings("allow") {
                do {
                    _ = try DenyList([], allow: v)
                } catch {
                    throw callbacks.error("allow", "\(error)", separator: ": ")
                }
                config.callbacks.allow = v
            }
        }
        if config.callbacks.retryMaxIntervalSeconds < config.callbacks.retryInitialSeconds {
            problems.add(
                callbacks.error(
                    "retry_max_interval_seconds",
                    "must be at least callbacks.retry_initial_seconds (\(config.callbacks.retryInitialSeconds))"))
        }
    }

    /// How the sample config's placeholder secrets begin (`replace-with-openssl-rand-base64-32`).
    static let placeholderSecretPrefix = "replace-with"

    /// `integrations`: Alertmanager.
    private static func readIntegrations(_ integrations: Section, into config: inout Config, source: String, _ problems: Problems) {
        integrations.only(["alertmanager"])
        if let alertmanager = problems.check({ try integrations.section("alertmanager") }) ?? nil {
            config.alertmanager = Self.alertmanager(alertmanager, rules: config.alertRules, problems)
        }
    }

    /// `integrations.alertmanager`: every key checked, each problem named.
    private static func alertmanager(_ section: Section, rules: AlertRules, _ problems: Problems) -> AlertmanagerSettings {
        section.only([
            "url", "bearer_token", "bearer_token_file", "basic_auth", "buttons", "matcher_labels", "severity_priority",
            "default_priority", "expires_in",
        ])
        var settings = AlertmanagerSettings()
        problems.check {
            if let url = try section.string("url") {
                if let problem = AlertmanagerSettings.urlProblem(url) { throw section.error("url", problem) }
                settings.url = AlertmanagerSettings(url: url).url
            }
        }
        // Auth: one of a bearer token (inline or in a file) and basic auth.
        let auths = ["bearer_token", "bearer_token_file", "basic_auth"].filter { section.has($0) }
        if auths.count > 1 {
            problems.add(section.error(auths[1], "cannot be combined with \(auths[0]): give one way to sign in to Alertmanager"))
        }
        problems.check {
            if let token = try section.string("bearer_token") {
                guard Self.isHeaderSafe(token), !token.isEmpty else {
                    throw section.error("bearer_token", "must be a non-empty token without spaces or control characters")
                }
                settings.authorization = "Bearer " + token
            }
        }
        problems.check {
            if let path = try section.string("bearer_token_file").map(problems.path) {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw section.error("bearer_token_file", "cannot read \(path)")
                }
                let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard Self.isHeaderSafe(token), !token.isEmpty else {
                    throw section.error("bearer_token_file", "\(path) must hold one token, without spaces or control characters")
                }
                settings.authorization = "Bearer " + token
            }
        }
        if let basic = problems.check({ try section.section("basic_auth") }) ?? nil {
            basic.only(["username", "password"])
            let username = problems.check { try basic.string("username") } ?? nil
            let password = problems.check { try basic.string("password") } ?? nil
            if let username, let password {
                if username.contains(":") || !Self.isHeaderSafe(username) {
                    problems.add(basic.error("username", "must have no colon, space or control character"))
                } else {
                    settings.authorization = "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
                }
            } else if username == nil, !problems.has("integrations.alertmanager.basic_auth.username") {
                problems.add(basic.error("username", "is required with basic_auth"))
            } else if password == nil, !problems.has("integrations.alertmanager.basic_auth.password") {
                problems.add(basic.error("password", "is required with basic_auth"))
            }
        }
        if let nodes = problems.check({ try section.list("buttons") }) ?? nil {
            var buttons: [AlertmanagerButton] = []
            var cancel = false
            if nodes.isEmpty || nodes.count > NewAlert.buttonLimit {
                problems.add(section.error("buttons", "must list 1 to \(NewAlert.buttonLimit) buttons"))
            }
            for (index, node) in nodes.enumerated() {
                guard let entry = problems.section(node, path: "integrations.alertmanager.buttons[\(index)]", source: section.source)
                else { continue }
                entry.only(["title", "style", "silence"])
                guard let title = problems.check({ try entry.string("title") }) ?? nil else {
                    if !problems.has("integrations.alertmanager.buttons[\(index)].title") {
                        problems.add(entry.error("title", "is required"))
                    }
                    continue
                }
                var button = AlertmanagerButton(title: title)
                if !(1...NewAlert.buttonTitleLimit).contains(title.unicodeScalars.count) {
                    problems.add(entry.error("title", "must be 1 to \(NewAlert.buttonTitleLimit) characters"))
                } else if buttons.contains(where: { $0.title == title }) {
                    problems.add(entry.error("title", "\(title) is the title of another button", separator: ": "))
                }
                problems.check {
                    if let text = try entry.string("style") {
                        guard let style = ButtonStyle(rawValue: text) else {
                            throw entry.error("style", "must be default, cancel or destructive, not \(text)")
                        }
                        if style == .cancel {
                            if cancel { throw entry.error("style", "cancel is already another button's style: at most one") }
                            cancel = true
                        }
                        button.style = style
                    }
                }
                problems.check {
                    if let text = try entry.string("silence") {
                        guard let seconds = DurationText.seconds(text), seconds <= Section.maxSeconds else {
                            throw entry.error("silence", "must be a duration (90m, 1h, 24h, 7d) or seconds, greater than 0, not \(text)")
                        }
                        button.silenceSeconds = seconds
                    }
                }
                buttons.append(button)
            }
            settings.buttons = buttons
        }
        if settings.url == nil, !problems.has("integrations.alertmanager.url"),
            let silencing = settings.buttons.first(where: { $0.silenceSeconds != nil })
        {
            problems.add(
                section.error(
                    "url",
                    "is required: button \"\(silencing.title)\" creates silences (Alertmanager's address, http://127.0.0.1:9093); "
                        + "without url give only buttons without silence"))
        }
        problems.check {
            if let names = try section.strings("matcher_labels") {
                guard !names.isEmpty else { throw section.error("matcher_labels", "must list label names, or be left out (every label)") }
                for name in names where !AlertmanagerAlert.isLabelName(name) {
                    throw section.error("matcher_labels", "\(name) is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)", separator: ": ")
                }
                settings.matcherLabels = names
            }
        }
        if let map = problems.check({ try section.section("severity_priority") }) ?? nil {
            var priorities: [String: Int] = [:]
            for name in map.keys {
                if let value = problems.check({ try map.int(name, min: -100, max: 100) }) ?? nil { priorities[name] = value }
            }
            settings.severityPriority = priorities
        }
        problems.check { if let v = try section.int("default_priority", min: -100, max: 100) { settings.defaultPriority = v } }
        problems.check {
            if let v = try section.seconds("expires_in") {
                guard v <= rules.maxExpiresIn else {
                    throw section.error("expires_in", "must be at most alerts.max_expires_in (\(Int(rules.maxExpiresIn)) seconds)")
                }
                settings.expiresIn = v
            }
        }
        return settings
    }

    /// Text that can go into a header value as it is.
    private static func isHeaderSafe(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value > 32 && $0.value < 127 }
    }

    /// One entry of `auth.tokens`: every problem of it is recorded, each under its key (a
    /// missing name and a bad role are both said); nil when it has any.
    private static func token(_ entry: Section, existing: [Token], _ problems: Problems) -> Token? {
        entry.only(["name", "sha256", "roles", "clients"])
        var valid = true
        func check<T>(_ body: () throws -> T?) -> T? {
            guard let value = problems.check(body) ?? nil else {
                valid = false
                return nil
            }
            return value
        }
        let name = check { () throws -> String? in
            guard let name = try entry.string("name"), !name.isEmpty, name.utf8.count <= 64,
                name.utf8.allSatisfy({ $0 > 32 && $0 < 127 })
            else {
                let space = (try? entry.string("name"))??.contains(" ") == true ? "; a space is not one (use - or _)" : ""
                throw entry.error("name", "is required: up to 64 visible ASCII characters\(space)")
            }
            guard !existing.contains(where: { $0.name == name }) else {
                throw entry.error("name", "\(name) is already the name of another token", separator: ": ")
            }
            return name
        }
        let digest = check { () throws -> [UInt8]? in
            guard let hex = try entry.string("sha256"), let digest = Self.digest(hex: hex) else {
                throw entry.error("sha256", "must be the 64 hex digits of the secret's SHA-256 (alertd token new prints it)")
            }
            guard !existing.contains(where: { $0.digest == digest }) else {
                throw entry.error("sha256", "is the same secret as another token's")
            }
            return digest
        }
        let roles = check { () throws -> Set<Role>? in
            guard let roleNames = try entry.strings("roles"), !roleNames.isEmpty else {
                throw entry.error("roles", "must list at least one of read, post, answer, admin, alertmanager")
            }
            var roles: Set<Role> = []
            var unknown: [String] = []
            for roleName in roleNames {
                if let role = Role(rawValue: roleName) { roles.insert(role) } else { unknown.append(roleName) }
            }
            guard unknown.isEmpty else {
                let hints = unknown.map { name in
                    Section.closest(to: name, in: Set(Role.allCases.map(\.rawValue))).map { "\(name) (did you mean \($0)?)" } ?? name
                }
                throw entry.error(
                    "roles",
                    "\(hints.joined(separator: ", ")) \(unknown.count == 1 ? "is not one" : "are not any") of read, post, answer, admin, alertmanager",
                    separator: ": ")
            }
            return roles
        }
        let clients = check { () throws -> [ClientPattern]? in
            guard let patterns = try entry.strings("clients"), !patterns.isEmpty else {
                throw entry.error("clients", "must list client ids or globs (\"*\" for every client)")
            }
            var clients: [ClientPattern] = []
            var bad: [String] = []
            for text in patterns {
                if let pattern = ClientPattern(text) { clients.append(pattern) } else { bad.append(text) }
            }
            guard bad.isEmpty else {
                throw entry.error(
                    "clients",
                    "\(bad.joined(separator: ", ")) \(bad.count == 1 ? "is not a client id glob" : "are not client id globs") (letters, digits, . _ - and *)",
                    separator: ": ")
            }
            return clients
        }
        guard valid, let name, let digest, let roles, let clients else { return nil }
        return Token(name: name, digest: digest, roles: roles, clients: clients)
    }

    /// One entry of `webhooks`.
    private static func webhook(_ entry: Section) throws -> ConfigWebhook {
        entry.only(["client", "url", "secret"])
        guard let client = try entry.string("client"), ClientID.isValid(client) else {
            throw entry.error("client", "must be a client id")
        }
        guard let url = try entry.string("url") else { throw entry.error("url", "is required") }
        if let problem = CallbackURL.problem(url) { throw entry.error("url", problem) }
        guard let secret = try entry.string("secret") else {
            throw entry.error("secret", "is required (the receiver verifies with it)")
        }
        do {
            _ = try WebhookKey(secret: secret)
        } catch {
            throw entry.error("secret", "\(error)", separator: ": ")
        }
        return ConfigWebhook(client: client, url: url, secret: secret)
    }

    /// `host` and `port` of `listen`; `[::1]:8080` for IPv6.
    public func listenAddress() throws -> (host: String, port: Int) {
        guard let colon = listen.lastIndex(of: ":") else {
            throw ConfigError("listen must be HOST:PORT, not \(listen)")
        }
        var host = String(listen[..<colon])
        guard let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw ConfigError("listen must be HOST:PORT with a port from 0 to 65535, not \(listen)")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ConfigError("listen must name a host, not \(listen)") }
        return (host, port)
    }

    /// The 32 bytes of 64 hex digits.
    static func digest(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// Whether `host` can only be reached from this machine.
    public static func isLoopback(_ host: String) -> Bool { Hosts.isLoopback(host) }
}

/// The problems found so far: one per key (the first), in the order found.
private final class Problems {
    private(set) var errors: [ConfigError] = []
    private var keys = Set<String>()
    /// The config file's directory, for relative paths in it.
    let directory: String?

    init(directory: String?) { self.directory = directory }

    /// `path` as written in the file, resolved against the file's directory when it is relative.
    func path(_ path: String) -> String { Config.resolve(path, from: directory) }

    func add(_ error: ConfigError) {
        if let key = error.key, !keys.insert(key).inserted { return }
        errors.append(error)
    }

    func has(_ key: String) -> Bool { keys.contains(key) }

    /// Runs `body`; a problem it throws is recorded and nil returned.
    @discardableResult
    func check<T>(_ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch let error as ConfigError {
            add(error)
        } catch {
            add(ConfigError("\(error)"))
        }
        return nil
    }

    /// A mapping to read; nil (and a problem) when it is not one.
    func section(_ node: Node, path: String, source: String) -> Section? {
        check { try Section(node, path: path, source: source, problems: self) }
    }
}

/// A YAML mapping being read, with its key path for error messages.
private struct Section {
    let entries: [(key: String, value: Node)]
    let path: String
    let source: String
    let problems: Problems

    init(_ node: Node, path: String, source: String, problems: Problems) throws {
        guard case .mapping(let mapping) = node else {
            throw ConfigError("\(source): \(path.isEmpty ? "the file" : path) must be a mapping", key: path)
        }
        var entries: [(key: String, value: Node)] = []
        for (key, value) in mapping {
            guard let name = key.string else {
                throw ConfigError("\(source): \(path) has a key that is not a string", key: path)
            }
            if entries.contains(where: { $0.key == name }) {
                throw ConfigError("\(source): \(Section.name(name, path)) appears twice", key: Section.name(name, path))
            }
            entries.append((name, value))
        }
        self.entries = entries
        self.path = path
        self.source = source
        self.problems = problems
    }

    var keys: [String] { entries.map(\.key) }

    private static func name(_ key: String, _ path: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
    private func name(_ key: String) -> String { Section.name(key, path) }

    /// The problem of one key: `source: path.key message`.
    func error(_ key: String, _ message: String, separator: String = " ") -> ConfigError {
        ConfigError("\(source): \(name(key))\(separator)\(message)", key: name(key))
    }

    func has(_ key: String) -> Bool { entries.contains { $0.key == key } }

    private func value(_ key: String) -> Node? {
        guard let node = entries.first(where: { $0.key == key })?.value else { return nil }
        if case .scalar(let scalar) = node,
            scalar.string == "~" || scalar.string == "null" || (scalar.string.isEmpty && scalar.style == .plain)
        {
            return nil
        }
        return node
    }

    /// Records every key not in `allowed`, with the allowed key it most likely means.
    func only(_ allowed: Set<String>) {
        for key in keys where !allowed.contains(key) {
            let hint = Self.closest(to: key, in: allowed).map { " (did you mean \($0)?)" } ?? ""
            problems.add(ConfigError("\(source): unknown key \(name(key))\(hint)", key: name(key)))
        }
    }

    /// The allowed key a misspelt one most likely means: at most a third of its
    /// letters (and at least one) edited away.
    static func closest(to key: String, in allowed: Set<String>) -> String? {
        let key = key.lowercased()
        let length = key.count
        let limit = max(1, length / 3)
        // The distance is at least the difference in length: a key far longer or
        // shorter than every allowed one (a value pasted as a key) costs no table.
        let scored = allowed.filter { abs($0.count - length) <= limit }.map { ($0, editDistance(key, $0)) }.filter { $0.1 <= limit }
        return scored.min { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }?.0
    }

    /// Levenshtein distance, with a swap of two neighbours counting as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }

    func section(_ key: String) throws -> Section? {
        guard let node = value(key) else { return nil }
        return try Section(node, path: name(key), source: source, problems: problems)
    }

    func string(_ key: String) throws -> String? {
        guard let node = value(key) else { return nil }
        guard case .scalar(let scalar) = node else { throw error(key, "must be a string") }
        return scalar.string
    }

    func int(_ key: String, min: Int = .min, max: Int = .max) throws -> Int? {
        guard let node = value(key) else { return nil }
        guard let v = node.int else { throw error(key, "must be an integer") }
        guard v >= min, v <= max else { throw error(key, "must be between \(min) and \(max), not \(v)") }
        return v
    }

    /// The longest duration alertd takes: a century, far inside its millisecond timestamps.
    static let maxSeconds: Double = 100 * 365.25 * 86_400

    /// A finite number greater than 0.
    func positiveNumber(_ key: String) throws -> Double? {
        guard let node = value(key) else { return nil }
        guard let v = node.float ?? node.int.map(Double.init), v.isFinite, v > 0, v <= 1e9 else {
            throw error(key, "must be a number greater than 0")
        }
        return v
    }

    /// A number of seconds, or a duration as Alertmanager writes it (`90s`, `5m`, `1h30m`: ``DurationText``).
    func seconds(_ key: String) throws -> Double? {
        guard let node = value(key) else { return nil }
        guard let v = node.float ?? node.int.map(Double.init) ?? node.string.flatMap(DurationText.seconds), v.isFinite, v > 0 else {
            throw error(key, "must be a number of seconds or a duration (90s, 5m, 1h30m), greater than 0")
        }
        guard v <= Self.maxSeconds else { throw error(key, "must be at most \(Int(Self.maxSeconds)) seconds (100 years)") }
        return v
    }

    func bool(_ key: String) throws -> Bool? {
        guard let node = value(key) else { return nil }
        guard let v = node.bool else { throw error(key, "must be true or false") }
        return v
    }

    func list(_ key: String) throws -> [Node]? {
        guard let node = value(key) else { return nil }
        guard case .sequence(let sequence) = node else { throw error(key, "must be a list") }
        return Array(sequence)
    }

    func strings(_ key: String) throws -> [String]? {
        guard let node = value(key) else { return nil }
        guard case .sequence(let sequence) = node else { throw error(key, "must be a list") }
        return try sequence.map { item in
            guard let s = item.string else { throw error(key, "must hold strings") }
            return s
        }
    }
}
