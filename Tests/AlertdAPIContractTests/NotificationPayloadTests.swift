// The display an instance's commit carries in its NOTIFY (docs/high-availability.md):
// written and read back byte for byte, refused when it would not fit, and skipped, not
// misread, when it is not well formed (the client is then read again through its c: entry).
// Likewise a decided alert (t:), which the other instances answer their waiters with.

import AlertdCore
import AlertdTestSupport
import Foundation
import AlertdEngine
import AlertdWire
import Logging
import NIOConcurrencyHelpers
import Synchronization
import Testing

@testable import AlertdPostgres

@Suite("A commit's notification carries the client's display and its decided alerts")
struct NotificationPayloadTests {
    static let alert = Alert(
        id: AlertID(high: 7, low: 42), client: "ops", title: "Deploy 1.4.2?", message: "to production: résumé ✓",
        buttons: [Button(title: "Deploy"), Button(title: "Cancel", style: .cancel)], state: .displayed,
        createdAt: Timestamp(milliseconds: 1_795_000_000_000), displayedAt: Timestamp(milliseconds: 1_795_000_000_001),
        expiresAt: Timestamp(milliseconds: 1_795_086_400_000))

    @Test("a display is read back as the API shows it, with its version and id; none reads back as none")
    func roundTrip() throws {
        let entry = try #require(Notifications.display(client: "ops", version: 9_001, alert: Self.alert))
        #expect(entry.hasPrefix("v:ops:9001:\(Self.alert.id):") && !entry.contains(" "))
        let read = try #require(Notifications.display(entry.dropFirst(2)))
        #expect(read == PublishedDisplay(client: "ops", version: 9_001, id: Self.alert.id, body: Self.alert.json(position: 0)))
        let none = try #require(Notifications.display(client: "team-a.b_c", version: 3, alert: nil))
        #expect(none == "v:team-a.b_c:3:-:")
        #expect(Notifications.display(none.dropFirst(2)) == PublishedDisplay(client: "team-a.b_c", version: 3, id: nil, body: nil))
    }

    @Test("a display carries how many votes the alert has (§10): another instance's current readers learn of a vote")
    func votes() throws {
        var voted = Self.alert
        voted.quorum = 3
        voted.votes = [
            Vote(decidedBy: "alice", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_001_000)),
            Vote(decidedBy: "bob", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_002_000)),
        ]
        let entry = try #require(Notifications.display(client: "ops", version: 9_002, alert: voted))
        let read = try #require(Notifications.display(entry.dropFirst(2)))
        #expect(read == PublishedDisplay(client: "ops", version: 9_002, id: voted.id, body: voted.json(position: 0), votes: 2))
        let unvoted = try #require(Notifications.display(client: "ops", version: 1, alert: Self.alert))
        #expect(Notifications.display(unvoted.dropFirst(2))?.votes == 0)
        // A body from an instance older than votes has none; one that is no alert is no display.
        #expect(Notifications.votes(in: Array(#"{"id":"x","state":"displayed"}"#.utf8)) == 0)
        #expect(Notifications.votes(in: Array(#"{"votes":3}"#.utf8)) == nil)
        #expect(Notifications.votes(in: Array("not json".utf8)) == nil)
    }

    @Test("a display too big for one payload is not sent (its c: entry has it read)")
    func tooBig() {
        var big = Self.alert
        big.message = String(repeating: "x", count: 4096)
        big.metadata = CompactJSON(["note": .string(String(repeating: "y", count: 4000))])
        #expect(Notifications.display(client: "ops", version: 1, alert: big) == nil)
    }

    @Test(
        "an entry that is not a display is skipped",
        arguments: ["ops:1:-:e30=", "ops:x:-:", "ops:1", "ops:1:not-an-id:e30=", "ops:1:\(alert.id):", "ops:1:\(alert.id):!!"])
    func malformed(entry: String) {
        #expect(Notifications.display(Substring(entry)) == nil)
    }

    /// The alert above, answered by two named deciders (quorum 2, §10).
    static var answered: Alert {
        var alert = alert
        alert.state = .answered
        alert.decidedAt = Timestamp(milliseconds: 1_795_000_009_000)
        alert.quorum = 2
        alert.votes = [
            Vote(decidedBy: "bob", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_008_000)),
            Vote(decidedBy: "alice", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_009_000)),
        ]
        alert.result = AlertResult(
            outcome: .answered, button: "Deploy", buttonIndex: 0, cancelled: false, decidedBy: "alice", votes: alert.votes)
        alert.sequence = 4_711
        alert.callbackURL = "https://ci.example/hook?x=1 y"
        alert.metadata = CompactJSON(["build": .number(JSONNumber(literal: "4711")!), "who": .string("résumé \"quoted\"")])
        return alert
    }

    @Test("a decided alert is read back field for field; one not terminal, or malformed, is skipped")
    func terminalRoundTrip() throws {
        let entry = try #require(Notifications.terminal(Self.answered))
        #expect(entry.hasPrefix("t:\(Self.answered.id):") && !entry.contains(" "))
        let read = try #require(Notifications.terminal(entry.dropFirst(2)))
        #expect(read == Self.answered)
        #expect(read.json(position: nil) == Self.answered.json(position: nil))
        // Not terminal (a forged or stale entry), another id than its alert's, not base64: skipped.
        let pending = try #require(Notifications.terminal(Self.alert))
        #expect(Notifications.terminal(pending.dropFirst(2)) == nil)
        let other = "\(AlertID(high: 1, low: 1)):" + entry.split(separator: ":", maxSplits: 2)[2]
        #expect(Notifications.terminal(Substring(other)) == nil)
        #expect(Notifications.terminal(Substring("\(Self.answered.id):!!")) == nil)
    }

    /// What the engine was told, up to a `.webhooks` sent after it as a marker.
    static func told(_ notifications: Notifications, _ iterator: inout AsyncStream<StoreChange>.Iterator) async -> [String] {
        notifications.deliver(.webhooks)
        var told: [String] = []
        while let change = await iterator.next() {
            switch change {
            case .webhooks: return told
            case .terminal(let alerts): told.append("terminal \(alerts.map(\.id))")
            case .decided(let ids): told.append("decided \(ids)")
            case .clients(let clients): told.append("clients \(clients)")
            case .resync: told.append("resync")
            default: told.append("other")
            }
        }
        return told
    }

    @Test("a payload's decided alert goes to the engine as it is, not as an id to read; one without its t: entry as an id")
    func terminalDispatch() async throws {
        let notifications = Notifications(url: try PostgresURL("postgres://localhost/x"), instance: "here", logger: Logger(label: "t"))
        var changes = notifications.changes.makeAsyncIterator()
        let other = AlertID(high: 9, low: 9)
        let entry = try #require(Notifications.terminal(Self.answered))
        notifications.dispatch("i:elsewhere d:\(Self.answered.id) \(entry) d:\(other)")
        #expect(await Self.told(notifications, &changes) == ["terminal \([Self.answered.id])", "decided \([other])"])
    }

    @Test(
        "changes the engine has not followed are bounded: one that does not fit is dropped, and a resync goes ahead of the next that fits"
    )
    func changesBounded() async throws {
        let notifications = Notifications(url: try PostgresURL("postgres://localhost/x"), instance: "here", logger: Logger(label: "t"))
        var changes = notifications.changes.makeAsyncIterator()
        let bound = Notifications.bufferedChanges
        for n in 0..<(bound + 10) { notifications.dispatch("i:elsewhere c:c\(n)") }
        var first: [String] = []
        for _ in 0..<bound {
            guard case .clients(let clients)? = await changes.next() else { break }
            first += clients
        }
        #expect(first == (0..<bound).map { "c\($0)" }, "not the first \(bound) changes, in order")
        // Ten were dropped: the engine is told to look at everything again, then what came after.
        notifications.dispatch("i:elsewhere c:after")
        #expect(await Self.told(notifications, &changes) == ["resync", "clients [\"after\"]"])
    }

    // MARK: - Sealed (SPEC §9: a role that may connect hears and sends on the channel)

    static let key = NotificationSeal.newKey()

    @Test("a payload is sealed: it opens with the key, and shows nothing of the alert without it")
    func sealed() throws {
        let seal = NotificationSeal(key: Self.key)
        let entries = [
            "c:ops", try #require(Notifications.display(client: "ops", version: 9, alert: Self.answered)),
            try #require(Notifications.terminal(Self.answered)),
        ]
        let plain = try #require(Notifications.payloads(entries, from: "here").first)
        let sealed = seal.seal(plain)
        #expect(seal.open(sealed) == plain)
        #expect(sealed.utf8.count == NotificationSeal.sealedSize(of: plain.utf8.count))
        // Nothing readable: no client, id, title or callback URL, neither as text nor as base64 of it.
        // (The client as it is written, `c:ops` and `"client":"ops"`: three letters alone turn up in
        // a few percent of random base64 of this length.)
        let decoded = String(decoding: Data(base64Encoded: String(sealed.dropFirst())) ?? Data(), as: UTF8.self)
        for secret in ["c:ops", #""client":"ops""#, Self.answered.id.description, "Deploy 1.4.2?", "ci.example", "alice"] {
            #expect(!sealed.contains(secret) && !decoded.contains(secret), "\(secret) shows in \(sealed)")
        }
        // Each sealing is new (a random nonce): two equal payloads look unrelated.
        #expect(seal.seal(plain) != sealed)
    }

    @Test(
        "what alertd did not seal does not open: plain text, another key's, a bit flipped, cut short, not base64",
        arguments: 0..<6)
    func forgeries(kind: Int) throws {
        let seal = NotificationSeal(key: Self.key)
        let plain = "i:elsewhere " + (try #require(Notifications.terminal(Self.answered)))
        let genuine = seal.seal(plain)
        let forged: String
        switch kind {
        case 0: forged = plain
        case 1: forged = NotificationSeal(key: NotificationSeal.newKey()).seal(plain)
        case 2:
            var bytes = try #require(Data(base64Encoded: String(genuine.dropFirst())))
            bytes[bytes.count / 2] ^= 1
            forged = "1" + bytes.base64EncodedString()
        case 3: forged = String(genuine.prefix(genuine.count - 8))
        case 4: forged = "1!!" + genuine.dropFirst(3)
        default: forged = "2" + genuine.dropFirst()
        }
        #expect(seal.open(forged) == nil)
    }

    @Test("a payload heard that does not open tells the engine nothing; a sealed one does")
    func handleOpensOrDrops() async throws {
        let notifications = Notifications(url: try PostgresURL("postgres://localhost/x"), instance: "here", logger: Logger(label: "t"))
        notifications.seal.withLockedValue { $0 = NotificationSeal(key: Self.key) }
        var changes = notifications.changes.makeAsyncIterator()
        let entry = try #require(Notifications.terminal(Self.answered))
        // A stranger's forgery, as a role with CONNECT only can send it: NOTIFY alertd, 'i:x t:…'.
        notifications.handle("i:elsewhere \(entry)")
        notifications.handle(NotificationSeal(key: NotificationSeal.newKey()).seal("i:elsewhere \(entry)"))
        #expect(await Self.told(notifications, &changes) == [])
        #expect(notifications.refused.withLockedValue { $0.count } == 1, "logged once, the second counted")
        // Another instance's, sealed with the same key from the same table.
        let other = Notifications(url: try PostgresURL("postgres://localhost/x"), instance: "elsewhere", logger: Logger(label: "t"))
        other.seal.withLockedValue { $0 = NotificationSeal(key: Self.key) }
        for payload in other.sealed(["c:ops", entry]) { notifications.handle(payload) }
        #expect(await Self.told(notifications, &changes) == ["clients [\"ops\"]", "terminal \([Self.answered.id])"])
    }

    @Test("the largest payload, sealed, stays below PostgreSQL's 8000 bytes")
    func sealedFits() {
        #expect(NotificationSeal.sealedSize(of: Notifications.maxPayload) < 8000)
        let seal = NotificationSeal(key: Self.key)
        let entries = (0..<400).map { "c:client-\($0)" }
        for payload in Notifications.payloads(entries, from: "here") {
            #expect(payload.utf8.count <= Notifications.maxPayload)
            #expect(seal.seal(payload).utf8.count < 8000)
        }
    }
}
