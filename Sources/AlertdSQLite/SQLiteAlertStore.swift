public import AlertdCore
public import AlertdEngine
public import AlertdWire
public import AlertdReceipts
public import Logging
import NIOConcurrencyHelpers
public import ServiceLifecycle
import Synchronization

// Over 400 lines on purpose: every call of the port goes through the one board and write-behind
// state this type keeps private (its lock is the store's order); its sections follow the port's.

/// The embedded store: every client's queue in memory on one ``AlertBoard``,
/// in front of SQLite (``SQLiteStore``), written through one ``GroupCommitter``.
/// One process owns it (the state directory is locked), so memory is the
/// truth for pending alerts and SQLite is their durable copy.
///
/// Order and visibility, the two rules it keeps:
/// - A transaction runs on the board under its lock and its writes are
///   submitted to the committer under the same lock, so SQLite applies them in
///   board order. Its completion runs from the commit's.
/// - Readers see committed state only: the board keeps the last committed
///   version of alerts whose writes are in flight (``WriteBehindBoard``),
///   and an idempotency key is known to transactions from the moment its alert
///   is posted (``IdempotencyKeys``), so two posts with one key never both create.
///
/// After a failed commit (a full disk) memory may hold changes SQLite lacks:
/// every change is refused (`unavailable`, with `Retry-After`) until a probe
/// finds room for a real batch, then memory is rebuilt from SQLite
/// (``checkHealth()`` answers `.recovered`) and changes are taken again.
///
/// A `Service`: its `run()` runs the writer thread (a dedicated thread pays
/// here: it batches many requests into one fsync) until graceful shutdown,
/// then commits what is queued and stops — put it first in the service group,
/// so it stops last.
public final class SQLiteAlertStore: AlertStore, Service {
    fileprivate struct State: Sendable {
        var board: WriteBehindBoard
        /// Keys whose alert is posted but not committed yet.
        var pendingKeys: [KeyRef: IdempotencyRecord] = [:]
        /// The number of the last change submitted with displays, and of the last such
        /// change committed. Commits complete in the order they were submitted, but each
        /// is published by the task it resumes, in any order: the engine publishes a
        /// display only if its number is not below the one published (a display of two
        /// commits back never replaces the last one's).
        var displaysSubmitted: Int64 = 0
        var displaysCommitted: Int64 = 0
    }

    fileprivate struct KeyRef: Hashable, Sendable {
        var client: String
        var key: String
    }

    private let persistent: any PersistentStore
    private let committer: GroupCommitter
    private let state: NIOLockedValueBox<State>
    /// Why commits fail, while they do.
    private let failure = FailureFlag()
    /// The last probe's answer.
    private let writable: Synchronization.Atomic<Bool>
    private let clock: any WallClock
    private let logger: Logger
    /// Answer tokens being used now (``useAnswerToken(hash:now:)``).
    private let answerUses = NIOLockedValueBox<Set<[UInt8]>>([])
    /// The terminal alerts' bytes as the last purge measured them.
    private let measuredRetained = NIOLockedValueBox<Int?>(nil)
    /// Pending alerts found at start.
    public let restoredPending: Int

    /// Reads every client and pending alert from `persistent` and rebuilds the
    /// board; a queue whose policy changed since the last run is brought in
    /// line, and that change committed, before this returns.
    ///
    /// - Parameters:
    ///   - receiptKey: the key every decision's receipt is signed with (SPEC §14).
    ///   - onCommit: told how long each commit took, in nanoseconds (metrics).
    public init(
        persistent: any PersistentStore, settings: QueueSettings, rules: AlertRules, clock: any WallClock, logger: Logger,
        receiptKey: ReceiptSigningKey, onCommit: @escaping @Sendable (UInt64) -> Void = { _ in }
    ) throws {
        self.persistent = persistent
        self.clock = clock
        self.logger = logger
        let stored = try persistent.load()
        var board = AlertBoard(settings: settings, rules: rules, lastID: stored.lastID)
        let normalized = board.restore(clients: stored.clients, pending: stored.pending, now: clock.now())
        if !normalized.saved.isEmpty {
            try persistent.commit(normalized.saved.map { .alert($0) })
        }
        restoredPending = stored.pending.count
        state = NIOLockedValueBox(State(board: WriteBehindBoard(board)))
        writable = Atomic(persistent.isWritable())
        let failure = self.failure
        committer = GroupCommitter(
            store: persistent, logger: logger, receipts: ReceiptChain(key: receiptKey, head: try persistent.receiptHead()),
            onFailure: { [logger] error in
                failure.set("\(error)")
                logger.error("a commit failed: changes are refused (503) until a commit succeeds again", metadata: ["error": "\(error)"])
            },
            onCommit: onCommit)
    }

    // MARK: - Service

    public func run() async throws {
        startWriter()
        try? await gracefulShutdown()
        shutdown()
    }

    /// Starts the writer thread (``run()`` does; without a service group, call it yourself).
    public func startWriter() { committer.start() }

    /// Commits what is queued and stops the writer.
    public func shutdown() { committer.shutdown() }

    // MARK: - Changing queues

    /// The board holds every client: `others` adds nothing.
    /// `readingWebhooks` asks for nothing here: the engine's registry holds every change.
    public func transact<Value: Sendable>(
        client: String, others: [String], now: Timestamp, idempotencyKey: String?, readingWebhooks: Bool,
        _ body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>
    ) async throws(EngineError) -> Committed<Value> {
        // This runs unspecialized (called through `any AlertStore`), so every value of a
        // generic type it keeps is taken from the task's allocator, and every generic type
        // it names is looked up at run time. So the transaction is begun in a synchronous
        // function, and the commit's reply is of one concrete type (it says only whether the
        // commit succeeded): one generic value is kept across the wait, where seven were,
        // and a post looks up no metadata here (issue 28, bench/RESULTS.md).
        let reply = Reply<[ReceiptRecord]?>()
        var (committed, events) = try begin(client: client, now: now, idempotencyKey: idempotencyKey, reply: reply, body)
        guard let receipts = await reply.value() else { throw .notCommitted }
        if !receipts.isEmpty { committed.attach(receipts, events: events) }
        return committed
    }

    /// A transaction's body run on the board and its writes submitted, under the lock: what
    /// it commits, once `reply` gives the receipts the commit made (nil: it failed), and its
    /// events. `reply` is resolved at once when there is nothing to wait for, else by the
    /// commit's completion, on the writer thread: the writes are submitted under the board's
    /// lock, so SQLite applies them in board order.
    @inline(never)
    private func begin<Value: Sendable>(
        client: String, now: Timestamp, idempotencyKey: String?, reply: Reply<[ReceiptRecord]?>,
        _ body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>
    ) throws(EngineError) -> (Committed<Value>, [OutboxEvent]) {
        let outcome: Result<(Committed<Value>, [OutboxEvent]), EngineError> = state.withLockedValue { state in
            if let refusal { return .failure(refusal) }
            let mutation: Mutation<Value>
            do throws(EngineError) {
                let (key, pending, persistent, logger) = (
                    idempotencyKey.map { KeyRef(client: client, key: $0) }, state.pendingKeys, persistent, logger
                )
                mutation = try state.board.update(
                    { board, committed throws(EngineError) in
                        try body(&board, Context(key: key, pending: pending, persistent: persistent, logger: logger, committed: committed))
                    }, change: { $0.change })  // not `\.change`: a generic key path is made on every call
            } catch {
                return .failure(error)
            }
            let change = mutation.change
            var writes: [StoreWrite] = []
            writes.reserveCapacity(change.newClients.count + change.saved.count + 1 + mutation.events.count)
            for client in change.newClients { writes.append(.client(client, createdAt: now)) }
            for alert in change.saved { writes.append(.alert(alert)) }
            // Drafted and signed by the committer's signer thread, in commit order (GroupCommitter).
            for alert in change.decided { writes.append(.receipt(alert)) }
            if let record = mutation.idempotency {
                writes.append(.idempotency(record))
                state.pendingKeys[KeyRef(client: record.client, key: record.key)] = record
            }
            for event in mutation.events { writes.append(.event(event)) }
            let displays = change.displayChanged.map { (client: $0, alert: state.board.board.displayed(on: $0)) }
            if writes.isEmpty, !mutation.afterEarlierCommits {
                reply.resolve([])
                return .success((Committed(mutation.value, change: change, displays: displays, deliveries: []), []))
            }
            let versions = state.stamp(displays)
            let (deliveries, idempotency) = (mutation.events.flatMap(\.pendingDeliveries), mutation.idempotency)
            committer.submit(writes) { [self] result in
                guard case .success(let receipts) = result else { return reply.resolve(nil) }
                if !change.isEmpty || idempotency != nil {
                    self.state.withLockedValue { state in
                        state.board.committed(change)
                        state.committed(versions)
                        if let record = idempotency { state.pendingKeys[KeyRef(client: record.client, key: record.key)] = nil }
                    }
                }
                reply.resolve(receipts)
            }
            return .success(
                (
                    Committed(mutation.value, change: change, displays: displays, deliveries: deliveries, versions: versions),
                    mutation.events
                ))
        }
        return try outcome.get()
    }

    public func fireDeadlines(
        now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent]
    ) async -> [Result<Committed<Void>, EngineError>] {
        await withCheckedContinuation { round in
            let submitted = state.withLockedValue { state in
                refusal == nil
                    && submit(state.board.update({ $0.fireDeadlines(now: now) }, change: { $0 }), &state, events: events) {
                        round.resume(returning: [$0])
                    }
            }
            if !submitted { round.resume(returning: []) }
        }
    }

    public var nextDeadline: Timestamp? { state.withLockedValue { $0.board.board.nextDeadline } }

    public func reconfigure(
        _ settings: QueueSettings, now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent]
    ) async -> [Result<Committed<Void>, EngineError>] {
        // Taken even while commits fail: a rebuild after the failure keeps these settings.
        await withCheckedContinuation { reordered in
            let submitted = state.withLockedValue { state in
                submit(state.board.update({ $0.reconfigure(settings, now: now) }, change: { $0 }), &state, events: events) {
                    reordered.resume(returning: [$0])
                }
            }
            if !submitted { reordered.resume(returning: []) }
        }
    }

    /// Submits a change of many clients (deadlines, a policy) with its events. Under the lock.
    /// False when the change saves nothing: then nothing is committed and `report` is not called.
    private func submit(
        _ change: BoardChange, _ state: inout State, events: (BoardChange) -> [OutboxEvent],
        report: @escaping @Sendable (Result<Committed<Void>, EngineError>) -> Void
    ) -> Bool {
        guard !change.saved.isEmpty else { return false }
        let events = events(change)
        let displays = change.displayChanged.map { (client: $0, alert: state.board.board.displayed(on: $0)) }
        let deliveries = events.flatMap(\.pendingDeliveries)
        let versions = state.stamp(displays)
        let now = clock.now()
        // A client an escalation step made (SPEC §12) is written with it; the receipts of what
        // the change decided are signed on the writer thread (GroupCommitter).
        let writes: [StoreWrite] =
            change.newClients.map { .client($0, createdAt: now) } + change.saved.map { .alert($0) } + change.decided.map { .receipt($0) }
            + events.map { .event($0) }
        committer.submit(writes) { [self] result in
            guard case .success(let receipts) = result else { return report(.failure(.notCommitted)) }
            self.state.withLockedValue { state in
                state.board.committed(change)
                state.committed(versions)
            }
            var committed = Committed((), change: change, displays: displays, deliveries: deliveries, versions: versions)
            if !receipts.isEmpty { committed.attach(receipts, events: events) }
            report(.success(committed))
        }
        return true
    }

    /// The transaction's idempotency key (committing first, then SQLite), and what is committed of the board.
    private struct Context: TransactionContext {
        let key: KeyRef?
        let pending: [KeyRef: IdempotencyRecord]
        let persistent: any PersistentStore
        let logger: Logger
        let committed: WriteBehindBoard.CommittedCreations

        func isCommitted(_ id: AlertID) -> Bool { committed.contains(id) }

        func idempotencyRecord() throws(EngineError) -> IdempotencyRecord? {
            guard let key else { return nil }
            if let record = pending[key] { return record }
            do {
                return try persistent.idempotency(client: key.client, key: key.key)
            } catch {
                logger.error("the store cannot be read", metadata: ["error": "\(error)"])
                throw EngineError.unreadable
            }
        }
    }

    // MARK: - Reading (answered at once, on the calling thread)

    public func alert(_ id: AlertID, on client: String?) async throws(EngineError) -> PositionedAlert? {
        let visible = state.withLockedValue { state -> (WriteBehindBoard.Visibility, Int?) in
            let visible = state.board.visible(id)
            guard case .alert(let alert) = visible, alert.isPending else { return (visible, nil) }
            return (visible, state.board.visiblePosition(of: alert, on: client ?? alert.client))
        }
        let found: Alert?
        switch visible {
        case (.alert(let alert), let position):
            guard let client else { return PositionedAlert(alert, position: position) }
            return alert.isOn(client) ? PositionedAlert(alert.viewed(from: client), position: position) : nil
        case (.notYetCommitted, _): return nil
        case (.unknown, _): found = try read { try persistent.alert(id) }
        }
        guard let found, client.map(found.isOn) ?? true else { return nil }
        return PositionedAlert(client.map(found.viewed) ?? found, position: nil)
    }

    public func pending(on client: String) async throws(EngineError) -> [PositionedAlert] {
        let pending = state.withLockedValue { $0.board.visiblePending(on: client) }
        return pending.enumerated().map { PositionedAlert($0.element, position: $0.offset) }
    }

    public func policy(of client: String) -> QueuePolicy {
        state.withLockedValue { $0.board.board.settings[client].policy }
    }

    /// Every client's displayed alert at once, as committed: a display change still
    /// committing is not read (the displays a commit changes come with its completion).
    public func displays(of clients: [String]?) async throws(EngineError) -> [VersionedDisplay] {
        state.withLockedValue { state in
            (clients ?? state.board.board.clients).map {
                VersionedDisplay(client: $0, alert: state.board.visibleDisplayed(on: $0), version: state.displaysCommitted)
            }
        }
    }

    public func clients(
        after: String?, limit: Int, where include: @escaping @Sendable (String) -> Bool
    ) async throws(EngineError) -> (page: [(client: String, pending: Int)], more: Bool) {
        state.withLockedValue { state in
            let (page, more) = state.board.board.clients(after: after, limit: limit, where: include)
            return (page: page.map { (client: $0, pending: state.board.visiblePendingCount(on: $0)) }, more: more)
        }
    }

    public func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) async throws(EngineError) -> [Alert] {
        try read { try persistent.decided(on: client, states: states, before: before, limit: limit) }
    }

    public var pendingTotal: Int { state.withLockedValue { $0.board.board.pendingTotal } }
    public var storeBytes: Int? { persistent.sizeInBytes }

    // MARK: - Webhooks and deliveries

    public func webhooks() async throws(EngineError) -> [Webhook] { try read { try persistent.webhooks() } }

    /// Every commit is this process's, published as it commits.
    public var publishesEveryCommit: Bool { true }

    public func saveWebhook(_ webhook: Webhook) async throws(EngineError) { try await commit([.webhook(webhook)]) }

    /// The ids come from the commit itself (`UPDATE … RETURNING`), kept by the rows until taken here.
    public func deleteWebhook(id: String) async throws(EngineError) -> [String] {
        do {
            try await commit([.deleteWebhook(id: id)])
        } catch {
            // A failed commit's ids were rolled back with it.
            _ = try? persistent.cancelledDeliveries(ofWebhook: id)
            throw error
        }
        return try read { try persistent.cancelledDeliveries(ofWebhook: id) }
    }

    public func deliveries(of alertID: AlertID) async throws(EngineError) -> [DeliveryRecord] {
        try read { try persistent.deliveries(of: alertID) }
    }

    public func pendingDeliveries() async throws(EngineError) -> [PendingDelivery] { try read { try persistent.pendingDeliveries() } }

    public func record(_ attempt: AttemptRecord) async throws(EngineError) {
        try await withCheckedContinuation { (done: CheckedContinuation<Result<Void, EngineError>, Never>) in
            committer.submit([.attempt(attempt)]) { result in done.resume(returning: result.map { _ in }.mapError { _ in .notCommitted }) }
        }.get()
    }

    // MARK: - Web Push (SPEC §11)

    public func secret(named name: String, make: @escaping @Sendable () -> [UInt8]) async throws(EngineError) -> [UInt8] {
        if let stored = try read({ try persistent.secret(named: name) }) { return stored }
        try await commit([.secret(name: name, value: make(), createdAt: clock.now())])
        guard let stored = try read({ try persistent.secret(named: name) }) else { throw EngineError.unreadable }
        return stored
    }

    public func pushSubscriptions() async throws(EngineError) -> [PushSubscription] { try read { try persistent.pushSubscriptions() } }

    public func savePushSubscription(_ subscription: PushSubscription) async throws(EngineError) -> PushSubscription? {
        let replaced = try read { try persistent.pushSubscriptions().first { $0.endpoint == subscription.endpoint } }
        try await commit([.pushSubscription(subscription)])
        return replaced
    }

    public func deletePushSubscription(id: String) async throws(EngineError) -> Bool {
        let existed = try read { try persistent.pushSubscriptions().contains { $0.id == id } }
        try await commit([.deletePushSubscription(id: id)])
        return existed
    }

    public func saveAnswerToken(_ token: AnswerToken) async throws(EngineError) { try await commit([.answerToken(token)]) }

    public func answerToken(hash: [UInt8]) async throws(EngineError) -> AnswerToken? { try read { try persistent.answerToken(hash: hash) } }

    /// One process writes the store: a use is claimed in memory first, so two uses at once
    /// cannot both read the token unused.
    public func useAnswerToken(hash: [UInt8], now: Timestamp) async throws(EngineError) -> Bool {
        guard answerUses.withLockedValue({ $0.insert(hash).inserted }) else { return false }
        defer { _ = answerUses.withLockedValue { $0.remove(hash) } }
        guard let stored = try read({ try persistent.answerToken(hash: hash) }), stored.usedAt == nil else { return false }
        try await commit([.useAnswerToken(hash: hash, at: now)])
        return true
    }

    // MARK: - Receipts (SPEC §14)

    public func receipt(of id: AlertID) async throws(EngineError) -> ReceiptRecord? { try read { try persistent.receipt(of: id) } }

    public func receipts(after: Int, limit: Int) async throws(EngineError) -> [ReceiptRecord] {
        try read { try persistent.receipts(after: after, limit: limit) }
    }

    public var receiptTotals: ReceiptTotals? { try? persistent.receiptTotals() }

    /// One process owns the state directory: nothing changes behind its back.
    public var changes: AsyncStream<StoreChange> { AsyncStream { $0.finish() } }

    // MARK: - Upkeep

    /// Candidates are read beside the writer, `purgeRound` at a time, and deleted
    /// `purgeChunk` a commit: the writer never holds a minute's worth of deletions in one
    /// transaction while posts wait (a one-hour soak at ~760 answered alerts/s saw posts
    /// wait up to 7.8 s behind a purge of 45,000 alerts in one commit).
    public func purge(_ retention: Retention, keysBefore: Timestamp) async throws(EngineError) -> [String] {
        if let refusal { throw refusal }
        for _ in 0..<Self.purgeRounds {
            let ids = try read { try persistent.purgeCandidates(retention, limit: Self.purgeRound) }
            var start = ids.startIndex
            while start < ids.endIndex {
                let end = min(start + Self.purgeChunk, ids.endIndex)
                try await commit([.deleteTerminal(Array(ids[start..<end]))])
                start = end
            }
            // Until a round finds nothing: the bound of all clients' bytes is taken last.
            if ids.isEmpty { break }
        }
        if let before = retention.receiptsDecidedBefore {
            // The chain's oldest receipts, a chunk a commit, like alerts.
            let kept = try read { try persistent.receiptsKept(decidedBefore: before) }
            var first = try read { try persistent.receipts(after: 0, limit: 1).first?.seq } ?? kept
            while first < kept {
                first = min(kept, first + Self.purgeChunk)
                try await commit([.deleteReceipts(below: first)])
            }
        }
        try await commit([.deleteKeys(createdBefore: keysBefore), .deleteAnswerTokens(expiredBefore: keysBefore)])
        if let bytes = try? persistent.retainedBytes() { measuredRetained.withLockedValue { $0 = bytes } }
        return forgetIdleClients()
    }

    public var retainedBytes: Int? { measuredRetained.withLockedValue { $0 } }

    /// Candidates read at a time, alerts deleted a commit, rounds a purge (a million alerts).
    static let purgeRound = 5_000
    static let purgeChunk = 500
    static let purgeRounds = 200

    /// Submits writes and returns once they are committed.
    private func commit(_ writes: [StoreWrite]) async throws(EngineError) {
        if let refusal { throw refusal }
        let reply = Reply<Result<Void, EngineError>>()
        committer.submit(writes) { result in reply.resolve(result.map { _ in }.mapError { _ in .notCommitted }) }
        try await reply.value().get()
    }

    /// Forgets clients that hold nothing any more: nothing pending, nothing
    /// committing, nothing retained (SQLite is asked without the board's lock,
    /// and a client touched meanwhile is kept). Returns those forgotten.
    private func forgetIdleClients() -> [String] {
        let candidates = state.withLockedValue { $0.board.beginIdleSweep() }
        guard !candidates.isEmpty else { return [] }
        let idle: [String]
        do {
            idle = try persistent.clientsWithoutDecidedAlerts(among: candidates)
        } catch {
            logger.warning("idle clients not checked: the store cannot be read", metadata: ["error": "\(error)"])
            return []
        }
        return state.withLockedValue { state -> [String] in
            guard refusal == nil else { return [] }
            let forgotten = state.board.forget(idle: idle)
            if !forgotten.isEmpty { committer.submit([.deleteClients(forgotten)]) { _ in } }
            return forgotten
        }
    }

    /// The room SQLite must show before changes are taken again after a failed commit.
    static let headroomBytes = 1 << 20

    public func checkHealth() async -> StoreHealth {
        // While commits fail, only room for a real batch counts (a full disk may
        // still take one small row), so memory is not rebuilt just to fail again.
        let failing = failure.isSet
        let ok = failing ? persistent.hasRoom(forBytes: Self.headroomBytes) : persistent.isWritable()
        writable.store(ok, ordering: .relaxed)
        if ok, failing, recover() { return .recovered }
        return ok ? .writable : .notWritable
    }

    public var isHealthy: Bool { !failure.isSet && writable.load(ordering: .relaxed) }

    /// After failed commits, once SQLite takes a commit again: rebuilds the board
    /// and the keys in flight from SQLite (memory may hold changes whose commit
    /// failed), then takes changes again. Everything submitted before this fails
    /// with the earlier failure.
    private func recover() -> Bool {
        let stored: StoredState
        let head: ChainLink
        do {
            stored = try persistent.load()
            head = try persistent.receiptHead()
        } catch {
            logger.error("the store cannot be read back after a failed commit", metadata: ["error": "\(error)"])
            return false
        }
        let recovered = state.withLockedValue { state -> Bool in
            guard failure.isSet else { return false }
            var board = AlertBoard(settings: state.board.board.settings, rules: state.board.board.rules, lastID: stored.lastID)
            let normalized = board.restore(clients: stored.clients, pending: stored.pending, now: clock.now())
            state.board = WriteBehindBoard(board)
            state.board.began(normalized)
            state.pendingKeys = [:]
            // From here on submissions are computed on memory that matches the store.
            committer.resume(head: head)
            failure.clear()
            if !normalized.saved.isEmpty {
                committer.submit(normalized.saved.map { .alert($0) }) { [self] result in
                    if case .success = result { self.state.withLockedValue { $0.board.committed(normalized) } }
                }
            }
            return true
        }
        if recovered { logger.info("commits succeed again: changes are taken", metadata: ["pending": "\(stored.pending.count)"]) }
        return recovered
    }

    // MARK: - Internals

    /// Why changes are refused right now, if they are.
    private var refusal: EngineError? {
        guard failure.isSet else { return nil }
        return EngineError(
            .unavailable, "the store takes no writes now (alertd's log says why); nothing was changed, retry later",
            retryAfter: EngineError.storeRetrySeconds)
    }

    private func read<T>(_ body: () throws -> T) throws(EngineError) -> T {
        do {
            return try body()
        } catch {
            logger.error("the store cannot be read", metadata: ["error": "\(error)"])
            throw EngineError.unreadable
        }
    }
}

/// Set while commits fail (a full disk, an I/O error): changes are refused
/// until a commit succeeds again and memory has been rebuilt from SQLite.
private final class FailureFlag: Sendable {
    private let reason = NIOLockedValueBox<String?>(nil)
    func set(_ text: String) { reason.withLockedValue { $0 = $0 ?? text } }
    func clear() { reason.withLockedValue { $0 = nil } }
    var isSet: Bool { reason.withLockedValue { $0 != nil } }
}

extension SQLiteAlertStore.State {
    /// Numbers a change's displays as submitted (under the lock, so in commit order).
    mutating func stamp(_ displays: [(client: String, alert: Alert?)]) -> [String: VersionStep] {
        guard !displays.isEmpty else { return [:] }
        displaysSubmitted += 1
        var versions: [String: VersionStep] = [:]
        for display in displays { versions[display.client] = VersionStep(from: nil, to: displaysSubmitted) }
        return versions
    }

    /// Records that a change with these numbered displays is committed.
    mutating func committed(_ versions: [String: VersionStep]) {
        for step in versions.values { displaysCommitted = max(displaysCommitted, step.to) }
    }
}
