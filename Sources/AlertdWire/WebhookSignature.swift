import Crypto
import Foundation  // Crypto takes its input as Foundation's DataProtocol.

/// The key that signs webhook deliveries, made from a webhook secret.
///
/// A secret of the form `whsec_<base64>` (the Standard Webhooks convention,
/// and what alertd generates) keys with its base64-decoded bytes; any other
/// secret keys with its UTF-8 bytes.
///
/// ```swift
/// let key = try WebhookKey(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
/// ```
public struct WebhookKey: Sendable {
    /// The HMAC key.
    let bytes: [UInt8]
    /// HMAC-SHA256 already keyed with `bytes`: each signature starts from a copy of it
    /// instead of hashing the key's pads again.
    let keyed: KeyedHMAC

    /// The prefix that marks a secret holding base64 key bytes.
    public static let secretPrefix = "whsec_"

    /// The fewest key bytes a secret alertd accepts through its API should have (128 bits;
    /// a generated one has 32): `change-me` or a five-letter word can be guessed offline
    /// from one signed callback. `check-config` warns about a config secret below it.
    public static let minimumBytes = 16

    /// How many key bytes the secret gives: its UTF-8 bytes, or for `whsec_…` the decoded ones.
    public var byteCount: Int { bytes.count }

    /// Makes the key for `secret`.
    ///
    /// - Throws: ``WebhookSecretError/empty`` for an empty secret or an empty
    ///   key after `whsec_`; ``WebhookSecretError/invalidBase64`` when the
    ///   part after `whsec_` is not standard base64.
    public init(secret: String) throws(WebhookSecretError) {
        if secret.hasPrefix(Self.secretPrefix) {
            guard let decoded = Base64.decode(secret.dropFirst(Self.secretPrefix.count)) else { throw .invalidBase64 }
            guard !decoded.isEmpty else { throw .empty }
            bytes = decoded
        } else {
            guard !secret.isEmpty else { throw .empty }
            bytes = Array(secret.utf8)
        }
        keyed = KeyedHMAC(HMAC<SHA256>(key: SymmetricKey(data: bytes)))
    }
}

/// A keyed HMAC state. Guarantee relied on for `@unchecked Sendable`: `HMAC` is a value
/// type, never mutated in place here; every use takes a copy (`var mac = keyed.initial`).
struct KeyedHMAC: @unchecked Sendable {
    let initial: HMAC<SHA256>
    init(_ initial: HMAC<SHA256>) { self.initial = initial }
}

/// Why a webhook secret cannot key signatures. The secret itself never
/// appears in the message, so the error is safe to log.
public struct WebhookSecretError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case empty, invalidBase64
    }

    private let code: Code
    private init(_ code: Code) { self.code = code }

    /// The secret, or its key after `whsec_`, is empty.
    public static let empty = WebhookSecretError(.empty)
    /// The part after `whsec_` is not standard base64.
    public static let invalidBase64 = WebhookSecretError(.invalidBase64)

    public var description: String {
        switch code {
        case .empty:
            "the webhook secret is empty"
        case .invalidBase64:
            "the webhook secret starts with whsec_ but the rest is not base64 (standard alphabet A-Z a-z 0-9 + /, = padding optional)"
        }
    }
}

/// Standard Webhooks signatures: `v1,` + base64 of HMAC-SHA256 over
/// `"<id>.<timestamp>.<body>"`, with the body as its raw bytes.
///
/// The server signs every delivery attempt with the event's id and the
/// attempt's Unix time; receivers check with `WebhookVerifier` (AlertdClient).
///
/// ```swift
/// let key = try WebhookKey(secret: secret)
/// let header = WebhookSignature.sign(id: "msg_01J…", timestamp: 1_614_265_330, body: body, key: key)
/// // header == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" for the spec's example
/// ```
public enum WebhookSignature {
    /// The version prefix of the signatures this module makes and checks.
    public static let version = "v1"

    /// The `webhook-signature` header value for one delivery attempt: `v1,<base64>`.
    public static func sign(id: String, timestamp: Int64, body: some Collection<UInt8>, key: WebhookKey) -> String {
        "\(version)," + Base64.encode(mac(id: id, timestamp: timestamp, body: body, key: key))
    }

    /// The raw HMAC-SHA256 over `"<id>.<timestamp>.<body>"`.
    public static func mac(id: String, timestamp: Int64, body: some Collection<UInt8>, key: WebhookKey) -> [UInt8] {
        var hmac = key.keyed.initial
        hmac.update(data: Array("\(id).\(timestamp).".utf8))
        let hashed: Void? = body.withContiguousStorageIfAvailable { hmac.update(data: UnsafeRawBufferPointer($0)) }
        if hashed == nil { hmac.update(data: Array(body)) }
        return Array(hmac.finalize())
    }

    /// A new secret: `whsec_` + base64 of 32 bytes from the system's
    /// cryptographically secure generator (swift-crypto's key generation:
    /// `getrandom(2)` on Linux, `SecRandomCopyBytes` on Apple platforms).
    ///
    /// ```swift
    /// let secret = WebhookSignature.generateSecret()  // "whsec_3q2+7w…=", 50 characters
    /// ```
    public static func generateSecret() -> String {
        let key = SymmetricKey(size: .bits256)
        return WebhookKey.secretPrefix + key.withUnsafeBytes { Base64.encode($0) }
    }

    /// Compares two byte strings in time that depends only on their lengths,
    /// never on where they first differ. Use it for anything secret, such as
    /// a signature received against the one expected.
    public static func constantTimeEquals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
