// Ed25519 against RFC 8032 §7.1's test vectors, the keys' files against RFC 8410 §10's
// examples, and key ids against RFC 8037 Appendix A.3's thumbprint: a verifier elsewhere
// (Python's cryptography, openssl, a JOSE library) reads the same keys and signatures.

import AlertdWire
import Crypto
import Foundation
import Testing

@testable import AlertdReceipts

private func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.filter { !$0.isWhitespace }.utf8)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
}

struct Vector: Sendable, CustomTestStringConvertible {
    let name: String
    let secret: String
    let publicKey: String
    let message: String
    let signature: String
    var testDescription: String { name }
}

@Suite("Ed25519 (RFC 8032) and the keys' files")
struct KeyTests {
    static let vectors: [Vector] = [
        Vector(
            name: "TEST 1", secret: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", message: "",
            signature:
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        ),
        Vector(
            name: "TEST 2", secret: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", message: "72",
            signature:
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        ),
        Vector(
            name: "TEST 3", secret: "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            publicKey: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", message: "af82",
            signature:
                "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"
        ),
        Vector(
            name: "TEST SHA(abc)", secret: "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
            publicKey: "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
            message:
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            signature:
                "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"
        ),
    ]

    @Test("RFC 8032 §7.1: the secret key gives the public key, the message the signature, and it verifies", arguments: vectors)
    func rfc8032(vector: Vector) throws {
        let key = try ReceiptSigningKey(seed: bytes(hex: vector.secret))
        #expect(key.publicKey.raw == bytes(hex: vector.publicKey))
        let message = bytes(hex: vector.message)
        let expected = bytes(hex: vector.signature)
        // Ed25519 is deterministic (RFC 8032 §5.1.6); swift-crypto over BoringSSL signs so.
        // Apple's CryptoKit adds randomness, so there only the verification below is the RFC's.
        #if os(Linux)
            #expect(key.signature(for: message) == expected)
        #endif
        #expect(key.publicKey.isValidSignature(expected, for: message))
        var tampered = expected
        tampered[7] ^= 0x01
        #expect(!key.publicKey.isValidSignature(tampered, for: message))
        #expect(!key.publicKey.isValidSignature(expected, for: message + [0]))
    }

    @Test("RFC 8037 A.3: the key id is the JWK thumbprint of RFC 7638")
    func thumbprint() throws {
        // RFC 8037 A.1's key is RFC 8032's TEST 1.
        let key = try ReceiptSigningKey(seed: bytes(hex: Self.vectors[0].secret))
        #expect(Base64URL.encode(key.publicKey.raw) == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
        #expect(key.keyID == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
    }

    // RFC 8410 §10.3 and §10.1: a private key and its public key.
    static let rfc8410Private = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
        -----END PRIVATE KEY-----

        """
    static let rfc8410Public = """
        -----BEGIN PUBLIC KEY-----
        MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=
        -----END PUBLIC KEY-----

        """

    @Test("RFC 8410 §10: the PKCS#8 example reads, its public key is §10.1's, and both write back as they were")
    func rfc8410() throws {
        let key = try ReceiptSigningKey(pem: Self.rfc8410Private)
        #expect(key.publicKey.raw == bytes(hex: "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1"))
        #expect(key.pem == Self.rfc8410Private)
        #expect(key.publicKey.pem == Self.rfc8410Public)
        #expect(try ReceiptPublicKey(pem: Self.rfc8410Public) == key.publicKey)
        // A rotated key's file may be listed as it is: its public half.
        #expect(try ReceiptPublicKey(pem: Self.rfc8410Private) == key.publicKey)
    }

    @Test("a version 1 PKCS#8 with the public key reads when the public key is the private key's")
    func oneAsymmetricKeyV1() throws {
        let seed = bytes(hex: "d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842")
        let publicKey = bytes(hex: "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1")
        func pem(_ publicKey: [UInt8]) -> String {
            let der: [UInt8] =
                [0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20] + seed
                + [0x81, 0x21, 0x00] + publicKey
            return PEM.encode(der, label: "PRIVATE KEY")
        }
        #expect(try ReceiptSigningKey(pem: pem(publicKey)).publicKey.raw == publicKey)
        var other = publicKey
        other[0] ^= 1
        #expect(throws: ReceiptKeyError.malformed) { try ReceiptSigningKey(pem: pem(other)) }
    }

    @Test("keys that are not unencrypted Ed25519 PKCS#8 are refused, each with its reason")
    func refusals() throws {
        let p256 = P256.Signing.PrivateKey().pemRepresentation
        let error = #expect(throws: ReceiptKeyError.malformed) { try ReceiptSigningKey(pem: p256) }
        #expect(error?.detail.contains("not Ed25519") == true)
        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIGbMFcGCSqGSIb3DQEFDTBK\n-----END ENCRYPTED PRIVATE KEY-----\n"
        #expect(throws: ReceiptKeyError.encrypted) { try ReceiptSigningKey(pem: encrypted) }
        #expect(throws: ReceiptKeyError.notPEM) { try ReceiptSigningKey(pem: "not a key") }
        #expect(throws: ReceiptKeyError.notPEM) { try ReceiptSigningKey(pem: Self.rfc8410Public) }
        // The 48-byte form with a byte cut off, and with one added.
        let der = PKCS8.der(seed: Array(repeating: 7, count: 32))
        #expect(throws: ReceiptKeyError.malformed) { try ReceiptSigningKey(pem: PEM.encode(Array(der.dropLast()), label: "PRIVATE KEY")) }
        #expect(throws: ReceiptKeyError.malformed) { try ReceiptSigningKey(pem: PEM.encode(der + [0], label: "PRIVATE KEY")) }
        #expect(throws: ReceiptKeyError.malformed) { try ReceiptPublicKey(pem: P256.Signing.PrivateKey().publicKey.pemRepresentation) }
    }

    @Test("a generated key writes PEM that reads back as the same key, and signs what its public key verifies")
    func generated() throws {
        let key = ReceiptSigningKey.generate()
        let again = try ReceiptSigningKey(pem: key.pem)
        #expect(again.publicKey == key.publicKey)
        let message = Array("what was decided".utf8)
        #expect(again.publicKey.isValidSignature(key.signature(for: message), for: message))
        #expect(ReceiptSigningKey.generate().keyID != key.keyID)
    }

    @Test("a JWKS lists each key once with its kid, reads back, skips other key types and refuses a kid that is not the thumbprint")
    func jwks() throws {
        let current = ReceiptSigningKey.generate().publicKey
        let previous = ReceiptSigningKey.generate().publicKey
        let set = ReceiptKeySet([current, previous, current])
        #expect(set.keys == [current, previous])
        let text = String(decoding: set.jwksBytes, as: UTF8.self)
        let parsed = try JSONParser.parse(text)
        #expect(parsed["keys"]?.arrayValue?.first?["kid"]?.stringValue == current.keyID)
        #expect(parsed["keys"]?.arrayValue?.first?["kty"]?.stringValue == "OKP")
        #expect(parsed["keys"]?.arrayValue?.first?["crv"]?.stringValue == "Ed25519")
        #expect(try ReceiptKeySet(jwks: parsed) == set)
        #expect(set[previous.keyID] == previous)
        #expect(set["nope"] == nil)

        let rsa: JSONValue = ["kty": "RSA", "n": "AQAB", "e": "AQAB", "kid": "rsa-1"]
        var keys = try #require(parsed["keys"]?.arrayValue)
        keys.append(rsa)
        #expect(try ReceiptKeySet(jwks: ["keys": .array(keys)]) == set)

        var wrongKid = try #require(current.jwk.objectValue)
        wrongKid["kid"] = .string(previous.keyID)
        let error = #expect(throws: ReceiptKeyError.malformed) { try ReceiptKeySet(jwks: ["keys": [.object(wrongKid)]]) }
        #expect(error?.detail.contains("keys[0]") == true)
        #expect(throws: ReceiptKeyError.malformed) { try ReceiptKeySet(jwks: ["nokeys": []]) }
    }
}
