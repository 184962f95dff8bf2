/// A URL as alertd shows it where the reader need not, or must not, see its secrets.
///
/// A webhook URL often carries a secret: credentials in its user info, a token in
/// its path (Slack's and Discord's webhook URLs) or in its query. alertd writes URLs
/// this way in its log (a refused callback target, for one) and in the answers it
/// gives anyone but their owner (the deliveries API to roles without `admin`, an
/// alert's `callback_url` to `read` and `answer` tokens): the receiver is still named
/// (scheme, host and port), and which query parameters it has.
///
/// alertctl and the MCP server show the daemon's own URL with its path kept
/// (`keepingPath: true`), and scrub error messages that quote it (issue 44, item 8), so
/// that a terminal's scrollback or an agent reading a tool's error never holds a secret.
///
/// ```swift
/// URLRedaction.redacted("https://bot:pw@hooks.example.com/alerts?token=abc&v=2#top")
/// // "https://***@hooks.example.com/***?token=***&v=***"
/// ```
public enum URLRedaction {
    /// `url` with its user info and its path (past the first `/`; unless `keepingPath`)
    /// replaced by `***`, the value of every query parameter by `***` (a parameter without
    /// `=` is replaced whole), and without its fragment (never sent anyway). Text that is
    /// not an absolute URL (no `://`) is treated as a path.
    public static func redacted(_ url: String, keepingPath: Bool = false) -> String {
        var rest = Substring(url)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var out = ""
        out.reserveCapacity(rest.utf8.count + 8)
        if let separator = rest.firstRange(ofText: "://") {
            out += rest[..<separator.upperBound]
            rest = rest[separator.upperBound...]
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            // The last `@` ends the user info, as the delivery worker reads it.
            if let at = authority.lastIndex(of: "@") {
                out += "***"
                out += authority[at...]
            } else {
                out += authority
            }
            rest = rest[authority.endIndex...]
        }
        let path = rest.prefix { $0 != "?" }
        if path.count > 1 && !keepingPath { out += "/***" } else { out += path }
        rest = rest[path.endIndex...]
        guard let question = rest.firstIndex(of: "?") else { return out + rest }
        out += rest[...question]
        let parameters = rest[rest.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
        for (index, parameter) in parameters.enumerated() {
            if index > 0 { out += "&" }
            if let equals = parameter.firstIndex(of: "=") {
                out += parameter[...equals]
                out += "***"
            } else if !parameter.isEmpty {
                out += "***"
            }
        }
        return out
    }

    /// `text` (an error message) with every occurrence of `url` replaced by its redacted
    /// form (path kept), and any user info of `url` that still appears on its own
    /// (`ops:s3cret@`) too: for messages that quote a URL they were given.
    public static func scrubbing(_ url: String, from text: String) -> String {
        let redactedURL = redacted(url, keepingPath: true)
        guard redactedURL != url else { return text }
        var out = text.replacingAll(url, with: redactedURL)
        if let separator = Substring(url).firstRange(ofText: "://") {
            let authority = url[separator.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            if let at = authority.lastIndex(of: "@"), at > authority.startIndex {
                out = out.replacingAll(String(authority[...at]), with: "***@")
            }
        }
        return out
    }
}

extension String {
    /// Every occurrence of `target` replaced by `replacement` (without Foundation).
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = Substring(self)
        while let range = rest.firstRange(ofText: target) {
            out += rest[..<range.lowerBound]
            out += replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}

extension Substring {
    fileprivate func firstRange(ofText needle: String) -> Range<Index>? {
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(needle) { return index..<self.index(index, offsetBy: needle.count) }
            index = self.index(after: index)
        }
        return nil
    }
}
