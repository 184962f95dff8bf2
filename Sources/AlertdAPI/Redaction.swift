import AlertdCore
import AlertdWire
import Foundation

/// Callback URLs as tokens without the `admin` role see them.
///
/// A webhook URL often carries a secret: credentials in its user info, a token
/// in its path (Slack's and Discord's webhook URLs) or in its query. The
/// deliveries API shows each delivery's target; `admin` sees it whole, every
/// other role this redacted form, which still names the receiver (scheme, host
/// and port) and which query parameters it has.
///
/// ```swift
/// Redaction.callbackURL("https://bot:pw@hooks.example.com/alerts?token=abc&v=2#top")
/// // "https://***@hooks.example.com/***?token=***&v=***"
/// ```
///
/// An alert's own `callback_url` is whole for `admin` and `post` tokens (a poster
/// wrote it) and redacted for the others (`read`, `answer`: a dashboard's token
/// has no use for the secret in it).
enum Redaction {
    /// `url` as roles without `admin` see it: ``URLRedaction/redacted(_:)``.
    static func callbackURL(_ url: String) -> String { URLRedaction.redacted(url) }

    /// `alert` as a token that may not see its callback URL whole is shown it.
    static func alert(_ alert: Alert) -> Alert {
        guard let url = alert.callbackURL else { return alert }
        var shown = alert
        shown.callbackURL = callbackURL(url)
        return shown
    }

    /// The alert resource `body` (``Alert/json(position:)``'s bytes) with its
    /// `callback_url` redacted. The first `"callback_url":` in those bytes is the
    /// resource's own key: the keys before it are fixed, and a string before it
    /// (title, message, a button's title) has its quotes escaped, so it cannot hold
    /// that sequence; `metadata`, which may, comes after.
    static func alertJSON(_ body: [UInt8]) -> [UInt8] {
        let key = Array(#""callback_url":""#.utf8)
        guard let start = firstIndex(of: key, in: body) else { return body }
        let open = start + key.count - 1
        var end = open + 1
        while end < body.count, body[end] != UInt8(ascii: "\"") {
            end += body[end] == UInt8(ascii: "\\") ? 2 : 1
        }
        guard end < body.count, case .string(let url)? = try? JSONParser.parse(Array(body[open...end])) else { return body }
        var replacement = JSONWriter(capacity: url.utf8.count + 8)
        replacement.string(callbackURL(url))
        return Array(body[..<open]) + replacement.bytes + Array(body[(end + 1)...])
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
        }
        return nil
    }
}
