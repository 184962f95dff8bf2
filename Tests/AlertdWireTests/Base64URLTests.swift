import AlertdWire
import Foundation
import Testing

@Suite("Base64url (RFC 4648 §5)")
struct Base64URLTests {
    @Test("RFC 4648 §10's vectors, in the URL-safe alphabet and without padding")
    func rfcVectors() {
        for (text, encoded) in [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ] {
            #expect(Base64URL.encode(Array(text.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(text.utf8))
        }
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_", "62 and 63 are - and _")
    }

    @Test("every length from 0 to 99, every byte: Foundation's base64 with - _ and no padding, and it reads back", arguments: 0..<100)
    func matchesFoundation(length: Int) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ length &* 31) }
        let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(Base64URL.encode(bytes) == expected)
        #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
    }
}
