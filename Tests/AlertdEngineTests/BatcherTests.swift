import AlertdEngine
import NIOConcurrencyHelpers
import Testing

/// The stores' one batching queue: the in-order rules on their own, then the batcher running
/// them on real jobs.
@Suite("Batcher: items that arrive while a batch runs go together in the next")
struct BatcherTests {
    @Test("in arrival order: the first item starts a batch at once; what arrives meanwhile waits, then goes whole in the next")
    func inArrivalOrder() {
        var rules = InArrivalOrder<Int>(limit: 10)
        #expect(rules.enqueue(1) == [1])
        #expect(rules.enqueue(2) == nil)
        #expect(rules.enqueue(3) == nil)
        #expect(rules.finished([1], left: []) == [[2, 3]])
        #expect(rules.finished([2, 3], left: []).isEmpty)
        // Nothing running and nothing waiting: the next item starts a batch again.
        #expect(rules.enqueue(4) == [4])
    }

    @Test("a batch holds at most `limit` of weight, one item however heavy; items left go first in the next")
    func weightAndLeft() {
        var rules = InArrivalOrder<Int>(limit: 5) { $0 }
        #expect(rules.enqueue(9) == [9], "an item heavier than the limit never went")
        for item in [2, 2, 2, 7] { #expect(rules.enqueue(item) == nil) }
        #expect(rules.finished([9], left: []) == [[2, 2]])
        #expect(rules.finished([2, 2], left: [1]) == [[1, 2]], "an item left did not go first")
        #expect(rules.finished([1, 2], left: []) == [[7]])
        #expect(rules.finished([7], left: []).isEmpty)
    }

    /// Runs batches as the stores' owners do, holding each batch until released.
    final class Runner: BatchRunner {
        let jobs: Jobs
        let batches = NIOLockedValueBox<[[Int]]>([])
        let refused = NIOLockedValueBox<[Int]>([])
        let gate = AsyncStream<Void>.makeStream()
        let afterwards = NIOLockedValueBox(0)
        let thenRuns: Bool

        init(jobs: Jobs, thenRuns: Bool = false) {
            self.jobs = jobs
            self.thenRuns = thenRuns
        }

        var batchJobs: Jobs? { jobs }

        func run(_ batch: [Int]) async -> BatchEnd<Int> {
            batches.withLockedValue { $0.append(batch) }
            var gates = gate.stream.makeAsyncIterator()
            _ = await gates.next()
            guard thenRuns else { return BatchEnd() }
            return BatchEnd { [afterwards] in afterwards.withLockedValue { $0 += 1 } }
        }

        func refuse(_ batch: [Int]) { refused.withLockedValue { $0 += batch } }
    }

    @Test("items enqueued while a batch runs go together in the next one, in order; each item runs once", .timeLimit(.minutes(1)))
    func runsOnJobs() async {
        let jobs = Jobs()
        let running = Task { await jobs.run() }
        let runner = Runner(jobs: jobs, thenRuns: true)
        let batcher = Batcher(InArrivalOrder<Int>(limit: 100))
        batcher.enqueue(1, to: runner)
        while runner.batches.withLockedValue({ $0.count }) < 1 { await Task.yield() }
        for item in 2...5 { batcher.enqueue(item, to: runner) }
        runner.gate.continuation.yield()
        while runner.batches.withLockedValue({ $0.count }) < 2 { await Task.yield() }
        runner.gate.continuation.yield()
        while runner.afterwards.withLockedValue({ $0 }) < 2 { await Task.yield() }
        #expect(runner.batches.withLockedValue { $0 } == [[1], [2, 3, 4, 5]])
        #expect(!batcher.current.running, "the batcher still counts a batch running")
        jobs.close()
        await running.value
    }

    @Test("once its jobs are closed, every batch that would start is refused: its items fail at once, none runs")
    func refusedWhenClosed() async {
        let jobs = Jobs()
        let running = Task { await jobs.run() }
        jobs.close()
        await running.value
        let runner = Runner(jobs: jobs)
        let batcher = Batcher(InArrivalOrder<Int>(limit: 100))
        batcher.enqueue(1, to: runner)
        batcher.enqueue(2, to: runner)
        #expect(runner.refused.withLockedValue { $0 } == [1, 2])
        #expect(runner.batches.withLockedValue { $0 }.isEmpty)
        #expect(!batcher.current.running && batcher.current.waiting.isEmpty)
    }
}
