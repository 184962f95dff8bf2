import Foundation
import NIOSSL

/// How an ``AlertdClient`` checks the certificate of an `https://` daemon.
///
/// A daemon with a certificate from a public CA needs nothing (``system``). One with a
/// private CA or a self-signed certificate needs that CA's (or that certificate's) PEM file:
///
/// ```swift
/// let alerts = try AlertdClient(url: "https://alertd.internal:8443", trust: .pemFile("/etc/alertd/ca.pem"))
/// ```
public struct CertificateTrust: Sendable {
    /// nil: AsyncHTTPClient's default (the system's roots, full verification).
    let configuration: TLSConfiguration?

    private init(_ configuration: TLSConfiguration?) { self.configuration = configuration }

    /// The system's trust roots; the certificate must be valid for the URL's host. The default.
    public static let system = CertificateTrust(nil)

    /// Only the certificates in a PEM file: a private CA, or the daemon's own self-signed
    /// certificate. The certificate must still be valid for the URL's host (a name or an IP
    /// address in its subjectAltName). The file is read now.
    ///
    /// - Throws: ``AlertdError`` of kind ``AlertdError/Kind/invalidCertificates`` when the
    ///   file cannot be read or holds no PEM certificate.
    public static func pemFile(_ path: String) throws(AlertdError) -> CertificateTrust {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "not readable" : "no such file"
            throw AlertdError(kind: .invalidCertificates, message: "cannot read the CA file \(path): \(reason)")
        }
        let bytes = Array(data)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            certificates = []
        }
        guard !certificates.isEmpty else {
            throw AlertdError(kind: .invalidCertificates, message: "the CA file \(path) holds no PEM certificate")
        }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(certificates)
        return CertificateTrust(configuration)
    }

    /// No check at all: whoever sits between the client and the daemon can read and change
    /// everything, the token included. For a test daemon, never for a real one.
    public static var insecure: CertificateTrust {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        return CertificateTrust(configuration)
    }
}
