import NIOConcurrencyHelpers

/// Which waiting items go in the next batch, and when: a batching queue's rules, without
/// locks or tasks, so each rule is tested on its own (``InArrivalOrder``; a PostgreSQL
/// store's flushes have rules of their own). ``Batcher`` runs them.
public protocol BatchRules: Sendable {
    associatedtype Item: Sendable
    /// Queues `item`; the batch to start now, if one may.
    mutating func enqueue(_ item: Item) -> [Item]?
    /// A batch ended; the items it `left` wait first. The batches that may start now, in order.
    mutating func finished(_ batch: [Item], left: [Item]) -> [[Item]]
}

/// One batch at a time, of the items waiting in arrival order, at most ``limit`` of their
/// weight (one item at least, however heavy): what arrives while a batch runs goes in the
/// next, so under load many items share one round trip or one commit.
public struct InArrivalOrder<Item: Sendable>: BatchRules {
    /// The most weight one batch holds (more only when its first item alone weighs more).
    public let limit: Int
    private let weight: @Sendable (Item) -> Int
    public private(set) var waiting: [Item] = []
    /// A batch is running.
    public private(set) var running = false

    /// - Parameter weight: what an item counts against ``limit``; one each by default.
    public init(limit: Int, weight: @escaping @Sendable (Item) -> Int = { _ in 1 }) {
        precondition(limit >= 1)
        self.limit = limit
        self.weight = weight
    }

    public mutating func enqueue(_ item: Item) -> [Item]? {
        waiting.append(item)
        guard !running else { return nil }
        running = true
        return take()
    }

    public mutating func finished(_ batch: [Item], left: [Item]) -> [[Item]] {
        waiting.insert(contentsOf: left, at: 0)
        guard !waiting.isEmpty else {
            running = false
            return []
        }
        return [take()]
    }

    private mutating func take() -> [Item] {
        var count = 0
        var total = 0
        while count < waiting.count {
            let next = weight(waiting[count])
            guard count == 0 || total + next <= limit else { break }
            total += next
            count += 1
        }
        defer { waiting.removeFirst(count) }
        return Array(waiting.prefix(count))
    }
}

/// How a batch ended: the items to run again (they wait first), and work to do once the
/// next batches have started (a notification sent after a commit, say), off their path.
public struct BatchEnd<Item: Sendable>: Sendable {
    public var left: [Item]
    public var then: (@Sendable () async -> Void)?

    public init(left: [Item] = [], then: (@Sendable () async -> Void)? = nil) {
        self.left = left
        self.then = then
    }
}

/// What runs a ``Batcher``'s batches: the owner of the queue (a store's reads, writes or
/// flushes), handed to ``Batcher/enqueue(_:to:)`` with each item, so the batcher holds no
/// reference to it.
public protocol BatchRunner: Sendable {
    associatedtype Item: Sendable
    /// Where batches run; nil when there is none any more (the owner is stopping).
    var batchJobs: Jobs? { get }
    /// Runs one batch; its items are told their outcome here, or handed back in ``BatchEnd/left``.
    func run(_ batch: [Item]) async -> BatchEnd<Item>
    /// Tells each item of a batch that will never run that it failed (the owner is stopping).
    func refuse(_ batch: [Item])
}

/// The one batching queue of the stores' requests (issue 46): items wait under a lock, the
/// rules say which go together and when, and each batch runs as a job of its owner's
/// ``Jobs``. The task that ran a batch runs the next one, when the rules start one and the
/// batch left nothing to do after: a batch after a batch costs no task and no thread hop.
/// When the jobs are closed, each batch that would start as a job is refused instead (its
/// items fail at once), and so are those behind it; one the running task takes next still
/// runs (its owner's service waits for that task).
///
/// The embedded store's writer is not one: it commits on a thread of its own, which blocks
/// for its fsync (``GroupCommitter`` says why, with figures).
public struct Batcher<Rules: BatchRules>: Sendable {
    private let rules: NIOLockedValueBox<Rules>

    public init(_ rules: Rules) {
        self.rules = NIOLockedValueBox(rules)
    }

    /// Queues `item`, and starts the batch it completes, if the rules start one now.
    public func enqueue<Runner: BatchRunner>(_ item: Rules.Item, to runner: Runner) where Runner.Item == Rules.Item {
        if let batch = rules.withLockedValue({ $0.enqueue(item) }) { start(batch, on: runner) }
    }

    /// The rules as they stand (for tests and metrics).
    public var current: Rules { rules.withLockedValue { $0 } }

    private func start<Runner: BatchRunner>(_ batch: [Rules.Item], on runner: Runner) where Runner.Item == Rules.Item {
        let refuse = {
            runner.refuse(batch)
            for next in rules.withLockedValue({ $0.finished(batch, left: []) }) { start(next, on: runner) }
        }
        guard let jobs = runner.batchJobs else { return refuse() }
        jobs.start({ await run(batch, on: runner) }, refused: refuse)
    }

    private func run<Runner: BatchRunner>(_ first: [Rules.Item], on runner: Runner) async where Runner.Item == Rules.Item {
        var batch = first
        while true {
            let end = await runner.run(batch)
            var next = rules.withLockedValue { $0.finished(batch, left: end.left) }
            if end.then == nil, !next.isEmpty {
                batch = next.removeFirst()
                for other in next { start(other, on: runner) }
                continue
            }
            for other in next { start(other, on: runner) }
            await end.then?()
            return
        }
    }
}
