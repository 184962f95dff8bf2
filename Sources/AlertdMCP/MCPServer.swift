import AlertdClient
import AlertdVersion
import AlertdWire
import Foundation
public import MCP

/// `alertctl mcp`: a Model Context Protocol server whose tools ask people questions through
/// alertd (docs/agents.md). It runs on any MCP transport; `alertctl` gives it stdio
/// (``LineTransport``).
///
/// ```swift
/// let alerts = try AlertdClient(url: "http://127.0.0.1:8080", token: token)
/// let server = AlertdMCPServer(alerts: alerts, options: MCPOptions(client: "ops", daemon: alerts.url))
/// try await server.run(transport: LineTransport())
/// ```
public struct AlertdMCPServer: Sendable {
    let alerts: any AlertsAPI
    let options: MCPOptions
    let ledger: Ledger

    public init(alerts: any AlertsAPI, options: MCPOptions) {
        self.init(alerts: alerts, options: options, session: (0..<16).map { _ in UInt8.random(in: 0...255) })
    }

    init(alerts: any AlertsAPI, options: MCPOptions, session: [UInt8]) {
        self.alerts = alerts
        self.options = options
        self.ledger = Ledger(session: session)
    }

    /// Serves `transport` until the client closes it; then, with ``MCPOptions/withdrawOnCancel``,
    /// withdraws the questions still waited for.
    public func run(transport: any Transport) async throws {
        let server = await makeServer()
        try await server.start(transport: transport) { [ledger] info, _ in
            await ledger.setAgent(name: info.name, version: info.version)
        }
        await server.waitUntilCompleted()
        await ledger.drain(within: .seconds(2))
        if options.withdrawOnCancel {
            await withTaskGroup(of: Void.self) { group in
                for (client, id) in await ledger.waited {
                    group.addTask { await withdrawIgnoringCancellation(client: client, id: id) }
                }
            }
        }
    }

    /// The SDK's server with the tools' handlers, not started (the tests start it on an in-memory transport).
    public func makeServer() async -> Server {
        let server = Server(
            name: "alertd", version: AlertdVersion.string, title: "alertd: ask a person",
            instructions: """
                These tools reach people through alertd: ask_human puts a question with buttons on an operator's \
                dashboard and waits for the button they choose. Ask before doing anything destructive, irreversible, \
                costly or not clearly requested, and act on the answer: only a non-cancel button means yes; expired, \
                withdrawn or not answered is not a yes.
                """,
            capabilities: .init(tools: .init(listChanged: false)))
        let tools = Tools.all(client: options.client, defaultTimeout: options.defaultTimeout, maxPriority: options.maxPriority)
        await server.withMethodHandler(ListTools.self) { _ in ListTools.Result(tools: tools) }
        await server.withMethodHandler(CallTool.self) { [self] parameters in
            let progress = ProgressReporter(server: server, token: parameters._meta?.progressToken)
            await ledger.begin()
            do {
                let result = try await call(parameters.name, parameters.arguments, progress: progress)
                await ledger.end()
                return result
            } catch {
                await ledger.end()
                throw error
            }
        }
        return server
    }

    /// One `tools/call`: a result, a ``ToolFailure`` as an error result, or `CancellationError`
    /// (the SDK then sends nothing, as MCP's cancellation says).
    func call(_ name: String, _ arguments: [String: Value]?, progress: ProgressReporter) async throws -> CallTool.Result {
        guard let names = Tools.names[name] else {
            throw MCPError.invalidParams("Unknown tool: \(name); the tools are \(Tools.names.keys.sorted().joined(separator: ", "))")
        }
        do {
            let arguments = try Arguments(arguments, tool: name, names: names, open: name == Tools.requestPermission)
            switch name {
            case Tools.askHuman: return try await askHuman(arguments, progress: progress)
            case Tools.checkAnswer: return try await checkAnswer(arguments, progress: progress)
            case Tools.withdrawQuestion: return try await withdrawQuestion(arguments)
            case Tools.requestPermission: return try await requestPermission(arguments, progress: progress)
            default: return try await notifyHuman(arguments)
            }
        } catch let failure as ToolFailure {
            return failure.result
        }
    }

    /// The client a call names (else ``MCPOptions/client``), if this server may post there.
    private func postingClient(_ arguments: Arguments) throws(ToolFailure) -> String {
        let client = try arguments.client(default: options.client)
        guard options.allows(client: client) else {
            throw ToolFailure(
                "This server asks people on client '\(options.client)' only; '\(client)' is not allowed. Leave 'client' out. "
                    + "(The user can allow more with alertctl mcp --allow-client \(client).)")
        }
        return client
    }

    /// The client of a question this session asked (check_answer, withdraw_question): refused
    /// for an alert it did not ask, unless ``MCPOptions/anyQuestion``.
    private func questionClient(_ arguments: Arguments, id: String) async throws(ToolFailure) -> String {
        let named = try arguments.string("client")
        if let asked = await ledger.client(ofAsked: id) {
            if let named, named != asked {
                throw ToolFailure("alert \(id) was asked on client '\(asked)', not '\(named)': leave 'client' out.")
            }
            return asked
        }
        guard options.anyQuestion else {
            throw ToolFailure(
                "alert \(id) is not a question this session asked: this server checks and withdraws only its own questions "
                    + "(the user can allow any with alertctl mcp --any-question). Check the alert_id an earlier call returned.")
        }
        return named ?? options.client
    }

    /// `priority`, at most ``MCPOptions/maxPriority``.
    private func priority(_ arguments: Arguments) throws(ToolFailure) -> Int? {
        guard let priority = try arguments.integer("priority") else { return nil }
        if priority > options.maxPriority {
            throw ToolFailure(
                "priority \(priority) is above what this server allows (\(options.maxPriority)): leave it out, or use at most "
                    + "\(options.maxPriority). (The user can raise it with alertctl mcp --max-priority.)")
        }
        return priority
    }

    // MARK: Tools

    func askHuman(_ arguments: Arguments, progress: ProgressReporter) async throws -> CallTool.Result {
        let client = try postingClient(arguments)
        let timeout = try arguments.seconds("timeout_seconds", in: 0...Tools.maxWait) ?? options.defaultTimeout
        let buttons = try arguments.buttons("buttons") ?? []
        if buttons.isEmpty {
            throw ToolFailure(
                "ask_human needs 'buttons': the answers the person can choose, e.g. "
                    + "[{\"title\": \"Go ahead\"}, {\"title\": \"Stop\", \"style\": \"cancel\"}]. "
                    + "For a notice without buttons use notify_human.")
        }
        let alert = NewAlert(
            title: try arguments.requiredString("title"), message: try arguments.string("message"), buttons: buttons,
            priority: try priority(arguments), metadata: await metadata(), quorum: try arguments.integer("quorum"),
            fields: try arguments.fields("fields"))
        let question = await ledger.question(tool: Tools.askHuman, client: client, alert: alert)
        let posted = try await post(alert, to: client, key: await ledger.key(for: question))
        await ledger.posted(question, as: posted.id, on: client)

        let waiter = await ledger.startWaiting(client: client, id: posted.id)
        let final: AlertResource
        do {
            final = try await waitForDecision(posted, client: client, seconds: timeout, progress: progress)
        } catch {
            await ledger.stopWaiting(waiter)
            if error is CancellationError, options.withdrawOnCancel {
                await withdrawIgnoringCancellation(client: client, id: posted.id)
            }
            throw error
        }
        await ledger.stopWaiting(waiter)
        if final.isTerminal { await ledger.told(final.id) }
        return Answer(alert: final, waited: timeout).result
    }

    func checkAnswer(_ arguments: Arguments, progress: ProgressReporter) async throws -> CallTool.Result {
        let id = try arguments.requiredString("alert_id")
        let client = try await questionClient(arguments, id: id)
        let wait = try arguments.seconds("wait_seconds", in: 0...Tools.maxWait) ?? 0
        let current: AlertResource
        do {
            current = try await alerts.alert(on: client, id: id, wait: nil)
        } catch let error as AlertdError {
            throw Advice.failure(error, .reading(client: client, id: id), daemon: options.daemon)
        }
        let final = try await waitForDecision(current, client: client, seconds: wait, progress: progress)
        if final.isTerminal { await ledger.told(final.id) }
        return Answer(alert: final, waited: wait > 0 ? wait : nil).result
    }

    func withdrawQuestion(_ arguments: Arguments) async throws -> CallTool.Result {
        let id = try arguments.requiredString("alert_id")
        let client = try await questionClient(arguments, id: id)
        let final: AlertResource
        do {
            final = try await alerts.withdraw(on: client, id: id)
        } catch let error as AlertdError where error.code == .alreadyDecided && error.problem?.alert != nil {
            // Too late: a person decided first. Not an error for the agent: it learns the answer.
            final = error.problem!.alert!
        } catch let error as AlertdError {
            throw Advice.failure(error, .withdrawing(client: client, id: id), daemon: options.daemon)
        }
        await ledger.told(final.id)
        return Answer(alert: final).result
    }

    func notifyHuman(_ arguments: Arguments) async throws -> CallTool.Result {
        let client = try postingClient(arguments)
        let alert = NewAlert(
            title: try arguments.requiredString("title"), message: try arguments.string("message"),
            priority: try priority(arguments),
            dismissAfter: try arguments.seconds("dismiss_after", in: 0.001...Tools.maxWait), metadata: await metadata())
        let question = await ledger.question(tool: Tools.notifyHuman, client: client, alert: alert)
        let posted = try await post(alert, to: client, key: await ledger.key(for: question))
        await ledger.posted(question, as: posted.id, on: client)
        await ledger.told(posted.id)
        return Answer.notice(posted)
    }

    /// Claude Code's permission prompt (`--permission-prompt-tool`): asks a person on
    /// ``MCPOptions/client`` whether the agent may use `tool_name` with `input`, and returns
    /// as the result's text `{"behavior":"allow","updatedInput":<input>}` when a person chose
    /// Allow, else `{"behavior":"deny","message":…}`: their comment, or why nobody allowed it.
    /// A timeout, an expiry, a withdrawal or a failure to reach alertd denies; nothing but a
    /// person's Allow allows. A question not answered within ``MCPOptions/defaultTimeout`` is
    /// withdrawn, so that nobody answers a request the agent no longer waits for.
    func requestPermission(_ arguments: Arguments, progress: ProgressReporter) async throws -> CallTool.Result {
        let toolName = try arguments.requiredString("tool_name")
        guard let input = try arguments.object("input") else {
            throw ToolFailure("request_permission needs 'input': the tool's input, a JSON object.")
        }
        let request = PermissionRequest(toolName: toolName, input: input, toolUseID: try arguments.string("tool_use_id"))
        let client = options.client
        var extra: [(key: String, value: String)] = []
        if let agent = await ledger.agent { extra.append((key: "agent", value: agent)) }
        let alert = request.alert(
            askedVia: "alertctl mcp", metadata: extra, quorum: options.permissionQuorum, waiting: options.defaultTimeout)
        let decision: PermissionDecision
        do {
            let question = await ledger.question(tool: Tools.requestPermission, client: client, alert: alert)
            let posted = try await post(alert, to: client, key: await ledger.key(for: question))
            await ledger.posted(question, as: posted.id, on: client)
            let waiter = await ledger.startWaiting(client: client, id: posted.id)
            var final: AlertResource
            do {
                final = try await waitForDecision(posted, client: client, seconds: options.defaultTimeout, progress: progress)
            } catch {
                await ledger.stopWaiting(waiter)
                if error is CancellationError { await withdrawIgnoringCancellation(client: client, id: posted.id) }
                throw error
            }
            await ledger.stopWaiting(waiter)
            let timedOut = !final.isTerminal
            if timedOut {
                // Nobody answered in time: taken back, so that no one allows what the agent was told is denied.
                final = await withdrawn(client: client, id: posted.id) ?? final
            }
            await ledger.told(final.id)
            if timedOut, final.state != .answered {
                decision = .noAnswer(
                    "Nobody answered on alertd within \(Arguments.format(options.defaultTimeout)) s (alert \(posted.id), now withdrawn): "
                        + "not allowed. Do not try it again without asking the user.")
            } else {
                decision = PermissionRequest.decision(final) ?? .noAnswer("Nobody answered on alertd (alert \(posted.id)): not allowed.")
            }
        } catch let failure as ToolFailure {
            decision = .noAnswer("alertd could not ask a person: \(failure.message)")
        }
        return Answer.permission(decision, input: arguments.raw("input"))
    }

    /// Withdraws a question whose wait ran out: the alert withdrawn, or as a person decided it
    /// meanwhile; nil when alertd could not be asked.
    private func withdrawn(client: String, id: String) async -> AlertResource? {
        let alerts = alerts
        do {
            return try await Task { try await alerts.withdraw(on: client, id: id) }.value
        } catch let error as AlertdError where error.code == .alreadyDecided {
            return error.problem?.alert
        } catch {
            return nil
        }
    }

    // MARK: Talking to alertd

    /// Posts with `key`. A post is not cut short by cancellation, so a cancelled call knows
    /// whether its alert exists (and withdraws it with ``MCPOptions/withdrawOnCancel``).
    private func post(_ alert: NewAlert, to client: String, key: String) async throws -> AlertResource {
        let alerts = alerts
        // Unstructured on purpose, and awaited at once: the task does not inherit the
        // call's cancellation.
        let posting = Task { try await alerts.post(alert, to: client, idempotencyKey: key) }
        let posted: AlertResource
        do {
            posted = try await posting.value
        } catch let error as AlertdError {
            throw Advice.failure(error, .posting(client: client), daemon: options.daemon)
        }
        if Task.isCancelled {
            if options.withdrawOnCancel { await withdrawIgnoringCancellation(client: client, id: posted.id) }
            throw CancellationError()
        }
        return posted
    }

    /// Long-polls `alert` until it is terminal or `seconds` pass, reporting progress at least
    /// every ``MCPOptions/progressInterval``. While alertd cannot be reached it keeps trying
    /// for ``MCPOptions/retryFor``, then fails naming the alert. Throws `CancellationError` when the call is cancelled.
    func waitForDecision(
        _ alert: AlertResource, client: String, seconds: Double, progress: ProgressReporter
    ) async throws -> AlertResource {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .milliseconds(Int64(seconds * 1000))
        var current = alert
        var failingSince: ContinuousClock.Instant?
        var failures = 0
        if !current.isTerminal, seconds > 0 {
            await progress.report(0, total: seconds, Self.waiting(current))
        }
        while !current.isTerminal {
            let left = Self.seconds(deadline - clock.now)
            if left <= 0 { break }
            let wait = Int(min(left, options.progressInterval).rounded(.up))
            do {
                current = try await alerts.alert(on: client, id: current.id, wait: max(1, wait))
                failingSince = nil
                failures = 0
            } catch let error as AlertdError where error.isTransient {
                let since = failingSince ?? clock.now
                failingSince = since
                failures += 1
                guard Self.seconds(clock.now - since) < options.retryFor else {
                    throw Advice.failure(error, .reading(client: client, id: current.id), daemon: options.daemon)
                }
                let pause = min(error.retryAfter ?? 0.25 * pow(2, Double(min(failures, 5))), 5, max(left, 0.05))
                await progress.report(
                    Self.seconds(clock.now - start), total: seconds,
                    "\(error.message); trying again in \(Arguments.format(pause.rounded(.up))) s")
                try await Task.sleep(for: .milliseconds(Int64(pause * 1000)))
                continue
            } catch let error as AlertdError {
                throw Advice.failure(error, .reading(client: client, id: current.id), daemon: options.daemon)
            }
            if !current.isTerminal {
                await progress.report(Self.seconds(clock.now - start), total: seconds, Self.waiting(current))
            }
        }
        return current
    }

    /// Withdraws an alert from a call that was cancelled: the request is made from a task of its
    /// own, which the call's cancellation does not reach. A terminal alert stays as it is.
    private func withdrawIgnoringCancellation(client: String, id: String) async {
        let alerts = alerts
        _ = try? await Task { try await alerts.withdraw(on: client, id: id) }.value
    }

    /// The metadata every alert carries, shown on the dashboard: who asked. The agent's name
    /// was made safe when the client gave it (``Ledger/setAgent(name:version:)``).
    private func metadata() async -> JSONObject {
        var fields: [(key: String, value: JSONValue)] = [(key: "asked_via", value: .string("alertctl mcp"))]
        if let agent = await ledger.agent { fields.append((key: "agent", value: .string(agent))) }
        return JSONObject(fields)
    }

    static func waiting(_ alert: AlertResource) -> String {
        switch alert.state {
        case .displayed: "Waiting for a person on \(alert.client): the question is displayed (alert \(alert.id))"
        case .queued:
            "Waiting for a person on \(alert.client): the question is queued behind \(alert.position ?? 0) (alert \(alert.id))"
        default: "alert \(alert.id) is \(alert.state.rawValue)"
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Sends `notifications/progress` for one call, when its client asked with a `progressToken`.
struct ProgressReporter: Sendable {
    let server: Server?
    let token: ProgressToken?

    /// `progress` seconds waited of `total`. MCP asks progress to grow with each notification;
    /// the seconds waited do.
    func report(_ progress: Double, total: Double, _ message: String) async {
        guard let server, let token else { return }
        try? await server.notify(
            ProgressNotification.message(
                .init(progressToken: token, progress: progress, total: total, message: Terminal.safe(message, newlines: true))))
    }
}
