import Testing

@testable import AlertdWire

/// The Standard Webhooks specification's example.
private enum Reference {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    static let timestamp: Int64 = 1_614_265_330
    static let body = Array(#"{"test": 2432232314}"#.utf8)
    static let signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
}

@Suite("Webhook signatures follow Standard Webhooks")
struct WebhookSignatureTests {
    @Test("The specification's example signs to its published signature")
    func referenceVector() throws {
        let key = try WebhookKey(secret: Reference.secret)
        #expect(
            WebhookSignature.sign(id: Reference.id, timestamp: Reference.timestamp, body: Reference.body, key: key) == Reference.signature)
    }

    @Test("The body is signed as raw bytes, whatever collection holds them")
    func bodyCollections() throws {
        let key = try WebhookKey(secret: Reference.secret)
        let slice = ([0x20] + Reference.body)[1...]
        #expect(WebhookSignature.sign(id: Reference.id, timestamp: Reference.timestamp, body: slice, key: key) == Reference.signature)
        let utf8 = #"{"test": 2432232314}"#.utf8
        #expect(WebhookSignature.sign(id: Reference.id, timestamp: Reference.timestamp, body: utf8, key: key) == Reference.signature)
    }

    @Test("A secret without the whsec_ prefix keys with its UTF-8 bytes")
    func plainSecret() throws {
        // Python: base64(hmac.new(b"my-plain-secret", b"msg_1.1700000000.hello", sha256).digest())
        let key = try WebhookKey(secret: "my-plain-secret")
        let header = WebhookSignature.sign(id: "msg_1", timestamp: 1_700_000_000, body: Array("hello".utf8), key: key)
        #expect(header == "v1,hoYFoKQtAcL+xJQJQcUtu1eTkbZBh7WrntPnmRfLybk=")
    }

    @Test("The id, the timestamp and the body all change the signature")
    func everyPartIsSigned() throws {
        let key = try WebhookKey(secret: Reference.secret)
        let reference = WebhookSignature.sign(id: Reference.id, timestamp: Reference.timestamp, body: Reference.body, key: key)
        #expect(WebhookSignature.sign(id: "msg_other", timestamp: Reference.timestamp, body: Reference.body, key: key) != reference)
        #expect(WebhookSignature.sign(id: Reference.id, timestamp: Reference.timestamp + 1, body: Reference.body, key: key) != reference)
        #expect(
            WebhookSignature.sign(id: Reference.id, timestamp: Reference.timestamp, body: Reference.body + [0x20], key: key) != reference)
    }

    @Test(
        "Secrets that cannot make a key are refused with a clear error",
        arguments: [
            ("whsec_not base64!", WebhookSecretError.invalidBase64),
            ("whsec_abc-_def", .invalidBase64),  // URL-safe alphabet
            ("whsec_A", .invalidBase64),  // six bits are not a byte
            ("whsec_QQ=", .invalidBase64),  // padding that does not complete a quantum
            ("whsec_", .empty),
            ("", .empty),
        ]
    )
    func invalidSecrets(secret: String, error: WebhookSecretError) {
        #expect(throws: error) { try WebhookKey(secret: secret) }
    }

    @Test("The secret error never repeats the secret")
    func errorHidesSecret() {
        let error = WebhookSecretError.invalidBase64
        #expect(!error.description.contains("not base64!"))
        #expect(error.description.contains("whsec_"))
    }

    @Test("Generated secrets are whsec_ and the base64 of 32 fresh random bytes")
    func generatedSecrets() throws {
        let secrets = (0..<50).map { _ in WebhookSignature.generateSecret() }
        for secret in secrets {
            #expect(secret.hasPrefix("whsec_"))
            #expect(secret.count == 6 + 44)
            #expect(Base64.decode(secret.dropFirst(6))?.count == 32)
            _ = try WebhookKey(secret: secret)
        }
        #expect(Set(secrets).count == secrets.count)
    }

    @Test(
        "Constant-time comparison says equal only for equal bytes",
        arguments: [
            ("v1,abc", "v1,abc", true),
            ("v1,abc", "v1,abd", false),
            ("v1,abc", "v1,ab", false),
            ("", "", true),
            ("x", "", false),
        ]
    )
    func constantTimeEquals(a: String, b: String, equal: Bool) {
        #expect(WebhookSignature.constantTimeEquals(Array(a.utf8), Array(b.utf8)) == equal)
    }
}

@Suite("Base64 is the strict standard alphabet")
struct Base64Tests {
    @Test(
        "The RFC 4648 test vectors encode and decode",
        arguments: [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
        ]
    )
    func vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test("Padding may be left out", arguments: [("Zg", "f"), ("Zm8", "fo"), ("Zm9vYmE", "fooba")])
    func unpadded(encoded: String, plain: String) {
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test("Every byte value survives a round trip")
    func roundTrip() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        let all = (0...255).map(UInt8.init)
        #expect(Base64.decode(Base64.encode(all)) == all)
    }

    @Test(
        "Text that is not standard base64 is refused",
        arguments: ["Z", "Zg=", "Zg===", "Z===", "=", "Zm9v\n", "Zm 9v", "Zm9v-_", "Zm8=Zm8="]
    )
    func invalid(text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test("Unused trailing bits are ignored, as common decoders (Foundation's) do")
    func trailingBits() {
        #expect(Base64.decode("Zh==") == [102])
        #expect(Base64.decode("Zm9=") == [102, 111])
    }
}
