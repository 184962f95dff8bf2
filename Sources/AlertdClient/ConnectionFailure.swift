import AlertdWire
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// A failed request without an answer, told as a sentence: what failed and where
/// (`connection refused (127.0.0.1:8080)`), never a type name or a TLS library's error stack.
struct ConnectionFailure {
    /// What failed, in words.
    var reason: String
    /// The request never left: no connection, so the daemon did nothing.
    var neverSent: Bool
    /// The TLS handshake failed on the daemon's certificate.
    var certificate: AlertdError.CertificateProblem?
    /// The connection was closed (or reset) with no answer: what a daemon serving TLS does to
    /// a plain-HTTP request.
    var closedUnanswered = false

    /// `host:port` of the daemon's URL, as the user gave it.
    static func endpoint(of base: String) -> String {
        guard let components = URLComponents(string: base), let host = components.host else {
            return URLRedaction.redacted(base, keepingPath: true)
        }
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        // An IPv6 literal keeps (or gets) its brackets: [::1]:8080.
        return host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The ``AlertdError`` for `error`, thrown by AsyncHTTPClient for a request to `base`.
    static func error(_ error: any Error, base: String, timeout: Double) -> AlertdError {
        let failure = ConnectionFailure(error, timeout: timeout)
        let prefix = failure.neverSent ? "cannot reach alertd" : "no answer from alertd"
        var message = "\(prefix): \(failure.reason) (\(endpoint(of: base)))"
        if failure.closedUnanswered, URLComponents(string: base)?.scheme?.lowercased() == "http" {
            message += "; is it https? alertd with tls: closes plain http:// connections unanswered: try https://\(endpoint(of: base))"
        }
        var error = AlertdError(kind: .connection, message: message, neverSent: failure.neverSent)
        error.certificateProblem = failure.certificate
        return error
    }

    init(_ error: any Error, timeout: Double) {
        switch error {
        case let error as HTTPClientError:
            self = Self.describe(error, timeout: timeout)
        case let error as NIOConnectionError:
            if let dns = error.dnsAError ?? error.dnsAAAAError {
                self.init(reason: "cannot resolve the host name: \(Self.resolverReason(dns))", neverSent: true)
            } else if let first = error.connectionErrors.first {
                // Each address tried failed; the first says how.
                self.init(first.error, timeout: timeout)
                neverSent = true
            } else {
                self.init(reason: "could not connect", neverSent: true)
            }
        case let error as IOError:
            self = Self.describe(errno: error.errnoCode)
        case let error as ChannelError:
            switch error {
            case .connectTimeout: self.init(reason: "timed out connecting", neverSent: true)
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
                self.init(reason: "the connection was closed before an answer came", neverSent: false)
                closedUnanswered = true
            default: self.init(reason: "the connection failed", neverSent: false)
            }
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            self.init(reason: "certificate not valid for this host name", neverSent: true)
            certificate = .wrongHost
        case let error as NIOSSLError:
            switch error {
            case .handshakeFailed(let cause):
                let text = "\(cause)"
                if text.contains("CERTIFICATE_VERIFY_FAILED") {
                    self.init(reason: "certificate not trusted", neverSent: true)
                    certificate = .untrusted
                } else if text.contains("WRONG_VERSION_NUMBER") || text.contains("PACKET_LENGTH_TOO_LONG") {
                    self.init(reason: "TLS handshake failed: the daemon does not speak TLS on this port", neverSent: true)
                } else {
                    self.init(reason: "TLS handshake failed", neverSent: true)
                }
            case .uncleanShutdown:
                self.init(reason: "the connection was closed before an answer came", neverSent: false)
            default:
                self.init(reason: "TLS failed", neverSent: false)
            }
        case is NIOSSLExtraError:
            self.init(reason: "TLS handshake failed", neverSent: true)
        default:
            self.init(reason: "the request failed", neverSent: false)
        }
    }

    private init(reason: String, neverSent: Bool, closed: Bool = false) {
        self.reason = reason
        self.neverSent = neverSent
        self.closedUnanswered = closed
    }

    private static func describe(_ error: HTTPClientError, timeout: Double) -> ConnectionFailure {
        switch error {
        case .connectTimeout: ConnectionFailure(reason: "timed out connecting", neverSent: true)
        case .tlsHandshakeTimeout: ConnectionFailure(reason: "timed out in the TLS handshake", neverSent: true)
        case .deadlineExceeded, .readTimeout, .writeTimeout:
            ConnectionFailure(reason: "no answer within \(Self.seconds(timeout))", neverSent: false)
        case .remoteConnectionClosed:
            ConnectionFailure(reason: "the connection was closed before an answer came", neverSent: false, closed: true)
        // Short descriptions carry no values (AsyncHTTPClient keeps them fit for metric labels).
        default: ConnectionFailure(reason: "the request failed: " + error.shortDescription.lowercased(), neverSent: false)
        }
    }

    private static func describe(errno code: Int32) -> ConnectionFailure {
        switch code {
        case ECONNREFUSED: ConnectionFailure(reason: "connection refused", neverSent: true)
        case ENETUNREACH: ConnectionFailure(reason: "network unreachable", neverSent: true)
        case EHOSTUNREACH: ConnectionFailure(reason: "host unreachable", neverSent: true)
        case ETIMEDOUT: ConnectionFailure(reason: "timed out connecting", neverSent: true)
        case EADDRNOTAVAIL: ConnectionFailure(reason: "no local address to connect from", neverSent: true)
        case ECONNRESET: ConnectionFailure(reason: "connection reset by the daemon", neverSent: false, closed: true)
        case EPIPE: ConnectionFailure(reason: "the connection was closed before an answer came", neverSent: false, closed: true)
        default: ConnectionFailure(reason: "the connection failed: " + String(cString: strerror(code)), neverSent: false)
        }
    }

    /// The resolver's own words (`Name or service not known`), without NIO's wrapping.
    private static func resolverReason(_ error: any Error) -> String {
        (error as? SocketAddressError.UnknownHost)?.errorDescription ?? "\(error)"
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
