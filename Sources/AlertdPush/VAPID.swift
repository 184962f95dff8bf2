public import AlertdWire
import Crypto
import Foundation

/// Voluntary Application Server Identification (RFC 8292): every push request
/// carries a JWT signed with alertd's P-256 key (ES256), naming the push service
/// (`aud`, the endpoint's origin), a near expiry (`exp`) and a contact (`sub`),
/// with the public key beside it; a browser's subscription is bound to that key
/// (its `applicationServerKey`), so nobody else can push to it.
public struct VAPID: Sendable {
    /// The private key's raw scalar (32 bytes): swift-crypto's key types are not `Sendable`.
    private let scalar: [UInt8]
    /// The public key, uncompressed (65 bytes): what `GET /v1/push/key` gives, base64url.
    public let publicKey: [UInt8]
    /// The `sub` claim: a `mailto:` or `https:` contact for the push service's operators.
    public let subject: String

    /// Tokens live this long (RFC 8292 §2: at most 24 hours); a delivery's attempts make new ones.
    public static let tokenLifetime: Int64 = 12 * 3600

    /// The key pair stored as its private scalar (32 bytes).
    public init(privateKey scalar: [UInt8], subject: String) throws {
        let key = try P256.Signing.PrivateKey(rawRepresentation: scalar)
        self.scalar = scalar
        self.publicKey = Array(key.publicKey.x963Representation)
        self.subject = subject
    }

    /// A new private key's scalar, as the first start stores it.
    public static func newPrivateKey() -> [UInt8] {
        Array(P256.Signing.PrivateKey().rawRepresentation)
    }

    /// The public key as `applicationServerKey` takes it.
    public var publicKeyBase64URL: String { Base64URL.encode(publicKey) }

    /// The `Authorization` header for a push to `endpoint` at `now` (Unix seconds):
    /// `vapid t=<JWT>, k=<public key>`.
    public func authorization(endpoint: String, now: Int64) throws -> String {
        guard let audience = Self.origin(of: endpoint) else { throw InvalidEndpoint(endpoint: endpoint) }
        return "vapid t=\(try token(audience: audience, expires: now + Self.tokenLifetime)), k=\(publicKeyBase64URL)"
    }

    public struct InvalidEndpoint: Error, Sendable { public let endpoint: String }

    /// The JWT: header and claims as compact JSON, signed with ES256 (r || s, base64url).
    public func token(audience: String, expires: Int64) throws -> String {
        var claims = JSONWriter(capacity: 128)
        claims.beginObject()
        claims.key("aud")
        claims.string(audience)
        claims.key("exp")
        claims.int64(expires)
        claims.key("sub")
        claims.string(subject)
        claims.endObject()
        let signingInput = Self.header + "." + Base64URL.encode(claims.bytes)
        let key = try P256.Signing.PrivateKey(rawRepresentation: scalar)
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// `{"typ":"JWT","alg":"ES256"}`, base64url.
    static let header = Base64URL.encode(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))

    /// The claims of `token` when its ES256 signature holds for `publicKey`; nil otherwise.
    /// (A push service checks this; alertd's tests check what it sends with it.)
    public static func verify(_ token: String, publicKey: [UInt8]) -> [String: JSONValue]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = Base64URL.decode(parts[2]), let claims = Base64URL.decode(parts[1]),
            let key = try? P256.Signing.PublicKey(x963Representation: publicKey),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(ecdsa, for: Array((parts[0] + "." + parts[1]).utf8)),
            case .object(let object)? = try? JSONParser.parse(claims)
        else { return nil }
        return object.reduce(into: [:]) { $0[$1.key] = $1.value }
    }

    /// The origin of an `https:` (or `http:`) URL: scheme, host and a port other than the
    /// scheme's own, as the JWT's `aud` names the push service.
    public static func origin(of endpoint: String) -> String? {
        guard let components = URLComponents(string: endpoint), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty
        else { return nil }
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        if let port = components.port, port != (scheme == "https" ? 443 : 80) { return "\(scheme)://\(hostPart.lowercased()):\(port)" }
        return "\(scheme)://\(hostPart.lowercased())"
    }
}
