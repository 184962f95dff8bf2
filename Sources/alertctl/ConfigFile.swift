import Foundation

/// `~/.config/alertd/alertctl.yaml` (or `$XDG_CONFIG_HOME/alertd/alertctl.yaml`): the daemon
/// and the token to use when neither a flag nor the environment names them.
///
/// ```yaml
/// url: https://alertd.internal:8443
/// token_file: ~/.config/alertd/token   # or token: alertd_…
/// cacert: /etc/alertd/ca.pem
/// ```
///
/// The file is a YAML mapping of plain or quoted scalars, one `key: value` a line, `#`
/// comments. Anything else (nesting, lists, anchors, block scalars) is refused with its line
/// rather than guessed at; so is an unknown key, so that a typo does not silently fall back
/// to a default daemon. Relative paths are relative to the file's directory; `~/` is `$HOME`.
struct ConfigFile: Equatable {
    var url: String?
    var token: String?
    /// An absolute path.
    var tokenFile: String?
    /// An absolute path.
    var cacert: String?
    /// Where it was read from, for messages.
    var path: String

    static let keys = ["url", "token", "token_file", "cacert"]

    /// The file's path under `$XDG_CONFIG_HOME`, else under `$HOME/.config`; nil with neither set.
    static func defaultPath(environment: [String: String]) -> String? {
        if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") { return base + "/alertd/alertctl.yaml" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.config/alertd/alertctl.yaml"
    }

    /// Reads the file at `path`; nil when there is none.
    static func load(path: String, environment: [String: String]) throws(Failure) -> ConfigFile? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure("cannot read \(path)", code: Exit.usage)
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path, home: environment["HOME"])
    }

    /// The settings in `text`, read from `path`.
    static func parse(_ text: String, path: String, home: String?) throws(Failure) -> ConfigFile {
        var file = ConfigFile(path: path)
        var seen: Set<String> = []
        let directory = (path as NSString).deletingLastPathComponent
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            func fail(_ reason: String) -> Failure { Failure("\(path) line \(number): \(reason)", code: Exit.usage) }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") || (number == 1 && trimmed == "---") { continue }
            guard let first = line.first, first != " ", first != "\t" else {
                throw fail("indented lines are not read here: the file holds only `key: value` lines")
            }
            guard let colon = line.firstIndex(of: ":") else { throw fail("expected `key: value`") }
            let key = String(line[..<colon])
            let rest = line[line.index(after: colon)...]
            guard rest.isEmpty || rest.first == " " || rest.first == "\t" else { throw fail("expected `key: value`") }
            guard keys.contains(key) else {
                let hint = closest(to: key).map { " (did you mean `\($0)`?)" } ?? ""
                throw fail("unknown key `\(key)`\(hint); the keys are \(keys.map { "`\($0)`" }.joined(separator: ", "))")
            }
            guard seen.insert(key).inserted else { throw fail("`\(key)` is set twice") }
            let value: String?
            do {
                value = try scalar(rest)
            } catch {
                throw fail("\(key): \(error.reason)")
            }
            guard let value else { continue }
            switch key {
            case "url": file.url = value
            case "token": file.token = value
            case "token_file": file.tokenFile = absolute(value, directory: directory, home: home)
            default: file.cacert = absolute(value, directory: directory, home: home)
            }
        }
        if file.token != nil, file.tokenFile != nil {
            throw Failure("\(path): set `token` or `token_file`, not both", code: Exit.usage)
        }
        return file
    }

    /// The key a misspelt one most likely means, as alertd's own config says it: at most a
    /// third of its letters (and at least one) edited away, a swap of neighbours one edit;
    /// `tokenfile`, `token-file` and `TOKEN_FILE` mean `token_file`.
    static func closest(to key: String) -> String? {
        let key = key.lowercased().replacingOccurrences(of: "-", with: "_")
        let limit = max(1, key.count / 3)
        let scored = keys.map { ($0, editDistance(key, $0)) }.filter { $0.1 <= limit }
        return scored.min { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }?.0
    }

    /// Levenshtein distance, with a swap of two neighbours counting as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }

    struct ScalarError: Error {
        let reason: String
    }

    /// The value after `key:`: plain (a trailing ` # comment` dropped), 'single' or "double"
    /// quoted; nil when empty or `~`/`null` (YAML's null).
    static func scalar(_ text: Substring) throws(ScalarError) -> String? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard let first = text.first else { return nil }
        if first == "\"" || first == "'" {
            var value = ""
            var index = text.index(after: text.startIndex)
            while index < text.endIndex {
                let character = text[index]
                index = text.index(after: index)
                if character == first {
                    // '' is a quote inside single quotes.
                    if first == "'", index < text.endIndex, text[index] == "'" {
                        value.append("'")
                        index = text.index(after: index)
                        continue
                    }
                    guard isTrailing(text[index...]) else { throw ScalarError(reason: "unexpected text after the closing quote") }
                    return value
                }
                if first == "\"", character == "\\" {
                    guard index < text.endIndex else { break }
                    let escaped = text[index]
                    index = text.index(after: index)
                    switch escaped {
                    case "\"", "\\", "/": value.append(escaped)
                    case "n": value.append("\n")
                    case "t": value.append("\t")
                    default: throw ScalarError(reason: "the escape \\\(escaped) is not read here")
                    }
                    continue
                }
                value.append(character)
            }
            throw ScalarError(reason: "the quote is not closed")
        }
        if "[{&*!|>%@`".contains(first) {
            throw ScalarError(reason: "only plain or quoted text is read here; quote a value that starts with \(first)")
        }
        var value = text
        if let comment = value.range(of: " #") { value = String(value[..<comment.lowerBound]) }
        value = value.trimmingCharacters(in: .whitespaces)
        if value == "~" || value == "null" { return nil }
        return value
    }

    private static func isTrailing(_ text: Substring) -> Bool {
        let rest = text.trimmingCharacters(in: .whitespaces)
        return rest.isEmpty || rest.hasPrefix("#")
    }

    /// `~/x` under `home`, `x` under `directory`, `/x` as is.
    static func absolute(_ path: String, directory: String, home: String?) -> String {
        if path.hasPrefix("/") { return path }
        if path == "~" || path.hasPrefix("~/"), let home { return home + path.dropFirst() }
        return directory + "/" + path
    }
}
