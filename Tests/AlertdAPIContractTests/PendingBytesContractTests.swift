import AlertdTestSupport
import Foundation
import Testing

/// `limits.max_pending_bytes` on the store this tier runs on (SQLite; PostgreSQL with
/// `ALERTD_TEST_STORE=postgres`, where the board of a flush adds the other clients'
/// bytes from the counts it reads every second: one client here, so the bound is exact).
@Suite("Pending alerts budgeted by bytes, on every store")
struct PendingBytesContractTests {
    /// The largest alert §2 allows, in 4-byte characters: a footprint of 22 806 bytes, budgeted
    /// with its rendered copy at about 45 KB.
    static var largest: [String: Any] {
        [
            "title": String(repeating: "🚨", count: 256), "message": String(repeating: "📟", count: 4096),
            "buttons": (0..<16).map { ["title": "\($0)" + String(repeating: "🔘", count: 60)] },
        ]
    }

    @Test("a post beyond max_pending_bytes is 429 queue-full naming the key; a withdrawal makes room")
    func budget() async throws {
        try await withTestClient(config: Contract.baseConfig + "limits:\n  max_pending_bytes: 100000\n") { api in
            let client = Contract.uniqueClient("bytes")
            let first = Contract.id(try await api.create(client, Self.largest))
            _ = try await api.create(client, Self.largest)
            let refused = try await api.post(client, Self.largest)
            #expect(refused.status == 429)
            let problem = try refused.jsonObject()
            #expect(problem["code"] as? String == "queue-full")
            #expect((problem["detail"] as? String ?? "").contains("limits.max_pending_bytes"), "\(problem)")
            #expect(try await api.pendingIDs(client).count == 2, "the refused post stored nothing")
            #expect(try await api.delete("/v1/clients/\(client)/alerts/\(first)").status == 200)
            #expect(try await api.post(client, Self.largest).status == 201)
        }
    }
}
