import AlertdTestSupport
import Foundation
import Testing

/// Issue 32, item 3: config/alertd.yaml is laid out so that uncommenting an example block (removing
/// the "# " after the indentation, as an editor's toggle-comment does) gives valid YAML that
/// `alertd check-config` accepts.
@Suite("config/alertd.yaml: every commented example, uncommented, passes check-config")
struct ConfigExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every key alertd reads (ConfigFile.swift): a comment line that starts with one of them,
    /// uncommented, is the first line of an example. Prose such as "# full: every commit is
    /// fsynced" names no key, so it starts none.
    static let keys: Set<String> = [
        "alertmanager", "alerts", "allow", "allow_anonymous", "allowed_hosts", "auth", "backend", "basic_auth", "bearer_token",
        "bearer_token_file", "buttons", "callbacks", "cert_file", "client", "clients", "default_dismiss_after",
        "default_expires_in", "default_priority", "deny", "durability", "expires_in", "first_byte_timeout_seconds", "http",
        "integrations", "key_file", "level",
        "limits", "listen", "log", "matcher_labels", "max_age", "max_body_bytes", "max_clients", "max_connections",
        "max_connections_per_ip", "max_expires_in", "max_pending", "max_pending_bytes", "max_pending_per_client", "max_pending_total",
        "max_requests_per_token", "max_response_bytes_in_flight", "priorities", "write_timeout_seconds",
        "max_wait_seconds", "max_waiters", "max_waiters_per_token", "metrics", "name", "password", "policy", "pool_size",
        "postgres", "previous_keys", "push", "receipts", "subject", "remind_every", "allow_http", "max_subscriptions_per_token",
        "max_subscriptions", "rate_burst", "rate_per_second",
        "read_timeout_seconds",
        "require_token", "retention", "retention_max",
        "retry_initial_seconds", "retry_max_interval_seconds", "roles", "secret", "severity_priority", "signing_secret",
        "silence", "state_dir", "store", "style", "timeout", "title", "tls", "tokens", "url", "username", "webhooks",
    ]

    /// `  # key: value` → `  key: value`; nil for a line that is no comment.
    static func uncomment(_ line: String) -> String? {
        let indent = line.prefix { $0 == " " }
        var rest = line.dropFirst(indent.count)
        guard rest.first == "#" else { return nil }
        rest = rest.dropFirst()
        if rest.first == " " { rest = rest.dropFirst() }
        return String(indent) + rest
    }

    static func indentation(_ line: String) -> Int { line.prefix { $0 == " " }.count }

    /// The key a YAML line starts with (`key:` or `- key:`), if it is one alertd reads.
    static func key(_ line: String) -> String? {
        var text = line.drop { $0 == " " }
        if text.hasPrefix("- ") { text = text.dropFirst(2) }
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let name = String(text[..<colon])
        let after = text[text.index(after: colon)...]
        guard keys.contains(name), after.isEmpty || after.first == " " else { return nil }
        return name
    }

    /// The example blocks of `lines`: a comment line that uncommented starts with a key, and the
    /// comment lines after it that uncommented are indented deeper, or are sibling keys.
    static func examples(_ lines: [String]) -> [Range<Int>] {
        var blocks: [Range<Int>] = []
        var index = 0
        while index < lines.count {
            guard let first = uncomment(lines[index]), key(first) != nil else {
                index += 1
                continue
            }
            let level = indentation(first)
            var end = index + 1
            while end < lines.count, let next = uncomment(lines[end]), !next.trimmingCharacters(in: .whitespaces).isEmpty,
                indentation(next) > level || (indentation(next) == level && key(next) != nil)
            {
                end += 1
            }
            blocks.append(index..<end)
            index = end
        }
        return blocks
    }

    static func uncommenting(_ lines: [String], _ blocks: [Range<Int>]) -> [String] {
        var lines = lines
        for block in blocks {
            for index in block { lines[index] = uncomment(lines[index])! }
        }
        return lines
    }

    /// A scratch directory holding what the examples' relative paths name: tls/cert.pem and
    /// tls/key.pem, alertmanager.token, receipts-key.pem and receipts-key-2026.pem.
    static func directoryWithTheFilesTheExamplesName() async throws -> ScratchDirectory {
        let directory = try ScratchDirectory()
        let tls = directory.url.appendingPathComponent("tls")
        try FileManager.default.createDirectory(at: tls, withIntermediateDirectories: true)
        let made = try await Program.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", tls.appendingPathComponent("key.pem").path, "-out", tls.appendingPathComponent("cert.pem").path,
            ])
        try #require(made.status == 0, "openssl: \(made.stderr)")
        try Data("a-token-alertmanager-accepts\n".utf8).write(to: directory.url.appendingPathComponent("alertmanager.token"))
        // receipts.key_file and receipts.previous_keys.
        for name in ["receipts-key.pem", "receipts-key-2026.pem"] {
            let keygen = try await Program.alertd(["receipts", "keygen", directory.url.appendingPathComponent(name).path])
            try #require(keygen.status == 0, "alertd receipts keygen: \(keygen.stderr)")
        }
        return directory
    }

    /// `alertd check-config` on `lines`, written as alertd.yaml in `directory`.
    static func check(_ lines: [String], in directory: ScratchDirectory) async throws -> (status: Int32, output: String) {
        let file = directory.url.appendingPathComponent("alertd.yaml")
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        let run = try await Program.alertd(["check-config", file.path])
        return (run.status, run.stdout + run.stderr)
    }

    static func heads(_ lines: [String], _ blocks: [Range<Int>]) -> [String] {
        blocks.map { key(uncomment(lines[$0.lowerBound])!)! }
    }

    @Test(
        "the file as shipped passes; each example alone, and all of them at once, pass check-config; the signing secret's placeholder is refused until replaced"
    )
    func everyExampleUncommented() async throws {
        let text = try String(contentsOf: Self.repository.appendingPathComponent("config/alertd.yaml"), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let directory = try await Self.directoryWithTheFilesTheExamplesName()
        defer { withExtendedLifetime(directory) {} }

        let shipped = try await Self.check(lines, in: directory)
        #expect(shipped.status == 0 && shipped.output.contains(": ok (0 tokens, 0 webhooks"), "\(shipped.output)")

        let blocks = Self.examples(lines)
        // The examples found, so a block the rule missed (or prose it took for one) shows here.
        #expect(
            Self.heads(lines, blocks) == [
                "store", "max_connections_per_ip", "rate_per_second", "clients", "tls", "http", "tokens", "signing_secret",
                "allow", "webhooks", "integrations", "push", "receipts",
            ])
        // Issue 45: the placeholder, uncommented as it is, is a secret anyone can read: refused, saying so.
        let placeholder = "replace-with-openssl-rand-base64-32"
        for block in blocks {
            let one = try await Self.check(Self.uncommenting(lines, [block]), in: directory)
            if Self.heads(lines, [block]) == ["store"] {
                // PostgreSQL needs receipts.key_file (SPEC §14): refused alone, saying so; with the receipts example, accepted.
                #expect(
                    one.status == 1 && one.output.contains("receipts.key_file: required with store.backend: postgres"),
                    "postgres without receipts.key_file:\n→ \(one.output)")
                let receipts = try #require(blocks.first { Self.heads(lines, [$0]) == ["receipts"] })
                let both = try await Self.check(Self.uncommenting(lines, [block, receipts]), in: directory)
                #expect(both.status == 0, "store with receipts:\n→ \(both.output)")
            } else if lines[block].contains(where: { $0.contains(placeholder) }) {
                #expect(
                    one.status == 1 && one.output.contains("callbacks.signing_secret is the sample config's placeholder"),
                    "the placeholder uncommented:\n\(lines[block].joined(separator: "\n"))\n→ \(one.output)")
            } else {
                #expect(one.status == 0, "with only this uncommented:\n\(lines[block].joined(separator: "\n"))\n→ \(one.output)")
            }
        }
        // Every example, with the secret replaced as the comment says.
        let all = Self.uncommenting(lines, blocks).map {
            $0.replacingOccurrences(of: placeholder, with: "an-openssl-rand-base64-32-secret")
        }
        let together = try await Self.check(all, in: directory)
        #expect(together.status == 0 && together.output.contains(": ok (1 token, 1 webhook"), "\(together.output)")

        // The examples inside an example (one way to sign in to Alertmanager, and so on): each
        // alone on top of everything above.
        let nested = Self.examples(all)
        #expect(
            Self.heads(all, nested) == [
                "bearer_token", "bearer_token_file", "basic_auth", "matcher_labels", "expires_in", "remind_every", "allow_http",
                "max_subscriptions_per_token", "previous_keys", "retention",
            ])
        for block in nested {
            let one = try await Self.check(Self.uncommenting(all, [block]), in: directory)
            #expect(one.status == 0, "with this uncommented too:\n\(all[block].joined(separator: "\n"))\n→ \(one.output)")
        }
    }

    @Test("the rule finds an example that would break the file: an empty default above a commented list")
    func theRuleCatchesTheOldLayout() async throws {
        // The layout issue 32 reported: uncommenting the entry under `tokens: []` gives invalid YAML.
        let old = [
            "auth:", "  tokens: []", "#    - name: \"deployer\"", "#      sha256: \"00\"", "#      roles: [post]", "#      clients: [ops]",
        ]
        let blocks = Self.examples(old)
        #expect(Self.heads(old, blocks) == ["name"])
        let directory = try ScratchDirectory()
        defer { withExtendedLifetime(directory) {} }
        let broken = try await Self.check(Self.uncommenting(old, blocks), in: directory)
        #expect(broken.status == 1 && broken.output.contains("not valid YAML"), "\(broken.output)")
    }
}
