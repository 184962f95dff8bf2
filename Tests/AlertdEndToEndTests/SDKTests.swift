import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// The Swift SDK against the real daemon binary over real sockets.
@Suite("AlertdClient: the Swift SDK against the real daemon")
struct SDKTests {
    /// The displayed alert's id on `client`, once there is one (see `awaitDisplayed`).
    static func awaitDisplayed(_ daemon: Daemon, _ client: String) async throws -> String {
        try await AlertdEndToEndTests.awaitDisplayed(daemon, client)
    }

    /// Waits until `count` requests are parked, from `/readyz`.
    static func awaitWaiters(_ daemon: Daemon, _ count: Int) async throws {
        try await daemon.client().awaitWaiters(count, timeout: .seconds(30))
    }

    @Test("present waits across the daemon's max_wait_seconds and returns the chosen button")
    func presentAcrossMaxWait() async throws {
        let daemon = try await Daemon.start(.init(config: "log:\n  level: debug\nlimits:\n  max_wait_seconds: 1\n"))
        defer { daemon.cleanup() }
        let alerts = try AlertdClient(url: daemon.baseURL)
        async let answer = alerts.present(
            on: "ops", title: "Deploy build 1234?", buttons: [.default("Deploy"), .cancel("Cancel")])
        let id = try await Self.awaitDisplayed(daemon, "ops")
        // Two long-polls ended by the daemon's 1 s maximum, so present asked again.
        try await awaitRequests(daemon, path: "/v1/clients/ops/alerts/\(id)", count: 2)
        #expect(try await daemon.client().choose("ops", id, #"{"button": "Deploy"}"#).status == 200)
        #expect(try await answer == .button("Deploy"))
    }

    @Test("present survives a daemon restart and is never posted twice")
    func presentAcrossRestart() async throws {
        let first = try await Daemon.start()
        defer { first.cleanup() }
        var alerts = try AlertdClient(url: first.baseURL)
        alerts.maxRetryDelay = 0.3
        async let answer = alerts.present(
            on: "ops", title: "Restart db-3?", buttons: [.destructive("Restart"), .cancel("Keep")])
        let id = try await Self.awaitDisplayed(first, "ops")
        try await Self.awaitWaiters(first, 1)
        await first.kill9()
        let second = try await Daemon.start(.init(stateDir: first.stateDir, listen: "127.0.0.1:\(first.port)"))
        defer { second.cleanup() }
        try await Self.awaitWaiters(second, 1)
        #expect(try await second.client().choose("ops", id, #"{"button": "Keep"}"#).status == 200)
        #expect(try await answer == .cancel("Keep"))
        let all = try await second.client().get("/v1/clients/ops/alerts?state=queued,displayed,answered").jsonObject()
        #expect((all["alerts"] as? [Any])?.count == 1)
    }

    @Test("cancelling the presenting task withdraws the alert")
    func cancellationWithdraws() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alerts = try AlertdClient(url: daemon.baseURL)
        let task = Task { try await alerts.present(on: "ops", title: "Approve?", buttons: [.default("Yes")]) }
        let id = try await Self.awaitDisplayed(daemon, "ops")
        try await Self.awaitWaiters(daemon, 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        let alert = try await daemon.client().get("/v1/clients/ops/alerts/\(id)").jsonObject()
        #expect(alert["state"] as? String == "withdrawn")
    }

    @Test("each terminal state is its own outcome: dismissed, expired, withdrawn are never a button")
    func outcomes() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alerts = try AlertdClient(url: daemon.baseURL)
        #expect(try await alerts.present(on: "a", title: "Backup done", dismissAfter: 0.05) == .dismissed)
        #expect(try await alerts.present(on: "b", title: "Still there?", buttons: [.default("Yes")], expiresIn: 0.1) == .expired)
        async let withdrawn = alerts.present(on: "c", title: "Pick one", buttons: [.default("One")])
        let id = try await Self.awaitDisplayed(daemon, "c")
        _ = try await alerts.withdraw(on: "c", id: id)
        #expect(try await withdrawn == .withdrawn)
    }

    @Test("every endpoint typed: post with an idempotency key, current with wait/after, choose, get, list, clients, withdraw")
    func typedEndpoints() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let new = NewAlert(
            title: "Deploy?", message: "build 7", style: .actionSheet, buttons: [.default("Go"), .cancel("Stop")], priority: 5,
            metadata: ["build": 7, "tags": ["a", "b"]])
        let first = try await alertd.post(new, to: "ops", idempotencyKey: "k-1")
        let again = try await alertd.post(new, to: "ops", idempotencyKey: "k-1")
        #expect(first.id == again.id && first.state == .displayed && first.position == 0)
        #expect(first.style == .actionSheet && first.buttons == [.default("Go"), .cancel("Stop")] && first.priority == 5)
        #expect(first.metadata == ["build": 7, "tags": ["a", "b"]] && first.message == "build 7")
        let second = try await alertd.post(NewAlert(title: "Next"), to: "ops")
        #expect(second.state == .queued && second.position == 1)

        #expect(try await alertd.current(on: "ops")?.id == first.id)
        #expect(try await alertd.current(on: "nobody") == nil)
        async let changed = alertd.current(on: "ops", wait: 60, after: first.id)
        try await Self.awaitWaiters(daemon, 1)
        let answered = try await alertd.choose(on: "ops", id: first.id, .index(1))
        // §10: an answered alert's one choice is its one vote (no tokens: nobody named).
        #expect(answered.result == AlertResult(outcome: .answered, button: "Stop", buttonIndex: 1, cancelled: true, votes: answered.votes))
        #expect(answered.votes.map(\.button) == ["Stop"] && answered.quorum == 1)
        #expect(try await changed?.id == second.id)
        #expect(try await alertd.alert(on: "ops", id: first.id).state == .answered)

        let clients = try await alertd.clients()
        #expect(clients == [ClientSummary(client: "ops", pending: 1, displayed: second.id)])
        #expect(try await alertd.withdraw(on: "ops", id: second.id).state == .withdrawn)
        let done = try await alertd.listPage(on: "ops", states: [.answered, .withdrawn])
        #expect(Set(done.alerts.map(\.id)) == [first.id, second.id] && done.nextCursor == nil)
    }

    @Test("list pages through every alert as an AsyncSequence")
    func listPaging() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        var posted: [String] = []
        for n in 0..<7 { posted.append(try await alertd.post(NewAlert(title: "n\(n)", buttons: [.default("ok")]), to: "q").id) }
        var seen: [String] = []
        for try await alert in alertd.list(on: "q", pageSize: 3) { seen.append(alert.id) }
        #expect(seen == posted)
        let firstPage = try await alertd.listPage(on: "q", limit: 3)
        #expect(firstPage.alerts.count == 3 && firstPage.nextCursor != nil)
    }

    @Test("errors are typed by the problem's code, with its field errors and its alert; an unreachable daemon is a connection error")
    func typedErrors() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        await #expect {
            try await alertd.post(NewAlert(title: "", buttons: [.cancel("a"), .cancel("b")]), to: "ops")
        } throws: { error in
            let error = error as! AlertdError
            return error.code == .invalidAlert && error.kind == .problem && error.status == 400
                && Set(error.problem?.errors?.map(\.field) ?? []) == ["title", "buttons[1].style"]
        }
        await #expect {
            try await alertd.alert(on: "ops", id: "01M00000000000000000000000")
        } throws: { ($0 as? AlertdError)?.code == .notFound }
        let alert = try await alertd.post(NewAlert(title: "Q", buttons: [.default("Yes"), .default("No")]), to: "ops")
        _ = try await alertd.choose(on: "ops", id: alert.id, button: "Yes")
        #expect(try await alertd.choose(on: "ops", id: alert.id, button: "Yes").result?.button == "Yes")
        await #expect {
            try await alertd.choose(on: "ops", id: alert.id, button: "No")
        } throws: { error in
            let error = error as! AlertdError
            return error.code == .alreadyDecided && error.problem?.alert?.result?.button == "Yes"
        }
        await #expect {
            try await alertd.choose(on: "ops", id: alert.id, button: "Maybe")
        } throws: { ($0 as? AlertdError)?.code == .unknownButton }
        let unreachable = try AlertdClient(url: "http://127.0.0.1:1")
        await #expect {
            try await unreachable.clients()
        } throws: { ($0 as? AlertdError)?.kind == .connection && ($0 as? AlertdError)?.isTransient == true }
        #expect(throws: AlertdError.self) { try AlertdClient(url: "ftp://example.com") }
    }

    @Test("webhooks and deliveries: register (secret shown once), list, get, deliveries of a decided alert, remove")
    func webhooksAndDeliveries() async throws {
        // A loopback target: callbacks.deny refuses it unless callbacks.allow names it.
        let daemon = try await Daemon.start(.init(config: "callbacks: { allow: [\"127.0.0.1\"] }\n"))
        defer { daemon.cleanup() }
        let alertd = try AlertdClient(url: daemon.baseURL)
        let hook = try await alertd.addWebhook(on: "ops", url: "http://127.0.0.1:1/hook")
        #expect(hook.secret?.hasPrefix("whsec_") == true)
        let listed = try await alertd.webhooks(on: "ops")
        #expect(listed.map(\.id) == [hook.id] && listed[0].secret == nil && listed[0].source == "api")
        #expect(try await alertd.webhook(on: "ops", id: hook.id).url == "http://127.0.0.1:1/hook")
        #expect(try await alertd.present(on: "ops", title: "Gone soon", dismissAfter: 0.05) == .dismissed)
        let id = try #require(try await alertd.listPage(on: "ops", states: [.dismissed]).alerts.first?.id)
        let deliveries = try await alertd.deliveries(on: "ops", id: id)
        #expect(deliveries.count == 1 && deliveries[0].webhookID == hook.id && deliveries[0].target == "http://127.0.0.1:1/hook")
        try await alertd.removeWebhook(on: "ops", id: hook.id)
        #expect(try await alertd.webhooks(on: "ops").isEmpty)
    }

    @Test("the token goes as a Bearer header; a wrong one is unauthorized, a role it lacks forbidden")
    func tokens() async throws {
        let (daemon, secrets) = try await AuthTests.start()
        defer { daemon.cleanup() }
        let deployer = try AlertdClient(url: daemon.baseURL, token: secrets["deployer"])
        let console = try AlertdClient(url: daemon.baseURL, token: secrets["console"])
        async let answer = deployer.present(on: "ops", title: "Ship it?", buttons: [.default("Ship")])
        let id = try await Self.displayed(console, "ops")
        let chosen = try await console.choose(on: "ops", id: id, button: "Ship")
        #expect(chosen.result?.decidedBy == "console")
        #expect(try await answer == .button("Ship"))
        await #expect { try await console.post(NewAlert(title: "x"), to: "ops") } throws: {
            ($0 as? AlertdError)?.code == .forbidden
        }
        let stranger = try AlertdClient(url: daemon.baseURL, token: "not-a-token")
        await #expect { try await stranger.clients() } throws: { ($0 as? AlertdError)?.code == .unauthorized }
    }

    /// Long-polls `current` until something is displayed.
    static func displayed(_ alertd: AlertdClient, _ client: String) async throws -> String {
        if let alert = try await alertd.current(on: client) { return alert.id }
        return try #require(try await alertd.current(on: client, wait: 60)?.id)
    }

    @Test("what the daemon writes decodes into the shared types, member for member")
    func contract() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let raw = try await http.postAlert("ops", #"{"title": "T", "buttons": [{"title": "A"}], "metadata": {"k": [1, 2.5, null]}}"#)
        #expect(Set(raw.keys) == Set(AlertResource.memberNames))
        let alertd = try AlertdClient(url: daemon.baseURL)
        let decoded = try await alertd.alert(on: "ops", id: raw["id"] as! String)
        #expect(decoded.buttons == [.default("A")] && decoded.metadata == ["k": [1, 2.5, .null]])
        // The SDK keeps metadata as posted: member order, number spellings, digits beyond a double's.
        let posted = try await http.post(
            "/v1/clients/ops/alerts", json: #"{"title": "M", "metadata": {"z": 1, "big": 123456789012345678901234567890, "a": 1.50e3}}"#)
        let postedID = try #require(try JSONParser.parse(posted.text)["id"]?.stringValue, "\(posted.status): \(posted.text)")
        let metadata = try await alertd.alert(on: "ops", id: postedID).metadata
        #expect(metadata?.keys == ["z", "big", "a"])
        #expect(
            metadata?["big"]?.numberValue?.literal == "123456789012345678901234567890" && metadata?["a"]?.numberValue?.literal == "1.50e3")
        #expect(decoded.createdAt.rfc3339 == raw["created_at"] as? String)
        let result = try #require(try await http.choose("ops", decoded.id, #"{"button": "A"}"#).jsonObject()["result"] as? [String: Any])
        #expect(Set(result.keys) == Set(AlertResult.memberNames))
        let problem = try await http.get("/v1/clients/ops/alerts/nope").jsonObject()
        #expect(Set(problem.keys).isSubset(of: ["type", "title", "status", "detail", "code", "errors", "alert"]))
        #expect(ProblemCode.all.contains(ProblemCode(named: problem["code"] as? String ?? "", status: 0)))
    }
}
