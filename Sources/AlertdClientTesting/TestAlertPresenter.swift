public import AlertdClient
public import AlertdWire
import NIOConcurrencyHelpers
public import Testing

/// An alert as it was presented to a ``TestAlertPresenter``.
public struct PresentedAlert: Sendable, Hashable, CustomStringConvertible {
    /// The client it was presented on.
    public var client: String
    /// Everything the code under test posted.
    public var alert: NewAlert

    /// The alert's title.
    public var title: String { alert.title }
    /// The alert's message, if it has one.
    public var message: String? { alert.message }
    /// `alert` unless the code asked for an action sheet.
    public var style: AlertStyle { alert.style ?? .alert }
    /// The buttons in the order posted.
    public var buttons: [Button] { alert.buttons ?? [] }
    /// The buttons' titles, in order.
    public var buttonTitles: [String] { buttons.map(\.title) }

    public var description: String {
        let buttons = buttons.map { "\($0.title)(\($0.style.rawValue))" }.joined(separator: ", ")
        return "\"\(title)\" on \(client) [\(buttons)]"
    }
}

/// A stand-in for ``AlertdClient`` in tests of code that presents alerts: it records
/// every presented alert and answers it the way the test says, at once.
///
/// A presentation the test did not expect, an answer naming a button the alert does
/// not have, or an alert the daemon would refuse (§2) fails the test — recorded as a
/// Swift Testing issue and thrown as ``TestAlertPresenter/Failure`` to the code under test.
///
/// ```swift
/// @Test func deploysWhenTheOperatorSaysSo() async throws {
///     let alerts = TestAlertPresenter()
///     alerts.expect(title: "Deploy build 1234?", answer: .button("Deploy"))
///
///     let deployed = try await Deployer(alerts: alerts).run(build: 1234)
///
///     #expect(deployed)
///     #expect(alerts.presented.first?.buttonTitles == ["Deploy", "Cancel"])
///     alerts.verifyAllExpectationsMet()
/// }
/// ```
public final class TestAlertPresenter: AlertPresenting, Sendable {
    /// How the test answers a presentation.
    public enum Answer: Sendable, Hashable {
        /// A person chose the button with this title (the cancel button gives ``AlertOutcome/cancel(_:)``).
        case button(String)
        /// The buttonless alert was dismissed.
        case dismissed
        /// No one answered in time.
        case expired
        /// The alert was withdrawn.
        case withdrawn
    }

    /// What the double reports to the code under test when a presentation goes wrong.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private struct Expectation: Sendable {
        var title: String
        var client: String?
        var answer: Answer
        var location: SourceLocation
    }

    private struct State: Sendable {
        var expectations: [Expectation] = []
        var presented: [PresentedAlert] = []
    }

    private let state = NIOLockedValueBox(State())
    private let handler: (@Sendable (PresentedAlert) throws -> Answer)?
    /// Where the double was made: failures of presentations no expectation covers point here.
    private let createdAt: SourceLocation

    /// A double that answers only presentations announced with ``expect(title:on:answer:sourceLocation:)``, in order.
    public init(sourceLocation: SourceLocation = #_sourceLocation) {
        handler = nil
        createdAt = sourceLocation
    }

    /// A double that answers every presentation by asking `answer` (after any ``expect(title:on:answer:sourceLocation:)``
    /// expectations are used up).
    ///
    /// ```swift
    /// let alerts = TestAlertPresenter { alert in alert.title.hasPrefix("Deploy") ? .button("Deploy") : .expired }
    /// ```
    public init(
        sourceLocation: SourceLocation = #_sourceLocation, answering answer: @escaping @Sendable (PresentedAlert) throws -> Answer
    ) {
        handler = answer
        createdAt = sourceLocation
    }

    /// Expects the next presentation to have `title` (and to be on `client`, when given) and answers it.
    public func expect(
        title: String, on client: String? = nil, answer: Answer, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        state.withLockedValue {
            $0.expectations.append(Expectation(title: title, client: client, answer: answer, location: sourceLocation))
        }
    }

    /// Every alert presented so far, in order.
    public var presented: [PresentedAlert] { state.withLockedValue { $0.presented } }

    /// Fails the test for every expected presentation that never came.
    public func verifyAllExpectationsMet() {
        let left = state.withLockedValue { $0.expectations }
        for expectation in left {
            Self.fail("expected an alert \"\(expectation.title)\" to be presented, but it was not", at: expectation.location)
        }
    }

    /// Records the presentation and answers it as the test said.
    public func present(_ alert: NewAlert, on client: String) async throws -> AlertOutcome {
        let presented = PresentedAlert(client: client, alert: alert)
        let next: Expectation? = state.withLockedValue {
            $0.presented.append(presented)
            return $0.expectations.isEmpty ? nil : $0.expectations.removeFirst()
        }
        let location = next?.location ?? createdAt
        if let problem = Self.violation(of: alert, on: client) {
            throw Self.fail("the daemon would refuse \(presented): \(problem)", at: location)
        }
        let answer: Answer
        if let next {
            guard next.title == alert.title, next.client == nil || next.client == client else {
                let wanted = next.client.map { "\"\(next.title)\" on \($0)" } ?? "\"\(next.title)\""
                throw Self.fail("expected \(wanted) to be presented, but got \(presented)", at: location)
            }
            answer = next.answer
        } else if let handler {
            answer = try handler(presented)
        } else {
            throw Self.fail("an alert no test expected was presented: \(presented)", at: location)
        }
        return try outcome(of: answer, for: presented, at: location)
    }

    private func outcome(of answer: Answer, for presented: PresentedAlert, at location: SourceLocation) throws -> AlertOutcome {
        switch answer {
        case .button(let title):
            guard let button = presented.buttons.first(where: { $0.title == title }) else {
                throw Self.fail("answered with \"\(title)\", which \(presented) does not have", at: location)
            }
            return button.style == .cancel ? .cancel(title) : .button(title)
        case .dismissed:
            guard presented.buttons.isEmpty else {
                throw Self.fail("answered .dismissed, but only buttonless alerts are dismissed: \(presented)", at: location)
            }
            return .dismissed
        case .expired: return .expired
        case .withdrawn: return .withdrawn
        }
    }

    /// The first §2 rule the daemon would refuse the alert for, if any.
    static func violation(of alert: NewAlert, on client: String) -> String? {
        let buttons = alert.buttons ?? []
        if !Self.isValidClient(client) { return "the client id \"\(client)\" is not valid" }
        if alert.title.unicodeScalars.isEmpty || alert.title.unicodeScalars.count > 256 { return "title must be 1–256 characters" }
        if let message = alert.message, message.unicodeScalars.count > 4096 { return "message is longer than 4096 characters" }
        if buttons.count > 16 { return "more than 16 buttons" }
        if buttons.contains(where: { $0.title.unicodeScalars.isEmpty || $0.title.unicodeScalars.count > 64 }) {
            return "button titles must be 1–64 characters"
        }
        if Set(buttons.map(\.title)).count != buttons.count { return "button titles are not unique" }
        if buttons.filter({ $0.style == .cancel }).count > 1 { return "more than one cancel button" }
        if let priority = alert.priority, !(-100...100).contains(priority) { return "priority is outside −100…100" }
        if let expiresIn = alert.expiresIn, expiresIn <= 0 { return "expires_in must be above 0" }
        if let dismissAfter = alert.dismissAfter {
            if !buttons.isEmpty { return "dismiss_after is only for alerts without buttons" }
            if dismissAfter <= 0 { return "dismiss_after must be above 0" }
        }
        return nil
    }

    private static func isValidClient(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        func alnum(_ b: UInt8) -> Bool { (48...57).contains(b) || (65...90).contains(b) || (97...122).contains(b) }
        guard let first = bytes.first, bytes.count <= 64, alnum(first) else { return false }
        return bytes.allSatisfy { alnum($0) || $0 == 46 || $0 == 95 || $0 == 45 }
    }

    @discardableResult
    private static func fail(_ message: String, at location: SourceLocation) -> Failure {
        Issue.record(Comment(rawValue: message), sourceLocation: location)
        return Failure(description: message)
    }

}
