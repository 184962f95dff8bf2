public import AlertdWire
import Foundation
import NIOHTTP1

/// How a presented alert ended: the button a person chose, or why no one chose one.
///
/// A timeout is never disguised as a "no": an alert that expired is ``expired``,
/// not ``cancel(_:)``.
///
/// ```swift
/// switch try await alerts.present(on: "ops", title: "Restart db-3?", buttons: [.destructive("Restart"), .cancel("Keep")]) {
/// case .button("Restart"): try await restart()
/// case .cancel: print("kept")
/// case .dismissed, .expired, .withdrawn, .button: print("no decision")
/// }
/// ```
public enum AlertOutcome: Sendable, Hashable, CustomStringConvertible {
    /// A button of style `default` or `destructive` was chosen; its title.
    case button(String)
    /// The alert's `cancel` button was chosen; its title.
    case cancel(String)
    /// A buttonless alert was dismissed after its `dismiss_after`.
    case dismissed
    /// No one answered before `expires_at`.
    case expired
    /// Withdrawn by its poster (or by cancelling the presenting task).
    case withdrawn

    /// The chosen button's title, for ``button(_:)`` and ``cancel(_:)``.
    public var chosenButton: String? {
        switch self {
        case .button(let title), .cancel(let title): title
        case .dismissed, .expired, .withdrawn: nil
        }
    }

    /// The outcome of a terminal alert resource; nil while it is pending.
    public init?(_ alert: AlertResource) {
        switch alert.state {
        case .queued, .displayed: return nil
        case .dismissed: self = .dismissed
        case .expired: self = .expired
        case .withdrawn: self = .withdrawn
        case .answered:
            guard let title = alert.result?.button else { return nil }
            self = alert.result?.cancelled == true ? .cancel(title) : .button(title)
        }
    }

    public var description: String {
        switch self {
        case .button(let title): "button \(title)"
        case .cancel(let title): "cancel \(title)"
        case .dismissed: "dismissed"
        case .expired: "expired"
        case .withdrawn: "withdrawn"
        }
    }
}

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
        let terminal = try await presentUntilTerminal(alert, on: client)
        guard let outcome = AlertOutcome(terminal) else {
            throw AlertdError(kind: .invalidResponse, message: "alertd answered an alert \(terminal.state) without its button")
        }
        return outcome
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
        while true {
            if current.isTerminal { return current }
            if Task.isCancelled { try await withdrawAfterCancellation(client, current.id) }
            do {
                current = try await self.alert(on: client, id: current.id, wait: pollSeconds)
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
