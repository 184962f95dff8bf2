public import AlertdWire
public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A client of one alertd daemon: every endpoint of its HTTP API as a typed method,
/// and ``present(_:on:)`` — post an alert and await a person's answer in one call.
///
/// ```swift
/// let alerts = try AlertdClient(url: "http://127.0.0.1:8080", token: ProcessInfo.processInfo.environment["ALERTD_TOKEN"])
/// let answer = try await alerts.present(
///     on: "ops", title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")])
/// if answer == .button("Deploy") { try await deploy() }
/// ```
///
/// It uses AsyncHTTPClient's shared client unless given one; the client owns nothing
/// to shut down. Errors are ``AlertdError``s, typed by the problem's `code`.
public struct AlertdClient: Sendable {
    /// The daemon's base URL, without a trailing slash.
    public var url: String { transport.base }
    /// How long ``present(_:on:)`` asks each long-poll to wait; the daemon clamps it to its `max_wait_seconds`.
    public var pollSeconds: Int = 60
    /// Deadline of a request that does not wait, in seconds.
    public var requestTimeout: Double = 30
    /// The longest pause, in seconds, between two tries of ``present(_:on:)`` while the daemon is unreachable.
    public var maxRetryDelay: Double = 5
    /// How long, in seconds, ``present(_:on:)`` keeps trying while the daemon cannot be reached,
    /// is shutting down or is busy (a dropped connection, 503, 429), counted from the first
    /// failed try of a run; a try that gets an answer starts the count afresh. nil (the default)
    /// tries until the task is cancelled.
    ///
    /// When it runs out, `present` throws the last error, an ``AlertdError`` whose
    /// ``AlertdError/alertID`` names the alert if it had been posted. That alert stays pending
    /// on the daemon: nothing could withdraw it.
    ///
    /// ```swift
    /// var alerts = try AlertdClient(url: "http://alertd.internal:8080")
    /// alerts.retryFor = 300   // a daemon away for five minutes is an error, not a wait
    /// ```
    public var retryFor: Double?

    /// Called with every answer the daemon sends, before it is checked or decoded: its status
    /// and body as the daemon wrote them (member order, nulls, number spellings). For tools
    /// that pass the daemon's JSON on unchanged, as `alertctl --json` does, or that log it.
    ///
    /// ```swift
    /// var alerts = try AlertdClient(url: "http://127.0.0.1:8080")
    /// alerts.answerObserver = { answer in print(answer.status, String(decoding: answer.body, as: UTF8.self)) }
    /// ```
    public var answerObserver: (@Sendable (RawAnswer) -> Void)? {
        get { transport.observer }
        set { transport.observer = newValue }
    }

    var transport: Transport

    /// A client of the daemon at `url` (`http://host:port`, or `https://…` with a path prefix behind a proxy).
    ///
    /// - Parameters:
    ///   - token: the Bearer token, when the daemon has tokens.
    ///   - trust: how an `https` daemon's certificate is checked: the system's CAs by default,
    ///     or a private CA's PEM file (``CertificateTrust/pemFile(_:)``).
    ///   - httpClient: the AsyncHTTPClient to use; by default one shared by every `AlertdClient`
    ///     of the process (``defaultHTTPClient``).
    /// - Throws: ``AlertdError`` of kind ``AlertdError/Kind/invalidURL``.
    public init(
        url: String, token: String? = nil, trust: CertificateTrust = .system,
        httpClient: HTTPClient = AlertdClient.defaultHTTPClient
    ) throws(AlertdError) {
        transport = try Transport(url: url, token: token, http: httpClient, tls: trust.configuration)
    }

    /// The HTTP client every `AlertdClient` uses unless given another: it lives as long as the
    /// process (never shut down), connects within 5 s, keeps idle connections 20 s (less than
    /// the daemon's default read timeout), and does not retry a refused connection
    /// by itself — ``present(_:on:)`` decides when to try again, and a CLI says at once that
    /// the daemon is down.
    public static var defaultHTTPClient: HTTPClient { sharedHTTPClient }

    // MARK: Alerts

    /// Posts an alert to `client`'s queue: `POST /v1/clients/{client}/alerts`.
    ///
    /// With an `idempotencyKey`, posting again with the same key within 24 h returns the
    /// first alert and creates nothing — safe to retry after a dropped connection.
    ///
    /// ```swift
    /// let alert = try await alerts.post(NewAlert(title: "Disk 91% full", message: "db-3"), to: "ops")
    /// ```
    public func post(_ alert: NewAlert, to client: String, idempotencyKey: String? = nil) async throws -> AlertResource {
        let headers = idempotencyKey.map { [("Idempotency-Key", $0)] } ?? []
        let answer = try await transport.send(
            .POST, Self.alertsPath(client), body: alert, headers: headers, timeout: requestTimeout)
        return try transport.decode(AlertResource.self, from: answer)
    }

    /// The alert `client` displays now, or nil: `GET /v1/clients/{client}/alerts/current`.
    ///
    /// With `wait`, the daemon holds the request until the displayed alert's id differs from
    /// `after` (nil: from "nothing displayed") or `wait` seconds pass — a dashboard passes the
    /// id it shows and never busy-loops. A vote on the displayed alert (SPEC §10) also ends the
    /// wait; `votes`, the number of votes of `after` the caller shows, makes it return at once
    /// when the alert has another number, so no vote made between two polls is missed:
    ///
    /// ```swift
    /// var shown: AlertResource?
    /// while true {
    ///     shown = try await alerts.current(on: "ops", wait: 30, after: shown?.id, votes: shown?.votes.count)
    ///     render(shown)   // "1 of 2 approvals — alice: Deploy"
    /// }
    /// ```
    public func current(on client: String, wait: Int? = nil, after: String? = nil, votes: Int? = nil) async throws
        -> AlertResource?
    {
        var query: [(String, String)] = []
        if let wait { query.append(("wait", String(max(0, wait)))) }
        if let after { query.append(("after", after)) }
        if let votes { query.append(("votes", String(max(0, votes)))) }
        let answer = try await transport.send(
            .GET, Self.alertsPath(client) + "/current", query: query, timeout: timeout(waiting: wait))
        if answer.status == 204 { return nil }
        return try transport.decode(AlertResource.self, from: answer)
    }

    /// Chooses a button of the displayed alert: `POST …/alerts/{id}/choice`.
    ///
    /// Returns the alert as the choice left it. Usually that is the answered alert; for an
    /// alert that needs several people (`quorum` above 1, SPEC §10) the choice is a **vote**,
    /// and while fewer than `quorum` deciders agree the alert comes back still `displayed`,
    /// `result` nil, the vote in `votes`. The vote that completes the quorum, or any vote for
    /// the `cancel`-style button, answers it. Check the state before treating it as decided:
    ///
    /// ```swift
    /// let alert = try await alerts.choose(on: "ops", id: id, button: "Deploy")
    /// if alert.isTerminal {
    ///     print("answered \(alert.result?.button ?? "")")
    /// } else {
    ///     print("voted: \(alert.votes.count) of \(alert.quorum)")
    /// }
    /// ```
    ///
    /// Repeating the same button (or, for a decider, their own vote) returns the alert as it is
    /// (safe retries). A decider choosing another button after voting is
    /// ``ProblemCode/alreadyVoted``, with the alert in the problem.
    public func choose(on client: String, id: String, button: String) async throws -> AlertResource {
        try await choose(on: client, id: id, .title(button))
    }

    /// Chooses a button with a comment and the values of the alert's fields (SPEC §13):
    /// the words are kept in the choice's vote and, when it decides the alert, in its result.
    /// A required field left out, a value too long, a field the button does not ask for or a
    /// comment over 1 000 characters is ``ProblemCode/invalidAnswer``, each in the problem's
    /// `errors`, and nothing is chosen.
    ///
    /// ```swift
    /// let alert = try await alerts.choose(
    ///     on: "ops", id: id, button: "Deploy", comment: "window agreed with payments", values: ["ticket": "OPS-123"])
    /// ```
    public func choose(
        on client: String, id: String, button: String, comment: String?, values: [String: String] = [:]
    ) async throws -> AlertResource {
        try await choose(on: client, id: id, ButtonChoice.title(button).with(comment: comment, values: values.isEmpty ? nil : values))
    }

    /// Chooses a button by title or by index: `POST …/alerts/{id}/choice`; with several deciders
    /// a vote, as ``choose(on:id:button:)`` says.
    public func choose(on client: String, id: String, _ choice: ButtonChoice) async throws -> AlertResource {
        let answer = try await transport.send(
            .POST, Self.alertPath(client, id) + "/choice", body: choice, timeout: requestTimeout)
        return try transport.decode(AlertResource.self, from: answer)
    }

    /// One alert: `GET /v1/clients/{client}/alerts/{id}`. With `wait`, the daemon holds the
    /// request until the alert is terminal or `wait` seconds pass, then answers with it as it is.
    ///
    /// ```swift
    /// let alert = try await alerts.alert(on: "ops", id: id, wait: 60)
    /// if alert.isTerminal { print(alert.result?.outcome ?? .expired) }
    /// ```
    public func alert(on client: String, id: String, wait: Int? = nil) async throws -> AlertResource {
        let query = wait.map { [("wait", String(max(0, $0)))] } ?? []
        let answer = try await transport.send(.GET, Self.alertPath(client, id), query: query, timeout: timeout(waiting: wait))
        return try transport.decode(AlertResource.self, from: answer)
    }

    /// Withdraws a pending alert: `DELETE /v1/clients/{client}/alerts/{id}`. Withdrawing a
    /// withdrawn alert again succeeds; any other terminal alert is ``ProblemCode/alreadyDecided``.
    ///
    /// ```swift
    /// try await alerts.withdraw(on: "ops", id: alert.id)
    /// ```
    public func withdraw(on client: String, id: String) async throws -> AlertResource {
        let answer = try await transport.send(.DELETE, Self.alertPath(client, id), timeout: requestTimeout)
        return try transport.decode(AlertResource.self, from: answer)
    }

    /// One page of `client`'s alerts: `GET /v1/clients/{client}/alerts`.
    ///
    /// - Parameters:
    ///   - states: the states to list; nil lists the pending ones in display order.
    ///   - limit: 1–1000 (the daemon's default is 100).
    ///   - cursor: the previous page's ``AlertPage/nextCursor``.
    public func listPage(
        on client: String, states: [AlertState]? = nil, limit: Int? = nil, cursor: String? = nil
    ) async throws -> AlertPage {
        var query: [(String, String)] = []
        if let states { query.append(("state", states.map(\.rawValue).joined(separator: ","))) }
        if let limit { query.append(("limit", String(limit))) }
        if let cursor { query.append(("cursor", cursor)) }
        let answer = try await transport.send(.GET, Self.alertsPath(client), query: query, timeout: requestTimeout)
        return try transport.decode(AlertPage.self, from: answer)
    }

    /// Every alert of `client` in the given states, fetched a page at a time as the sequence is iterated.
    ///
    /// ```swift
    /// for try await alert in alerts.list(on: "ops", states: [.answered]) {
    ///     print(alert.title, alert.result?.button ?? "")
    /// }
    /// ```
    public func list(on client: String, states: [AlertState]? = nil, pageSize: Int = 100) -> AlertSequence {
        AlertSequence(client: self, target: client, states: states, pageSize: pageSize)
    }

    /// Every client known (only those the token may see): `GET /v1/clients`, every page.
    public func clients() async throws -> [ClientSummary] {
        var all: [ClientSummary] = []
        var cursor: String?
        repeat {
            let page = try await clientsPage(limit: 1000, cursor: cursor)
            all += page.clients
            cursor = page.nextCursor
        } while cursor != nil
        return all
    }

    /// One page of clients, by id: `GET /v1/clients?limit=…&cursor=…`.
    ///
    /// - Parameters:
    ///   - limit: 1–1000 (the daemon's default is 100).
    ///   - cursor: the previous page's ``ClientList/nextCursor``.
    public func clientsPage(limit: Int? = nil, cursor: String? = nil) async throws -> ClientList {
        var query: [(String, String)] = []
        if let limit { query.append(("limit", String(limit))) }
        if let cursor { query.append(("cursor", cursor)) }
        let answer = try await transport.send(.GET, "/v1/clients", query: query, timeout: requestTimeout)
        return try transport.decode(ClientList.self, from: answer)
    }

    /// Who the token is: its name, roles and clients, as the daemon sees it: `GET /v1/whoami`.
    /// Without tokens on the daemon, every role on every client and ``Identity/auth`` false.
    ///
    /// ```swift
    /// let me = try await alerts.whoAmI()
    /// print(me.name ?? "anonymous", me.roles)
    /// ```
    public func whoAmI() async throws -> Identity {
        let answer = try await transport.send(.GET, "/v1/whoami", timeout: requestTimeout)
        return try transport.decode(Identity.self, from: answer)
    }

    // MARK: Paths

    static func clientPath(_ client: String) -> String { "/v1/clients/" + Transport.percentEncoded(client) }
    static func alertsPath(_ client: String) -> String { clientPath(client) + "/alerts" }
    static func alertPath(_ client: String, _ id: String) -> String {
        alertsPath(client) + "/" + Transport.percentEncoded(id)
    }

    /// A long-poll's deadline: its wait plus room for the answer.
    func timeout(waiting wait: Int?) -> Double {
        guard let wait else { return requestTimeout }
        return Double(max(0, wait)) + requestTimeout
    }
}

/// Every alert of a client in some states, fetched page by page as it is iterated.
///
/// Made by ``AlertdClient/list(on:states:pageSize:)``.
public struct AlertSequence: AsyncSequence, Sendable {
    /// One alert, in the daemon's order.
    public typealias Element = AlertResource

    let client: AlertdClient
    let target: String
    let states: [AlertState]?
    let pageSize: Int

    /// An iterator that fetches the first page on its first `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(sequence: self)
    }

    /// Fetches the next page when the current one is used up.
    public struct Iterator: AsyncIteratorProtocol {
        let sequence: AlertSequence
        var buffer: [AlertResource] = []
        var cursor: String?
        var finished = false

        init(sequence: AlertSequence) { self.sequence = sequence }

        /// The next alert; nil after the last page. Throws ``AlertdError`` when a page cannot be fetched.
        public mutating func next() async throws -> AlertResource? {
            while buffer.isEmpty {
                if finished { return nil }
                let page = try await sequence.client.listPage(
                    on: sequence.target, states: sequence.states, limit: sequence.pageSize, cursor: cursor)
                buffer = page.alerts.reversed()
                cursor = page.nextCursor
                finished = page.nextCursor == nil
            }
            return buffer.popLast()
        }
    }
}

/// See ``AlertdClient/defaultHTTPClient``. A global is created once, on first use, and never deinitialised.
private let sharedHTTPClient: HTTPClient = {
    var configuration = HTTPClient.Configuration()
    configuration.timeout.connect = .seconds(5)
    // alertd closes a connection idle for limits.read_timeout_seconds (30 s by default):
    // let go of idle ones first, so a request never lands on one being closed.
    configuration.connectionPool = .init(idleTimeout: .seconds(20))
    configuration.connectionPool.retryConnectionEstablishment = false
    configuration.redirectConfiguration = .disallow
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}()
