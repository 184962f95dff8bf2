// A self-signed certificate for a few host names, made by openssl in a temp directory, with
// the TLS configurations of a receiver that serves it and of a client that trusts it alone.

import Foundation
public import NIOSSL

/// A self-signed certificate (P-256) for `names`, valid for two days.
///
/// ```swift
/// let certificate = try await TestCertificate(names: ["hooks.test"])
/// defer { certificate.remove() }
/// let receiver = try WebhookReceiver.start(tls: certificate.server)
/// var settings = …; settings.tlsConfiguration = certificate.client   // trusts this certificate only
/// ```
public struct TestCertificate: Sendable {
    public let directory: String
    /// Serves the certificate and its key.
    public let server: TLSConfiguration
    /// Full verification, with this certificate as the only trust root.
    public let client: TLSConfiguration

    public init(names: [String]) async throws {
        directory = NSTemporaryDirectory() + "alertd-cert-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificatePath = directory + "/cert.pem"
        let keyPath = directory + "/key.pem"
        // Through posix_spawn (Program), not Foundation's Process: two Process launches at once
        // crash it (tests that make certificates run in parallel).
        let openssl = try await Program.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=\(names[0])", "-addext", "subjectAltName=" + names.map { "DNS:\($0)" }.joined(separator: ","),
                "-keyout", keyPath, "-out", certificatePath,
            ])
        guard openssl.status == 0 else { throw Failure(description: "openssl: \(openssl.stderr)") }
        let certificate = try NIOSSLCertificate(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: certificatePath))), format: .pem)
        let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        server = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        var client = TLSConfiguration.makeClientConfiguration()
        client.trustRoots = .certificates([certificate])
        self.client = client
    }

    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}
