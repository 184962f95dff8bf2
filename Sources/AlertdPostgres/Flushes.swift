import AlertdCore
import AlertdEngine
import AlertdReceipts
import AlertdWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

// Over 400 lines on purpose: one flush's transaction, in the order it runs (locks, read,
// apply, write, publish, recover); its rules (FlushQueue.swift), statements
// (FlushStatements.swift) and operations (FlushOperation.swift) are files of their own.

/// Group commit across clients: every change waiting in this instance, of any
/// client, goes into one transaction (a flush), as the embedded store's
/// `GroupCommitter` does. A flush costs the same five round trips, and a sixth
/// for its notification after its commit, however many changes and clients it
/// holds:
///
/// 1. `BEGIN`;
/// 2. its clients' advisory locks, tried without waiting (``TryLock``): the
///    clients another instance holds now are left for the next flush, so a
///    flush never holds some clients while it waits for others (no convoy of
///    instances queueing behind each other). A flush with a change left before,
///    or whose clients are all held, waits instead, for every lock in one order
///    (by lock key) in every instance, holding none before (``Lock``): no
///    deadlock, and no change is left forever. A flush of one client waits for
///    it at once: trying first would only add a round trip when it is held
///    (two instances posting to one client: every other flush). Then one value
///    of `alert_order` per change, drawn under the locks;
/// 3. in a statement of its own, so its snapshot sees every commit the locks
///    waited for: each client's version, what changed since this instance's
///    copy of its queue (or the whole pending queue when it has none), the
///    idempotency keys the changes name, and the API's webhooks of the clients a
///    decision is on (its targets as committed, SPEC §9) (``Read``);
/// 4. when it decides alerts, the chain of receipts' head, locked (``ChainHead``): the
///    receipts are signed after it, in this instance, and their events carry them (SPEC §14);
/// 5. every write (clients' versions, alerts, idempotency keys, events,
///    deliveries, receipts and the chain's new head) in one statement (``Write``);
/// 6. `COMMIT`;
///
/// and after it, outside the transaction, one statement with its notification
/// (``notify(_:store:)`` says why outside).
///
/// The three statements are prepared once per connection; their functions are
/// named with their schema (`pg_catalog.`), so that a function of the same name
/// that another role created in a schema on the search path never runs in
/// them (issue 27 item 7). At most
/// ``flights`` flushes run at once, on disjoint clients: a client already in
/// a flush waits for the next one, so a client's changes commit in order.
final class Flushes: BatchRunner {
    /// What a flush did with one of its operations, for telling it when the flush fails.
    private enum Outcome: Sendable {
        /// Not reached: the operation is told the failure.
        case waiting
        /// Its body refused: its caller has its answer already.
        case refused
        case applied(Applied)
        /// Its client was held elsewhere: it goes in the next flush.
        case deferred
    }

    /// Which changes go in which flush, and when (``FlushQueue``: the rules, tested on their own).
    private let queue = Batcher(FlushQueue<Operation>(flights: Flushes.flights, batch: Flushes.batch))

    /// A client's queue as this instance last committed it: reused while the
    /// client's version is unchanged, brought up to date in place from the alerts
    /// of newer versions when another instance changed it. Only queues with
    /// something pending are kept (so at most `limits.max_pending_total` alerts in all).
    private struct Queue: Sendable {
        var version: Int64?
        var settings: QueueSettings
        var board: AlertBoard
        var pending: [AlertID: Alert]
    }

    private let queues = NIOLockedValueBox<[String: Queue]>([:])
    private let logger: Logger
    /// Set once, right after the store is made (it owns the flushes).
    nonisolated(unsafe) weak var store: PostgresAlertStore?

    /// Flushes in flight at once, on disjoint clients. Two let one commit while the
    /// next gathers and locks; more only take connections from readers.
    static let flights = 2
    /// Changes in one flush at most.
    static let batch = 1024

    private let onFlush: @Sendable (PostgresAlertStore.FlushCost) -> Void

    init(logger: Logger, onFlush: @escaping @Sendable (PostgresAlertStore.FlushCost) -> Void) {
        self.logger = logger
        self.onFlush = onFlush
    }

    func enqueue(_ operation: Operation) {
        queue.enqueue(operation, to: self)
    }

    var batchJobs: Jobs? { store?.jobs }

    /// Fails the changes of a flush that will not run: the store is gone or stopping.
    func refuse(_ flush: [Operation]) {
        for operation in flush { operation.fail(EngineError.stopping) }
    }

    /// Runs a flush; its notification is sent once the next flushes have started.
    func run(_ flush: [Operation]) async -> BatchEnd<Operation> {
        guard let store else {
            refuse(flush)
            return BatchEnd()
        }
        let left = await run(flush, store: store)
        let notices = left.notices
        guard !notices.isEmpty else { return BatchEnd(left: left.deferred) }
        return BatchEnd(left: left.deferred) { [self] in await notify(notices, store: store) }
    }

    /// The idempotency keys of a change: those its flush wrote first, then those the database
    /// holds; and the API's webhooks of its slot's clients when it asked for them.
    private struct Keys: TransactionContext {
        let client: String
        let key: String?
        let records: [KeyRef: IdempotencyRecord]
        let hooks: [Webhook]?

        func idempotencyRecord() throws(EngineError) -> IdempotencyRecord? {
            key.flatMap { records[KeyRef(client: client, key: $0)] }
        }

        func webhooks() -> [Webhook]? { hooks }
    }

    /// An idempotency key of a client.
    private struct KeyRef: Hashable {
        var client: String
        var key: String
    }

    /// The clients of a flush held on one board, and their changes (indices into the
    /// flush): one client, or several when a change holds several (an alert pending on
    /// several, SPEC §12), with every change of any of them.
    private struct Slot {
        /// Its clients, the first one's first.
        var clients: [String]
        var operations: [Int] = []
        /// Per client, the version the read asks from: the cached copy's, -1 for the whole
        /// pending queue (always, for a slot of several clients: it is not cached).
        var since: [String: Int64] = [:]
        /// Per client, its version in the database; absent when it has no row.
        var versions: [String: Int64] = [:]
        /// Alerts of versions newer than the cached copy (or the pending queues, without one),
        /// each once.
        var read: [Alert] = []
        var readIDs = Set<AlertID>()
        var records: [KeyRef: IdempotencyRecord] = [:]
        /// The API's webhooks of its clients, read when one of its changes asked for them.
        var webhooks: [Webhook] = []

        /// Held with a cache: a slot of one client.
        var isCached: Bool { clients.count == 1 }
    }

    /// What a flush hands back for each client once committed.
    private struct ClientResult: Sendable {
        var client: String
        var shown: Alert?
        var queue: Queue?
        var step: VersionStep?
    }

    /// What a flush leaves to do: the changes for the next one (their clients were held by
    /// another instance, each counted as deferred once more), and its notification.
    private struct Left: Sendable {
        var deferred: [Operation] = []
        var notices: [String] = []
    }

    /// Runs a flush: one transaction for its clients (``commit(_:slots:store:outcomes:roundTrips:notices:)``),
    /// then each change told its outcome (``publish(_:results:outcomes:cost:)``), or, when
    /// the transaction failed, ``recover(_:from:store:outcomes:slots:)``.
    private func run(_ flush: [Operation], store: PostgresAlertStore) async -> Left {
        let outcomes = NIOLockedValueBox<[Outcome]>(Array(repeating: .waiting, count: flush.count))
        let slots = Self.slots(of: flush)
        let started = DispatchTime.now().uptimeNanoseconds
        // BEGIN, the locks, the read, COMMIT; the write and a second read when they run.
        let roundTrips = NIOLockedValueBox(4)
        // The notification's payloads, sent once the flush committed.
        let notices = NIOLockedValueBox<[String]>([])
        // The receipts the flush signed (SPEC §14).
        let signed = NIOLockedValueBox<[AlertID: ReceiptRecord]>([:])
        let results: [ClientResult]
        do {
            results = try await commit(
                flush, slots: slots, store: store, outcomes: outcomes, roundTrips: roundTrips, notices: notices, signed: signed)
        } catch {
            return await recover(flush, from: error, store: store, outcomes: outcomes.withLockedValue { $0 }, slots: slots)
        }
        let sent = notices.withLockedValue { $0 }
        let cost = (roundTrips: roundTrips.withLockedValue { $0 } + (sent.isEmpty ? 0 : 1), started: started)
        var left = publish(
            flush, results: results, outcomes: outcomes.withLockedValue { $0 }, receipts: signed.withLockedValue { $0 }, cost: cost)
        left.notices = sent
        return left
    }

    /// The flush's operations by slot: clients that share a change share a slot (most
    /// slots are one client); slots in the order of their first operation.
    private static func slots(of flush: [Operation]) -> [Slot] {
        // Union-find over clients: a change of several joins their slots.
        var parent: [String: String] = [:]
        func root(_ client: String) -> String {
            var at = client
            while let up = parent[at], up != at { at = up }
            return at
        }
        for operation in flush {
            let clients = operation.clients
            for client in clients where parent[client] == nil { parent[client] = client }
            let first = root(clients[0])
            for client in clients.dropFirst() {
                let other = root(client)
                if other != first { parent[other] = first }
            }
        }
        var order: [String: Int] = [:]
        var slots: [Slot] = []
        for (index, operation) in flush.enumerated() {
            let key = root(operation.client)
            let at =
                order[key]
                ?? {
                    slots.append(Slot(clients: []))
                    order[key] = slots.count - 1
                    return slots.count - 1
                }()
            slots[at].operations.append(index)
            for client in operation.clients where !slots[at].clients.contains(client) { slots[at].clients.append(client) }
        }
        return slots
    }

    /// The flush's transaction: its clients' locks (those held elsewhere left for the next
    /// flush), their queues brought up to date, every change applied, and one write.
    private func commit(
        _ flush: [Operation], slots prepared: [Slot], store: PostgresAlertStore, outcomes: NIOLockedValueBox<[Outcome]>,
        roundTrips: NIOLockedValueBox<Int>, notices: NIOLockedValueBox<[String]>, signed: NIOLockedValueBox<[AlertID: ReceiptRecord]>
    ) async throws -> [ClientResult] {
        let settings = store.settings.withLockedValue { $0 }
        // A flush tries its clients' locks without waiting, commits those it got and leaves the
        // others for the next flush; one with a change left before waits for every lock, and so
        // does one of a single client (held elsewhere, it would wait after the try anyway).
        let waits = flush.contains { $0.deferrals > 0 } || (prepared.count == 1 && prepared[0].clients.count == 1)
        let count = flush.reduce(0) { $0 + $1.sequences }
        return try await store.client.withTransaction(logger: logger) { [logger, queues] connection in
            var slots = prepared
            let names = slots.flatMap(\.clients)
            var sequences: [Int64]
            var held: Set<String>
            if waits {
                sequences = try await Self.lock(names, count: count, on: connection, logger: logger)
                held = Set(names)
            } else {
                (held, sequences) = try await Self.tryLock(names, count: count, on: connection, logger: logger)
                if held.isEmpty {
                    // Every client is held elsewhere: waiting, holding none, cannot deadlock.
                    sequences = try await Self.lock(names, count: count, on: connection, logger: logger)
                    held = Set(names)
                    roundTrips.withLockedValue { $0 += 1 }
                }
            }
            // A slot goes whole or not at all: one of its clients held elsewhere defers it.
            let deferred = slots.filter { !$0.clients.allSatisfy(held.contains) }
            if !deferred.isEmpty {
                outcomes.withLockedValue { outcomes in
                    for slot in deferred {
                        for index in slot.operations { outcomes[index] = .deferred }
                    }
                }
                slots.removeAll { !$0.clients.allSatisfy(held.contains) }
            }
            // Taken out of the cache, and moved, never copied, from here to the board that
            // changes: a copy still referenced would copy every alert of the queue at the
            // first change (measured: most of a flush's time with a long queue). A slot of
            // several clients reads their queues whole and is not cached: their copies go.
            var taken = queues.withLockedValue { queues in
                var taken: [String: Queue] = [:]
                for slot in slots {
                    for client in slot.clients {
                        if let queue = queues.removeValue(forKey: client), slot.isCached, queue.settings == settings {
                            taken[client] = queue
                        }
                    }
                }
                return taken
            }
            for index in slots.indices {
                for client in slots[index].clients { slots[index].since[client] = taken[client]?.version ?? -1 }
            }
            if try await Self.read(&slots, flush: flush, on: connection, logger: logger) {
                roundTrips.withLockedValue { $0 += 1 }
            }
            for slot in slots { for client in slot.clients where slot.since[client, default: -1] < 0 { taken[client] = nil } }
            var results: [ClientResult] = []
            var writes = Write(instance: store.instance)
            var grown = (pending: 0, clients: 0, bytes: 0)
            var drawn = sequences[...]
            for slot in slots {
                let mine = slot.operations.reduce(0) { $0 + flush[$1].sequences }
                let values = Array(drawn.prefix(mine))
                drawn = drawn.dropFirst(mine)
                results += Self.apply(
                    slot, cached: slot.isCached ? taken.removeValue(forKey: slot.clients[0]) : nil, flush: flush, sequences: values,
                    settings: settings, store: store, grown: &grown, writes: &writes, outcomes: outcomes)
            }
            if !writes.decided.isEmpty {
                // The chain's head, locked to this transaction's end: the receipts are signed here,
                // after every other instance's that committed before, and before any that waits.
                var chain = ReceiptChain(key: store.receiptKey, head: try await Self.chainHead(on: connection, logger: logger))
                roundTrips.withLockedValue { $0 += 1 }
                var records: [AlertID: ReceiptRecord] = [:]
                for alert in writes.decided {
                    let record = ReceiptRecord(try chain.append(try ReceiptDraft(decided: alert)), of: alert)
                    records[alert.id] = record
                    writes.receipts.append(record)
                }
                writes.head = chain.head
                writes.events = writes.events.map { $0.attaching(receipts: records) }
                signed.withLockedValue { $0 = records }
            }
            if !writes.isEmpty {
                notices.withLockedValue { $0 = store.notifications.sealed(writes.entries) }
                // Read to its end: an error of a statement that returns rows comes with them, and
                // one left unread let COMMIT end the failed transaction as a ROLLBACK, silently.
                for try await _ in try await connection.execute(writes, logger: logger) {}
                roundTrips.withLockedValue { $0 += 1 }
            }
            return results
        }
    }

    /// After a failed transaction: nothing of it committed. A change whose data the database
    /// refused (not its own failure) is found by running each client's changes again in a
    /// flush of their own, then each change alone, so that only the change at fault fails;
    /// any other failure fails every change the flush reached.
    private func recover(
        _ flush: [Operation], from error: any Error, store: PostgresAlertStore, outcomes reached: [Outcome], slots: [Slot]
    ) async -> Left {
        let deferred = Self.deferred(flush, reached)
        queues.withLockedValue { queues in
            for slot in slots {
                for client in slot.clients where !deferred.contains(where: { $0.clients.contains(client) }) { queues[client] = nil }
            }
        }
        // Those refused already have their answer; the others never had theirs.
        let again = flush.indices.filter {
            switch reached[$0] {
            case .refused, .deferred: false
            case .waiting, .applied: true
            }
        }.map { flush[$0] }
        if PostgresAlertStore.requestFault(error) != nil, again.count > 1 {
            var left = Left(deferred: deferred)
            let byClient = Dictionary(grouping: again.indices, by: { again[$0].client }).values.sorted { $0[0] < $1[0] }
            for group in byClient.count > 1 ? byClient : again.indices.map({ [$0] }) {
                let part = await run(group.map { again[$0] }, store: store)
                left.deferred += part.deferred
                left.notices += part.notices
            }
            return left
        }
        let failure = store.unavailable(error)
        for (index, outcome) in reached.enumerated() {
            switch outcome {
            case .waiting: flush[index].fail(failure)
            case .refused, .deferred: break
            case .applied(let applied): applied.finish(.failure(failure))
            }
        }
        return Left(deferred: deferred)
    }

    /// After the commit: the queues back in the cache, the flush's cost told, and each change
    /// told the displays it changed, as they stand at commit, and its clients' versions (the
    /// engine's published display then has them too).
    private func publish(
        _ flush: [Operation], results: [ClientResult], outcomes reached: [Outcome], receipts: [AlertID: ReceiptRecord],
        cost: (roundTrips: Int, started: UInt64)
    ) -> Left {
        queues.withLockedValue { queues in for result in results { queues[result.client] = result.queue } }
        let deferred = Self.deferred(flush, reached)
        onFlush(
            PostgresAlertStore.FlushCost(
                changes: flush.count - deferred.count, roundTrips: cost.roundTrips,
                nanoseconds: DispatchTime.now().uptimeNanoseconds - cost.started))
        var shown: [String: Alert?] = [:]
        var versions: [String: VersionStep] = [:]
        for result in results {
            shown[result.client] = .some(result.shown)
            versions[result.client] = result.step
        }
        for (index, outcome) in reached.enumerated() {
            guard case .applied(let change) = outcome else { continue }
            let displays = change.change.displayChanged.map { (client: $0, alert: shown[$0] ?? nil) }
            var steps: [String: VersionStep] = [:]
            for client in flush[index].clients + change.change.displayChanged { steps[client] = versions[client] }
            change.finish(.success(Published(displays: displays, versions: steps, receipts: receipts)))
        }
        return Left(deferred: deferred)
    }

    /// Tells the other instances what a flush committed: after its COMMIT, in a statement of
    /// its own. A transaction that NOTIFYs holds a lock of the whole database from its
    /// commit's start to its end, fsync included, so every alertd commit that notified was
    /// serialised with every other: instances over many clients made no more commits than
    /// one alone. Outside, the notification takes that lock for a commit with nothing to
    /// flush to disk. Should the process die between the two, the others learn of the
    /// commit at their next read of those clients (reads check versions, SPEC §9), and a
    /// long-poll parked there when its wait runs out.
    private func notify(_ payloads: [String], store: PostgresAlertStore) async {
        do {
            try await store.client.query(
                """
                SELECT pg_catalog.count(pg_catalog.pg_notify(\(Notifications.channel), payload))
                FROM pg_catalog.unnest(\(payloads)::text[]) AS payload
                """, logger: logger)
        } catch {
            logger.warning(
                "a commit was not notified; other instances see it at their next read",
                metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// The changes a flush left for the next one, each counted as deferred once more.
    private static func deferred(_ flush: [Operation], _ outcomes: [Outcome]) -> [Operation] {
        flush.indices.compactMap { index in
            guard case .deferred = outcomes[index] else { return nil }
            var operation = flush[index]
            operation.deferrals += 1
            return operation
        }
    }

    /// Tries the clients' locks without waiting, then draws `count` values of `alert_order`:
    /// the clients it holds now, and the values.
    private static func tryLock(_ clients: [String], count: Int, on connection: PostgresConnection, logger: Logger) async throws
        -> (Set<String>, [Int64])
    {
        var held: [String] = []
        var sequences: [Int64] = []
        for try await (got, values) in try await connection.execute(TryLock(clients: clients, count: count), logger: logger) {
            held = got
            sequences = values
        }
        guard sequences.count == count else {
            throw AlertRow.Corrupt(description: "alert_order gave \(sequences.count) of \(count) values")
        }
        return (Set(held), sequences.sorted())
    }

    /// Takes the clients' locks, in one order everywhere, then draws `count` values of `alert_order`.
    private static func lock(_ clients: [String], count: Int, on connection: PostgresConnection, logger: Logger) async throws -> [Int64] {
        var sequences: [Int64] = []
        for try await values in try await connection.execute(Lock(clients: clients, count: count), logger: logger) {
            sequences = values
        }
        guard sequences.count == count else {
            throw AlertRow.Corrupt(description: "alert_order gave \(sequences.count) of \(count) values")
        }
        return sequences.sorted()
    }

    /// Fills each slot with its clients' versions, what changed since its copy, and its
    /// idempotency keys; true when that took a second statement (a cached copy newer than
    /// the database).
    private static func read(_ slots: inout [Slot], flush: [Operation], on connection: PostgresConnection, logger: Logger) async throws
        -> Bool
    {
        var at: [String: Int] = [:]
        var clients: [String] = []
        var since: [Int64] = []
        for (index, slot) in slots.enumerated() {
            for client in slot.clients {
                at[client] = index
                clients.append(client)
                since.append(slot.since[client, default: -1])
            }
        }
        var keyClients: [String] = []
        var keys: [String] = []
        var asked = Set<[String]>()
        for operation in flush {
            guard let key = operation.idempotencyKey, asked.insert([operation.client, key]).inserted else { continue }
            keyClients.append(operation.client)
            keys.append(key)
        }
        // The clients whose webhooks a change asked for (a decision's targets, SPEC §9).
        var hookClients = Set<String>()
        for operation in flush where operation.readingWebhooks { hookClients.formUnion(operation.clients) }
        let statement = Read(clients: clients, since: since, keyClients: keyClients, keys: keys, hookClients: Array(hookClients))
        for try await row in try await connection.execute(statement, logger: logger) {
            let cells = row.makeRandomAccess()
            let client = try cells[0].decode(String.self)
            guard let index = at[client] else { continue }
            if let id = try cells[6].decode(String?.self) {
                slots[index].webhooks.append(
                    Webhook(
                        id: id, client: client, url: try cells[7].decode(String.self), secret: try cells[8].decode(String.self),
                        createdAt: Timestamp(milliseconds: try cells[5].decode(Int64.self)), source: .api))
                continue
            }
            if let key = try cells[2].decode(String?.self) {
                guard let alertID = AlertID(try cells[3].decode(String.self)) else { continue }
                slots[index].records[KeyRef(client: client, key: key)] = IdempotencyRecord(
                    client: client, key: key, alertID: alertID,
                    bodyDigest: [UInt8](bytea: try cells[4].decode(ByteBuffer.self)),
                    createdAt: Timestamp(milliseconds: try cells[5].decode(Int64.self)))
                continue
            }
            if let version = try cells[1].decode(Int64?.self) { slots[index].versions[client] = version }
            if try cells[Read.alertColumn].decode(String?.self) != nil {
                let alert = try AlertRow.alert(cells, from: Read.alertColumn)
                if slots[index].readIDs.insert(alert.id).inserted { slots[index].read.append(alert) }
            }
        }
        // A cached copy newer than the database (the client was removed since): its queue read whole.
        let stale = slots.indices.filter { index in
            slots[index].isCached && slots[index].since[slots[index].clients[0], default: -1] >= 0
                && (slots[index].versions[slots[index].clients[0]] ?? -1) < slots[index].since[slots[index].clients[0], default: -1]
        }
        guard !stale.isEmpty else { return false }
        for index in stale {
            slots[index].since[slots[index].clients[0]] = -1
            slots[index].read = []
            slots[index].readIDs = []
        }
        let names = stale.map { slots[$0].clients[0] }
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: AlertRow.columns), alerts.client FROM alerts
            WHERE client = ANY(\(names)) AND state IN ('queued', 'displayed')
            UNION ALL
            SELECT \(unescaped: AlertRow.columns), x.client FROM escalations x JOIN alerts ON alerts.id = x.alert_id
            WHERE x.client = ANY(\(names)) AND alerts.state IN ('queued', 'displayed')
            """,
            logger: logger)
        {
            let alert = try AlertRow.alert(row)
            let client = try row.makeRandomAccess()[AlertRow.names.count].decode(String.self)
            if let index = at[client], slots[index].readIDs.insert(alert.id).inserted { slots[index].read.append(alert) }
        }
        return true
    }

    /// Runs a slot's changes on its board; adds their writes to the flush's. A slot of one
    /// client keeps its board as that client's cached copy; one of several (an alert pending
    /// on several, SPEC §12) is built from their queues as committed, and not kept.
    private static func apply(
        _ slot: Slot, cached: consuming Queue?, flush: [Operation], sequences: [Int64], settings: QueueSettings, store: PostgresAlertStore,
        grown: inout (pending: Int, clients: Int, bytes: Int), writes: inout Write, outcomes: NIOLockedValueBox<[Outcome]>
    ) -> [ClientResult] {
        let client = slot.clients[0]
        let held = Set(slot.clients)
        let now = flush[slot.operations[0]].now
        var board = AlertBoard(settings: settings, rules: store.rules)
        var pending: [AlertID: Alert] = [:]
        var normalized = BoardChange()
        if var queue = cached.take() {
            // Swapped out, so that this board and dictionary are the only references.
            swap(&board, &queue.board)
            swap(&pending, &queue.pending)
            board.hold(only: held)
            if queue.version != slot.versions[client] {
                // Another instance changed the client: what it changed is merged into the cached
                // board in place, O(changed) under the lock, not the queue rebuilt.
                for alert in slot.read { pending[alert.id] = alert.isPending && alert.isOn(client) ? alert : nil }
                normalized = board.merge(committedElsewhere: slot.read, on: client, now: now)
            }
        } else {
            board.hold(only: held)
            for alert in slot.read where alert.isPending { pending[alert.id] = alert }
            // Restoring brings the queues in line with their policies (a changed one): written
            // too, and their display changes told with the first change of the slot.
            normalized = board.restore(
                clients: slot.clients.filter { slot.versions[$0] != nil }, pending: Array(pending.values), now: now)
        }
        let before = pending.count
        let elsewhere = store.elsewhere(of: client)
        board.hold(
            outside: AlertBoard.Outside(
                pending: elsewhere.pending + grown.pending, clients: elsewhere.clients + grown.clients,
                bytes: elsewhere.bytes + grown.bytes),
            sequences: sequences)
        let bytesBefore = board.pendingBytes
        var records = slot.records
        var saved: [AlertID: Alert] = [:]
        var order: [AlertID] = []
        func save(_ alerts: [Alert]) {
            for alert in alerts where saved.updateValue(alert, forKey: alert.id) == nil { order.append(alert.id) }
        }
        save(normalized.saved)
        var decided: [AlertID] = []
        var events: [OutboxEvent] = []
        var keys: [IdempotencyRecord] = []
        var told = false
        for index in slot.operations {
            let operation = flush[index]
            guard
                var change = operation.apply(
                    &board,
                    Keys(
                        client: operation.client, key: operation.idempotencyKey, records: records,
                        hooks: operation.readingWebhooks ? slot.webhooks : nil))
            else {
                outcomes.withLockedValue { $0[index] = .refused }
                continue
            }
            // Committed with the flush: a repeat of a decision is answered from the database.
            board.forgetDecided(change.change.decided.map(\.id))
            save(change.change.saved)
            decided += change.change.decided.map(\.id)
            // Each gets its receipt in this transaction (SPEC §14).
            writes.decided += change.change.decided
            events += change.events
            if let record = change.idempotency {
                let ref = KeyRef(client: record.client, key: record.key)
                records[ref] = record
                keys.removeAll { $0.client == record.client && $0.key == record.key }
                keys.append(record)
            }
            if !normalized.displayChanged.isEmpty, !told {
                change.change.displayChanged = Array(Set(change.change.displayChanged + normalized.displayChanged))
            }
            told = true
            outcomes.withLockedValue { $0[index] = .applied(change) }
        }
        // Every change of a queue is a new version of its client, its alerts marked with it:
        // a value of the global sequence drawn under the client's lock, so versions only grow,
        // even across a client forgotten and made again. A slot of several clients changes
        // them all at once: each gets the version.
        let latest = sequences.max()
        var results: [ClientResult] = []
        for member in slot.clients {
            let version = slot.versions[member]
            let written = order.isEmpty ? version : latest
            if let written, written != version { writes.clients.append((member, now, written)) }
            if let written, !order.isEmpty {
                // The display as committed goes with the notification where it fits: the
                // other instances publish it without reading it back.
                writes.entries.append("c:" + member)
                if let display = Notifications.display(client: member, version: written, alert: board.displayed(on: member)) {
                    writes.entries.append(display)
                }
            }
            results.append(
                ClientResult(
                    client: member, shown: board.displayed(on: member), queue: nil,
                    step: written.map { VersionStep(from: version, to: $0) }))
        }
        if let latest, !order.isEmpty {
            // Each alert's row is its own client's; each step's row, its client's: a slot writes
            // those of the clients it holds (an alert escalated here from a client held
            // elsewhere has its place here written, nothing else of it).
            for id in order {
                let alert = saved[id]!
                if held.contains(alert.client) { writes.alerts.append((alert, latest)) }
                for (step, escalation) in alert.escalatedTo.enumerated() where held.contains(escalation.client) {
                    writes.escalations.append((alert, step, latest))
                }
            }
            // A decided alert goes as it is where it fits (`t:`): the other instances answer its
            // waiters without reading it. `d:` too, for instances that do not know `t:` yet.
            for id in decided {
                writes.entries.append("d:" + id.description)
                if let alert = saved[id], let entry = Notifications.terminal(alert) { writes.entries.append(entry) }
            }
        }
        writes.keys += keys
        writes.events += events
        store.noteDeadline(board.nextDeadline)
        for id in order {
            let alert = saved[id]!
            pending[id] = alert.isPending ? alert : nil
        }
        grown.pending += max(0, pending.count - before)
        grown.bytes += max(0, board.pendingBytes - bytesBefore)
        if before == 0, !pending.isEmpty { grown.clients += 1 }
        if slot.isCached, !pending.isEmpty {
            results[0].queue = Queue(
                version: results[0].step?.to ?? slot.versions[client], settings: settings, board: board, pending: pending)
        }
        return results
    }
}
