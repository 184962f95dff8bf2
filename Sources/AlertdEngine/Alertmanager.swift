public import AlertdAlertmanager
public import AlertdCore
import AlertdWire

extension Engine {
    /// What a notification did to one of its alerts.
    public enum AlertmanagerOutcome: String, Sendable, Hashable {
        /// A new firing: an alert was posted.
        case created
        /// A firing that has its alert already — pending, or decided (acknowledged,
        /// ignored, silenced, expired): nothing new.
        case repeated
        /// Resolved: its pending alert was withdrawn.
        case withdrawn
        /// Resolved, and nothing of it was pending.
        case notPending = "not_pending"
    }

    /// One alert of a notification, and what became of it.
    public struct AlertmanagerReceipt: Sendable, Hashable {
        public var fingerprint: String
        public var status: AlertmanagerAlert.Status
        public var outcome: AlertmanagerOutcome
        /// The alertd alert of the fingerprint, if it has one.
        public var alertID: AlertID?
    }

    /// Whether `integrations.alertmanager` is configured (the receiver is on).
    public var receivesAlertmanager: Bool { settings.alertmanager != nil }

    /// The refusal of a notification while the integration is off.
    public static let alertmanagerOff = EngineError(
        .notFound, "the Alertmanager integration is off: configure integrations.alertmanager (docs/alertmanager.md)")

    /// A key record is written again when it is this old and its fingerprint is still
    /// notified, so that the purge of keys (a day old) never takes a live one.
    static let alertmanagerKeyRefreshMilliseconds: Int64 = 3_600_000

    /// Takes an Alertmanager notification for `client` (docs/alertmanager.md):
    ///
    /// - a firing alert is posted, once per firing: its fingerprint's idempotency
    ///   key (``AlertmanagerMapping/key(fingerprint:)``) records the alert made and
    ///   the firing (`startsAt`). While that alert is pending, or within the key's
    ///   day after it was decided for the same firing, repeats create nothing; a
    ///   new firing (another `startsAt`) whose alert is no longer pending gets a new one.
    /// - a resolved alert withdraws the fingerprint's pending alert, `decided_by`
    ///   ``AlertmanagerMapping/resolvedBy``.
    ///
    /// Each alert is one transaction of the client's queue, the key looked up in it,
    /// so two instances on one database, or a notification retried while the first
    /// still commits, never post one firing twice. Answers once every alert's
    /// change is committed; an alert that cannot be mapped refuses the whole
    /// notification before anything is written (`invalidAlert`, naming its field).
    /// `poster` is the receiving token's name (nil without tokens): the alerts' `posted_by`.
    public func receive(
        _ notification: AlertmanagerNotification, on client: String, by poster: String? = nil
    ) async throws(EngineError) -> [AlertmanagerReceipt] {
        guard let integration = settings.alertmanager else { throw Self.alertmanagerOff }
        var drafts: [NewAlert?] = []
        var errors: [FieldError] = []
        for (index, alert) in notification.alerts.enumerated() {
            guard alert.status == .firing else {
                drafts.append(nil)
                continue
            }
            switch AlertmanagerMapping.draft(for: alert, path: "alerts[\(index)]", settings: integration) {
            case .success(let draft): drafts.append(draft)
            case .failure(let invalid):
                errors += invalid.errors
                drafts.append(nil)
            }
        }
        guard errors.isEmpty else {
            throw EngineError(
                .invalidAlert,
                "an Alertmanager alert does not fit in an alertd alert: "
                    + (errors.count == 1 ? "1 field is invalid" : "\(errors.count) fields are invalid"), fieldErrors: errors)
        }
        if let refusal = refusal() { throw refusal }
        guard !notification.alerts.isEmpty else { return [] }
        // One transaction after another, in the notification's order: each alert joins its
        // queue in that order, and the answer comes once the last has committed.
        //
        // Not a task group with `addImmediateTask` (that started every transaction at once, in
        // order): Swift 6.3.1's optimiser miscompiles an immediate child whose closure has a
        // typed `do throws(…)`/`catch` and returns a tuple holding a `Result` with a payload.
        // The group then yields garbage or loses a result (the release build trapped here on
        // ordinary notifications, SIGILL, issue 44; the debug build never did).
        // docs/defects/immediate-child-typed-throws.swift reproduces it in 40 lines:
        // `swiftc -O` traps within a few thousand rounds, `-Onone` or `addTask` never.
        var receipts: [AlertmanagerReceipt] = []
        receipts.reserveCapacity(notification.alerts.count)
        for (alert, draft) in zip(notification.alerts, drafts) {
            receipts.append(try await take(alert, draft: draft, on: client, by: poster))
        }
        return receipts
    }

    /// One alert of a notification: one transaction of its client's queue. A resolution
    /// may withdraw an alert: its event goes to the webhooks as committed when it arrived.
    private func take(_ alert: AlertmanagerAlert, draft: NewAlert?, on client: String, by poster: String?) async throws(EngineError)
        -> AlertmanagerReceipt
    {
        // A resolution withdraws an alert that may be pending on other clients too (escalated,
        // SPEC §12): then again, in a transaction that holds them all.
        var others: [String] = []
        for _ in 0...EscalationStep.limit + 1 {
            switch try await takeOnce(alert, draft: draft, on: client, others: others, by: poster) {
            case .done(let receipt): return receipt
            case .widen(let clients):
                let more = clients.filter { $0 != client }
                // Held all along, yet refused: never loops.
                guard Set(more) != Set(others) else { break }
                others = more
                continue
            }
            break
        }
        throw EngineError(
            .unavailable, "the alert of \(alert.fingerprint) kept moving to other clients while it was withdrawn; retry",
            retryAfter: EngineError.storeRetrySeconds)
    }

    private enum Taken: Sendable {
        case done(AlertmanagerReceipt)
        /// Its alert is pending on these clients, which the transaction did not hold.
        case widen([String])
    }

    private func takeOnce(
        _ alert: AlertmanagerAlert, draft: NewAlert?, on client: String, others: [String], by poster: String?
    ) async throws(EngineError) -> Taken {
        let now = clock.now()
        let key = AlertmanagerMapping.key(fingerprint: alert.fingerprint)
        let digest = AlertmanagerMapping.firingDigest(alert)
        @Sendable func receipt(_ outcome: AlertmanagerOutcome, _ id: AlertID?) -> Taken {
            .done(AlertmanagerReceipt(fingerprint: alert.fingerprint, status: alert.status, outcome: outcome, alertID: id))
        }
        let committed = try await store.transact(
            client: client, others: others, now: now, idempotencyKey: key, readingWebhooks: alert.status == .resolved
        ) { [self] (board, context) throws(EngineError) -> Mutation<Taken> in
            let record = try context.idempotencyRecord()
            // The fingerprint's alert, while it is pending (committed or still committing).
            let pending = record.flatMap { record in board.alert(record.alertID).flatMap { $0.isPending && $0.client == client ? $0 : nil }
            }
            switch alert.status {
            case .resolved:
                guard let pending else { return Mutation(receipt(.notPending, record?.alertID), afterEarlierCommits: true) }
                guard board.holds(pending.clients) else { return Mutation(.widen(pending.clients)) }
                let change: BoardChange
                do throws(BoardError) {
                    (_, change) = try board.withdraw(pending.id, on: client, by: AlertmanagerMapping.resolvedBy, now: now)
                } catch {
                    throw EngineError(error)
                }
                let webhooks = committedWebhooks(of: [client] + others, api: context.webhooks())
                return Mutation(receipt(.withdrawn, pending.id), change: change, events: events(for: change, webhooks: webhooks))
            case .firing:
                if let record, pending != nil || (record.bodyDigest == digest && Self.isLive(record, now: now)) {
                    // A repeat. The record follows the latest firing of a pending alert (an answer
                    // then covers it) and is written again before the purge of keys could take it.
                    let stale = now.milliseconds - record.createdAt.milliseconds > Self.alertmanagerKeyRefreshMilliseconds
                    let moved = pending != nil && record.bodyDigest != digest
                    var written: IdempotencyRecord?
                    if stale || moved {
                        written = record
                        written?.createdAt = now
                        if moved { written?.bodyDigest = digest }
                    }
                    return Mutation(receipt(.repeated, record.alertID), idempotency: written, afterEarlierCommits: true)
                }
                guard let draft else { throw EngineError(.invalidAlert, "alert \(alert.fingerprint) could not be mapped") }
                let posted: Alert
                let change: BoardChange
                do throws(BoardError) {
                    (posted, change) = try board.post(draft, to: client, by: poster, now: now)
                } catch {
                    throw EngineError(error)
                }
                let written = IdempotencyRecord(client: client, key: key, alertID: posted.id, bodyDigest: digest, createdAt: now)
                return Mutation(
                    receipt(.created, posted.id), change: change, idempotency: written, events: pushEvents(for: change, now: now))
            }
        }
        published(committed)
        if case .done(let receipt) = committed.value, receipt.outcome == .created { observer.created() }
        return committed.value
    }

    /// Whether a key record still binds its client (a day, as every idempotency key).
    private static func isLive(_ record: IdempotencyRecord, now: Timestamp) -> Bool {
        record.createdAt.milliseconds > now.milliseconds - IdempotencyKey.lifetimeMilliseconds
    }
}
