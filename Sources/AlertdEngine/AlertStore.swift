public import AlertdCore
public import AlertdWire

// Over 400 lines on purpose: the store port is one protocol and the values it speaks in,
// read whole by whoever writes a store; its requirements are grouped by what they serve.

/// The engine's one view of persistence: the store port.
///
/// A store holds every client's queue, the alerts decided and retained, the
/// idempotency keys, the API's webhooks and the callback outbox. The engine
/// never assumes it is the only process writing: it changes a queue only
/// through ``transact(client:now:idempotencyKey:_:)``, and reads only what a
/// store reports as committed. Every call is `async throws(EngineError)`: an
/// embedded store answers reads without suspending (its caller, started on
/// libmicrohttpd's thread, answers inline), a shared one when the database did.
///
/// A change of one client's queue is one transaction: the store hands the
/// engine the client's queue on an ``AlertBoard`` (it may hold other clients
/// too — the embedded store keeps them all in memory), the engine applies one
/// domain operation and returns a ``Mutation``: the board's change plus what
/// goes with it (an idempotency key, outbox events). The store commits all of
/// it together, and nothing else changes that client's queue while the body
/// runs, in this process or another. The call then returns what was
/// committed: only from then on may anyone be told.
///
/// `AlertdSQLite.SQLiteAlertStore` is the embedded implementation (an in-memory
/// board in front of SQLite, group commit). A store shared by several
/// instances implements the same calls with a transaction per call that
/// locks the client's row, a board loaded with that client's pending alerts,
/// and deadlines claimed with `SKIP LOCKED`; see `docs/architecture.md`.
public protocol AlertStore: DeliveryLog, AnyObject {
    // MARK: Changing queues

    /// Runs `body` on the board holding `client`'s queue and commits what it
    /// returns in one transaction. `body` must be quick and do no I/O but
    /// through its context, which knows `idempotencyKey` (the store looks it up
    /// with the queue) and which alerts are committed. An embedded store runs
    /// `body` at once, on the calling thread; a shared one when it holds the
    /// client (so `body` escapes).
    ///
    /// A body that throws, or returns a mutation that changes nothing and does
    /// not ask to wait for earlier commits, returns without a commit (at once,
    /// in an embedded store). Otherwise the call returns once the transaction
    /// committed, or throws (`EngineError` `unavailable`, nothing of it visible).
    ///
    /// `others`: more clients the transaction holds whole with `client`, for a change of
    /// an alert pending on several (escalated, SPEC §12): its own client and each it
    /// escalated to. A board that does not hold all of an alert's clients says so
    /// (``AlertBoard/holds(_:)``): the engine then transacts again with them.
    ///
    /// `readingWebhooks`: the body asks its context for the API's webhooks of its clients as
    /// committed (``TransactionContext/webhooks()``): a decision's targets, read with its
    /// queues by a store shared with other processes (SPEC §9), not in a round trip of their own.
    func transact<Value: Sendable>(
        client: String, others: [String], now: Timestamp, idempotencyKey: String?, readingWebhooks: Bool,
        _ body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>
    ) async throws(EngineError) -> Committed<Value>

    /// Fires the dismissals, expiries and escalation steps due at `now` (``AlertBoard/fireDeadlines(now:)``)
    /// on every client, each deadline exactly once however many processes share
    /// the store; `events` gives the outbox events of what they decided, written
    /// in the same transaction. Returns the round's commits once it ended (one, or one per
    /// client), each a success or its failure (then left due for the next round); none when
    /// nothing was due, or when a round of this store was already running (a shared store
    /// runs one at a time). The engine runs rounds beside its deadline loop, which also times
    /// parked waiters out and so never waits for a commit or the database.
    func fireDeadlines(
        now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent]
    ) async -> [Result<Committed<Void>, EngineError>]

    /// The earliest dismissal, expiry or escalation step the store holds, if any (a shared store's
    /// last reading of it: changes elsewhere arrive as ``StoreChange``s).
    var nextDeadline: Timestamp? { get }

    /// Takes new per-client settings (a reload). A queue whose policy changed
    /// is reordered, and a display that changes with it is committed; returns those
    /// commits (or their failures) once made, as ``fireDeadlines(now:events:)`` does.
    func reconfigure(
        _ settings: QueueSettings, now: Timestamp, events: @escaping @Sendable (BoardChange) -> [OutboxEvent]
    ) async -> [Result<Committed<Void>, EngineError>]

    // MARK: Reading what is committed
    //
    // An embedded store answers at once, without suspending; a shared one when
    // the database answered.

    /// An alert as committed, in any state, with its position while pending; nil when there is none.
    /// `client`: as that client's queue holds it (``Alert/viewed(from:)``), with its position
    /// there, or nil when it is not on that client (SPEC §12); nil: as its own client holds it.
    func alert(_ id: AlertID, on client: String?) async throws(EngineError) -> PositionedAlert?
    /// A client's pending alerts as committed, in display order (positions 0, 1, …), those
    /// escalated to it included (SPEC §12), each as that client holds it.
    func pending(on client: String) async throws(EngineError) -> [PositionedAlert]
    func policy(of client: String) -> QueuePolicy
    /// The displayed alert, as committed, of each of `clients` (nil: of every client),
    /// with the version it is of where the store knows one (the embedded store: its
    /// number of the last change committed; nil from a shared store, whose reads of
    /// `current` check versions of their own, ``refreshDisplays(_:)``).
    func displays(of clients: [String]?) async throws(EngineError) -> [VersionedDisplay]
    /// A store shared by several instances (SPEC §9: a read reflects every change
    /// committed before it arrived): of each client in `known`, its displayed alert
    /// and version as committed now, when that version is not the one given (nil:
    /// none known) — one round trip for however many clients, and for the calls
    /// that arrive while one runs. An embedded store, whose commits are all this
    /// process's own and published as they commit, answers `[]` at once.
    func refreshDisplays(_ known: [(client: String, version: Int64?)]) async throws(EngineError) -> [VersionedDisplay]
    /// Every commit to the store is this process's own, published as it commits (an
    /// embedded store): what the engine published is current, and a read answers from it
    /// without asking the store. False when other processes commit too: a read then checks
    /// the store first (SPEC §9, ``refreshDisplays(_:)``). The one answer the engine cannot
    /// ask for with a call: its fastest read (`current`, no wait) must know without one.
    var publishesEveryCommit: Bool { get }
    /// One page of clients by id, after `after`, among those `include` accepts,
    /// with their pending counts; and whether more follow.
    func clients(
        after: String?, limit: Int, where include: @escaping @Sendable (String) -> Bool
    ) async throws(EngineError) -> (page: [(client: String, pending: Int)], more: Bool)
    /// Terminal alerts of a client in `states`, newest first, with ids below `before`; those
    /// escalated to it included (SPEC §12).
    func decided(on client: String, states: Set<AlertState>, before: AlertID?, limit: Int) async throws(EngineError) -> [Alert]
    /// Pending alerts on every client (a shared store's last count of them).
    var pendingTotal: Int { get }
    /// The bytes the store takes (the SQLite files; the PostgreSQL tables, as last
    /// measured by a purge); nil: not known.
    var storeBytes: Int? { get }

    // MARK: Webhooks and deliveries

    /// Every webhook registered through the API.
    func webhooks() async throws(EngineError) -> [Webhook]
    /// The API's webhooks as committed, read again, when other processes may have changed
    /// them since this one last learned of it (a store shared by several instances: a
    /// request counts every change committed before it arrived, SPEC §9); nil when every
    /// change is this process's own, so the engine's registry holds it (an embedded store).
    func webhooksIfChangedElsewhere() async throws(EngineError) -> [Webhook]?
    func saveWebhook(_ webhook: Webhook) async throws(EngineError)
    /// Removes an API webhook and, in the same transaction, cancels its deliveries still
    /// pending (state `cancelled`, no next attempt): the ids of those it cancelled.
    func deleteWebhook(id: String) async throws(EngineError) -> [String]
    /// The deliveries of an alert's events, oldest first, with their attempts.
    func deliveries(of alertID: AlertID) async throws(EngineError) -> [DeliveryRecord]
    /// Every delivery still pending (at start).
    func pendingDeliveries() async throws(EngineError) -> [PendingDelivery]

    // MARK: Web Push (SPEC §11)

    /// The secret `name` (the VAPID key): the stored one, or `make`'s, stored first, when no
    /// process stored one yet. Every process sharing the store gets the same.
    func secret(named name: String, make: @escaping @Sendable () -> [UInt8]) async throws(EngineError) -> [UInt8]
    /// Every push subscription.
    func pushSubscriptions() async throws(EngineError) -> [PushSubscription]
    /// Stores `subscription`; one with the same endpoint is replaced, and returned.
    func savePushSubscription(_ subscription: PushSubscription) async throws(EngineError) -> PushSubscription?
    /// Removes a subscription (and its answer tokens); whether there was one.
    func deletePushSubscription(id: String) async throws(EngineError) -> Bool
    /// Stores an answer token, replacing the one made for the same alert and subscription.
    func saveAnswerToken(_ token: AnswerToken) async throws(EngineError)
    /// The answer token with this hash, if any.
    func answerToken(hash: [UInt8]) async throws(EngineError) -> AnswerToken?
    /// Marks the token used at `now`, if it was not: true when this call did (single use,
    /// however many processes try at once).
    func useAnswerToken(hash: [UInt8], now: Timestamp) async throws(EngineError) -> Bool

    // MARK: Receipts (SPEC §14)
    //
    // A store writes the receipt of every alert a transaction decides in that transaction
    // (answered, withdrawn, expired, dismissed; one per alert, quorum and escalation
    // included), after the deployment's last receipt: `seq` without gaps across every
    // process sharing the store, `prev_sha256` the hash of the receipt before, signed with
    // the key it was given. ``Committed/receipts`` holds those of a commit, and the terminal
    // events it wrote carry theirs (``OutboxEvent/attaching(receipts:)``).

    /// The receipt of alert `id`; nil while it is pending, or when there is none (never
    /// decided, or purged by `receipts.retention`).
    func receipt(of id: AlertID) async throws(EngineError) -> ReceiptRecord?
    /// Receipts with `seq` above `after`, in `seq` order, at most `limit`.
    func receipts(after: Int, limit: Int) async throws(EngineError) -> [ReceiptRecord]
    /// The receipts kept and the chain's head, as last read (the embedded store: as
    /// committed; a shared one: at its last purge or count).
    var receiptTotals: ReceiptTotals? { get }

    // MARK: Changes made by other processes

    /// Every change another process commits (a store shared by several instances), in
    /// the order the store learns of them; an embedded store's ends at once. One consumer
    /// (the engine), which follows it from its start until its shutdown.
    var changes: AsyncStream<StoreChange> { get }

    // MARK: Upkeep

    /// Deletes the terminal alerts ``Retention`` does not keep, with their events; and
    /// idempotency keys created before `keysBefore`; then forgets the clients left with
    /// nothing pending and nothing retained. A terminal alert with a delivery still
    /// pending stays until it is settled. Deletes in batches, each a commit of its own,
    /// so other changes go on between them; measures ``retainedBytes`` at the end.
    /// Returns the clients forgotten.
    func purge(_ retention: Retention, keysBefore: Timestamp) async throws(EngineError) -> [String]
    /// The bytes of every terminal alert, as ``Retention`` counts them, at the last purge; nil: not known.
    var retainedBytes: Int? { get }
    /// Why an alert with a `quorum` above 1 is refused now (SPEC §10): a store shared with
    /// an instance that does not support quorum, which would take one vote as the answer;
    /// nil: it is not (always, for a store of one process).
    var quorumRefusal: String? { get }

    /// Probes whether the store takes writes (for readiness). After failed
    /// commits, once one goes through again, the store rebuilds what it holds
    /// and takes changes again: then `.recovered`, and the engine republishes.
    func checkHealth() async -> StoreHealth
    /// The last ``checkHealth()`` found the store writable and no commit has failed since.
    var isHealthy: Bool { get }
}

/// An alert as committed, and its place in its queue.
public struct PositionedAlert: Sendable {
    public var alert: Alert
    /// 0 when displayed, n when n alerts are ahead; nil when terminal.
    public var position: Int?

    public init(_ alert: Alert, position: Int?) {
        self.alert = alert
        self.position = alert.isPending ? position : nil
    }
}

/// What another process committed, as a shared store learns of it.
public enum StoreChange: Sendable {
    /// These clients' queues changed: their displays may have.
    case clients([String])
    /// These clients' displays as another process committed them, told with the
    /// commit (no read needed): published unless a newer version is.
    case displays([PublishedDisplay])
    /// These alerts became terminal.
    case decided([AlertID])
    /// These alerts became terminal, told with the commit as they are (no read needed).
    case terminal([Alert])
    /// The webhooks registered through the API changed.
    case webhooks
    /// The push subscriptions changed.
    case pushSubscriptions
    /// The store read a deadline sooner than its last reading of ``AlertStore/nextDeadline``
    /// (another process committed it): the deadline loop looks again, so a deadline whose
    /// process is gone (killed) fires on time here.
    case deadline
    /// Changes may have been missed (the store lost its connection for a
    /// while): everything a waiter waits on must be looked at again.
    case resync
}

/// Where the delivery worker records attempts: the outbox part of the store port.
public protocol DeliveryLog: Sendable {
    /// Records an attempt and where its delivery stands; returns once it is
    /// committed. Not fsynced on its own: at least once delivery allows a
    /// repeat after a power loss.
    func record(_ attempt: AttemptRecord) async throws(EngineError)

    /// `delivery` as this process may attempt it now, or nil when it may not: another
    /// process holds it, or it is settled. An outbox several processes deliver from takes
    /// it for one attempt first, until `until` (a lease that runs out if this process dies
    /// meanwhile), and counts its attempts as committed (another process may have made
    /// some); an outbox of one process hands it back as it is, at once.
    func claim(_ delivery: PendingDelivery, until: Timestamp) async throws(EngineError) -> PendingDelivery?

    /// Due deliveries that no process holds (their holder died, or nobody took them yet),
    /// taken by this one until `until`. nil: no other process delivers from this outbox,
    /// so there never are any, and the worker stops asking.
    func takeOrphans(now: Timestamp, until: Timestamp, limit: Int) async throws(EngineError) -> [PendingDelivery]?
}

extension DeliveryLog {
    /// One process owns the outbox: each delivery is its own to attempt.
    public func claim(_ delivery: PendingDelivery, until: Timestamp) async throws(EngineError) -> PendingDelivery? { delivery }

    /// One process owns the outbox: no delivery is ever left without a holder.
    public func takeOrphans(now: Timestamp, until: Timestamp, limit: Int) async throws(EngineError) -> [PendingDelivery]? { nil }
}

/// What ``AlertStore/checkHealth()`` found.
public enum StoreHealth: Sendable, Equatable {
    case writable
    case notWritable
    /// Writable again after failed commits: the store rebuilt its state from what
    /// is committed, and takes changes again.
    case recovered
}

/// What a transaction's body may ask its store besides the board.
public protocol TransactionContext {
    /// The record of the transaction's idempotency key on its client, committed
    /// or committing; nil if unknown.
    func idempotencyRecord() throws(EngineError) -> IdempotencyRecord?
    /// Whether the creation of alert `id`, which the board holds, is committed. A
    /// post still committing does not exist for readers, nor for a decision; a
    /// store that commits each transaction before the next one starts always says yes.
    func isCommitted(_ id: AlertID) -> Bool
    /// The API's webhooks of the transaction's clients as committed, read with their queues
    /// when the transaction was begun `readingWebhooks`, so that a decision counts every
    /// webhook registered or removed through another process before it (SPEC §9). nil: the
    /// engine's registry holds every change (an embedded store), or they were not asked for.
    func webhooks() -> [Webhook]?
}

extension TransactionContext {
    public func isCommitted(_ id: AlertID) -> Bool { true }

    public func webhooks() -> [Webhook]? { nil }
}

/// What a transaction's body did: its value, the board's change, and the
/// writes that go with it.
public struct Mutation<Value: Sendable>: Sendable {
    public var value: Value
    /// What the board operation changed (empty: nothing).
    public var change: BoardChange
    /// A key recorded with a new alert.
    public var idempotency: IdempotencyRecord?
    /// The terminal events of alerts the change decided.
    public var events: [OutboxEvent]
    /// Complete only once everything submitted before is committed: a replayed
    /// post, or a repeated decision whose first one may still be committing.
    public var afterEarlierCommits: Bool

    public init(
        _ value: Value, change: BoardChange = BoardChange(), idempotency: IdempotencyRecord? = nil, events: [OutboxEvent] = [],
        afterEarlierCommits: Bool = false
    ) {
        self.value = value
        self.change = change
        self.idempotency = idempotency
        self.events = events
        self.afterEarlierCommits = afterEarlierCommits
    }
}

/// What a committed transaction changed, for the engine to publish.
public struct Committed<Value: Sendable>: Sendable {
    public var value: Value
    public var change: BoardChange
    /// The displayed alert of each client whose display changed, as committed.
    public var displays: [(client: String, alert: Alert?)]
    /// The deliveries of the events committed with it, due now.
    public var deliveries: [PendingDelivery]
    /// A shared store's versions of the clients the transaction wrote: the one it
    /// found (nil: the client was new) and the one it committed. The embedded store's
    /// number of the change, for the clients whose display it changed (`from` nil): a
    /// display is published only if not older than the one published.
    public var versions: [String: VersionStep]
    /// The receipts of the alerts the transaction decided (SPEC §14), by alert.
    public var receipts: [AlertID: ReceiptRecord]

    public init(
        _ value: Value, change: BoardChange, displays: [(client: String, alert: Alert?)], deliveries: [PendingDelivery],
        versions: [String: VersionStep] = [:], receipts: [AlertID: ReceiptRecord] = [:]
    ) {
        self.receipts = receipts
        self.value = value
        self.change = change
        self.displays = displays
        self.deliveries = deliveries
        self.versions = versions
    }
}

/// A client's version before and after a transaction of a shared store.
public struct VersionStep: Sendable, Hashable {
    public var from: Int64?
    public var to: Int64

    public init(from: Int64?, to: Int64) {
        self.from = from
        self.to = to
    }
}

/// A client's displayed alert as another process committed it, as the API shows it.
public struct PublishedDisplay: Sendable, Hashable {
    public var client: String
    public var version: Int64
    /// The displayed alert's id; nil: none.
    public var id: AlertID?
    /// The displayed alert as `GET …/current` answers it (``Alert/json(position:)`` at 0).
    public var body: [UInt8]?
    /// The displayed alert's votes (§10): 0 when none, or none displayed.
    public var votes: Int

    public init(client: String, version: Int64, id: AlertID?, body: [UInt8]?, votes: Int = 0) {
        self.client = client
        self.version = version
        self.id = id
        self.body = body
        self.votes = votes
    }
}

/// A client's displayed alert as committed, with the client's version it belongs to.
public struct VersionedDisplay: Sendable {
    public var client: String
    public var alert: Alert?
    /// nil: the client does not exist (any more).
    public var version: Int64?

    public init(client: String, alert: Alert?, version: Int64?) {
        self.client = client
        self.alert = alert
        self.version = version
    }
}

extension AlertStore {
    /// A transaction of `client`'s queue alone.
    public func transact<Value: Sendable>(
        client: String, now: Timestamp, idempotencyKey: String?,
        _ body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>
    ) async throws(EngineError) -> Committed<Value> {
        try await transact(client: client, others: [], now: now, idempotencyKey: idempotencyKey, readingWebhooks: false, body)
    }

    /// A transaction whose body does not ask for the webhooks as committed.
    public func transact<Value: Sendable>(
        client: String, others: [String], now: Timestamp, idempotencyKey: String?,
        _ body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>
    ) async throws(EngineError) -> Committed<Value> {
        try await transact(client: client, others: others, now: now, idempotencyKey: idempotencyKey, readingWebhooks: false, body)
    }

    /// An alert as its own client holds it.
    public func alert(_ id: AlertID) async throws(EngineError) -> PositionedAlert? { try await alert(id, on: nil) }

    /// One process: every commit is published as it commits, so what is published is current.
    public func refreshDisplays(_ known: [(client: String, version: Int64?)]) async throws(EngineError) -> [VersionedDisplay] { [] }

    /// One process: its registry holds every change of the webhooks.
    public func webhooksIfChangedElsewhere() async throws(EngineError) -> [Webhook]? { nil }
}

/// Which terminal alerts a purge keeps (`alerts.retention`, `retention_max`,
/// `retention_max_bytes_per_client`, `retention_max_bytes`). A terminal alert's bytes are
/// its stored `size`: the alert as rendered (``AlertdCore/Alert/renderedFootprint``) and
/// the bodies of its events.
public struct Retention: Sendable, Hashable {
    /// Alerts decided before this go.
    public var decidedBefore: Timestamp
    /// Receipts of alerts decided before this go (`receipts.retention`, apart from the alerts'
    /// own), oldest first: what is kept is always the chain from some `seq` to its head.
    /// nil: every receipt is kept.
    public var receiptsDecidedBefore: Timestamp?
    /// Each client keeps at most its newest this many (by id: the order its list pages in).
    public var keepPerClient: Int
    /// Each client keeps its newest alerts (by id) up to this many bytes.
    public var maxBytesPerClient: Int
    /// Every client together keeps at most this many bytes: beyond it the oldest decided go first.
    public var maxBytes: Int

    public init(
        decidedBefore: Timestamp, keepPerClient: Int = .max, maxBytesPerClient: Int = .max, maxBytes: Int = .max,
        receiptsDecidedBefore: Timestamp? = nil
    ) {
        self.decidedBefore = decidedBefore
        self.receiptsDecidedBefore = receiptsDecidedBefore
        self.keepPerClient = keepPerClient
        self.maxBytesPerClient = maxBytesPerClient
        self.maxBytes = maxBytes
    }
}

extension AlertStore {
    public var quorumRefusal: String? { nil }

    /// ``purge(_:keysBefore:)`` by age and count only.
    public func purge(decidedBefore: Timestamp, keepPerClient: Int, keysBefore: Timestamp) async throws(EngineError) -> [String] {
        try await purge(Retention(decidedBefore: decidedBefore, keepPerClient: keepPerClient), keysBefore: keysBefore)
    }
}
