import AlertdWire
import Crypto

/// The capabilities behind `answer_url`s (SPEC §11): 32 random bytes, base64url (43
/// characters), shown once in a push and stored only as their SHA-256.
public enum AnswerTokens {
    /// A new token and the hash the store keeps of it.
    public static func mint() -> (token: String, hash: [UInt8]) {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let token = Base64URL.encode(bytes)
        return (token, hash(of: token))
    }

    /// The hash a token is stored and looked up as.
    public static func hash(of token: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(token.utf8)))
    }

    /// Whether `text` can be a token at all (43 base64url characters): anything else is not
    /// looked up.
    public static func isWellFormed(_ text: Substring) -> Bool {
        text.utf8.count == 43 && Base64URL.decode(text)?.count == 32
    }
}
