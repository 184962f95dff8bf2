import AlertdWire
public import Crypto
import Foundation

/// The keys a browser's `PushSubscription` gives: its P-256 public key (`p256dh`) and
/// its 16-byte authentication secret (`auth`), checked as RFC 8291 needs them.
public struct PushKeys: Sendable, Hashable {
    /// The uncompressed P-256 point (65 bytes, `0x04 || X || Y`).
    public let p256dh: [UInt8]
    /// The authentication secret (16 bytes).
    public let auth: [UInt8]

    /// Why keys are refused: named by field, for a 400's `errors`.
    public struct Invalid: Error, Sendable, Hashable {
        public let field: String
        public let reason: String
    }

    /// The keys as a browser writes them (base64url); throws ``Invalid`` naming the field.
    public init(p256dh: String, auth: String) throws(Invalid) {
        guard let point = Base64URL.decode(p256dh) else {
            throw Invalid(field: "keys.p256dh", reason: "must be base64url")
        }
        guard point.count == 65, point.first == 0x04, (try? P256.KeyAgreement.PublicKey(x963Representation: point)) != nil
        else {
            throw Invalid(field: "keys.p256dh", reason: "must be an uncompressed P-256 public key (65 bytes, a point on the curve)")
        }
        guard let secret = Base64URL.decode(auth) else { throw Invalid(field: "keys.auth", reason: "must be base64url") }
        guard secret.count == 16 else { throw Invalid(field: "keys.auth", reason: "must be 16 bytes, not \(secret.count)") }
        self.p256dh = point
        self.auth = secret
    }

    /// Keys already checked (read back from a store).
    public init(checkedP256dh: [UInt8], auth: [UInt8]) {
        self.p256dh = checkedP256dh
        self.auth = auth
    }
}

/// Message encryption for Web Push (RFC 8291): one `aes128gcm` record (RFC 8188)
/// under a key agreed between a fresh ephemeral P-256 key and the subscription's,
/// mixed with its authentication secret. Only the framing is written here; every
/// primitive (ECDH, HKDF, AES-128-GCM) is swift-crypto's.
public enum WebPushEncryption {
    /// The record size alertd sends: one record of at most 4096 bytes, which every push
    /// service takes (RFC 8030 §7.2 asks them to accept at least that).
    public static let recordSize = 4096
    /// The header: salt (16), record size (4), key id length (1), the sender's key (65).
    static let headerSize = 86
    /// The most plaintext one record holds: 4096 − 86 − 16 (tag) − 1 (delimiter) = 3993 (SPEC §11).
    public static let maxPlaintext = recordSize - headerSize - 16 - 1

    public struct TooLong: Error, Sendable, Hashable {
        public let bytes: Int
    }

    /// `plaintext` encrypted for `keys`: the body of a push request (`Content-Encoding:
    /// aes128gcm`). `ephemeral` and `salt` are fresh random values unless given (the
    /// RFC's example gives them, to check the result byte for byte).
    public static func encrypt(
        _ plaintext: [UInt8], for keys: PushKeys, ephemeral: P256.KeyAgreement.PrivateKey = .init(), salt given: [UInt8]? = nil
    ) throws -> [UInt8] {
        guard plaintext.count <= maxPlaintext else { throw TooLong(bytes: plaintext.count) }
        let salt = given ?? SymmetricKey(size: SymmetricKeySize(bitCount: 128)).withUnsafeBytes { Array($0) }
        let receiver = try P256.KeyAgreement.PublicKey(x963Representation: keys.p256dh)
        let senderPublic = Array(ephemeral.publicKey.x963Representation)
        let shared = try ephemeral.sharedSecretFromKeyAgreement(with: receiver)
        // RFC 8291 §3.4: IKM = HKDF(auth, ecdh_secret, "WebPush: info" || 0x00 || ua_public || as_public, 32).
        let keyInfo = Array("WebPush: info".utf8) + [0] + keys.p256dh + senderPublic
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: keys.auth, sharedInfo: keyInfo, outputByteCount: 32)
        // RFC 8188 §2.2: the content key and nonce from the salt.
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        // One record, the last: the plaintext and the delimiter 0x02, no padding.
        let sealed = try AES.GCM.seal(
            plaintext + [2], using: cek, nonce: try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }))
        var body: [UInt8] = []
        body.reserveCapacity(headerSize + plaintext.count + 17)
        body += salt
        body += withUnsafeBytes(of: UInt32(recordSize).bigEndian) { Array($0) }
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }
}
