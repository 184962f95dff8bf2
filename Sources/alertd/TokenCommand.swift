import AlertdAPI
import AlertdDaemon
import ArgumentParser
import Foundation

/// `alertd token new NAME --roles … --clients …`: a fresh secret and its config entry.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Makes API tokens.", subcommands: [New.self])

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints a new random secret and the auth.tokens entry that holds its SHA-256.",
            discussion: """
                The secret is shown once and stored nowhere: give it to the client, which sends it as \
                Authorization: Bearer <secret>. Paste the entry under auth.tokens in the config; the \
                file holds only the hash. With --json, one JSON object for scripts: \
                {"clients": [...], "name": ..., "roles": [...], "secret": ..., "sha256": ...}.
                """)

        @Argument(help: "The token's name: it becomes decided_by of what it answers or withdraws.")
        var name: String

        @Option(help: "Comma-separated roles: read, post, answer, admin.")
        var roles: String

        @Option(help: "Comma-separated client ids or globs (\"*\" for every client).")
        var clients: String

        @Flag(help: "Print one JSON object (name, secret, sha256, roles, clients) instead of text.")
        var json = false

        func validate() throws {
            guard !name.isEmpty, name.utf8.count <= 64, name.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                if name.contains(" ") {
                    throw ValidationError(
                        "the name \"\(name)\" has a space, which a token name may not: use - or _ (\(name.replacingOccurrences(of: " ", with: "-")))"
                    )
                }
                throw ValidationError("the name must be 1 to 64 visible ASCII characters")
            }
            for role in Self.list(roles) where Role(rawValue: role) == nil {
                throw ValidationError("\(role) is not a role: read, post, answer, admin, alertmanager")
            }
            if Self.list(roles).isEmpty { throw ValidationError("--roles needs at least one role") }
            for client in Self.list(clients) where ClientPattern(client) == nil {
                let space = client.contains(" ") ? "; it has a space, which a client id may not: use - or _" : ""
                throw ValidationError("\(client) is not a client id glob (letters, digits, . _ - and *)\(space)")
            }
            if Self.list(clients).isEmpty { throw ValidationError("--clients needs at least one client id or glob") }
        }

        /// What `--json` prints.
        struct Made: Encodable {
            var name: String
            var secret: String
            var sha256: String
            var roles: [String]
            var clients: [String]
        }

        func run() throws {
            let (secret, digest) = Token.generateSecret()
            if json {
                let made = Made(name: name, secret: secret, sha256: Token.hex(digest), roles: Self.list(roles), clients: Self.list(clients))
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(made), as: UTF8.self))
                return
            }
            let roleList = Self.list(roles).joined(separator: ", ")
            let clientList = Self.list(clients).map { "\"\($0)\"" }.joined(separator: ", ")
            print(
                """
                secret: \(secret)
                (shown this once; the client sends it as Authorization: Bearer <secret>)

                # under auth.tokens in the config:
                  - name: "\(name)"
                    sha256: "\(Token.hex(digest))"
                    roles: [\(roleList)]
                    clients: [\(clientList)]
                """)
        }

        static func list(_ text: String) -> [String] {
            text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
    }
}
