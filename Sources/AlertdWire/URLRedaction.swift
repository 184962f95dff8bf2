/// URLs as alertctl and the MCP server print or return them (issue 44, item 8): without the
/// secrets a URL can carry — credentials in its user info, a token in its query — so that a
/// terminal's scrollback, a log, or an agent reading a tool's error text never holds them.
/// The scheme, host, port and path stay: enough to tell which daemon or receiver it is.
///
/// ```swift
/// URLRedaction.redacted("https://ops:s3cret@alertd.internal:8443/api?token=abc&v=2#top")
/// // "https://***@alertd.internal:8443/api?token=***&v=***"
/// ```
public enum URLRedaction {
    /// `url` with its user info replaced by `***`, the value of every query parameter by
    /// `***` (a parameter without `=` whole), and without its fragment. Text that is not an
    /// absolute URL (no `://`) has only its query and fragment treated.
    public static func redacted(_ url: String) -> String {
        var rest = Substring(url)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var out = ""
        if let separator = rest.firstRange(of: "://") {
            out += rest[..<separator.upperBound]
            rest = rest[separator.upperBound...]
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            // The last `@` ends the user info, as an HTTP client reads it.
            if let at = authority.lastIndex(of: "@") {
                out += "***"
                out += authority[at...]
            } else {
                out += authority
            }
            rest = rest[authority.endIndex...]
        }
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
    /// form, and any user info of `url` that still appears on its own (`ops:s3cret@`) too:
    /// for messages that quote a URL they were given.
    public static func scrubbing(_ url: String, from text: String) -> String {
        let redactedURL = redacted(url)
        guard redactedURL != url else { return text }
        var out = text.replacingAll(url, with: redactedURL)
        if let separator = url.firstRange(of: "://") {
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
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound]
            out += replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}
