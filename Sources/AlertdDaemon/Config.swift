public import AlertdAPI
public import AlertdAlertmanager
public import AlertdCore
public import AlertdDelivery
public import AlertdPostgres
public import AlertdSQLite
public import AlertdEngine
import AlertdWire
import Foundation
public import Logging
import Yams

/// The daemon's configuration: the §8 YAML file, with `--listen` and
/// `--state-dir` applied on top. Every key has the default the example documents.
public struct Config: Sendable {
    /// The file it was read from; nil: no file, every default.
    public var source: String?
    public var listen = "127.0.0.1:8080"
    public var stateDir = "./alertd-state"
    public var durability = Durability.full
    public var limits = Limits()
    public var logLevel = Logger.Level.info
    public var metricsRequireToken = false
    public var alertRules = AlertRules()
    /// Seconds terminal alerts stay readable.
    public var retentionSeconds: Double = 604_800
    /// Terminal alerts kept per client (`alerts.retention_max`); the oldest go first.
    public var retentionMax = Engine.Settings.defaultRetentionMax
    /// Bytes of terminal alerts kept per client (`alerts.retention_max_bytes_per_client`).
    public var retentionMaxBytesPerClient = Engine.Settings.defaultRetentionMaxBytesPerClient
    /// Bytes of terminal alerts kept in all (`alerts.retention_max_bytes`).
    public var retentionMaxBytes = Engine.Settings.defaultRetentionMaxBytes
    public var clients: [String: ClientSettings] = [:]
    public var allowAnonymous = false
    /// `tls`: serve HTTPS with these PEM files; nil: plain HTTP.
    public var tls: TLSFiles?
    /// `http.allowed_hosts`: names besides loopback ones and IP addresses that
    /// requests may address alertd by while it has no tokens (see ``HostPolicy``).
    public var allowedHosts: [String] = []
    /// `store`: where alertd keeps its queues.
    public var store = Store.sqlite
    /// `integrations.alertmanager`: Prometheus Alertmanager as a poster, and the
    /// silences its alerts' buttons create (docs/alertmanager.md). nil: off.
    public var alertmanager: AlertmanagerSettings?
    /// `push` (SPEC §11): Web Push; nil: off.
    public var push: PushSettings?
    /// `receipts` (SPEC §14): the key receipts are signed with, the keys they were signed
    /// with before, and how long they are kept.
    public var receipts = Receipts()

    /// `receipts`: signed receipts of decisions (SPEC §14, docs/receipts.md).
    public struct Receipts: Sendable, Hashable {
        /// `key_file`: PEM PKCS#8 Ed25519 (`alertd receipts keygen PATH` writes one); nil: with
        /// SQLite, ``defaultKeyFile`` in `state_dir`, made at the first start.
        public var keyFile: String?
        /// `previous_keys`: PEM files of keys receipts were signed with before a rotation (public
        /// keys, or the old private key files as they are): `GET /v1/keys` keeps listing them.
        public var previousKeys: [String] = []
        /// `retention`: seconds receipts are kept, apart from the alerts' own retention.
        public var retentionSeconds: Double = Receipts.defaultRetentionSeconds

        /// 400 days: a year of audits and a little more.
        public static let defaultRetentionSeconds: Double = 400 * 86_400
        /// The key SQLite's state directory holds when `key_file` is not set.
        public static let defaultKeyFile = "receipts-key.pem"

        public init(keyFile: String? = nil, previousKeys: [String] = [], retentionSeconds: Double = Receipts.defaultRetentionSeconds) {
            self.keyFile = keyFile
            self.previousKeys = previousKeys
            self.retentionSeconds = retentionSeconds
        }
    }

    /// `store.backend`: SQLite in `state_dir` (the default), or a PostgreSQL
    /// database several instances share (§9).
    public enum Store: Sendable, Equatable {
        case sqlite
        /// `store.postgres.url` (parsed when the config is read) and `pool_size`.
        case postgres(url: PostgresURL, poolSize: Int)

        public static func == (a: Store, b: Store) -> Bool {
            switch (a, b) {
            case (.sqlite, .sqlite): true
            case (.postgres(let x, let n), .postgres(let y, let m)): x.description == y.description && x.password == y.password && n == m
            default: false
            }
        }

        /// For logs: never the password.
        public var description: String {
            switch self {
            case .sqlite: "sqlite"
            case .postgres(let url, _): url.description
            }
        }
    }

    public struct TLSFiles: Sendable, Hashable {
        public var certFile: String
        public var keyFile: String
        /// `tls.priorities`: a GnuTLS priority string; nil: ``HTTPServerConfiguration/TLSMaterial/defaultPriorities``.
        public var priorities: String?

        public init(certFile: String, keyFile: String, priorities: String? = nil) {
            self.certFile = certFile
            self.keyFile = keyFile
            self.priorities = priorities
        }

        /// Reads both files; the error names the file and why.
        public func read() throws -> (certificate: String, key: String) {
            func text(_ path: String, _ key: String) throws -> String {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ConfigError("tls.\(key): cannot read \(path)", key: "tls.\(key)")
                }
                let text = String(decoding: data, as: UTF8.self)
                guard text.contains("-----BEGIN ") else { throw ConfigError("tls.\(key): \(path) is not a PEM file", key: "tls.\(key)") }
                // PKCS#8 ("BEGIN ENCRYPTED PRIVATE KEY") or the traditional form ("Proc-Type: 4,ENCRYPTED").
                if key == "key_file", text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
                    throw ConfigError(
                        "tls.key_file: \(path) is an encrypted private key (it needs a passphrase, and alertd cannot ask for one): "
                            + "write it unencrypted with `openssl pkey -in \(path) -out key.pem` and keep that file readable by alertd alone",
                        key: "tls.key_file")
                }
                return text
            }
            return (try text(certFile, "cert_file"), try text(keyFile, "key_file"))
        }
    }

    /// `auth.tokens`: when there are any, every `/v1` request needs one.
    public var tokens: [Token] = []
    public var callbacks = Callbacks()
    /// The `webhooks:` list: registered callback URLs besides the API's.
    public var webhooks: [ConfigWebhook] = []

    public struct ConfigWebhook: Sendable, Hashable {
        public var client: String
        public var url: String
        public var secret: String
    }

    public struct Limits: Sendable {
        public var maxBodyBytes = 65_536
        public var maxPendingPerClient = 10_000
        public var maxWaitSeconds = 60
        public var maxWaiters = 20_000
        /// Waiters one token may have parked at once (no limit without tokens).
        public var maxWaitersPerToken = 10_000
        /// Clients known at once: a post to a new client beyond it is 429 queue-full.
        public var maxClients = 10_000
        /// Pending alerts across every client: beyond it a post is 429 queue-full.
        public var maxPendingTotal = 200_000
        /// What pending alerts across every client may take in memory, by their
        /// footprint (text in UTF-8 plus 1 KiB each): beyond it a post is 429 queue-full.
        public var maxPendingBytes = QueueSettings.defaultMaxPendingBytes
        public var maxConnections = 30_000
        /// Connections one client address may hold open; 0: no per-address limit;
        /// nil (absent): ``defaultConnectionsPerIP`` when listening beyond loopback, else none.
        public var maxConnectionsPerIP: Int?
        /// Seconds a connection has to deliver a whole request, from opening or from its previous answer.
        public var readTimeoutSeconds: Double = 30
        /// Seconds a new connection has to send its first byte.
        public var firstByteTimeoutSeconds: Double = 5
        /// Seconds a client has to take a whole answer once it is ready.
        public var writeTimeoutSeconds: Double = 60
        /// Bytes of answers queued and not yet taken by their clients, all connections together.
        public var maxResponseBytesInFlight = 128 << 20
        /// Requests one token may have in flight at once (parked long-polls aside); 0: no bound.
        public var maxRequestsPerToken = 256

        /// The per-address limit when `max_connections_per_ip` is absent and alertd listens beyond loopback.
        public static let defaultConnectionsPerIP = 1024

        /// The per-address connection limit in force; nil: none.
        public func connectionsPerIP(listeningOnLoopback: Bool) -> Int? {
            switch maxConnectionsPerIP {
            case nil: listeningOnLoopback ? nil : Self.defaultConnectionsPerIP
            case 0?: nil
            case let limit?: limit
            }
        }
        /// Requests a second per token, on average; nil: no rate limit.
        public var ratePerSecond: Double?
        /// Requests a token may make at once; defaults to one second's worth (at least 1).
        public var rateBurst: Int?
    }

    /// Callback delivery (§5): signing, attempt timeout, retries, the deny list.
    public struct Callbacks: Sendable {
        public var signingSecret: String?
        public var timeout: Double = 10
        public var maxAge: Double = 86_400
        public var retryInitialSeconds: Double = 1
        public var retryMaxIntervalSeconds: Double = 300
        /// Callback deliveries one client may have waiting or in flight: at it, its posts are 429 queue-full.
        public var maxPendingPerClient = 10_000
        public var deny = DenyList.defaultEntries
        /// Exceptions to `deny`: address blocks and host globs a callback may reach all the same.
        public var allow: [String] = []

        /// The deny list these settings describe (checked when the config was read).
        public func denyList() throws(DenyListError) -> DenyList { try DenyList(deny, allow: allow) }

        /// The retry schedule these settings describe.
        public var retryPolicy: RetryPolicy {
            RetryPolicy(initial: retryInitialSeconds, maxInterval: retryMaxIntervalSeconds, maxAge: maxAge)
        }
    }

    public init() {}

    /// The default config file path.
    public static let defaultPath = "/etc/alertd/alertd.yaml"

    public var queueSettings: QueueSettings {
        QueueSettings(
            standard: ClientSettings(policy: .fifo, maxPending: limits.maxPendingPerClient),
            clients: clients, maxClients: limits.maxClients, maxPendingTotal: limits.maxPendingTotal,
            maxPendingBytes: limits.maxPendingBytes)
    }

    /// The clients the config names: under `clients:`, and as an escalation step's `to`
    /// (the labels `/metrics` counts escalations by, SPEC §12).
    public var namedClients: Set<String> {
        Set(clients.keys).union(clients.values.flatMap { $0.escalation.map(\.to) })
    }
}

/// A config file problem: one line, naming the key it concerns.
public struct ConfigError: Error, CustomStringConvertible {
    public let description: String
    /// The key's path (`limits.max_waiters`), when the problem is one key's.
    public let key: String?

    init(_ description: String, key: String? = nil) {
        self.description = description
        self.key = key
    }
}

/// Every problem found in a config file, one line each, in file order.
public struct ConfigErrors: Error, CustomStringConvertible {
    public let errors: [ConfigError]
    /// What could be read of the file despite them (for the checks that need a config).
    public var partial: Config?
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
