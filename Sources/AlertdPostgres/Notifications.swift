import AlertdCore
import AlertdEngine
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Commits told to every instance through `NOTIFY alertd`, and heard here on a
/// connection of its own (`LISTEN alertd`).
///
/// A payload names what changed, never what it holds: `i:<instance>` (who
/// sent it, so an instance skips its own), then `c:<client>` for each client
/// whose queue changed, `d:<alert id>` for each alert decided, `w` when the
/// API's webhooks changed. NOTIFY is transactional: it is heard only once its
/// transaction committed, and never if it rolled back.
///
/// When the connection drops, it is made again (after a second), and the
/// engine is asked to look at everything a waiter waits on
/// (``StoreChange/resync``): nothing committed in between is missed. The same
/// happens once the first LISTEN is in place, for what committed between the
/// engine's first reads and it.
final class Notifications: Sendable {
    static let channel = "alertd"
    /// Below PostgreSQL's limit of 8000 bytes a payload.
    static let maxPayload = 7_000

    let url: PostgresURL
    let instance: String
    let logger: Logger
    let handler = NIOLockedValueBox<(@Sendable (StoreChange) -> Void)?>(nil)

    init(url: PostgresURL, instance: String, logger: Logger) {
        self.url = url
        self.instance = instance
        self.logger = logger
    }

    /// NOTIFYs `entries` in the transaction `connection` runs, in as few payloads as fit.
    static func send(_ entries: [String], from instance: String, on connection: PostgresConnection, logger: Logger) async throws {
        guard !entries.isEmpty else { return }
        var payload = "i:" + instance
        for entry in entries {
            if payload.utf8.count + entry.utf8.count + 1 > maxPayload {
                try await connection.query("SELECT pg_notify(\(channel), \(payload))", logger: logger)
                payload = "i:" + instance
            }
            payload += " " + entry
        }
        try await connection.query("SELECT pg_notify(\(channel), \(payload))", logger: logger)
    }

    /// Listens until cancelled, reconnecting when the connection drops.
    func run() async {
        var connectionID = 0
        while !Task.isCancelled {
            connectionID += 1
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try url.connectionConfiguration(), id: connectionID, logger: logger)
                do {
                    try await connection.listen(on: Self.channel) { notifications in
                        // Listening now: whatever committed before is read again.
                        self.deliver(.resync)
                        for try await notification in notifications { self.handle(notification.payload) }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if !Task.isCancelled {
                    logger.warning("LISTEN alertd lost; connecting again", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func handle(_ payload: String) {
        var clients: [String] = []
        var decided: [AlertID] = []
        var webhooks = false
        for entry in payload.split(separator: " ") {
            if entry.hasPrefix("i:") {
                if entry.dropFirst(2) == instance { return }  // our own commit: the engine knows it
            } else if entry.hasPrefix("c:") {
                clients.append(String(entry.dropFirst(2)))
            } else if entry.hasPrefix("d:"), let id = AlertID(entry.dropFirst(2)) {
                decided.append(id)
            } else if entry == "w" {
                webhooks = true
            }
        }
        if !clients.isEmpty { deliver(.clients(clients)) }
        if !decided.isEmpty { deliver(.decided(decided)) }
        if webhooks { deliver(.webhooks) }
    }

    private func deliver(_ change: StoreChange) {
        handler.withLockedValue { $0 }?(change)
    }
}
