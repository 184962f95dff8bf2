import Foundation
import Testing

/// Runs each test of a suite on threads of its own, a few tests at a time.
///
/// Most end-to-end tests block while they wait: socket reads through `TestHTTPClient`,
/// a daemon's "listening" line, deliberate slowness. Run as Swift Testing runs them, on
/// the cooperative pool (one thread per CPU), two such tests froze every other test,
/// async ones included, for as long as they blocked; a run showed 25 s stretches in which
/// the SDK tests' waits ran out with nothing wrong with alertd. With this trait a test
/// first takes one of ``E2ESlots`` (an async wait that holds no thread), then runs with a
/// ``DedicatedThreads`` executor as its task executor preference: its synchronous code,
/// its `async let` children and the continuations it resumes run on those threads, and
/// the pool stays free.
struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// The executor of the running test.
    @TaskLocal static var executor: DedicatedThreads?

    /// Only around a test case (a test function is one case, or one per argument): a
    /// parameterized function scoped as well would hold a slot while its cases wait for one.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> OwnThreads? {
        testCase == nil ? nil : self
    }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await E2ESlots.shared.run {
            let executor = DedicatedThreads(name: "e2e-test", count: 2)
            defer { executor.shutdown() }
            try await Self.$executor.withValue(executor) {
                try await withTaskExecutorPreference(executor) { try await function() }
            }
        }
    }
}

extension Trait where Self == OwnThreads {
    /// Each test on threads of its own; at most ``E2ESlots/width`` tests at once.
    static var ownThreads: Self { OwnThreads() }
}

/// How many end-to-end tests run at once: twice the CPUs, at least four. Most of a test's
/// time is spent waiting on a daemon or a socket, and every timing in these tests leaves
/// room for this much sharing (the pool used to run two blocking tests at once plus any
/// number of async ones).
actor E2ESlots {
    static let shared = E2ESlots(width: max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))

    let width: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) { self.width = width }

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        if running < width {
            running += 1
            return
        }
        // `release` hands its slot straight to the first waiter: `running` stays as it is.
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// A task executor backed by threads of its own, for code that blocks them.
///
/// Jobs run in the order they were enqueued, on whichever of the threads is free. After
/// ``shutdown()`` the threads finish what is queued and end; a job enqueued after that
/// (a straggling continuation) goes to the global executor instead of being lost.
final class DedicatedThreads: TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var threads: [pthread_t] = []
    private var stopping = false
    private var live: Int
    private let condition = NSCondition()

    init(name: String, count: Int) {
        live = count
        for index in 0..<count {
            let thread = Thread { [self] in self.work(name: "\(name)-\(index)") }
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        if live == 0 {
            condition.unlock()
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(UnownedJob(job))
        condition.signal()
        condition.unlock()
    }

    /// Whether the calling thread is one of this executor's.
    var runsCurrentThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        return threads.contains { pthread_equal($0, pthread_self()) != 0 }
    }

    /// Lets the threads end once the queue is empty.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func work(name: String) {
        // Named for stack dumps. Not through `Thread.name`: on Linux a thread that sets it
        // right after starting sometimes names a stand-in object, and the kernel name stays.
        try? name.write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
        condition.lock()
        threads.append(pthread_self())
        while true {
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
            } else if stopping {
                live -= 1
                condition.unlock()
                return
            } else {
                condition.wait()
            }
        }
    }
}
