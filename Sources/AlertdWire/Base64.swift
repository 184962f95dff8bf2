import Foundation

/// Standard base64 (RFC 4648 §4, `+` and `/`) for webhook secrets and
/// signatures, over Foundation's codec: it refuses characters outside the
/// alphabet; the only leniency added here is that padding may be left out.
enum Base64 {
    /// The padded encoding of `bytes`.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }

    /// The bytes of `text`; nil unless it is standard base64 (padding optional).
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var padded = String(text)
        guard !padded.hasSuffix("==="), padded.count % 4 != 1 else { return nil }
        if padded.count % 4 != 0, !padded.contains("=") {
            padded += String(repeating: "=", count: 4 - padded.count % 4)
        }
        return Data(base64Encoded: padded).map(Array.init)
    }
}
