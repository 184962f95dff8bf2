import Glibc

/// How the server listens and what it bounds.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen.
    public enum Listen: Sendable {
        /// Bind `host:port` (port 0: any free port).
        case address(host: String, port: Int)
        /// Serve an already listening socket (systemd socket activation).
        case socket(fd: Int32)

        var isSocket: Bool {
            if case .socket = self { true } else { false }
        }
    }

    public var listen: Listen
    /// Connection loops: single-threaded libmicrohttpd daemons, each driven by a thread of
    /// its own (``ConnectionLoop``); default: the cores.
    public var threads: Int
    /// Connections served at once across all threads.
    public var maxConnections: Int
    /// Per-connection memory pool: request line and headers must fit in it.
    public var connectionMemoryLimit: Int
    /// An idle connection (not a parked waiter) is closed after this long.
    public var connectionTimeoutSeconds: Int
    /// A connection must deliver a whole request (header and body) within this
    /// many seconds of opening or of its previous answer, or it is closed: this
    /// bounds slow-header (slowloris) and slow-body clients, which libmicrohttpd's
    /// idle timeout alone does not (each trickled byte resets it), and idle
    /// keep-alive connections. A request being answered or parked is not timed.
    public var readTimeoutSeconds: Double
    /// A new connection must send its first byte within this many seconds (at most
    /// `readTimeoutSeconds`), or it is closed: connections opened and left silent
    /// (an idle-socket flood) hold libmicrohttpd's slots only this long.
    public var firstByteTimeoutSeconds: Double
    /// A client must take a whole answer within this many seconds of its being
    /// ready, or the connection is closed: a reader that never reads holds the
    /// answer's bytes and its connection only this long.
    public var writeTimeoutSeconds: Double
    /// Bytes of answers queued and not yet taken by their clients, across all
    /// connections. An answer larger than ``smallAnswerBytes`` that would go
    /// beyond it is replaced by a refusal (``HTTPRejection/answerBytesInFlight(limit:)``).
    public var maxResponseBytesInFlight: Int
    /// A request body is refused with 413 once it would exceed this.
    public var maxBodyBytes: Int
    /// Connections one client address may hold open: the ones beyond it are
    /// closed as they are accepted; nil: no per-address limit.
    public var maxConnectionsPerAddress: Int?
    /// Serve HTTPS with this certificate chain and key (PEM); nil: plain HTTP.
    public var tls: TLSMaterial?

    /// A certificate chain, its private key (both PEM text) and the GnuTLS
    /// priority string that says which protocol versions and ciphers are offered.
    public struct TLSMaterial: Sendable {
        public var certificatePEM: String
        public var keyPEM: String
        public var priorities: String
        public init(certificatePEM: String, keyPEM: String, priorities: String = TLSMaterial.defaultPriorities) {
            self.certificatePEM = certificatePEM
            self.keyPEM = keyPEM
            self.priorities = priorities
        }

        /// TLS 1.3 and 1.2 only; AEAD ciphers (AES-GCM, ChaCha20-Poly1305) only;
        /// forward-secret key exchange only (no static RSA, no finite-field DHE);
        /// the server's order of preference.
        public static let defaultPriorities =
            "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-GCM"
            + ":-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-SHA1:%SERVER_PRECEDENCE"
    }

    public init(
        listen: Listen,
        threads: Int = HTTPServerConfiguration.cores,
        maxConnections: Int = 30_000,
        connectionMemoryLimit: Int = 8 * 1024,
        connectionTimeoutSeconds: Int = 120,
        readTimeoutSeconds: Double = 30,
        firstByteTimeoutSeconds: Double = 5,
        writeTimeoutSeconds: Double = 60,
        maxResponseBytesInFlight: Int = 128 << 20,
        maxBodyBytes: Int = 64 * 1024,
        maxConnectionsPerAddress: Int? = nil,
        tls: TLSMaterial? = nil
    ) {
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.readTimeoutSeconds = readTimeoutSeconds
        self.firstByteTimeoutSeconds = firstByteTimeoutSeconds
        self.writeTimeoutSeconds = writeTimeoutSeconds
        self.maxResponseBytesInFlight = maxResponseBytesInFlight
        self.tls = tls
        self.listen = listen
        self.threads = threads
        self.maxConnections = maxConnections
        self.connectionMemoryLimit = connectionMemoryLimit
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.maxBodyBytes = maxBodyBytes
    }

    public static var cores: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
