import AlertdClient
import AlertdWire
import ArgumentParser
import Foundation

struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register, list and remove a client's webhooks (admin role).",
        subcommands: [Add.self, ListHooks.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a URL for every alert of a client; prints the secret once.")

        @OptionGroup var connection: Connection

        @Argument(help: "The client.")
        var client: String

        @Argument(help: "The http(s) URL that receives terminal events.")
        var url: String

        @Option(name: .long, help: "The signing secret (default: a generated whsec_ secret).")
        var secret: String?

        func run() async throws {
            try await guarded {
                let hook = try await connection.run { try await $0.addWebhook(on: client, url: url, secret: secret) }
                if connection.json {
                    connection.printAnswer()
                } else {
                    print(
                        Terminal.safe(
                            "id:     \(hook.id)\nurl:    \(URLRedaction.redacted(hook.url))\nsecret: \(hook.secret ?? "-")  (shown once)",
                            newlines: true))
                }
            }
        }
    }

    struct ListHooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List a client's webhooks.")

        @OptionGroup var connection: Connection

        @Argument(help: "The client.")
        var client: String

        func run() async throws {
            try await guarded {
                let hooks = try await connection.run { try await $0.webhooks(on: client) }
                if connection.json {
                    connection.printAnswer()
                } else {
                    for hook in hooks {
                        print(Terminal.safe("\(hook.id)  \(URLRedaction.redacted(hook.url))  \(hook.source ?? "")"))
                    }
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Remove a webhook; its deliveries still pending are cancelled, and it says how many.",
            aliases: ["remove"])

        @OptionGroup var connection: Connection

        @Argument(help: "The client.")
        var client: String

        @Argument(help: "The webhook's id.")
        var id: String

        func run() async throws {
            try await guarded {
                let cancelled = try await connection.run { try await $0.removeWebhook(on: client, id: id) }
                if connection.json {
                    print("{\"cancelled_deliveries\":\(cancelled)}")
                } else {
                    print(Terminal.safe("removed \(id); \(Self.cancelled(cancelled))"))
                }
            }
        }

        /// `cancelled 3 pending deliveries`, `no pending delivery to cancel`.
        static func cancelled(_ count: Int) -> String {
            count == 0 ? "no pending delivery to cancel" : "cancelled \(Text.count(count, "pending delivery", "pending deliveries"))"
        }
    }
}
