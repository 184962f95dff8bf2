import AlertdCore
import AlertdEngine
import AlertdTestSupport
import AlertdWire
import Testing

@Suite("Store port: positions")
struct QueuePositionTests {
    /// A position is the domain's (``ClientQueue``'s order): the same whichever store is
    /// asked, and whether one alert is read or the client's list.
    @Test(
        "an alert read alone has its place in its client's list, in either policy, with priorities and answers",
        arguments: StoreKind.allCases)
    func readAloneAsListed(kind: StoreKind) async throws {
        let settings = QueueSettings(clients: ["stacked": ClientSettings(policy: .stack)])
        try await StoreUnderTest.with(kind, settings: settings) { subject in
            let store = subject.store
            for client in ["ops", "stacked"] {
                var now = subject.clock.now()
                for (index, priority) in [0, 5, 0, 5, -1, 0, 5, 0, -1, 5].enumerated() {
                    now = now.adding(milliseconds: 1)
                    _ = try await store.post(draft("\(client) \(index)", priority: priority), to: client, now: now).get()
                }
                for _ in 0..<3 {
                    let shown = try #require(try await store.readDisplays([client]).first?.alert)
                    now = now.adding(milliseconds: 1)
                    _ = try await store.choose(0, of: shown.id, on: client, now: now).get()
                }
                let listed = try await store.readPending(client)
                #expect(listed.count == 7)
                let priorities = listed.dropFirst().map(\.alert.priority)
                #expect(priorities == priorities.sorted(by: >), "\(client): queued alerts out of priority order: \(priorities)")
                for item in listed {
                    let alone = try await store.read(item.alert.id)
                    #expect(
                        alone?.position == item.position,
                        "\(client): \(item.alert.title) alone at \(String(describing: alone?.position)), listed at \(String(describing: item.position))"
                    )
                }
            }
        }
    }
}
