// Issue 27 item 6: with the default limits, pending alerts of the largest size
// could take ~6 GB (200 000 × ~30 KiB) while the unit claimed ~1 KiB each, and
// an OOM restart reloads the same queue. Now they are budgeted by bytes
// (limits.max_pending_bytes): the real binary, at its defaults, fills the budget
// with the largest alerts, answers 429 queue-full beyond it, and stays well
// under the MemoryMax= the unit ships.

import AlertdTestSupport
import Foundation
import Testing

@Suite("Memory at the default limits")
struct MemoryBudgetTests {
    /// The largest alert §2 allows, in 4-byte characters: about 27 KB of JSON.
    static let largest: String = {
        let buttons = (0..<16).map { #"{"title":"\#($0)\#(String(repeating: "🔘", count: 60))"}"# }.joined(separator: ",")
        let metadata = #"{"pad":"\#(String(repeating: "x", count: 4080))"}"#
        return
            #"{"title":"\#(String(repeating: "🚨", count: 256))","message":"\#(String(repeating: "📟", count: 4096))","buttons":[\#(buttons)],"metadata":\#(metadata)}"#
    }()

    /// `MemoryMax=` of systemd/alertd.service, in bytes.
    static func unitMemoryMax() throws -> Int {
        let text = try String(contentsOf: SystemdUnitTests.unit("alertd.service"), encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("MemoryMax=") }, "no MemoryMax= in the unit")
        let value = line.dropFirst("MemoryMax=".count)
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        if let last = value.last, let scale = units[last], let number = Int(value.dropLast()) { return number * scale }
        return try #require(Int(value), "MemoryMax=\(value) is not a size")
    }

    static func residentBytes(of pid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kib = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        return kib * 1024
    }

    @Test("at the default limits, a post beyond the pending-bytes budget is 429 queue-full, and RSS stays under half of MemoryMax")
    func defaultBudget() async throws {
        let memoryMax = try Self.unitMemoryMax()
        let daemon = try await Daemon.start(.init(environment: Sanitizer.measuredMemoryEnvironment))
        defer { daemon.cleanup() }
        let http = daemon.client(timeout: .seconds(60))
        // Eight posters, a client each (max_pending_per_client stays out of the way), until one is refused.
        let refusals = try await withThrowingTaskGroup(of: TestResponse?.self) { group in
            for poster in 0..<8 {
                group.addTask {
                    for _ in 0..<20_000 {
                        let response = try await http.post("/v1/clients/big-\(poster)/alerts", json: Self.largest)
                        if response.status != 201 { return response }
                    }
                    return nil
                }
            }
            var refusals: [TestResponse] = []
            for try await response in group { if let response { refusals.append(response) } }
            return refusals
        }
        try #require(refusals.count == 8, "every poster was refused before 20 000 posts")
        for refused in refusals {
            #expect(refused.status == 429, "\(refused.status): \(refused.text)")
            let problem = try refused.jsonObject()
            #expect(problem["code"] as? String == "queue-full")
            #expect((problem["detail"] as? String ?? "").contains("limits.max_pending_bytes"), "\(problem)")
        }
        let pending = try await http.get("/v1/clients").jsonObject()["clients"] as? [[String: Any]] ?? []
        let count = pending.compactMap { $0["pending"] as? Int }.reduce(0, +)
        let rss = try Self.residentBytes(of: daemon.pid)
        // The rest of MemoryMax is for what else the defaults allow: 20 000 parked waiters
        // (~6 KiB each) and idle connections (libmicrohttpd's pools), see the unit's comment.
        #expect(
            rss < Sanitizer.memoryBound(memoryMax / 2),
            "RSS \(rss >> 20) MiB with \(count) of the largest alerts pending; MemoryMax=\(memoryMax >> 20) MiB")
        #expect(daemon.isRunning)
        // Still serving.
        #expect(try await http.get("/v1/clients/big-0/alerts/current").status == 200)
    }
}
