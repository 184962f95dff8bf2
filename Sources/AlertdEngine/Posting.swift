import AlertdAlertmanager
import AlertdCore
import AlertdDelivery
public import AlertdWire

/// An `Idempotency-Key` as a post carries it: the key and a digest of the body.
public struct IdempotencyKey: Sendable, Hashable {
    public var key: String
    public var bodyDigest: [UInt8]

    public init(key: String, bodyDigest: [UInt8]) {
        self.key = key
        self.bodyDigest = bodyDigest
    }

    /// How long a key binds its client: a day (§4).
    public static let lifetimeMilliseconds: Int64 = 86_400_000
}

extension Engine {
    /// Why a callback target is refused before anything is stored (SPEC §5), or nil.
    ///
    /// A host that is an address literal in a `callbacks.deny` block, or a name one of its
    /// host globs matches (and `callbacks.allow` does not), is refused as it is. Any other
    /// name is looked up (``TargetLookup``, bounded in time, off libmicrohttpd's threads:
    /// the caller's task suspends) and refused when an address it resolves to is in a
    /// block that `allow` does not cover; the reason names the entry, never the address
    /// (whoever posted learns nothing of what the name resolves to beyond it). A name that
    /// does not resolve in time passes: the delivery worker checks it, and every address it
    /// resolves to, before each attempt, since DNS can change.
    public func refusedTarget(_ url: String) async -> String? {
        guard let deny = settings.callbackDeny, let target = TargetURL(url) else { return nil }
        var addresses: [IPAddress] = []
        if !deny.judgesWithoutResolving(host: target.host), let lookUp {
            addresses = await lookUp(target.host, target.port) ?? []
        }
        return deny.refusal(host: target.host, addresses: addresses).map {
            "is refused: \($0.withoutResolvedAddress) (callbacks.allow in alertd's config names exceptions)"
        }
    }

    /// A post's outcome: the alert, and whether this post created it (false: an
    /// idempotent replay of an earlier one).
    public struct Posted: Sendable {
        public var alert: PositionedAlert
        public var created: Bool
    }

    /// Posts a validated alert to a client's queue (§2, §3), idempotently when a
    /// key comes with it (§4): the same key and body within a day return the first
    /// alert and create nothing; the same key with another body is refused.
    ///
    /// The checks, the transaction's body and the reading of its outcome are synchronous
    /// functions of their own (not inlined), so that their alert-sized values live on the
    /// thread's stack: an async function keeps the values of its body in its frame, taken
    /// from the task's allocator, and with them inline this one's frame took 6.1 KiB; now
    /// 1.8 (issue 28, bench/RESULTS.md).
    ///
    /// `poster` is the posting token's name (nil without tokens): the alert's `posted_by` (§10).
    public func post(
        _ draft: NewAlert, to client: String, idempotency: IdempotencyKey?, by poster: String? = nil
    ) async throws(EngineError) -> Posted {
        try admit(draft, to: client)
        if let url = draft.callbackURL { try await admitCallback(url) }
        let now = clock.now()
        // The key is looked up in the transaction: two posts with one key can never both create.
        let committed = try await store.transact(client: client, now: now, idempotencyKey: idempotency?.key) {
            [self] (board, context) throws(EngineError) -> Mutation<PostOutcome> in
            try postMutation(draft, to: client, by: poster, idempotency: idempotency, now: now, board: &board, context: context)
        }
        switch outcome(of: committed) {
        case .posted(let posted): return posted
        case .read(let id): return try await replayRead(id, on: client)
        }
    }

    /// What refuses a post before its transaction: a callback it cannot sign or may not
    /// reach, the Alertmanager integration's reserved metadata, a store that takes no
    /// writes, a client whose receivers do not keep up.
    @inline(never)
    private func admit(_ draft: NewAlert, to client: String) throws(EngineError) {
        if draft.callbackURL != nil, settings.signingSecret == nil {
            throw EngineError(
                .invalidAlert, "1 field is invalid",
                fieldErrors: [
                    FieldError(field: "callback_url", reason: "this daemon has no callbacks.signing_secret to sign callbacks with")
                ])
        }
        if draft.metadata?[AlertmanagerMapping.metadataKey] != nil {
            // Only the receiver writes it: a button of an alert that carries it can create a
            // silence in Alertmanager (on its labels), so a plain post must not be able to.
            throw EngineError(
                .invalidAlert, "1 field is invalid",
                fieldErrors: [
                    FieldError(
                        field: "metadata.\(AlertmanagerMapping.metadataKey)",
                        reason: "is reserved for alerts of the Alertmanager integration (POST /v1/integrations/alertmanager/{client})")
                ])
        }
        if let refusal = refusal() { throw refusal }
        if (draft.quorum ?? 1) > 1, let reason = store.quorumRefusal {
            // A rolling upgrade: an older instance would answer it at its first vote. The
            // condition passes with the upgrade: 503, as for any store that cannot take it now.
            throw EngineError(.unavailable, reason, retryAfter: Self.quorumRetrySeconds)
        }
        let limit = settings.maxPendingDeliveriesPerClient
        if backlog(client) >= limit {
            // Its receivers do not keep up (or are down): its next alerts' events would only
            // add to what waits, in the outbox and in memory, for up to callbacks.max_age.
            throw EngineError(
                .queueFull,
                "client \(client) has \(limit) callback deliveries pending (callbacks.max_pending_per_client); "
                    + "posts are taken again as they are delivered or given up")
        }
    }

    /// When to post an alert with a quorum again while an instance without quorum support serves.
    static let quorumRetrySeconds = 10

    /// A `callback_url` that `callbacks.deny` refuses, by its host or by what it resolves to.
    @inline(never)
    private func admitCallback(_ url: String) async throws(EngineError) {
        if let refused = await refusedTarget(url) {
            throw EngineError(.invalidAlert, "1 field is invalid", fieldErrors: [FieldError(field: "callback_url", reason: refused)])
        }
    }

    /// A post's transaction, as it committed.
    enum PostOutcome: Sendable {
        /// The alert as this transaction committed it, and its position.
        case created(PositionedAlert)
        /// The key's first alert: answered once everything before it, its own post included, is
        /// committed; as the board holds it, when it does (no read of the store: a burst of
        /// retries must not take a connection each, issue 29).
        case replay(AlertID, PositionedAlert?)
    }

    /// The body of a post's transaction: the key's first alert when the key is known
    /// (the same body) or refused (another), else the alert posted on the board.
    @inline(never)
    private func postMutation(
        _ draft: NewAlert, to client: String, by poster: String?, idempotency: IdempotencyKey?, now: Timestamp, board: inout AlertBoard,
        context: any TransactionContext
    ) throws(EngineError) -> Mutation<PostOutcome> {
        if let idempotency, let record = try context.idempotencyRecord(),
            record.createdAt.milliseconds > now.milliseconds - IdempotencyKey.lifetimeMilliseconds
        {
            guard record.bodyDigest == idempotency.bodyDigest else {
                throw EngineError(.idempotencyMismatch, "Idempotency-Key \(idempotency.key) was used for a different body")
            }
            let held = board.alert(record.alertID).map { PositionedAlert($0, position: board.position(of: $0)) }
            return Mutation(.replay(record.alertID, held), afterEarlierCommits: true)
        }
        let alert: Alert
        let change: BoardChange
        do throws(BoardError) {
            (alert, change) = try board.post(draft, to: client, by: poster, now: now)
        } catch {
            throw EngineError(error)
        }
        let record = idempotency.map {
            IdempotencyRecord(client: client, key: $0.key, alertID: alert.id, bodyDigest: $0.bodyDigest, createdAt: now)
        }
        // A post that displays its alert pushes it to the client's subscriptions (SPEC §11).
        return Mutation(
            .created(PositionedAlert(alert, position: board.position(of: alert))), change: change, idempotency: record,
            events: pushEvents(for: change, now: now))
    }

    private enum PostAnswer {
        case posted(Posted)
        /// A replay whose alert the board no longer holds: read it.
        case read(AlertID)
    }

    /// Publishes what a post committed and says what it answers.
    @inline(never)
    private func outcome(of committed: Committed<PostOutcome>) -> PostAnswer {
        published(committed)
        switch committed.value {
        case .created(let alert):
            observer.created()
            return .posted(Posted(alert: alert, created: true))
        case .replay(_, let held?):
            return .posted(Posted(alert: held, created: false))
        case .replay(let id, nil):
            return .read(id)
        }
    }

    /// A replay's alert, read from the store (the board forgot it).
    @inline(never)
    private func replayRead(_ id: AlertID, on client: String) async throws(EngineError) -> Posted {
        guard let found = try await lookup(id, on: client) else {
            throw EngineError(.notFound, "the alert of this Idempotency-Key is gone (purged)")
        }
        return Posted(alert: found, created: false)
    }
}
