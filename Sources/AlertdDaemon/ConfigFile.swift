import AlertdAPI
import AlertdAlertmanager
import AlertdCore
import AlertdDelivery
import AlertdEngine
import AlertdPostgres
import AlertdSQLite
import AlertdWire
import Foundation
import Logging
import Yams

// Just over 400 lines after the split: loading, errors and the short sections stay here, a
// few lines each; the YAML section reader (ConfigSection.swift) and the long sections
// (ConfigFile+Auth, +Callbacks, +Alertmanager) are beside it.

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

    /// Text that can go into a header value as it is.
    static func isHeaderSafe(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value > 32 && $0.value < 127 }
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
