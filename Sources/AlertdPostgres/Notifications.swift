import AlertdCore
import AlertdEngine
import AlertdWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Commits told to every instance through `NOTIFY alertd`, and heard here on a
/// connection of its own (`LISTEN alertd`).
///
/// A payload names what changed: `i:<instance>` (who sent it, so an instance
/// skips its own), then `c:<client>` for each client whose queue changed,
/// `d:<alert id>` for each alert decided, and where it fits `t:<alert id>:<base64
/// of its row>`, the decided alert as committed, which the other instances answer
/// their waiters with, with no read; `w` when the API's webhooks changed; `s` when
/// the push subscriptions did;
/// and, where it fits, `v:<client>:<version>:<alert id or ->:<base64 of the
/// displayed alert>`: the client's display as committed, which the other
/// instances publish as it is, with no read (a client without it is read
/// again). Entries a version does not know are skipped, so instances of two
/// versions side by side (a rolling upgrade) still hear each other's `c:`.
/// NOTIFY is transactional: it is heard only once its transaction committed,
/// and never if it rolled back.
///
/// Every payload goes sealed (``NotificationSeal``) under the key in `secrets`: any
/// role that may connect hears the channel and can send on it (SPEC §9). What does
/// not open is dropped, and said in the log at most once a minute.
///
/// When the connection drops, it is made again (after a second), and the
/// engine is asked to look at everything a waiter waits on
/// (``StoreChange/resync``): nothing committed in between is missed. The same
/// happens once the first LISTEN is in place, for what committed between the
/// engine's first reads and it.
final class Notifications: Sendable {
    static let channel = "alertd"
    /// A payload before it is sealed: sealed, it stays below PostgreSQL's limit of 8000 bytes.
    static let maxPayload = 5_800

    /// What this instance seals with, once read from the database (``loadKey(_:now:logger:)``).
    let seal = NIOLockedValueBox<NotificationSeal?>(nil)
    /// Payloads heard that did not open, and when that was last logged (uptime nanoseconds).
    let refused = NIOLockedValueBox<(count: Int, loggedAt: UInt64?)>((0, nil))

    let url: PostgresURL
    let instance: String
    let logger: Logger
    /// The changes heard, for the engine (``PostgresAlertStore/changes``), in the order
    /// heard. Bounded: a change that finds ``bufferedChanges`` not yet followed is dropped,
    /// and a ``StoreChange/resync`` (everything looked at again) goes ahead of the next
    /// change that fits, so nothing is missed; a store no engine follows holds no more.
    let changes: AsyncStream<StoreChange>
    private let heard: AsyncStream<StoreChange>.Continuation
    /// A change was dropped: a resync is owed.
    private let dropped = NIOLockedValueBox(false)
    static let bufferedChanges = 4096

    init(url: PostgresURL, instance: String, logger: Logger) {
        self.url = url
        self.instance = instance
        self.logger = logger
        (changes, heard) = AsyncStream.makeStream(of: StoreChange.self, bufferingPolicy: .bufferingOldest(Self.bufferedChanges))
    }

    /// The `v:` entry of a client's display at `version`, or nil when it would not fit in a payload.
    static func display(client: String, version: Int64, alert: Alert?) -> String? {
        let body = alert?.json(position: 0)
        let entry = "v:\(client):\(version):\(alert?.id.description ?? "-"):" + (body.map { Data($0).base64EncodedString() } ?? "")
        return entry.utf8.count <= maxPayload - 64 ? entry : nil
    }

    /// The `t:` entry of an alert that became terminal, as committed (the columns of its
    /// row, base64), or nil when it would not fit in a payload (its `d:` entry has it read).
    static func terminal(_ alert: Alert) -> String? {
        var json = JSONWriter(capacity: 1024)
        json.beginObject()
        AlertRow.write(alert, version: 0, into: &json)
        json.endObject()
        let entry = "t:\(alert.id):" + Data(json.bytes).base64EncodedString()
        return entry.utf8.count <= maxPayload - 64 ? entry : nil
    }

    /// A `t:` entry's alert; nil when it is not one.
    static func terminal(_ entry: Substring) -> Alert? {
        let parts = entry.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let id = AlertID(parts[0]), let bytes = Data(base64Encoded: String(parts[1])),
            let alert = try? AlertRow.alert(json: Array(bytes)), alert.id == id, alert.state.isTerminal
        else { return nil }
        return alert
    }

    /// `entries` packed into as few payloads as fit, each naming `instance` first.
    static func payloads(_ entries: [String], from instance: String) -> [String] {
        guard !entries.isEmpty else { return [] }
        var payloads: [String] = []
        var payload = "i:" + instance
        for entry in entries {
            if payload.utf8.count + entry.utf8.count + 1 > maxPayload {
                payloads.append(payload)
                payload = "i:" + instance
            }
            payload += " " + entry
        }
        payloads.append(payload)
        return payloads
    }

    /// `entries` in as few payloads as fit, each sealed; none before the key is known
    /// (nothing is written before: the key is read with the migrations).
    func sealed(_ entries: [String]) -> [String] {
        guard let seal = seal.withLockedValue({ $0 }) else { return [] }
        return Self.payloads(entries, from: instance).map { seal.seal($0) }
    }

    /// NOTIFYs `entries` in the transaction `connection` runs, in as few payloads as fit.
    func send(_ entries: [String], on connection: PostgresConnection, logger: Logger) async throws {
        for payload in sealed(entries) {
            try await connection.run("SELECT pg_catalog.pg_notify(\(Self.channel), \(payload))", logger: logger)
        }
    }

    /// Reads the notifications' key from `secrets`, making it first if no instance has.
    func loadKey(_ client: PostgresClient, now: Int64, logger: Logger) async throws {
        let candidate = NotificationSeal.newKey()
        try await client.query(
            """
            INSERT INTO secrets (name, value, created_at) VALUES (\(NotificationSeal.secretName), \(candidate.bytea), \(now))
            ON CONFLICT (name) DO NOTHING
            """, logger: logger)
        var stored: [UInt8]?
        for try await value in try await client.query(
            "SELECT value FROM secrets WHERE name = \(NotificationSeal.secretName)", logger: logger
        ).decode(ByteBuffer.self) {
            stored = [UInt8](bytea: value)
        }
        guard let stored, stored.count == 32 else {
            throw AlertRow.Corrupt(description: "the notifications' key in table secrets is missing or not 32 bytes")
        }
        seal.withLockedValue { $0 = NotificationSeal(key: stored) }
    }

    /// Listens until cancelled, reconnecting when the connection drops; from the moment
    /// the key is known (a payload heard before could not be opened).
    func run() async {
        defer { heard.finish() }
        while seal.withLockedValue({ $0 }) == nil {
            do { try await Task.sleep(for: .milliseconds(20)) } catch { return }
        }
        var connectionID = 0
        while !Task.isCancelled {
            connectionID += 1
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try url.connectionConfiguration(applicationName: "alertd/\(instance)"), id: connectionID, logger: logger)
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

    /// A payload heard: opened and told to the engine, or dropped when alertd did not seal it.
    func handle(_ payload: String) {
        guard let seal = seal.withLockedValue({ $0 }), let plain = seal.open(payload) else {
            refuse()
            return
        }
        dispatch(plain)
    }

    /// Logs a payload that did not open: at most once a minute, with how many since.
    private func refuse() {
        let now = DispatchTime.now().uptimeNanoseconds
        let count: Int? = refused.withLockedValue { refused in
            refused.count += 1
            if let last = refused.loggedAt, now - last < 60_000_000_000 { return nil }
            refused.loggedAt = now
            defer { refused.count = 0 }
            return refused.count
        }
        guard let count else { return }
        logger.warning(
            "a notification on channel alertd was not sealed by alertd: dropped. Another role that can connect to the database is sending on it (docs/high-availability.md: REVOKE CONNECT ON DATABASE … FROM PUBLIC)",
            metadata: ["dropped": "\(count)"])
    }

    /// A payload as an instance wrote it, before sealing: what it names goes to the engine.
    func dispatch(_ payload: String) {
        var clients: [String] = []
        var decided: [AlertID] = []
        var webhooks = false
        var subscriptions = false
        var displays: [PublishedDisplay] = []
        var terminal: [Alert] = []
        // Split on the bytes: splitting the String walks it Character by Character, and a payload
        // is mostly base64 (12 % of an instance's CPU with two instances on 100 clients, issue 46).
        for bytes in payload.utf8.split(separator: UInt8(ascii: " ")) {
            let entry = Substring(bytes)
            if entry.hasPrefix("i:") {
                if entry.dropFirst(2) == instance { return }  // our own commit: the engine knows it
            } else if entry.hasPrefix("v:"), let display = Self.display(entry.dropFirst(2)) {
                displays.append(display)
            } else if entry.hasPrefix("c:") {
                clients.append(String(entry.dropFirst(2)))
            } else if entry.hasPrefix("t:"), let alert = Self.terminal(entry.dropFirst(2)) {
                terminal.append(alert)
            } else if entry.hasPrefix("d:"), let id = AlertID(entry.dropFirst(2)) {
                decided.append(id)
            } else if entry == "w" {
                webhooks = true
            } else if entry == "s" {
                subscriptions = true
            }
        }
        if !displays.isEmpty {
            deliver(.displays(displays))
            let told = Set(displays.map(\.client))
            clients.removeAll { told.contains($0) }
        }
        if !clients.isEmpty { deliver(.clients(clients)) }
        if !terminal.isEmpty {
            deliver(.terminal(terminal))
            let told = Set(terminal.map(\.id))
            decided.removeAll { told.contains($0) }
        }
        if !decided.isEmpty { deliver(.decided(decided)) }
        if webhooks { deliver(.webhooks) }
        if subscriptions { deliver(.pushSubscriptions) }
    }

    /// A `v:` entry's display; nil when it is not one (then its `c:` entry has the client read again).
    static func display(_ entry: Substring) -> PublishedDisplay? {
        let parts = entry.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, let version = Int64(parts[1]) else { return nil }
        if parts[2] == "-" {
            return parts[3].isEmpty ? PublishedDisplay(client: String(parts[0]), version: version, id: nil, body: nil) : nil
        }
        guard let id = AlertID(parts[2]), let body = Data(base64Encoded: String(parts[3])), !body.isEmpty,
            let votes = votes(in: Array(body))
        else { return nil }
        return PublishedDisplay(client: String(parts[0]), version: version, id: id, body: Array(body), votes: votes)
    }

    /// How many votes (§10) the alert resource `body` shows; 0 from an instance older than
    /// votes; nil when `body` is no alert resource.
    static func votes(in body: [UInt8]) -> Int? {
        guard case .object(let resource) = try? JSONParser.parse(body) else { return nil }
        switch resource["votes"] {
        case .array(let votes)?: return votes.count
        case nil: return 0
        default: return nil
        }
    }

    func deliver(_ change: StoreChange) {
        dropped.withLockedValue { dropped in
            if dropped {
                guard case .enqueued = heard.yield(.resync) else { return }
                dropped = false
            }
            if case .dropped = heard.yield(change) { dropped = true }
        }
    }
}
