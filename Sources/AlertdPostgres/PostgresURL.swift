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
/// (else the system's). The password is never part of ``description``.
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

    /// Reads `text`; `Invalid` says what is wrong, never with the password in it.
    public init(_ text: String) throws(Invalid) {
        user = ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("postgres://") || trimmed.hasPrefix("postgresql://") {
            try readURL(trimmed)
        } else {
            try readKeywords(trimmed)
        }
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
        for item in components.queryItems ?? [] {
            try apply(item.name, item.value ?? "")
        }
    }

    private mutating func readKeywords(_ text: String) throws(Invalid) {
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" }
            guard !rest.isEmpty else { break }
            guard let equals = rest.firstIndex(of: "=") else {
                throw Invalid(description: "neither a postgres:// URL nor key=value pairs (at \"\(rest.prefix(20))\")")
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
                guard closed else { throw Invalid(description: "an unterminated quote in the value of \(key)") }
            } else {
                let end = rest.firstIndex { $0 == " " || $0 == "\t" } ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            try apply(key, value)
        }
    }

    private mutating func apply(_ key: String, _ value: String) throws(Invalid) {
        switch key {
        case "host": host = value
        case "port":
            guard let port = Int(value), (1...65535).contains(port) else {
                throw Invalid(description: "port must be 1 to 65535, not \(value)")
            }
            self.port = port
        case "user": user = value
        case "password": password = value
        case "dbname": database = value
        case "sslmode":
            guard let mode = SSLMode(rawValue: value) else {
                throw Invalid(
                    description: "sslmode must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")), not \(value)")
            }
            sslMode = mode
        case "sslrootcert": rootCertificateFile = value
        case "application_name", "connect_timeout", "options": break  // accepted, not needed
        default: throw Invalid(description: "unknown connection parameter \(key)")
        }
    }

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

    /// postgres-nio's configuration for it.
    public func clientConfiguration() throws -> PostgresClient.Configuration {
        if let socketPath {
            let path = socketPath.hasSuffix(".s.PGSQL.\(port)") ? socketPath : socketPath + "/.s.PGSQL.\(port)"
            return PostgresClient.Configuration(unixSocketPath: path, username: user, password: password, database: database)
        }
        return PostgresClient.Configuration(
            host: host ?? "localhost", port: port, username: user, password: password, database: database, tls: try tls())
    }

    /// The same, for a single connection (LISTEN).
    public func connectionConfiguration() throws -> PostgresConnection.Configuration {
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
