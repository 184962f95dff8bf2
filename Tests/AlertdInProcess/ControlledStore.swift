public import AlertdCore
public import AlertdEngine
public import AlertdReceipts
public import AlertdSQLite
public import AlertdTestSupport
public import AlertdWire
import Dispatch
import NIOConcurrencyHelpers
import Synchronization

/// A real store under a test's control, in the place of the one alertd opens: every
/// commit's writes are recorded as the commit begins, before SQLite sees them (the signal
/// that a change has left the board and is committing now, which a test awaits instead of
/// sleeping); commits can be held in flight for as long as the test needs; and commits can
/// fail, as on a full disk or an I/O error. Everything else goes to the store underneath.
///
/// ```swift
/// let store = ControlledStore()
/// try await withInProcessAlertd(wrapStore: store.wrap) { alertd in
///     store.hold()
///     defer { store.release() }
///     let post = alertd.begin("POST", "/v1/clients/ops/alerts", json: #"{"title":"B"}"#)
///     try await store.awaitCommit(of: "B's post") { $0.title == "B" }
///     …  // B is committing: what do readers see?
/// }
/// ```
///
/// Wrapped around the store of each start (``wrap(_:)``), its settings and its record
/// outlive a restart, as a disk does.
public final class ControlledStore: PersistentStore, Sendable {
    private let underneath: NIOLockedValueBox<(any PersistentStore)?>
    /// The writes of every commit begun, in order, those that failed too.
    public let begun = Observed<[[StoreWrite]]>([])
    private let committedWrites = Observed<[[StoreWrite]]>([])
    private let failingNow = Atomic<Bool>(false)
    private let failingAfterWriting = Atomic<Bool>(false)
    /// While set, a commit waits here (on the store's writer thread) once it has begun.
    private let gate = NIOLockedValueBox<DispatchSemaphore?>(nil)

    /// A store to ``wrap(_:)`` around the one alertd opens.
    public init() { underneath = NIOLockedValueBox(nil) }

    /// A store around `store`.
    public init(_ store: any PersistentStore) { underneath = NIOLockedValueBox(store) }

    /// Puts this store around `store` (the one a start opened) and returns it: the
    /// in-process harness's `wrapStore`.
    public func wrap(_ store: any PersistentStore) -> any PersistentStore {
        underneath.withLockedValue { $0 = store }
        return self
    }

    /// The store underneath, the one alertd opened last.
    public var inner: any PersistentStore {
        guard let store = underneath.withLockedValue({ $0 }) else {
            preconditionFailure("ControlledStore used before it wrapped a store")
        }
        return store
    }

    /// The writes of every commit that went through, in order.
    public var committed: [[StoreWrite]] { committedWrites.value }

    /// Returns once the purge alertd runs as it starts (`PurgeService`, then once a minute) has
    /// committed its last write (the idempotency keys and answer links past their day); throws
    /// after `timeout`. A test that holds SQLite's write lock (``SQLiteWriteLock``) takes it
    /// after this: a purge that ran into the lock would fail its commit, and with it every
    /// change submitted behind it, before the one the test is about ever began.
    public func awaitStartPurge(timeout: Duration = .seconds(20)) async throws {
        let purged = await committedWrites.wait(timeout: timeout) { commits in
            commits.contains { $0.contains { if case .deleteKeys = $0 { true } else { false } } } ? true : nil
        }
        guard purged == true else { throw TestFailure("the purge of alertd's start did not commit within \(timeout)") }
    }

    /// While true, commits fail (``DiskFull``) and the store says it cannot be written.
    public var failing: Bool {
        get { failingNow.load(ordering: .relaxed) }
        set { failingNow.store(newValue, ordering: .relaxed) }
    }

    /// The next commit reaches the disk, then throws (``DiskFull``) all the same: an I/O error
    /// reported after the write, which leaves the store holding a change alertd was told failed.
    public func failOnceAfterWriting() { failingAfterWriting.store(true, ordering: .relaxed) }

    /// What a failing commit throws.
    public struct DiskFull: Error, CustomStringConvertible {
        public var description: String { "disk full" }
    }

    /// Holds every commit that begins from now on until ``release()``: the changes stay in
    /// flight for as long as the test needs. Release it in a `defer`.
    public func hold() { gate.withLockedValue { $0 = DispatchSemaphore(value: 0) } }

    /// Lets the held commits, and every later one, go on.
    public func release() { gate.withLockedValue { $0.take() }?.signal() }

    /// Returns once `count` commits have begun; throws after `timeout`.
    public func awaitBegun(_ count: Int, timeout: Duration = .seconds(20)) async throws {
        guard await begun.wait(timeout: timeout, until: { $0.count >= count ? true : nil }) == true else {
            throw TestFailure("\(begun.value.count) of \(count) commits began within \(timeout)")
        }
    }

    /// Returns once a commit holding a version of an alert that `matches` has begun;
    /// throws after `timeout`.
    public func awaitCommit(of what: String, timeout: Duration = .seconds(20), _ matches: @escaping @Sendable (Alert) -> Bool)
        async throws
    {
        let seen = await begun.wait(timeout: timeout) { batches in
            batches.contains { batch in
                batch.contains { write in
                    guard case .alert(let alert) = write else { return false }
                    return matches(alert)
                }
            } ? true : nil
        }
        guard seen == true else {
            // What did begin, each commit by the kinds of its writes: a commit that ran into a
            // lock and failed fails every change submitted behind it before it begins.
            let kinds = begun.value.suffix(6).map { batch in
                batch.map { String(String(describing: $0).prefix { $0 != "(" }) }.joined(separator: ",")
            }
            throw TestFailure("no commit of \(what) began within \(timeout); the last commits begun: \(kinds)")
        }
    }

    public func commit(_ writes: [StoreWrite]) throws {
        begun.update { $0.append(writes) }
        if let held = gate.withLockedValue({ $0 }) {
            held.wait()
            held.signal()  // the next commit held by the same gate passes too
        }
        if failing { throw DiskFull() }
        try inner.commit(writes)
        committedWrites.update { $0.append(writes) }
        if failingAfterWriting.exchange(false, ordering: .relaxed) { throw DiskFull() }
    }

    public func load() throws -> StoredState { try inner.load() }
    public func alert(_ id: AlertID) throws -> Alert? { try inner.alert(id) }
    public func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) throws -> [Alert] {
        try inner.decided(on: client, states: states, before: before, limit: limit)
    }
    public func idempotency(client: String, key: String) throws -> IdempotencyRecord? {
        try inner.idempotency(client: client, key: key)
    }
    public func webhooks() throws -> [Webhook] { try inner.webhooks() }
    public func secret(named name: String) throws -> [UInt8]? { try inner.secret(named: name) }
    public func pushSubscriptions() throws -> [PushSubscription] { try inner.pushSubscriptions() }
    public func answerToken(hash: [UInt8]) throws -> AnswerToken? { try inner.answerToken(hash: hash) }
    public func deliveries(of alertID: AlertID) throws -> [DeliveryRecord] { try inner.deliveries(of: alertID) }
    public func pendingDeliveries() throws -> [PendingDelivery] { try inner.pendingDeliveries() }
    public func cancelledDeliveries(ofWebhook id: String) throws -> [String] { try inner.cancelledDeliveries(ofWebhook: id) }
    public func purgeCandidates(_ retention: Retention, limit: Int) throws -> [String] {
        try inner.purgeCandidates(retention, limit: limit)
    }
    public func retainedBytes() throws -> Int { try inner.retainedBytes() }
    public func clientsWithoutDecidedAlerts(among clients: [String]) throws -> [String] {
        try inner.clientsWithoutDecidedAlerts(among: clients)
    }
    public func isWritable() -> Bool { !failing && inner.isWritable() }
    public func hasRoom(forBytes bytes: Int) -> Bool { !failing && inner.hasRoom(forBytes: bytes) }
    public var sizeInBytes: Int? { inner.sizeInBytes }
    public func receiptHead() throws -> ChainLink { try inner.receiptHead() }
    public func receipt(of id: AlertID) throws -> ReceiptRecord? { try inner.receipt(of: id) }
    public func receipts(after: Int, limit: Int) throws -> [ReceiptRecord] { try inner.receipts(after: after, limit: limit) }
    public func receiptTotals() throws -> ReceiptTotals { try inner.receiptTotals() }
    public func receiptsKept(decidedBefore: Timestamp) throws -> Int { try inner.receiptsKept(decidedBefore: decidedBefore) }
}
