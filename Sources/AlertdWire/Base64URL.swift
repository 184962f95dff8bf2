import Foundation

/// Base64url without padding (RFC 4648 §5): Web Push keys, VAPID tokens, answer tokens.
public enum Base64URL {
    /// The unpadded URL-safe encoding of `bytes`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        // Written straight into its bytes: every signed receipt's signature goes through here
        // (Foundation's encoder, then two passes over Characters, cost a fifth of a signing).
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(alphabet[Int(chunk >> 6 & 63)])
            out.append(alphabet[Int(chunk & 63)])
            index += 3
        }
        switch input.count - index {
        case 2:
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(alphabet[Int(chunk >> 6 & 63)])
        case 1:
            let chunk = UInt32(input[index]) << 16
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 4648 §5's alphabet.
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

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
