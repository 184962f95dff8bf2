import AlertdWire
import Foundation
import NIOSSL
public import PostgresNIO

/// A connection string as PostgreSQL users write it, read into postgres-nio's
/// configuration: the URL form (`postgres://user:password@host:5432/db?sslmode=verify-full`,
/// a Unix socket as `?host=/run/postgresql` or a `%2F`-encoded host) or the
/// keyword form (`host=/run/postgresql dbname=alertd user=alertd sslmode=disable`).
///
/// `sslmode` is libpq's: `disable`; `allow` and `prefer` (TLS if the server
/// offers it, unverified); `require` (TLS, unverified); `verify-ca` (the chain,
/// not the name); `verify-full` (both). `sslrootcert` names the CA file to trust
/// (else the system's). The default is libpq's, `prefer`; ``unverifiedTLSWarning``
/// says when that leaves a connection beyond this machine open to an impostor.
///
/// With no password in the string, `PGPASSWORD` from the environment is used (as
/// libpq does), so a password need not be in a command line or a world-readable file.
/// The password is never part of ``description``, and an error never quotes the
/// string it read (a misplaced quote or space would otherwise print pieces of it).
public struct PostgresURL: Sendable, CustomStringConvertible {
    public var host: String?
    public var socketPath: String?
    public var port: Int = 5432
    public var user: String
    public var password: String?
    public var database: String?
    public var sslMode: SSLMode = .prefer
    public var rootCertificateFile: String?

    public enum SSLMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads `text`; `Invalid` says what is wrong, never with any of `text` in it.
    /// `environment` stands for the process's (`USER`, `PGPASSWORD`) in tests.
    public init(_ text: String, environment: [String: String]? = nil) throws(Invalid) {
        let environment = environment ?? ProcessInfo.processInfo.environment
        user = environment["USER"] ?? "postgres"
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("postgres://") || trimmed.hasPrefix("postgresql://") {
            try readURL(trimmed)
        } else {
            try readKeywords(trimmed)
        }
        if password == nil, let fromEnvironment = environment["PGPASSWORD"], !fromEnvironment.isEmpty { password = fromEnvironment }
        if let host, host.hasPrefix("/") {
            socketPath = host
            self.host = nil
        }
        if host == nil, socketPath == nil { host = "localhost" }
    }

    private mutating func readURL(_ text: String) throws(Invalid) {
        guard let components = URLComponents(string: text) else {
            throw Invalid(description: "not a postgres:// URL (a character in it may need %-encoding)")
        }
        if let name = components.percentEncodedUser.flatMap({ $0.removingPercentEncoding }), !name.isEmpty { user = name }
        password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        if let host = components.percentEncodedHost.flatMap({ $0.removingPercentEncoding }), !host.isEmpty {
            self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        }
        if let port = components.port { self.port = port }
        let path = components.path
        if path.count > 1 { database = String(path.dropFirst()) }
        for (index, item) in (components.queryItems ?? []).enumerated() {
            try apply(item.name, item.value ?? "", pair: index + 1)
        }
    }

    private mutating func readKeywords(_ text: String) throws(Invalid) {
        var rest = Substring(text)
        var pairs = 0
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" }
            guard !rest.isEmpty else { break }
            pairs += 1
            guard let equals = rest.firstIndex(of: "=") else {
                throw Invalid(
                    description: "neither a postgres:// URL nor key=value pairs (pair \(pairs) has no \"=\"; quote a value with spaces)")
            }
            let key = rest[..<equals].trimmingCharacters(in: .whitespaces)
            rest = rest[rest.index(after: equals)...].drop { $0 == " " }
            var value = ""
            if rest.first == "'" {
                rest = rest.dropFirst()
                var closed = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if character == "\\", let next = rest.first {
                        value.append(next)
                        rest = rest.dropFirst()
                    } else if character == "'" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                }
                guard closed else { throw Invalid(description: "an unterminated quote in the value of pair \(pairs)") }
            } else {
                let end = rest.firstIndex { $0 == " " || $0 == "\t" } ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            try apply(key, value, pair: pairs)
        }
    }

    /// Takes the password from the first line of the file at `path` (as
    /// `alertd migrate-store --password-file`), over any in the string or the environment.
    public mutating func readPassword(fromFile path: String) throws(Invalid) {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw Invalid(description: "cannot read the password file \(path)")
        }
        let trimmed = String(text.prefix { !$0.isNewline })
        guard !trimmed.isEmpty else { throw Invalid(description: "the password file \(path) has no password on its first line") }
        password = trimmed
    }

    /// libpq's parameters, which an error may name: any other key may be part of a
    /// value that a space or a quote split (a password), and is not repeated.
    private static let libpqKeys: Set<String> = [
        "hostaddr", "passfile", "channel_binding", "client_encoding", "fallback_application_name", "keepalives",
        "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout", "replication", "gssencmode",
        "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode", "sslcrl", "sslcrldir", "sslsni",
        "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib", "gssdelegation",
        "service", "target_session_attrs", "load_balance_hosts", "require_auth", "sslnegotiation",
    ]

    private mutating func apply(_ key: String, _ value: String, pair: Int) throws(Invalid) {
        switch key {
        case "host": host = value
        case "port":
            guard let port = Int(value), (1...65535).contains(port) else {
                throw Invalid(description: "port must be a number from 1 to 65535")
            }
            self.port = port
        case "user": user = value
        case "password": password = value
        case "dbname": database = value
        case "sslmode":
            guard let mode = SSLMode(rawValue: value) else {
                throw Invalid(description: "sslmode must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            sslMode = mode
        case "sslrootcert": rootCertificateFile = value
        case "application_name", "connect_timeout", "options": break  // accepted, not needed
        default:
            if Self.libpqKeys.contains(key) { throw Invalid(description: "the connection parameter \(key) is not supported by alertd") }
            throw Invalid(
                description:
                    "pair \(pair) is not a connection parameter alertd knows (host, port, user, password, dbname, sslmode, sslrootcert)")
        }
    }

    /// Whether the server is on this machine (a socket, or a loopback name or address):
    /// nothing between alertd and it to impersonate it.
    public var isLocal: Bool {
        guard socketPath == nil, let host else { return true }
        return Hosts.isLoopback(host)
    }

    /// A warning when the connection goes beyond this machine without verifying the
    /// server (`sslmode` below `verify-full`): anyone on the path can take the password
    /// and every alert. Nil when the server is local or verified.
    public var unverifiedTLSWarning: String? {
        guard !isLocal, sslMode != .verifyFull else { return nil }
        let what =
            switch sslMode {
            case .disable: "without TLS"
            case .allow, .prefer: "with TLS only if the server offers it, unverified"
            case .require: "with TLS, but not verifying the server's certificate"
            case .verifyCA: "with TLS, verifying the certificate's chain but not its name"
            case .verifyFull: ""
            }
        return "store.postgres.url: the connection to \(host ?? "?") goes \(what) (sslmode=\(sslMode.rawValue)): "
            + "anyone on the path can read the password and every alert, or impersonate the database; "
            + "use sslmode=verify-full (with sslrootcert for a private CA)"
    }

    /// Set on every connection at its start (PostgreSQL's startup parameters), for every
    /// statement alertd runs:
    /// - `search_path` `"$user", public`, whatever a role's or the database's settings say:
    ///   alertd's tables are in the role's own schema if there is one, else in `public`
    ///   (where migrations create them), and `pg_catalog` is searched before both, as it is
    ///   when not named (named first, it would also be where tables are created). Every
    ///   function alertd calls is named in `pg_catalog` too: a function another role
    ///   puts in a writable schema that fits a call's arguments better than
    ///   `pg_catalog`'s would otherwise run as alertd.
    /// - `statement_timeout` 30 s, `lock_timeout` 10 s: a statement stuck behind a lock
    ///   or a database that stopped answering fails (503, `/readyz` not ready) instead of
    ///   holding a connection and its client for good. Migrations lift both.
    /// - `idle_in_transaction_session_timeout` 60 s: an instance that stopped in the
    ///   middle of a transaction (a debugger, a frozen VM) lets go of its clients' locks.
    /// - `jit` off: every statement alertd runs is short, and the planner prices them by
    ///   the table's statistics, not by what one execution touches. Once `alerts` held a
    ///   long queue of one client, an autoanalyze made the flush's read cost over
    ///   `jit_above_cost`, and compiling it (inlined and optimised: 68 functions) took
    ///   about 0.5 s of a backend's CPU on every flush: posts fell from 8 400 to 90 a
    ///   second until the instance restarted (issue 46, `bench/postgres.sh`).
    public static let sessionParameters: [(String, String)] = [
        ("search_path", "\"$user\", public"),
        ("statement_timeout", "30s"),
        ("lock_timeout", "10s"),
        ("idle_in_transaction_session_timeout", "60s"),
        ("jit", "off"),
    ]

    /// The connection string without its password, fit for a log line.
    public var description: String {
        var text = "postgres://\(user)\(password == nil ? "" : ":***")@"
        if let socketPath {
            text += "?host=\(socketPath)"
        } else {
            text += "\(host ?? "localhost"):\(port)"
        }
        text += "/\(database ?? user)"
        if socketPath == nil { text += "?sslmode=\(sslMode.rawValue)" }
        return text
    }

    /// postgres-nio's configuration for it; `applicationName` (`alertd/<instance>`) names
    /// the connections of one instance in `pg_stat_activity`.
    public func clientConfiguration(applicationName: String? = nil) throws -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketPath {
            let path = socketPath.hasSuffix(".s.PGSQL.\(port)") ? socketPath : socketPath + "/.s.PGSQL.\(port)"
            configuration = PostgresClient.Configuration(unixSocketPath: path, username: user, password: password, database: database)
        } else {
            configuration = PostgresClient.Configuration(
                host: host ?? "localhost", port: port, username: user, password: password, database: database, tls: try tls())
        }
        configuration.options.additionalStartupParameters = Self.sessionParameters + Self.named(applicationName)
        return configuration
    }

    /// The same, for a single connection (LISTEN).
    public func connectionConfiguration(applicationName: String? = nil) throws -> PostgresConnection.Configuration {
        var configuration = try plainConnectionConfiguration()
        configuration.options.additionalStartupParameters = Self.sessionParameters + Self.named(applicationName)
        return configuration
    }

    private static func named(_ applicationName: String?) -> [(String, String)] {
        applicationName.map { [("application_name", $0)] } ?? []
    }

    private func plainConnectionConfiguration() throws -> PostgresConnection.Configuration {
        if let socketPath {
            let path = socketPath.hasSuffix(".s.PGSQL.\(port)") ? socketPath : socketPath + "/.s.PGSQL.\(port)"
            return PostgresConnection.Configuration(unixSocketPath: path, username: user, password: password, database: database)
        }
        let tls: PostgresConnection.Configuration.TLS =
            switch sslMode {
            case .disable: .disable
            case .allow, .prefer: .prefer(try NIOSSLContext(configuration: try tlsConfiguration()))
            case .require, .verifyCA, .verifyFull: .require(try NIOSSLContext(configuration: try tlsConfiguration()))
            }
        return PostgresConnection.Configuration(
            host: host ?? "localhost", port: port, username: user, password: password, database: database, tls: tls)
    }

    private func tls() throws -> PostgresClient.Configuration.TLS {
        switch sslMode {
        case .disable: .disable
        case .allow, .prefer: .prefer(try tlsConfiguration())
        case .require, .verifyCA, .verifyFull: .require(try tlsConfiguration())
        }
    }

    private func tlsConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .disable, .allow, .prefer, .require: configuration.certificateVerification = .none
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        if let rootCertificateFile {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(rootCertificateFile))
        }
        return configuration
    }
}
