import Foundation

/// Base64url without padding (RFC 4648 §5): Web Push keys, VAPID tokens, answer tokens.
public enum Base64URL {
    /// The unpadded URL-safe encoding of `bytes`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// The bytes of `text`; nil unless it is base64url (padding optional). The standard
    /// alphabet's `+` and `/` are refused: a browser's keys never hold them.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var body = Substring(text)
        while body.last == "=" { body.removeLast() }
        guard body.count % 4 != 1,
            body.utf8.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 45 || $0 == 95 })
        else { return nil }
        var standard = String(body.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        if standard.count % 4 != 0 { standard += String(repeating: "=", count: 4 - standard.count % 4) }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
