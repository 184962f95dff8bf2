import AlertdAPI
import AlertdCore
import AlertdDelivery
import AlertdStore
import AlertdWire
import Foundation
import Logging
import Yams

/// Reading the YAML file of §8: every key checked, an unknown one refused with its path.
extension Config {
    /// Loads a config file. Unknown keys and wrong types are errors naming the key.
    public static func load(path: String) throws -> Config {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigError("cannot read config file \(path): \(error.localizedDescription)")
        }
        return try parse(yaml: text, source: path)
    }

    /// Parses config YAML.
    public static func parse(yaml: String, source: String = "config") throws -> Config {
        let node: Node?
        do {
            node = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigError("\(source): not valid YAML: \(error)")
        }
        var config = Config()
        guard let node else { return config }  // an empty file: every default
        let root = try Section(node, path: "", source: source)
        try root.only([
            "listen", "state_dir", "durability", "limits", "log", "metrics", "alerts", "clients", "auth", "callbacks",
            "webhooks", "tls", "http",
        ])
        if let v = try root.string("listen") { config.listen = v }
        if let v = try root.string("state_dir") { config.stateDir = v }
        if let v = try root.string("durability") {
            guard let durability = Durability(rawValue: v) else {
                throw ConfigError("\(source): durability must be full or normal, not \(v)")
            }
            config.durability = durability
        }
        if let limits = try root.section("limits") {
            try limits.only([
                "max_body_bytes", "max_pending_per_client", "max_wait_seconds", "max_waiters", "max_connections",
                "rate_per_second", "rate_burst", "read_timeout_seconds", "max_connections_per_ip", "max_waiters_per_token",
                "max_clients", "max_pending_total",
            ])
            if let v = try limits.int("max_body_bytes", min: 1024, max: 16 << 20) { config.limits.maxBodyBytes = v }
            if let v = try limits.int("max_pending_per_client", min: 1) { config.limits.maxPendingPerClient = v }
            if let v = try limits.int("max_wait_seconds", min: 0, max: 3600) { config.limits.maxWaitSeconds = v }
            if let v = try limits.int("max_waiters", min: 0) { config.limits.maxWaiters = v }
            if let v = try limits.int("max_waiters_per_token", min: 0) { config.limits.maxWaitersPerToken = v }
            if let v = try limits.int("max_clients", min: 1) { config.limits.maxClients = v }
            if let v = try limits.int("max_pending_total", min: 1) { config.limits.maxPendingTotal = v }
            if let v = try limits.int("max_connections", min: 1) { config.limits.maxConnections = v }
            if let v = try limits.int("max_connections_per_ip", min: 1) { config.limits.maxConnectionsPerIP = v }
            if let v = try limits.positiveNumber("read_timeout_seconds") { config.limits.readTimeoutSeconds = v }
            if let v = try limits.positiveNumber("rate_per_second") { config.limits.ratePerSecond = v }
            if let v = try limits.int("rate_burst", min: 1) { config.limits.rateBurst = v }
            if config.limits.rateBurst != nil, config.limits.ratePerSecond == nil {
                throw ConfigError("\(source): limits.rate_burst needs limits.rate_per_second")
            }
        }
        if let tls = try root.section("tls") {
            try tls.only(["cert_file", "key_file"])
            guard let cert = try tls.string("cert_file"), let key = try tls.string("key_file") else {
                throw ConfigError("\(source): tls needs both cert_file and key_file (PEM files)")
            }
            config.tls = TLSFiles(certFile: cert, keyFile: key)
        }
        if let http = try root.section("http") {
            try http.only(["allowed_hosts"])
            for name in try http.strings("allowed_hosts") ?? [] {
                guard HostPolicy.isHostName(name) else {
                    throw ConfigError(
                        "\(source): http.allowed_hosts: \(name) is not a host name (no port, no scheme; IP addresses need no entry)")
                }
                config.allowedHosts.append(name)
            }
        }
        if let log = try root.section("log") {
            try log.only(["level"])
            if let v = try log.string("level") {
                guard let level = Logger.Level(configName: v) else {
                    throw ConfigError("\(source): log.level must be debug, info, warning or error, not \(v)")
                }
                config.logLevel = level
            }
        }
        if let metrics = try root.section("metrics") {
            try metrics.only(["require_token"])
            if let v = try metrics.bool("require_token") { config.metricsRequireToken = v }
        }
        if let alerts = try root.section("alerts") {
            try alerts.only(["default_expires_in", "max_expires_in", "default_dismiss_after", "retention"])
            if let v = try alerts.seconds("default_expires_in") { config.alertRules.defaultExpiresIn = v }
            if let v = try alerts.seconds("max_expires_in") { config.alertRules.maxExpiresIn = v }
            if let v = try alerts.seconds("default_dismiss_after") { config.alertRules.defaultDismissAfter = v }
            if let v = try alerts.seconds("retention") { config.retentionSeconds = v }
            if config.alertRules.defaultExpiresIn > config.alertRules.maxExpiresIn {
                throw ConfigError("\(source): alerts.default_expires_in is greater than alerts.max_expires_in")
            }
        }
        if let clients = try root.section("clients") {
            for name in clients.keys {
                guard ClientID.isValid(name) else {
                    throw ConfigError("\(source): clients.\(name): not a valid client id")
                }
                guard let client = try clients.section(name) else { continue }
                try client.only(["policy", "max_pending"])
                var settings = ClientSettings(policy: .fifo, maxPending: config.limits.maxPendingPerClient)
                if let v = try client.string("policy") {
                    guard let policy = QueuePolicy(rawValue: v) else {
                        throw ConfigError("\(source): clients.\(name).policy must be fifo or stack, not \(v)")
                    }
                    settings.policy = policy
                }
                if let v = try client.int("max_pending", min: 1) { settings.maxPending = v }
                config.clients[name] = settings
            }
            // max_pending defaults to limits.max_pending_per_client even when limits come later in the file.
            for (name, settings) in config.clients where !(try clients.section(name)?.has("max_pending") ?? false) {
                config.clients[name] = ClientSettings(policy: settings.policy, maxPending: config.limits.maxPendingPerClient)
            }
        }
        if let auth = try root.section("auth") {
            try auth.only(["allow_anonymous", "tokens"])
            if let v = try auth.bool("allow_anonymous") { config.allowAnonymous = v }
            if let list = try auth.list("tokens") {
                for (index, node) in list.enumerated() {
                    let path = "auth.tokens[\(index)]"
                    let entry = try Section(node, path: path, source: source)
                    try entry.only(["name", "sha256", "roles", "clients"])
                    guard let name = try entry.string("name"), !name.isEmpty, name.utf8.count <= 64,
                        name.utf8.allSatisfy({ $0 > 32 && $0 < 127 })
                    else {
                        throw ConfigError("\(source): \(path).name is required: up to 64 visible ASCII characters")
                    }
                    guard !config.tokens.contains(where: { $0.name == name }) else {
                        throw ConfigError("\(source): \(path).name: \(name) is already the name of another token")
                    }
                    guard let hex = try entry.string("sha256"), let digest = Self.digest(hex: hex) else {
                        throw ConfigError(
                            "\(source): \(path).sha256 must be the 64 hex digits of the secret's SHA-256 (alertd token new prints it)")
                    }
                    guard !config.tokens.contains(where: { $0.digest == digest }) else {
                        throw ConfigError("\(source): \(path).sha256 is the same secret as another token's")
                    }
                    guard let roleNames = try entry.strings("roles"), !roleNames.isEmpty else {
                        throw ConfigError("\(source): \(path).roles must list at least one of read, post, answer, admin")
                    }
                    var roles: Set<Role> = []
                    for roleName in roleNames {
                        guard let role = Role(rawValue: roleName) else {
                            throw ConfigError("\(source): \(path).roles: \(roleName) is not one of read, post, answer, admin")
                        }
                        roles.insert(role)
                    }
                    guard let patterns = try entry.strings("clients"), !patterns.isEmpty else {
                        throw ConfigError("\(source): \(path).clients must list client ids or globs (\"*\" for every client)")
                    }
                    var clients: [ClientPattern] = []
                    for text in patterns {
                        guard let pattern = ClientPattern(text) else {
                            throw ConfigError("\(source): \(path).clients: \(text) is not a client id glob (letters, digits, . _ - and *)")
                        }
                        clients.append(pattern)
                    }
                    config.tokens.append(Token(name: name, digest: digest, roles: roles, clients: clients))
                }
            }
        }
        if let callbacks = try root.section("callbacks") {
            try callbacks.only(["signing_secret", "timeout", "max_age", "retry_initial_seconds", "retry_max_interval_seconds", "deny"])
            if let secret = try callbacks.string("signing_secret") {
                do {
                    _ = try WebhookKey(secret: secret)
                } catch {
                    throw ConfigError("\(source): callbacks.signing_secret: \(error)")
                }
                config.callbacks.signingSecret = secret
            }
            if let v = try callbacks.seconds("timeout") { config.callbacks.timeout = v }
            if let v = try callbacks.seconds("max_age") { config.callbacks.maxAge = v }
            if let v = try callbacks.seconds("retry_initial_seconds") { config.callbacks.retryInitialSeconds = v }
            if let v = try callbacks.seconds("retry_max_interval_seconds") { config.callbacks.retryMaxIntervalSeconds = v }
            if let v = try callbacks.strings("deny") {
                do {
                    _ = try DenyList(v)
                } catch {
                    throw ConfigError("\(source): callbacks.deny: \(error)")
                }
                config.callbacks.deny = v
            }
            if config.callbacks.retryMaxIntervalSeconds < config.callbacks.retryInitialSeconds {
                throw ConfigError(
                    "\(source): callbacks.retry_max_interval_seconds must be at least callbacks.retry_initial_seconds (\(config.callbacks.retryInitialSeconds))"
                )
            }
        }
        if let list = try root.list("webhooks") {
            for (index, node) in list.enumerated() {
                let entry = try Section(node, path: "webhooks[\(index)]", source: source)
                try entry.only(["client", "url", "secret"])
                guard let client = try entry.string("client"), ClientID.isValid(client) else {
                    throw ConfigError("\(source): webhooks[\(index)].client must be a client id")
                }
                guard let url = try entry.string("url") else {
                    throw ConfigError("\(source): webhooks[\(index)].url is required")
                }
                if let problem = CallbackURL.problem(url) {
                    throw ConfigError("\(source): webhooks[\(index)].url \(problem)")
                }
                guard let secret = try entry.string("secret") else {
                    throw ConfigError("\(source): webhooks[\(index)].secret is required (the receiver verifies with it)")
                }
                do {
                    _ = try WebhookKey(secret: secret)
                } catch {
                    throw ConfigError("\(source): webhooks[\(index)].secret: \(error)")
                }
                config.webhooks.append(ConfigWebhook(client: client, url: url, secret: secret))
            }
        }
        return config
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
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// A YAML mapping being read, with its key path for error messages.
private struct Section {
    let entries: [(key: String, value: Node)]
    let path: String
    let source: String

    init(_ node: Node, path: String, source: String) throws {
        guard case .mapping(let mapping) = node else {
            throw ConfigError("\(source): \(path.isEmpty ? "the file" : path) must be a mapping")
        }
        var entries: [(key: String, value: Node)] = []
        for (key, value) in mapping {
            guard let name = key.string else { throw ConfigError("\(source): \(path) has a key that is not a string") }
            if entries.contains(where: { $0.key == name }) {
                throw ConfigError("\(source): \(Section.name(name, path)) appears twice")
            }
            entries.append((name, value))
        }
        self.entries = entries
        self.path = path
        self.source = source
    }

    var keys: [String] { entries.map(\.key) }

    private static func name(_ key: String, _ path: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
    private func name(_ key: String) -> String { Section.name(key, path) }

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

    func only(_ allowed: Set<String>) throws {
        for key in keys where !allowed.contains(key) {
            throw ConfigError("\(source): unknown key \(name(key))")
        }
    }

    func section(_ key: String) throws -> Section? {
        guard let node = value(key) else { return nil }
        return try Section(node, path: name(key), source: source)
    }

    func string(_ key: String) throws -> String? {
        guard let node = value(key) else { return nil }
        guard case .scalar(let scalar) = node else { throw ConfigError("\(source): \(name(key)) must be a string") }
        return scalar.string
    }

    func int(_ key: String, min: Int = .min, max: Int = .max) throws -> Int? {
        guard let node = value(key) else { return nil }
        guard let v = node.int else { throw ConfigError("\(source): \(name(key)) must be an integer") }
        guard v >= min, v <= max else { throw ConfigError("\(source): \(name(key)) must be between \(min) and \(max), not \(v)") }
        return v
    }

    /// The longest duration alertd takes: a century, far inside its millisecond timestamps.
    static let maxSeconds: Double = 100 * 365.25 * 86_400

    /// A finite number greater than 0.
    func positiveNumber(_ key: String) throws -> Double? {
        guard let node = value(key) else { return nil }
        guard let v = node.float ?? node.int.map(Double.init), v.isFinite, v > 0, v <= 1e9 else {
            throw ConfigError("\(source): \(name(key)) must be a number greater than 0")
        }
        return v
    }

    func seconds(_ key: String) throws -> Double? {
        guard let node = value(key) else { return nil }
        guard let v = node.float ?? node.int.map(Double.init), v.isFinite, v > 0 else {
            throw ConfigError("\(source): \(name(key)) must be a number of seconds greater than 0")
        }
        guard v <= Self.maxSeconds else {
            throw ConfigError("\(source): \(name(key)) must be at most \(Int(Self.maxSeconds)) seconds (100 years)")
        }
        return v
    }

    func bool(_ key: String) throws -> Bool? {
        guard let node = value(key) else { return nil }
        guard let v = node.bool else { throw ConfigError("\(source): \(name(key)) must be true or false") }
        return v
    }

    func list(_ key: String) throws -> [Node]? {
        guard let node = value(key) else { return nil }
        guard case .sequence(let sequence) = node else { throw ConfigError("\(source): \(name(key)) must be a list") }
        return Array(sequence)
    }

    func strings(_ key: String) throws -> [String]? {
        guard let node = value(key) else { return nil }
        guard case .sequence(let sequence) = node else { throw ConfigError("\(source): \(name(key)) must be a list") }
        return try sequence.map { item in
            guard let s = item.string else { throw ConfigError("\(source): \(name(key)) must hold strings") }
            return s
        }
    }
}
