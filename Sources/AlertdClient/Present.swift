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

extension AlertdClient: AlertPresenting {
    /// Posts `alert` to `client` and waits until it is terminal.
    ///
    /// - It long-polls the alert, asking again whenever the daemon's `max_wait_seconds` runs out.
    /// - A dropped connection, a daemon restart, a 503 or a 429 is retried with backoff (at most
    ///   ``maxRetryDelay`` apart); the post is retried with the same `Idempotency-Key`, so it is
    ///   never created twice. Other errors (bad request, forbidden, …) are thrown at once.
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
    /// - Parameter idempotencyKey: the key to post with; by default a new UUID. Give your own
    ///   to make a whole run of a script safe to repeat: a second run with the same key within
    ///   24 h waits for the same alert instead of asking again.
    public func presentUntilTerminal(
        _ alert: NewAlert, on client: String, idempotencyKey: String? = nil
    ) async throws -> AlertResource {
        let key = idempotencyKey ?? UUID().uuidString
        var current = try await postRetrying(alert, to: client, key: key)
        var failures = 0
        while true {
            if current.isTerminal { return current }
            if Task.isCancelled { try await withdrawAfterCancellation(client, current.id) }
            do {
                current = try await self.alert(on: client, id: current.id, wait: pollSeconds)
                failures = 0
            } catch is CancellationError {
                try await withdrawAfterCancellation(client, current.id)
            } catch let error as AlertdError where error.isTransient {
                failures += 1
                do {
                    try await Task.sleep(for: .seconds(retryDelay(after: failures, error)))
                } catch {
                    try await withdrawAfterCancellation(client, current.id)
                }
            }
        }
    }

    /// Posts with one idempotency key until the daemon answers. The post goes out through the
    /// API that cancellation does not cut, so a cancelled task knows whether its alert exists.
    private func postRetrying(_ alert: NewAlert, to client: String, key: String) async throws -> AlertResource {
        var failures = 0
        while true {
            do {
                let answer = try await transport.sendIgnoringCancellation(
                    .POST, Self.alertsPath(client), body: alert, headers: [("Idempotency-Key", key)],
                    timeout: requestTimeout)
                let posted = try transport.decode(AlertResource.self, from: answer)
                if Task.isCancelled { _ = try await withdrawAfterCancellation(client, posted.id) }
                return posted
            } catch let error as AlertdError where error.isTransient {
                failures += 1
                do {
                    try await Task.sleep(for: .seconds(retryDelay(after: failures, error)))
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
