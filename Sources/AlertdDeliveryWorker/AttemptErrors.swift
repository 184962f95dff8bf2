import AsyncHTTPClient
import Glibc
import NIOCore
import NIOPosix
import NIOSSL

/// What an attempt's error is recorded as: the words the deliveries API shows.
extension DeliveryWorker {
    /// A short reason for the deliveries API: what failed, in words. Never an
    /// address or a port (those in NIO's errors are what a name resolved to,
    /// or an internal receiver probed), never a type name; the full error is
    /// for the log.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as ResolutionFailure:
            return "name resolution failed" + (error.reason.isEmpty ? "" : ": " + error.reason)
        case let error as HTTPClientError:
            return describe(error)
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "name resolution failed" }
            // Each address tried failed; the first says how.
            return error.connectionErrors.first.map { describe($0.error) } ?? "could not connect"
        case let error as IOError:
            return describe(errno: error.errnoCode)
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return "timed out"
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
                return "connection closed by the receiver before it answered"
            default: return "connection failed"
            }
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "TLS handshake failed: certificate does not match the host name"
        case let error as NIOSSLError:
            switch error {
            case .handshakeFailed(let cause):
                let text = "\(cause)"
                if text.contains("CERTIFICATE_VERIFY_FAILED") { return "TLS handshake failed: certificate not trusted" }
                if text.contains("WRONG_VERSION_NUMBER") { return "TLS handshake failed: the receiver does not speak TLS" }
                return "TLS handshake failed"
            case .uncleanShutdown: return "connection closed by the receiver before it answered"
            default: return "TLS failed"
            }
        case is NIOSSLExtraError:
            return "TLS handshake failed"
        default:
            return "request failed"
        }
    }

    private static func describe(_ error: HTTPClientError) -> String {
        switch error {
        case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
            "timed out"
        case .remoteConnectionClosed: "connection closed by the receiver before it answered"
        case .invalidURL, .emptyHost, .emptyScheme: "not a valid URL"
        case .alreadyShutdown, .cancelled: "cancelled: alertd is stopping"
        // Short descriptions carry no values (AsyncHTTPClient keeps them fit for metric labels).
        default: "request failed: " + error.shortDescription.lowercased()
        }
    }

    private static func describe(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "connection refused"
        case ECONNRESET: "connection reset by the receiver"
        case ECONNABORTED: "connection aborted"
        case EPIPE: "connection closed by the receiver before it answered"
        case ENETUNREACH: "network unreachable"
        case EHOSTUNREACH: "host unreachable"
        case ETIMEDOUT: "timed out"
        case EADDRNOTAVAIL: "no local address to connect from"
        default: "connection failed: " + String(cString: strerror(code))
        }
    }
}

/// A name lookup that failed: the resolver's reason (`Name or service not known`), no address.
struct ResolutionFailure: Error, CustomStringConvertible {
    let reason: String

    init(_ error: any Error) {
        reason = (error as? HostResolver.Failure)?.reason ?? "\(error)"
    }

    var description: String { "name resolution failed: \(reason)" }
}
