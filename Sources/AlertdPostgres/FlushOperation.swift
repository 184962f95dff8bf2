import AlertdCore
import AlertdEngine
import AlertdReceipts
import AlertdWire

// What a flush (``Flushes``) takes and hands back: one change of a client's queue, and what
// it did once applied and committed.

extension Flushes {
    /// One change of one client's queue (and of the clients an alert it changes is also
    /// pending on, SPEC §12: ``others``).
    struct Operation: Sendable, FlushQueueable {
        let client: String
        /// More clients held whole with ``client``: an alert pending on several is changed
        /// in a transaction that holds them all.
        let others: [String]
        let now: Timestamp
        let idempotencyKey: String?
        /// Its body asks for the API's webhooks of its clients as committed: the flush reads
        /// them with the queues (``Read``).
        var readingWebhooks = false
        /// Values of `alert_order` it takes: one a post, one an escalation step.
        let sequences: Int
        /// Flushes that found its client held by another instance and left it for the next:
        /// once it has been, its next flush waits for the lock instead.
        var deferrals = 0
        /// Runs on the board; nil when the body refused (its completion has been called).
        let apply: @Sendable (inout AlertBoard, any TransactionContext) -> Applied?
        /// Tells the caller the transaction failed before the change was applied.
        let fail: @Sendable (EngineError) -> Void

        /// Every client it holds: ``client`` first.
        var clients: [String] { others.isEmpty ? [client] : [client] + others.filter { $0 != client } }

        /// A transaction of the port.
        init<Value: Sendable>(
            client: String, others: [String] = [], now: Timestamp, idempotencyKey: String?, readingWebhooks: Bool = false,
            body: @escaping @Sendable (inout AlertBoard, any TransactionContext) throws(EngineError) -> Mutation<Value>,
            completion: @escaping @Sendable (Result<Committed<Value>, EngineError>) -> Void
        ) {
            self.client = client
            self.others = others
            self.now = now
            self.idempotencyKey = idempotencyKey
            self.readingWebhooks = readingWebhooks
            self.sequences = 1
            fail = { completion(.failure($0)) }
            apply = { board, keys in
                let mutation: Mutation<Value>
                do throws(EngineError) {
                    mutation = try body(&board, keys)
                } catch {
                    completion(.failure(error))
                    return nil
                }
                let deliveries = mutation.events.flatMap(\.pendingDeliveries)
                return Applied(change: mutation.change, idempotency: mutation.idempotency, events: mutation.events) { result in
                    completion(
                        result.map { published in
                            var committed = Committed(
                                mutation.value, change: mutation.change, displays: published.displays, deliveries: deliveries,
                                versions: published.versions)
                            published.attach(to: &committed, events: mutation.events)
                            return committed
                        })
                }
            }
        }

        /// The client's due deadlines (or, `fire` false, only its queue brought in line
        /// with its policy), with the events of what they decided. `others`: the clients its
        /// due alerts are also pending on, or escalate to (SPEC §12); `sequences`: one per
        /// step due, at least one.
        init(
            client: String, others: [String] = [], sequences: Int = 1, now: Timestamp,
            firing events: @escaping @Sendable (BoardChange) -> [OutboxEvent],
            completion: @escaping @Sendable (Result<Committed<Void>, EngineError>) -> Void, fire: Bool = true
        ) {
            self.client = client
            self.others = others
            self.now = now
            self.idempotencyKey = nil
            self.sequences = max(1, sequences)
            fail = { completion(.failure($0)) }
            apply = { board, _ in
                let change = fire ? board.fireDeadlines(now: now) : BoardChange()
                let written = events(change)
                let deliveries = written.flatMap(\.pendingDeliveries)
                return Applied(change: change, idempotency: nil, events: written) { result in
                    completion(
                        result.map { published in
                            var committed = Committed(
                                (), change: change, displays: published.displays, deliveries: deliveries, versions: published.versions)
                            published.attach(to: &committed, events: written)
                            return committed
                        })
                }
            }
        }
    }

    /// What an operation did, and how to tell its caller once committed (with the displays it changed).
    struct Applied: Sendable {
        var change: BoardChange
        var idempotency: IdempotencyRecord?
        var events: [OutboxEvent]
        var finish: @Sendable (Result<Published, EngineError>) -> Void
    }

    /// What a commit tells each of its changes: the displays it changed, the client's versions,
    /// and the receipts of the flush (SPEC §14).
    struct Published: Sendable {
        var displays: [(client: String, alert: Alert?)]
        var versions: [String: VersionStep]
        var receipts: [AlertID: ReceiptRecord] = [:]

        /// Gives `committed` the receipts of the alerts it decided, and its terminal events'
        /// deliveries carrying them.
        func attach<Value>(to committed: inout Committed<Value>, events: [OutboxEvent]) {
            guard !receipts.isEmpty else { return }
            let mine = committed.change.decided.compactMap { receipts[$0.id] }
            if !mine.isEmpty { committed.attach(mine, events: events) }
        }
    }
}
