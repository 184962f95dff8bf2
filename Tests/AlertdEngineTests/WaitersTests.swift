import AlertdCore
import Testing

@testable import AlertdEngine

/// The published displays a shared store's instance answers `current` from: a read of
/// the database that may have begun before a newer commit never replaces it.
@Suite("Waiters: which published display stands")
struct WaitersTests {
    static func display(_ low: UInt64, version: Int64?) -> Waiters.Display {
        Waiters.Display(id: AlertID(high: 1, low: low), body: Array("{\"n\":\(low)}".utf8), version: version)
    }

    @Test("a newer version replaces the display; an older one, or one without a version, does not")
    func versions() {
        var waiters = Waiters()
        _ = waiters.publish(client: "ops", Self.display(1, version: 5))
        _ = waiters.publish(client: "ops", Self.display(2, version: 3))
        #expect(waiters.display("ops").version == 5)
        _ = waiters.publish(client: "ops", Self.display(3, version: nil))
        #expect(waiters.display("ops").id == AlertID(high: 1, low: 1), "a display without a version replaced version 5")
        _ = waiters.publish(client: "ops", Self.display(4, version: 7))
        #expect(waiters.display("ops").id == AlertID(high: 1, low: 4))
        #expect(waiters.display("ops").version == 7)
        // An embedded store's displays have no version: each replaces the last.
        _ = waiters.publish(client: "solo", Self.display(5, version: nil))
        _ = waiters.publish(client: "solo", Self.display(6, version: nil))
        #expect(waiters.display("solo").id == AlertID(high: 1, low: 6))
    }
}
