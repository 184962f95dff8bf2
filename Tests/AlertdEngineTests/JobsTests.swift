import AlertdEngine
import Synchronization
import Testing

/// Work owned by a service: run, awaited at the end, refused once closed.
@Suite("Jobs: work started and not waited for, owned by the service that runs it")
struct JobsTests {
    /// Opens once; awaited by a job.
    final class Latch: Sendable {
        private let stream: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation
        init() { (stream, continuation) = AsyncStream.makeStream() }
        func open() { continuation.finish() }
        func wait() async { for await _ in stream {} }
    }

    @Test(
        "a job started before run() runs under it; run() returns only after close() and once every job has ended",
        .timeLimit(.minutes(1)))
    func runsAndWaits() async {
        let jobs = Jobs()
        let ran = Atomic<Int>(0)
        let release = Latch()
        let started = Latch()
        jobs.start {
            started.open()
            await release.wait()
            ran.add(1, ordering: .relaxed)
        }
        #expect(jobs.counts == (0, 1), "the job before run() is not counted as queued")
        let running = Task { await jobs.run() }
        await started.wait()
        jobs.close()
        // Closed, with a job still running: run() must not have returned, and says what it waits for.
        let ranEarly = ran.load(ordering: .relaxed)
        #expect(ranEarly == 0)
        #expect(jobs.counts == (1, 0), "the running job is not counted")
        release.open()
        await running.value
        let ranAfter = ran.load(ordering: .relaxed)
        #expect(ranAfter == 1)
        #expect(jobs.counts == (0, 0), "the ended job is still counted")
    }

    @Test("a job started after close() is not run: its refusal runs at once")
    func refusedAfterClose() async {
        let jobs = Jobs()
        let running = Task { await jobs.run() }
        jobs.close()
        await running.value
        let refused = Atomic<Bool>(false)
        let ran = Atomic<Bool>(false)
        jobs.start({ ran.store(true, ordering: .relaxed) }, refused: { refused.store(true, ordering: .relaxed) })
        let (wasRefused, didRun) = (refused.load(ordering: .relaxed), ran.load(ordering: .relaxed))
        #expect(wasRefused)
        #expect(!didRun)
    }

    @Test(
        "cancelling run() closes the jobs: those running are cancelled, run() returns, later ones are refused",
        .timeLimit(.minutes(1)))
    func cancelled() async {
        let jobs = Jobs()
        let started = Latch()
        let sawCancel = Atomic<Bool>(false)
        jobs.start {
            started.open()
            // A latch nobody opens: it ends only when the job is cancelled.
            await Latch().wait()
            sawCancel.store(Task.isCancelled, ordering: .relaxed)
        }
        let running = Task { await jobs.run() }
        await started.wait()
        running.cancel()
        await running.value
        let cancelledJob = sawCancel.load(ordering: .relaxed)
        #expect(cancelledJob)
        let refused = Atomic<Bool>(false)
        jobs.start({}, refused: { refused.store(true, ordering: .relaxed) })
        let wasRefused = refused.load(ordering: .relaxed)
        #expect(wasRefused)
    }
}
