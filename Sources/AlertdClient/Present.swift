import AlertdReceipts
public import AlertdWire
import Foundation
import NIOHTTP1

/// Something that presents alerts to people and awaits their answer.
///
/// ``AlertdClient`` is the real one; `AlertdClientTesting`'s `TestAlertPresenter` is a double
/// that records what was presented and answers as the test says. Code that asks people
/// takes an `any AlertPresenting`, so its tests need no daemon:
///
/// ```swift
/// struct Deployer {
///     let alerts: any AlertPresenting
///     func run(build: Int) async throws -> Bool {
///         try await alerts.present(
///             on: "ops", title: "Deploy build \(build)?", buttons: [.default("Deploy"), .cancel("Cancel")]
///         ) == .button("Deploy")
///     }
/// }
/// ```
public protocol AlertPresenting: Sendable {
    /// Presents `alert` on `client` and returns once it is terminal.
    func present(_ alert: NewAlert, on client: String) async throws -> AlertOutcome

    /// Presents `alert` on `client` and returns once it is terminal: how it ended, who decided
    /// and every vote. For an alert with a `quorum` above 1 this is where the votes are; a
    /// conformer that has none to tell (the default) returns the outcome of
    /// ``present(_:on:)`` with no votes.
    func presentForDecision(_ alert: NewAlert, on client: String) async throws -> AlertDecision
}

extension AlertPresenting {
    /// The outcome of ``present(_:on:)``, without votes: for a presenter that knows no more.
    public func presentForDecision(_ alert: NewAlert, on client: String) async throws -> AlertDecision {
        AlertDecision(outcome: try await present(alert, on: client))
    }
}

extension AlertPresenting {
    /// Presents an alert built from its parts; see ``NewAlert`` for each field's rules.
    ///
    /// ```swift
    /// let answer = try await alerts.present(
    ///     on: "ops", title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")])
    /// ```
    public func present(
        on client: String, title: String, message: String? = nil, style: AlertStyle? = nil, buttons: [Button] = [],
        priority: Int? = nil, expiresIn: Double? = nil, dismissAfter: Double? = nil, metadata: JSONObject? = nil
    ) async throws -> AlertOutcome {
        try await present(
            NewAlert(
                title: title, message: message, style: style, buttons: buttons, priority: priority, expiresIn: expiresIn,
                dismissAfter: dismissAfter, metadata: metadata),
            on: client)
    }

    /// Presents an alert that `quorum` different people must agree on (SPEC §10) and returns
    /// the decision with its votes. Above 1, `quorum` needs buttons and a daemon with tokens:
    /// each token's name is one decider. One `cancel`-style vote stops it at once.
    ///
    /// ```swift
    /// let decision = try await alerts.present(
    ///     on: "ops", title: "Deploy build 1234 to production?",
    ///     buttons: [.default("Deploy"), .cancel("Cancel")], quorum: 2)
    /// switch decision.outcome {
    /// case .button("Deploy"): try await deploy(approvedBy: decision.chosenBy)   // ["alice", "bob"]
    /// case .cancel: print("stopped by \(decision.decidedBy ?? "someone")")
    /// default: print("no decision: \(decision.outcome)")
    /// }
    /// ```
    public func present(
        on client: String, title: String, message: String? = nil, style: AlertStyle? = nil, buttons: [Button] = [],
        priority: Int? = nil, expiresIn: Double? = nil, dismissAfter: Double? = nil, metadata: JSONObject? = nil,
        quorum: Int
    ) async throws -> AlertDecision {
        try await presentForDecision(
            NewAlert(
                title: title, message: message, style: style, buttons: buttons, priority: priority, expiresIn: expiresIn,
                dismissAfter: dismissAfter, metadata: metadata, quorum: quorum),
            on: client)
    }

    /// Presents an alert that asks for values (SPEC §13) and returns the decision with them:
    /// ``AlertDecision/values`` by field name, and ``AlertDecision/comment``, the reason the
    /// person gave (any choice may carry one). A required field must be filled for the buttons
    /// it belongs to (by default every button but the cancel one).
    ///
    /// ```swift
    /// let decision = try await alerts.present(
    ///     on: "ops", title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")],
    ///     fields: [AlertField(name: "ticket", label: "Change ticket", placeholder: "OPS-123", required: true)])
    /// switch decision.outcome {
    /// case .button("Deploy"): try await deploy(ticket: decision.values["ticket"]!)
    /// default: print("not deployed: \(decision.comment ?? "no reason given")")
    /// }
    /// ```
    public func present(
        on client: String, title: String, message: String? = nil, style: AlertStyle? = nil, buttons: [Button] = [],
        priority: Int? = nil, expiresIn: Double? = nil, metadata: JSONObject? = nil, fields: [AlertField], quorum: Int? = nil
    ) async throws -> AlertDecision {
        try await presentForDecision(
            NewAlert(
                title: title, message: message, style: style, buttons: buttons, priority: priority, expiresIn: expiresIn,
                metadata: metadata, quorum: quorum, fields: fields),
            on: client)
    }

    /// Presents an alert that asks someone else when nobody answers (SPEC §12): still pending
    /// a step's `after` seconds after it was posted, it is also queued on the step's client;
    /// an answer through any of them decides it. Returns the decision, with the steps the
    /// alert took (``AlertDecision/escalatedTo``). `[]` turns off the client's policy from
    /// the daemon's config for this alert.
    ///
    /// ```swift
    /// let decision = try await alerts.present(
    ///     on: "sre", title: "Fail over payments to eu-west-2?",
    ///     buttons: [.destructive("Fail over"), .cancel("Wait")],
    ///     escalation: [EscalationStep(after: 120, to: "sre-lead"), EscalationStep(after: 600, to: "eng-head")])
    /// if decision.outcome == .button("Fail over") { try await failOver() }
    /// if let asked = decision.escalatedTo.last { print("answered after asking \(asked.client)") }
    /// ```
    public func present(
        on client: String, title: String, message: String? = nil, style: AlertStyle? = nil, buttons: [Button] = [],
        priority: Int? = nil, expiresIn: Double? = nil, metadata: JSONObject? = nil, quorum: Int? = nil,
        escalation: [EscalationStep]
    ) async throws -> AlertDecision {
        try await presentForDecision(
            NewAlert(
                title: title, message: message, style: style, buttons: buttons, priority: priority, expiresIn: expiresIn,
                metadata: metadata, quorum: quorum, escalation: escalation),
            on: client)
    }
}

/// What ``AlertdClient/presentUntilTerminal(_:on:idempotencyKey:progress:)`` reports while it works.
public enum PresentProgress: Sendable {
    /// The daemon holds the alert now: its answer to the post (201, or 200 for the same
    /// `Idempotency-Key` again). Reported once.
    case posted(AlertResource)
    /// A try failed with a transient error (the daemon unreachable, shutting down or busy);
    /// the next one comes after ``RetryNotice/delay`` seconds.
    case retrying(RetryNotice)
}

/// A failed try of a presentation and when the next one comes; see ``PresentProgress/retrying(_:)``.
public struct RetryNotice: Sendable {
    /// Why the try failed.
    public var error: AlertdError
    /// Seconds until the next try.
    public var delay: Double
    /// The alert, once the daemon has taken it; nil while the post has not been answered.
    public var alertID: String?
    /// Seconds since the first failed try of this run (0 for the first).
    public var failingFor: Double
    /// Seconds left before ``AlertdClient/retryFor`` runs out; nil without a bound.
    public var giveUpIn: Double?
}

extension AlertdClient: AlertPresenting {
    /// Posts `alert` to `client` and waits until it is terminal.
    ///
    /// - It long-polls the alert, asking again whenever the daemon's `max_wait_seconds` runs out.
    /// - A dropped connection, a daemon restart, a 503 or a 429 is retried with backoff (at most
    ///   ``maxRetryDelay`` apart, for at most ``retryFor`` seconds in a row when that is set);
    ///   the post is retried with the same `Idempotency-Key`, so it is never created twice.
    ///   Other errors (bad request, forbidden, …) are thrown at once.
    /// - Cancelling the task withdraws the alert, then throws `CancellationError`.
    ///
    /// ```swift
    /// let answer = try await alerts.present(NewAlert(title: "Deploy?", buttons: [.default("Deploy"), .cancel("No")]), on: "ops")
    /// ```
    public func present(_ alert: NewAlert, on client: String) async throws -> AlertOutcome {
        try await presentForDecision(alert, on: client).outcome
    }

    /// Like ``present(_:on:)``, with who decided and every vote: for an alert of `quorum` 2,
    /// the two deciders who approved (or the one who cancelled). It waits through the votes
    /// short of the quorum: the daemon answers its long-poll only with the decision.
    ///
    /// ```swift
    /// let decision = try await alerts.presentForDecision(
    ///     NewAlert(title: "Drop db-3?", buttons: [.destructive("Drop"), .cancel("Keep")], quorum: 2), on: "ops")
    /// print(decision.outcome, decision.votes.map { "\($0.decidedBy ?? "-"): \($0.button)" })
    /// ```
    public func presentForDecision(_ alert: NewAlert, on client: String) async throws -> AlertDecision {
        let (terminal, receipt) = try await presentUntilDecided(alert, on: client)
        guard var decision = AlertDecision(terminal) else {
            throw AlertdError(kind: .invalidResponse, message: "alertd answered an alert \(terminal.state) without its button")
        }
        if let receipt {
            // Its signature is the caller's to check, with keys it trusts; that it is this
            // alert's receipt, and says this decision, is checked here.
            do {
                try receipt.verifyDecision(of: terminal)
            } catch {
                throw AlertdError(
                    kind: .invalidResponse, message: "alertd's receipt for alert \(terminal.id) is not its decision's: \(error)")
            }
            decision.receipt = receipt
        }
        return decision
    }

    /// Like ``present(_:on:)``, but returns the terminal alert itself: its result, who decided, when.
    ///
    /// ```swift
    /// let alert = try await alerts.presentUntilTerminal(NewAlert(title: "Approve?", buttons: [.default("Yes")]), on: "ops")
    /// print(alert.result?.decidedBy ?? "nobody", alert.decidedAt!)
    /// ```
    ///
    /// An ``AlertdError`` thrown once the alert was posted carries its id in
    /// ``AlertdError/alertID``; the alert stays pending on the daemon.
    ///
    /// - Parameters:
    ///   - idempotencyKey: the key to post with; by default a new UUID. Give your own
    ///     to make a whole run of a script safe to repeat: a second run with the same key within
    ///     24 h waits for the same alert instead of asking again.
    ///   - progress: told when the alert is posted and before each retry, so a program can say
    ///     why it is still waiting. An error it throws ends the presentation at once with that
    ///     error (an alert already posted stays pending): a command-line tool throws when the
    ///     very first post could not connect (``AlertdError/neverSent``), to fail at once
    ///     instead of waiting for a daemon that may not exist.
    ///
    /// ```swift
    /// let alert = try await alerts.presentUntilTerminal(question, on: "ops") { progress in
    ///     if case .retrying(let notice) = progress { log("\(notice.error.message); retrying in \(notice.delay) s") }
    /// }
    /// ```
    public func presentUntilTerminal(
        _ alert: NewAlert, on client: String, idempotencyKey: String? = nil,
        progress: (@Sendable (PresentProgress) throws -> Void)? = nil
    ) async throws -> AlertResource {
        try await presentUntilDecided(alert, on: client, idempotencyKey: idempotencyKey, progress: progress).alert
    }

    /// ``presentUntilTerminal(_:on:idempotencyKey:progress:)`` with the decision's receipt
    /// (SPEC §14): the one the terminal long-poll answer carried, or, for an alert already
    /// decided when posted (a replayed key), the one read after; nil from a daemon that has none.
    func presentUntilDecided(
        _ alert: NewAlert, on client: String, idempotencyKey: String? = nil,
        progress: (@Sendable (PresentProgress) throws -> Void)? = nil
    ) async throws -> (alert: AlertResource, receipt: SignedReceipt?) {
        let key = idempotencyKey ?? UUID().uuidString
        var retries = RetryRun(bound: retryFor)
        var current = try await postRetrying(alert, to: client, key: key, retries: &retries, progress: progress)
        do {
            try progress?(.posted(current))
        } catch var error as AlertdError {
            error.alertID = current.id
            throw error
        }
        retries = RetryRun(bound: retryFor)
        var receipt: SignedReceipt?
        while true {
            if current.isTerminal {
                if receipt == nil { receipt = try? await self.receipt(on: client, id: current.id) }
                return (current, receipt)
            }
            if Task.isCancelled { try await withdrawAfterCancellation(client, current.id) }
            do {
                (current, receipt) = try await polledAlert(on: client, id: current.id, wait: pollSeconds)
                retries = RetryRun(bound: retryFor)
            } catch is CancellationError {
                try await withdrawAfterCancellation(client, current.id)
            } catch var error as AlertdError {
                error.alertID = current.id
                guard error.isTransient else { throw error }
                let delay = try retries.next(after: error, retryDelay(after: retries.failures + 1, error), progress)
                do {
                    try await Task.sleep(for: .seconds(delay))
                } catch {
                    try await withdrawAfterCancellation(client, current.id)
                }
            }
        }
    }

    /// Posts with one idempotency key until the daemon answers. The post goes out through the
    /// API that cancellation does not cut, so a cancelled task knows whether its alert exists.
    private func postRetrying(
        _ alert: NewAlert, to client: String, key: String, retries: inout RetryRun,
        progress: (@Sendable (PresentProgress) throws -> Void)?
    ) async throws -> AlertResource {
        while true {
            do {
                let answer = try await transport.sendIgnoringCancellation(
                    .POST, Self.alertsPath(client), body: alert, headers: [("Idempotency-Key", key)],
                    timeout: requestTimeout)
                let posted = try transport.decode(AlertResource.self, from: answer)
                if Task.isCancelled { _ = try await withdrawAfterCancellation(client, posted.id) }
                return posted
            } catch let error as AlertdError where error.isTransient {
                let delay = try retries.next(after: error, retryDelay(after: retries.failures + 1, error), progress)
                do {
                    try await Task.sleep(for: .seconds(delay))
                } catch {
                    // Cancelled between tries: an earlier try may have created it unseen.
                    // One more try with the same key finds it (or creates it) and withdraws it.
                    if let answer = try? await transport.sendIgnoringCancellation(
                        .POST, Self.alertsPath(client), body: alert, headers: [("Idempotency-Key", key)],
                        timeout: requestTimeout),
                        let posted = try? transport.decode(AlertResource.self, from: answer)
                    {
                        _ = try? await withdrawAfterCancellation(client, posted.id)
                    }
                    throw CancellationError()
                }
            }
        }
    }

    /// Withdraws the alert of a cancelled presentation (a terminal one stays as it is), then throws.
    private func withdrawAfterCancellation(_ client: String, _ id: String) async throws -> Never {
        _ = try? await transport.sendIgnoringCancellation(.DELETE, Self.alertPath(client, id), timeout: requestTimeout)
        throw CancellationError()
    }

    /// Exponential from 0.2 s, capped at ``maxRetryDelay``, with jitter; a `Retry-After` wins.
    private func retryDelay(after failures: Int, _ error: AlertdError) -> Double {
        if let retryAfter = error.retryAfter { return min(max(retryAfter, 0.05), 60) }
        let ceiling = min(maxRetryDelay, 0.2 * pow(2, Double(min(failures - 1, 10))))
        return Double.random(in: (ceiling / 2)...ceiling)
    }
}

/// A run of failed tries in a row, and the ``AlertdClient/retryFor`` bound on it.
struct RetryRun {
    let bound: Double?
    private(set) var failures = 0
    private var firstFailure: ContinuousClock.Instant?

    init(bound: Double?) { self.bound = bound }

    /// Counts a failure at `now`: the pause before the next try (never past the bound, so
    /// the last try falls on it), after telling `progress`; throws `error` once the bound is
    /// reached.
    mutating func next(
        after error: AlertdError, _ delay: Double, _ progress: (@Sendable (PresentProgress) throws -> Void)?,
        now: ContinuousClock.Instant = .now
    ) throws -> Double {
        let first = firstFailure ?? now
        firstFailure = first
        failures += 1
        let elapsed = Self.seconds(now - first)
        var pause = delay
        var left: Double?
        if let bound {
            guard elapsed < bound else { throw error }
            left = bound - elapsed
            pause = min(pause, bound - elapsed)
        }
        try progress?(
            .retrying(RetryNotice(error: error, delay: pause, alertID: error.alertID, failingFor: elapsed, giveUpIn: left)))
        return pause
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
