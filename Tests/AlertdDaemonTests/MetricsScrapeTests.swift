import AlertdTestSupport
import Synchronization
import Testing

@testable import AlertdDaemon

@Suite("/metrics scraped again and again")
struct MetricsScrapeTests {
    @Test(
        "the server's counts are read as deep on the stack at the five hundredth scrape as at the first (read back, the reader is not wrapped again)"
    )
    func serverCountsDoNotGrow() {
        let metrics = AlertdMetrics()
        let depths = Mutex<[Int]>([])
        metrics.observeServer {
            let here = stackAddress()
            depths.withLock { $0.append(here) }
            return nil  // as before the server exists
        }
        for _ in 0..<500 { _ = metrics.render() }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 500)
        // A bare closure read back through the lock gained two thunk frames a scrape.
        let deeper = abs((seen.last ?? 0) - (seen.first ?? 0))
        #expect(deeper < 1_024, "the reader went \(deeper) bytes deeper")
    }
}
