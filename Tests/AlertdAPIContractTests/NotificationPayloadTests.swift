// The display an instance's commit carries in its NOTIFY (docs/high-availability.md):
// written and read back byte for byte, refused when it would not fit, and skipped, not
// misread, when it is not well formed (the client is then read again through its c: entry).

import AlertdCore
import AlertdEngine
import AlertdWire
import Testing

@testable import AlertdPostgres

@Suite("A commit's notification carries the client's display")
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
}
