public import AlertdWire
import Crypto
import Foundation

/// The deployment's Ed25519 signing key (SPEC §14): what `receipts.key_file` holds, as
/// PEM PKCS#8 (RFC 8410 §7, `-----BEGIN PRIVATE KEY-----`), the form `openssl genpkey
/// -algorithm ed25519` writes and `alertd receipts keygen` writes.
///
/// ```swift
/// let key = try ReceiptSigningKey(pem: String(decoding: data, as: UTF8.self))
/// let signed = try key.sign(receipt)   // receipt.keyID becomes key.keyID
/// ```
public struct ReceiptSigningKey: Sendable {
    /// The 32-byte seed (RFC 8032's private key).
    private let seed: [UInt8]
    /// swift-crypto's key of the seed, made once: making it derives the public key (a scalar
    /// multiplication, as costly as a signature), which every receipt signed paid before.
    private let key: PrivateKeyBox
    /// The public half, with its key id.
    public let publicKey: ReceiptPublicKey

    /// The key of a 32-byte seed (RFC 8032 §5.1.5).
    public init(seed: some Collection<UInt8>) throws(ReceiptKeyError) {
        guard seed.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: Array(seed)) else {
            throw ReceiptKeyError(.malformed, "an Ed25519 private key is 32 bytes, not \(seed.count)")
        }
        self.seed = Array(seed)
        self.key = PrivateKeyBox(key)
        self.publicKey = try ReceiptPublicKey(raw: Array(key.publicKey.rawRepresentation))
    }

    /// A new random key.
    public static func generate() -> ReceiptSigningKey {
        // 32 bytes from swift-crypto's generator are always a valid seed.
        try! ReceiptSigningKey(seed: Curve25519.Signing.PrivateKey().rawRepresentation)
    }

    /// The key in a PEM file: PKCS#8 (`PRIVATE KEY`), Ed25519 (OID 1.3.101.112), unencrypted.
    public init(pem: String) throws(ReceiptKeyError) {
        let der = try PEM.decode(pem, label: "PRIVATE KEY")
        try self.init(seed: try PKCS8.seed(fromDER: der))
    }

    /// PEM PKCS#8, as `openssl genpkey -algorithm ed25519` writes it.
    public var pem: String { PEM.encode(PKCS8.der(seed: seed), label: "PRIVATE KEY") }

    /// `publicKey.keyID`.
    public var keyID: String { publicKey.keyID }

    /// Ed25519's signature (64 bytes) of `message`.
    public func signature(for message: [UInt8]) -> [UInt8] {
        // BoringSSL's ED25519_sign fails only on a malformed key, and this one was made from a checked seed.
        Array(try! key.key.signature(for: message))
    }
}

/// swift-crypto's Ed25519 private key, which is not `Sendable`: held once made and never
/// changed, and only read (signing reads the key's bytes), so any thread may sign with it.
private final class PrivateKeyBox: @unchecked Sendable {
    let key: Curve25519.Signing.PrivateKey

    init(_ key: Curve25519.Signing.PrivateKey) { self.key = key }
}

/// A public key of the deployment's receipts, and its `kid`: the RFC 7638 thumbprint of its
/// JWK (RFC 8037: `{"crv":"Ed25519","kty":"OKP","x":…}`), base64url. The id is derived
/// from the key, so it names one key wherever it is listed and no configuration can give
/// two keys one id.
public struct ReceiptPublicKey: Sendable, Hashable {
    /// The 32 bytes of the point (RFC 8032 §5.1.5).
    public let raw: [UInt8]
    /// The RFC 7638 thumbprint, base64url (43 characters).
    public let keyID: String

    /// The key of 32 raw bytes.
    public init(raw: [UInt8]) throws(ReceiptKeyError) {
        guard raw.count == 32, (try? Curve25519.Signing.PublicKey(rawRepresentation: raw)) != nil else {
            throw ReceiptKeyError(.malformed, "an Ed25519 public key is 32 bytes, not \(raw.count)")
        }
        self.raw = raw
        // RFC 7638 §3.2: the required members in lexicographic order, no whitespace.
        let members = #"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(raw))"}"#
        self.keyID = Base64URL.encode(Array(SHA256.hash(data: Array(members.utf8))))
    }

    /// The key in a PEM file: SubjectPublicKeyInfo (`PUBLIC KEY`), or the public half of a
    /// PKCS#8 private key (`PRIVATE KEY`), so a rotated key file can be listed as it is.
    public init(pem: String) throws(ReceiptKeyError) {
        if pem.contains("-----BEGIN PRIVATE KEY-----") {
            self = try ReceiptSigningKey(pem: pem).publicKey
            return
        }
        let der = try PEM.decode(pem, label: "PUBLIC KEY")
        guard der.count == SPKI.prefix.count + 32, der.starts(with: SPKI.prefix) else {
            throw ReceiptKeyError(.malformed, "the PUBLIC KEY is not an Ed25519 SubjectPublicKeyInfo (RFC 8410 §4)")
        }
        try self.init(raw: Array(der.dropFirst(SPKI.prefix.count)))
    }

    /// PEM SubjectPublicKeyInfo, as `openssl pkey -pubout` writes it.
    public var pem: String { PEM.encode(SPKI.prefix + raw, label: "PUBLIC KEY") }

    /// The JWK (RFC 8037): `{"kty":"OKP","crv":"Ed25519","x":…,"kid":…,"alg":"EdDSA","use":"sig"}`.
    public var jwk: JSONValue {
        .object([
            "kty": "OKP", "crv": "Ed25519", "x": .string(Base64URL.encode(raw)), "kid": .string(keyID), "alg": "EdDSA",
            "use": "sig",
        ])
    }

    /// The key of a JWK: `kty` `OKP`, `crv` `Ed25519`, `x`; its `kid`, when it has one, must
    /// be the key's thumbprint (a JWKS that names a key by another id is not alertd's).
    public init(jwk: JSONValue) throws(ReceiptKeyError) {
        guard case .object(let members) = jwk else { throw ReceiptKeyError(.malformed, "a JWK is an object") }
        guard members["kty"] == "OKP", members["crv"] == "Ed25519" else {
            throw ReceiptKeyError(.malformed, "not an Ed25519 key (kty OKP, crv Ed25519)")
        }
        guard case .string(let x)? = members["x"], let raw = Base64URL.decode(x) else {
            throw ReceiptKeyError(.malformed, "x is not base64url")
        }
        try self.init(raw: raw)
        switch members["kid"] {
        case nil: break
        case .string(let kid)? where kid == keyID: break
        case let other?:
            throw ReceiptKeyError(.malformed, "kid \(other) is not the key's RFC 7638 thumbprint \(keyID)")
        }
    }

    /// Whether `signature` is Ed25519's signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
        return key.isValidSignature(signature, for: message)
    }
}

/// The public keys receipts may be signed with, by key id: `GET /v1/keys` as a JWKS
/// (RFC 7517 §5, `{"keys": [...]}`), the current key first and every rotated one after it.
public struct ReceiptKeySet: Sendable, Hashable {
    /// In the order listed; no key id twice.
    public private(set) var keys: [ReceiptPublicKey]

    /// The keys, each once (a key listed twice is kept at its first place).
    public init(_ keys: [ReceiptPublicKey] = []) {
        self.keys = []
        for key in keys where !self.keys.contains(key) { self.keys.append(key) }
    }

    /// The key named `keyID`.
    public subscript(keyID: String) -> ReceiptPublicKey? { keys.first { $0.keyID == keyID } }

    /// `{"keys":[…]}`.
    public var jwks: JSONValue { .object(["keys": .array(keys.map(\.jwk))]) }

    /// The JSON text of ``jwks``, canonical (RFC 8785).
    public var jwksBytes: [UInt8] {
        // Every member is a string: nothing JCS could refuse.
        (try? JCS.canonicalize(jwks)) ?? []
    }

    /// The keys of a JWKS document. Keys that are not Ed25519 are skipped (a JWKS may list
    /// others); an Ed25519 key that does not parse is an error.
    public init(jwks: JSONValue) throws(ReceiptKeyError) {
        guard case .array(let items)? = jwks["keys"] else {
            throw ReceiptKeyError(.malformed, #"a JWKS is {"keys": [...]}"#)
        }
        var keys: [ReceiptPublicKey] = []
        for (index, item) in items.enumerated() {
            guard item["kty"] == "OKP", item["crv"] == "Ed25519" else { continue }
            do {
                keys.append(try ReceiptPublicKey(jwk: item))
            } catch {
                throw ReceiptKeyError(.malformed, "keys[\(index)]: \(error.detail)")
            }
        }
        self.init(keys)
    }
}

/// A key that could not be read: one line saying why.
public struct ReceiptKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable { case malformed, encrypted, notPEM }
    let code: Code
    /// What was wrong.
    public let detail: String

    init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public static func == (a: ReceiptKeyError, b: ReceiptKeyError) -> Bool { a.code == b.code }

    /// The text is PEM, but not an Ed25519 key of the form asked for.
    public static let malformed = ReceiptKeyError(.malformed, "")
    /// An encrypted private key: alertd cannot ask for its passphrase.
    public static let encrypted = ReceiptKeyError(.encrypted, "")
    /// The text is not PEM with the label asked for.
    public static let notPEM = ReceiptKeyError(.notPEM, "")

    public var description: String { detail }
}

/// PEM (RFC 7468): a label and base64 between `-----BEGIN …-----` and `-----END …-----`.
enum PEM {
    static func decode(_ text: String, label: String) throws(ReceiptKeyError) -> [UInt8] {
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            throw ReceiptKeyError(
                .encrypted,
                "an encrypted private key (it needs a passphrase, and alertd cannot ask for one); "
                    + "write it unencrypted with `openssl pkey -in FILE -out key.pem`")
        }
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex) else {
            throw ReceiptKeyError(.notPEM, "no \(begin) … \(end) block")
        }
        let body = text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: String(body)) else {
            throw ReceiptKeyError(.notPEM, "the \(label) block is not base64")
        }
        return Array(data)
    }

    static func encode(_ der: [UInt8], label: String) -> String {
        let base64 = Data(der).base64EncodedString()
        var lines: [Substring] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(rest.prefix(64))
            rest = rest.dropFirst(64)
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }
}

/// SubjectPublicKeyInfo of an Ed25519 key (RFC 8410 §4): a fixed 12-byte prefix and the key.
enum SPKI {
    /// SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (0 unused bits) … }
    static let prefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
}

/// PKCS#8 of an Ed25519 key (RFC 8410 §7, RFC 5958): read with a small DER reader (version
/// 0, or 1 with the optional public key, which must then be the seed's), written in the
/// 48-byte form every tool reads.
enum PKCS8 {
    /// SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING (32) } }
    static let prefix: [UInt8] = [
        0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ]
    static let ed25519OID: [UInt8] = [0x2B, 0x65, 0x70]

    static func der(seed: [UInt8]) -> [UInt8] { prefix + seed }

    static func seed(fromDER der: [UInt8]) throws(ReceiptKeyError) -> [UInt8] {
        func fail(_ why: String) -> ReceiptKeyError { ReceiptKeyError(.malformed, "the PRIVATE KEY is not Ed25519 PKCS#8: \(why)") }
        var outer = DER(der)
        guard let top = outer.next(tag: 0x30), outer.isAtEnd else { throw fail("not one DER SEQUENCE") }
        var body = DER(top)
        guard let version = body.next(tag: 0x02), version == [0] || version == [1] else { throw fail("version is not 0 or 1") }
        guard let algorithm = body.next(tag: 0x30) else { throw fail("no algorithm") }
        var identifier = DER(algorithm)
        guard identifier.next(tag: 0x06) == ed25519OID, identifier.isAtEnd else {
            throw fail("the algorithm is not Ed25519 (1.3.101.112)")
        }
        guard let wrapped = body.next(tag: 0x04) else { throw fail("no private key") }
        var inner = DER(wrapped)
        guard let seed = inner.next(tag: 0x04), seed.count == 32, inner.isAtEnd else { throw fail("the private key is not 32 bytes") }
        _ = body.next(tag: 0xA0)  // attributes: nothing alertd needs
        if let publicKey = body.next(tag: 0x81) {
            // OneAsymmetricKey's publicKey [1]: a BIT STRING's contents, 0 unused bits first.
            guard version == [1], publicKey.count == 33, publicKey[0] == 0 else { throw fail("a malformed public key") }
            let derived = try ReceiptSigningKey(seed: seed).publicKey.raw
            guard Array(publicKey.dropFirst()) == derived else { throw fail("its public key is not the private key's") }
        }
        guard body.isAtEnd else { throw fail("unexpected fields after the key") }
        return seed
    }
}

/// Reads DER TLVs with definite lengths (what PKCS#8 keys are made of).
struct DER {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    /// The contents of the next element when its tag is `tag` (and moves past it); nil otherwise.
    mutating func next(tag: UInt8) -> [UInt8]? {
        guard offset + 2 <= bytes.count, bytes[offset] == tag else { return nil }
        var cursor = offset + 1
        var length = Int(bytes[cursor])
        cursor += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...3).contains(count), cursor + count <= bytes.count else { return nil }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[cursor])
                cursor += 1
            }
        }
        guard cursor + length <= bytes.count else { return nil }
        offset = cursor + length
        return Array(bytes[cursor..<cursor + length])
    }
}
