import AlertdClient
import AlertdWire
import ArgumentParser
import Foundation

struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List and remove the devices subscribed to Web Push (SPEC §11; docs/push.md).",
        discussion: """
            A device subscribes from the dashboard ("Notify this device"); these commands list the \
            subscriptions the token made (an admin token: every one) and remove one.
            """,
        subcommands: [ListSubscriptions.self, Remove.self])

    struct ListSubscriptions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the push subscriptions.")

        @OptionGroup var connection: Connection

        func run() async throws {
            try await guarded {
                let subscriptions = try await connection.run { try await $0.pushSubscriptions() }
                if connection.json {
                    connection.printAnswer()
                } else if subscriptions.isEmpty {
                    print("no push subscription")
                } else {
                    for subscription in subscriptions { print(Terminal.safe(Self.line(subscription))) }
                }
            }
        }

        /// `ps_…  clients: ops, web  answers as alice  push service: fcm.googleapis.com  since …`: the
        /// endpoint's host only (the rest of it identifies the device).
        static func line(_ subscription: PushSubscriptionResource) -> String {
            let host = URLComponents(string: subscription.endpoint)?.host ?? "?"
            let answers = subscription.answer ? "answers as \(subscription.decider ?? "anyone")" : "notifies only"
            return
                "\(subscription.id)  clients: \(subscription.clients.joined(separator: ", "))  \(answers)  push service: \(host)  since \(subscription.createdAt)"
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Remove a push subscription: the device is pushed nothing more.", aliases: ["remove"])

        @OptionGroup var connection: Connection

        @Argument(help: "The subscription's id (ps_…, from push list).")
        var id: String

        func run() async throws {
            try await guarded {
                try await connection.run { try await $0.removePushSubscription(id: id) }
                if connection.json {
                    print("{\"removed\":\"\(id)\"}")
                } else {
                    print(Terminal.safe("removed \(id)"))
                }
            }
        }
    }
}
