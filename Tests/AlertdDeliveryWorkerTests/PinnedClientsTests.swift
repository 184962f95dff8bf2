import AlertdCore
import AlertdDelivery
import AsyncHTTPClient
import Logging
import Testing

@testable import AlertdDeliveryWorker

@Suite("Clients pinned to a name and an address are kept, bounded, and never shut down under an attempt")
struct PinnedClientsTests {
    let loopback = IPAddress("127.0.0.1")!

    @Test("one client per name and address, reused; past capacity the least recently used idle one goes")
    func bounded() throws {
        let pinned = PinnedClients(capacity: 2, configuration: HTTPClient.Configuration(), logger: Logger(label: "test"))
        defer { pinned.shutdown() }
        let a = try pinned.lease(host: "a.test", address: loopback)
        let b = try pinned.lease(host: "b.test", address: loopback)
        let otherAddress = try pinned.lease(host: "a.test", address: IPAddress("127.0.0.2")!)
        #expect(otherAddress.client !== a.client)
        #expect(pinned.count == 3, "all three in use: none can go")
        pinned.giveBack(otherAddress)
        #expect(pinned.count == 2, "the idle one went")
        let again = try pinned.lease(host: "a.test", address: loopback)
        #expect(again.client === a.client)
        pinned.giveBack(again)
        pinned.giveBack(b)
        let c = try pinned.lease(host: "c.test", address: loopback)
        #expect(pinned.count == 2)
        // b was the least recently used idle client; a (still lent once) stays.
        let b2 = try pinned.lease(host: "b.test", address: loopback)
        #expect(b2.client !== b.client)
        let a2 = try pinned.lease(host: "a.test", address: loopback)
        #expect(a2.client === a.client)
        for lease in [a, a2, b2, c] { pinned.giveBack(lease) }
        #expect(pinned.count == 2)
    }

    @Test("after shutdown no client is lent")
    func shutdown() throws {
        let pinned = PinnedClients(capacity: 2, configuration: HTTPClient.Configuration(), logger: Logger(label: "test"))
        let lease = try pinned.lease(host: "a.test", address: loopback)
        pinned.giveBack(lease)
        pinned.shutdown()
        #expect(pinned.count == 0)
        #expect(throws: HTTPClientError.alreadyShutdown) { try pinned.lease(host: "a.test", address: loopback) }
    }
}
