// A browser's side of Web Push, for the tests (SPEC §11): the keys a PushSubscription holds,
// and the decryption its browser does (RFC 8291 §3.4, RFC 8188), written from the RFCs' steps,
// apart from alertd's encrypter (AlertdPush), with swift-crypto's primitives.

import AlertdWire
import Crypto
import Foundation

public struct PushDevice: Sendable {
    /// The device's P-256 key's scalar (swift-crypto's key types are not Sendable).
    let scalar: [UInt8]
    public let auth: [UInt8]

    public init() {
        scalar = Array(P256.KeyAgreement.PrivateKey().rawRepresentation)
        auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
    }

    /// A device with the given private key and secret (RFC 8291's example).
    public init(privateKey: [UInt8], auth: [UInt8]) {
        scalar = privateKey
        self.auth = auth
    }

    var key: P256.KeyAgreement.PrivateKey { try! P256.KeyAgreement.PrivateKey(rawRepresentation: scalar) }

    /// `keys.p256dh`, as `PushSubscription.toJSON()` gives it.
    public var p256dh: String { Base64URL.encode(key.publicKey.x963Representation) }
    /// `keys.auth`.
    public var authText: String { Base64URL.encode(auth) }

    /// The body of `POST /v1/push/subscriptions` for this device at `endpoint`.
    public func subscription(endpoint: String, clients: [String], answer: Bool) -> String {
        let list = clients.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(p256dh)","auth":"\#(authText)"},"clients":[\#(list)],"answer":\#(answer)}"#
    }

    /// What a browser does with a push body: the plaintext, or a thrown error.
    public func open(_ body: [UInt8]) throws -> [UInt8] {
        guard body.count > 21 + 65 + 16 else { throw Malformed(reason: "\(body.count) bytes is too short for one record") }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(body[20])
        guard recordSize >= 18, idLength == 65 else { throw Malformed(reason: "rs \(recordSize), idlen \(idLength)") }
        let sender = try P256.KeyAgreement.PublicKey(x963Representation: body[21..<(21 + idLength)])
        let shared = try key.sharedSecretFromKeyAgreement(with: sender)
        let info = Array("WebPush: info\0".utf8) + Array(key.publicKey.x963Representation) + Array(sender.x963Representation)
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: info, outputByteCount: 32)
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm\0".utf8), outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: nonce\0".utf8), outputByteCount: 12)
        let record = body[(21 + idLength)...]
        let box = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }), ciphertext: record.dropLast(16), tag: record.suffix(16))
        var plain = Array(try AES.GCM.open(box, using: cek))
        // The last record ends with 0x02, then any padding (zeros) after it; strip from the end.
        while plain.last == 0 { plain.removeLast() }
        guard plain.last == 2 else { throw Malformed(reason: "no last-record delimiter") }
        plain.removeLast()
        return plain
    }

    /// The JSON object a push carried.
    public func payload(_ body: [UInt8]) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(try open(body))) as? [String: Any] ?? [:]
    }

    public struct Malformed: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { "not a Web Push body: \(reason)" }
    }
}
