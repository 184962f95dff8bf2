import AlertdWire
import MCP
import Testing

@testable import AlertdMCP

/// The tools' behaviour against the in-memory alertd: waiting, timeouts, retries, cancellation.
/// Its long-polls park until the test decides: a test that waits for the wrong thing hangs,
/// and the time limit fails it.
@Suite(.timeLimit(.minutes(1))) struct ToolTests {
    let alerts = FakeAlerts()

    func server(withdrawOnCancel: Bool = false) -> AlertdMCPServer {
        var options = MCPOptions(client: "ops", daemon: "http://127.0.0.1:8080")
        options.withdrawOnCancel = withdrawOnCancel
        options.progressInterval = 1
        return AlertdMCPServer(alerts: alerts, options: options, session: Array(repeating: 7, count: 16))
    }

    static let question: [String: Value] = [
        "title": "Deploy build 1234?",
        "buttons": [["title": "Deploy"], ["title": "No", "style": "cancel"]],
    ]

    func call(_ server: AlertdMCPServer, _ tool: String, _ arguments: [String: Value]) async throws -> CallTool.Result {
        try await server.call(tool, arguments, progress: ProgressReporter(server: nil, token: nil))
    }

    /// The next event of the in-memory alertd; fails the test if the stream ends.
    func next(_ iterator: inout AsyncStream<FakeAlerts.Event>.Iterator) async -> FakeAlerts.Event? {
        let event = await iterator.next()
        #expect(event != nil)
        return event
    }

    @Test func askHumanWaitsForTheButtonAPersonChooses() async throws {
        let server = server()
        var events = alerts.events.makeAsyncIterator()
        let call = Task { try await self.call(server, Tools.askHuman, Self.question) }
        guard case .posted(let id, let key)? = await next(&events) else { Issue.record("not posted"); return }
        #expect(key?.hasPrefix("alertctl-mcp-") == true)
        guard case .polling? = await next(&events) else { Issue.record("no long-poll"); return }
        try alerts.choose(id, button: "Deploy")
        let result = try await call.value
        #expect(result.isError != true)
        let answer = try #require(result.structuredContent?.objectValue)
        #expect(answer["status"] == "answered")
        #expect(answer["button"] == "Deploy")
        #expect(answer["button_index"] == 0)
        #expect(answer["cancelled"] == false)
        #expect(answer["decided_by"] == "alice")
        #expect(answer["alert_id"] == .string(id))
        #expect(try alerts[id].metadata?["asked_via"] == .string("alertctl mcp"))
    }

    @Test func aTimeoutOfZeroAsksAndReturnsNotAnsweredYet() async throws {
        let result = try await call(server(), Tools.askHuman, Self.question.merging(["timeout_seconds": 0]) { $1 })
        let answer = try #require(result.structuredContent?.objectValue)
        #expect(answer["status"] == "not_answered_yet")
        #expect(answer["state"] == "displayed")
        #expect(answer["button"] == .null)
    }

    @Test func theSameCallBeforeTheAgentSawAnAnswerAsksNothingTwice() async throws {
        let server = server()
        var events = alerts.events.makeAsyncIterator()
        let quick = Self.question.merging(["timeout_seconds": 0]) { $1 }
        let first = try await call(server, Tools.askHuman, quick)
        let id = try #require(first.structuredContent?.objectValue?["alert_id"]?.stringValue)
        guard case .posted(id, let key)? = await next(&events) else { Issue.record("not posted"); return }

        // The agent calls again (waiting longer this time): the same question, waited for.
        let again = Task { try await self.call(server, Tools.askHuman, Self.question) }
        guard case .posted(id, key)? = await next(&events) else { Issue.record("not the same key"); return }
        guard case .polling(id, _)? = await next(&events) else { Issue.record("no long-poll"); return }
        try alerts.choose(id, button: "No")
        let answer = try #require(try await again.value.structuredContent?.objectValue)
        #expect(answer["alert_id"] == .string(id))
        #expect(answer["cancelled"] == true)
        #expect(alerts.postCount == 1)

        // The agent was told the answer: the same arguments are a new question.
        let anew = try await call(server, Tools.askHuman, quick)
        #expect(anew.structuredContent?.objectValue?["alert_id"] != .string(id))
        #expect(alerts.postCount == 2)
        let checked = try await call(server, Tools.checkAnswer, ["alert_id": .string(id)])
        #expect(checked.structuredContent?.objectValue?["status"] == "answered")
    }

    @Test func anotherSessionAsksAnew() async throws {
        let quick = Self.question.merging(["timeout_seconds": 0]) { $1 }
        var options = MCPOptions(client: "ops", daemon: "http://127.0.0.1:8080")
        options.progressInterval = 1
        _ = try await call(server(), Tools.askHuman, quick)
        _ = try await call(AlertdMCPServer(alerts: alerts, options: options), Tools.askHuman, quick)
        #expect(alerts.postCount == 2)
    }

    @Test(arguments: [true, false])
    func cancellingStopsTheWaitAndWithTheFlagWithdraws(withdrawOnCancel: Bool) async throws {
        let server = server(withdrawOnCancel: withdrawOnCancel)
        var events = alerts.events.makeAsyncIterator()
        let call = Task { try await self.call(server, Tools.askHuman, Self.question) }
        guard case .posted(let id, _)? = await next(&events) else { Issue.record("not posted"); return }
        guard case .polling? = await next(&events) else { Issue.record("no long-poll"); return }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(try alerts[id].state == (withdrawOnCancel ? .withdrawn : .displayed))
    }

    @Test func withdrawingAPendingQuestionSaysItWasWithdrawnAndByWhom() async throws {
        let server = server()
        let posted = try await call(server, Tools.askHuman, Self.question.merging(["timeout_seconds": 0]) { $1 })
        let id = try #require(posted.structuredContent?.objectValue?["alert_id"]?.stringValue)
        let withdrawn = try await call(server, Tools.withdrawQuestion, ["alert_id": .string(id)])
        #expect(withdrawn.structuredContent?.objectValue?["status"] == "withdrawn")
        #expect(withdrawn.structuredContent?.objectValue?["decided_by"] == "agent")
    }

    @Test func notifyHumanPostsANoticeAndDoesNotWait() async throws {
        let result = try await call(server(), Tools.notifyHuman, ["title": "Build green", "dismiss_after": 3])
        let notice = try #require(result.structuredContent?.objectValue)
        #expect(notice["state"] == "displayed")
        let id = try #require(notice["alert_id"]?.stringValue)
        #expect(try alerts[id].buttons.isEmpty)
        #expect(try alerts[id].dismissAfter == 3)
    }

    @Test(
        arguments: [
            (["title": "Deploy?"], "needs 'buttons'"),
            (["title": "Deploy?", "buttons": ["Go"], "titel": "x"], "no argument named 'titel'"),
            (["buttons": ["Go"]], "needs 'title'"),
            (["title": 5, "buttons": ["Go"]], "'title' must be a string"),
            (
                ["title": "Deploy?", "buttons": [["title": "Go", "style": "red"]]],
                "buttons[0].style must be default, cancel or destructive"
            ),
            (["title": "Deploy?", "buttons": "Go"], "'buttons' must be a list"),
            (["title": "Deploy?", "buttons": ["Go"], "timeout_seconds": -1], "'timeout_seconds' must be between 0 and 86400"),
            (["title": "Deploy?", "buttons": ["Go"], "priority": 1.5], "'priority' must be a whole number"),
        ] as [([String: Value], String)])
    func badArgumentsAreToolErrorsNotCrashes(arguments: [String: Value], message: String) async throws {
        let result = try await call(server(), Tools.askHuman, arguments)
        #expect(result.isError == true)
        guard case .text(let text, _, _)? = result.content.first else { Issue.record("no text"); return }
        #expect(text.contains(message), "\(text)")
        #expect(alerts.postCount == 0)
    }

    @Test func anUnknownToolIsAProtocolError() async throws {
        await #expect(throws: MCPError.self) { try await call(server(), "ask_robot", [:]) }
    }
}

/// The tools' schemas agree with what the tools read.
@Suite struct SchemaTests {
    @Test func everyToolDeclaresTheArgumentsItTakes() throws {
        let tools = Tools.all(client: "ops", defaultTimeout: 600)
        #expect(Set(tools.map(\.name)) == Set(Tools.names.keys))
        for tool in tools {
            let schema = try #require(tool.inputSchema.objectValue)
            let properties = try #require(schema["properties"]?.objectValue)
            #expect(Set(properties.keys) == Set(Tools.names[tool.name]!), "\(tool.name)")
            for required in schema["required"]?.arrayValue ?? [] {
                #expect(properties[required.stringValue!] != nil)
            }
            // request_permission is called by a host, which may send members a newer version added.
            #expect(schema["additionalProperties"] == .bool(tool.name == Tools.requestPermission), "\(tool.name)")
            #expect(tool.outputSchema?.objectValue?["type"] == "object")
        }
    }

    @Test func theAnswerMatchesItsSchema() throws {
        let alert = AlertResource(
            id: "A1", client: "ops", state: .queued, position: 2, title: "t", message: nil, style: .alert,
            buttons: [.default("Go")], priority: 0, expiresIn: 60, dismissAfter: nil, callbackURL: nil, metadata: nil,
            createdAt: Timestamp(milliseconds: 0), displayedAt: nil, decidedAt: nil, expiresAt: Timestamp(milliseconds: 60_000),
            result: nil)
        let answer = try #require(Answer(alert: alert).structured.objectValue)
        let schema = try #require(Tools.answerSchema.objectValue)
        let required = Set((schema["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        #expect(Set(answer.keys) == required)
        #expect(answer["status"] == "not_answered_yet")
        #expect(answer["position"] == 2)
        #expect(Answer(alert: alert, waited: 30).text.contains("queued behind 2 other questions"))
    }
}
