import AlertdTestSupport
import Foundation
import Testing

@Suite("Durability: kill -9 and restart")
struct DurabilityTests {
    @Test("every acknowledged post, choice and withdrawal survives kill -9")
    func acknowledgedChangesSurvive() async throws {
        let first = try await Daemon.start(.init(config: "durability: full\n"))
        defer { first.cleanup() }
        let http = first.client()
        var expected: [String: String] = [:]  // id → state
        var answered: [String: String] = [:]  // id → button
        for index in 0..<30 {
            let client = "team-\(index % 3)"
            let alert = try await http.postAlert(
                client,
                #"{"title":"Alert \#(index)","buttons":[{"title":"Yes"},{"title":"No","style":"cancel"}],"metadata":{"n":\#(index)}}"#)
            expected[id(alert)] = alert["state"] as? String
        }
        // Answer the displayed alert of each client twice, withdraw one queued alert each.
        for client in ["team-0", "team-1", "team-2"] {
            for button in ["Yes", "No"] {
                let current = try await http.get("/v1/clients/\(client)/alerts/current").jsonObject()
                let response = try await http.choose(client, id(current), #"{"button":"\#(button)"}"#)
                #expect(response.status == 200)
                expected[id(current)] = "answered"
                answered[id(current)] = button
            }
            let queued = try await http.get("/v1/clients/\(client)/alerts?state=queued&limit=1").jsonObject()["alerts"] as? [[String: Any]]
            let first = try #require(queued?.first)
            #expect(try await http.delete("/v1/clients/\(client)/alerts/\(id(first))").status == 200)
            expected[id(first)] = "withdrawn"
            let displayed = try await http.get("/v1/clients/\(client)/alerts/current").jsonObject()
            expected[id(displayed)] = "displayed"
        }
        await first.kill9()

        let second = try await first.restart()
        defer { second.cleanup() }
        let after = second.client()
        for (alertID, state) in expected {
            var alert: [String: Any]?
            for client in ["team-0", "team-1", "team-2"] where alert == nil {
                let response = try await after.get("/v1/clients/\(client)/alerts/\(alertID)")
                if response.status == 200 { alert = try response.jsonObject() }
            }
            #expect(alert?["state"] as? String == state, "alert \(alertID)")
            if let button = answered[alertID] {
                #expect((alert?["result"] as? [String: Any])?["button"] as? String == button)
            }
        }
        let clients = try await after.get("/v1/clients").jsonObject()["clients"] as? [[String: Any]] ?? []
        #expect(clients.map { $0["client"] as? String } == ["team-0", "team-1", "team-2"])
        #expect(clients.allSatisfy { $0["pending"] as? Int == 7 })
    }

    @Test("posts acknowledged by concurrent clients survive a kill -9 in the middle of the load")
    func concurrentPostsSurvive() async throws {
        let first = try await Daemon.start(.init(config: "durability: full\n"))
        defer { first.cleanup() }
        let acknowledged = Observed<[String]>([])
        let workers = 8
        let started = Observed(0)
        let http = first.client(timeout: .seconds(5))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var count = 0
                    while count < 2000 {
                        guard
                            let response = try? await http.post(
                                "/v1/clients/load-\(worker % 2)/alerts", json: #"{"title":"n\#(count)","buttons":[{"title":"OK"}]}"#),
                            response.status == 201, let alert = try? response.jsonObject()
                        else { return }  // the daemon died under us
                        acknowledged.update { $0.append(id(alert)) }
                        count += 1
                        if count == 20 { started.update { $0 += 1 } }
                    }
                }
            }
            _ = await started.wait(timeout: .seconds(60)) { $0 == workers ? true : nil }
            await first.kill9()
            try await group.waitForAll()
        }

        let second = try await first.restart()
        defer { second.cleanup() }
        let after = second.client()
        var stored: Set<String> = []
        for client in ["load-0", "load-1"] {
            var cursor: String?
            repeat {
                let page = try await after.get("/v1/clients/\(client)/alerts?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? ""))
                    .jsonObject()
                for alert in page["alerts"] as? [[String: Any]] ?? [] { stored.insert(id(alert)) }
                cursor = page["next_cursor"] as? String
            } while cursor != nil
        }
        let acked = acknowledged.value
        #expect(acked.count >= workers * 20)
        let missing = acked.filter { !stored.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) of \(acked.count) acknowledged posts are gone")
    }

    @Test("the callback events of an acknowledged choice survive kill -9 right after it")
    func outboxSurvives() async throws {
        let config = """
            callbacks: { signing_secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", allow: ["127.0.0.1"] }
            webhooks:
              - { client: ops, url: "http://127.0.0.1:9/hook", secret: "s" }
            """
        let first = try await Daemon.start(.init(config: config))
        defer { first.cleanup() }
        let http = first.client()
        var decided: [String] = []
        for index in 0..<10 {
            let alert = try await http.postAlert(
                "ops", #"{"title":"n\#(index)","buttons":[{"title":"OK"}],"callback_url":"http://127.0.0.1:9/cb"}"#)
            #expect(try await http.choose("ops", id(alert), #"{"button":"OK"}"#).status == 200)
            decided.append(id(alert))
        }
        await first.kill9()
        let second = try await first.restart()
        defer { second.cleanup() }
        let after = second.client()
        for alertID in decided {
            let deliveries =
                try await after.get("/v1/clients/ops/alerts/\(alertID)/deliveries").jsonObject()["deliveries"] as? [[String: Any]] ?? []
            #expect(deliveries.count == 2, "alert \(alertID)")
            #expect(Set(deliveries.compactMap { $0["event_id"] as? String }).count == 1)
        }
    }

    @Test("an Idempotency-Key still replays the first alert after kill -9")
    func idempotencySurvives() async throws {
        let first = try await Daemon.start()
        defer { first.cleanup() }
        let body = #"{"title":"Once","buttons":[{"title":"OK"}]}"#
        let alert = try await first.client().postAlert("ops", body, headers: [("Idempotency-Key", "deploy-42")])
        await first.kill9()
        let second = try await first.restart()
        defer { second.cleanup() }
        let replay = try await second.client().post("/v1/clients/ops/alerts", json: body, headers: [("Idempotency-Key", "deploy-42")])
        #expect(replay.status == 200)
        #expect(try replay.jsonObject()["id"] as? String == id(alert))
        let list = try await second.client().get("/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]]
        #expect(list?.count == 1)
    }

    @Test("deadlines that passed while the daemon was dead fire after the restart")
    func deadlinesAfterRestart() async throws {
        let first = try await Daemon.start()
        defer { first.cleanup() }
        let http = first.client()
        let notice = try await http.postAlert("ops", #"{"title":"Backup finished","dismiss_after":0.5}"#)
        let approval = try await http.postAlert("team", #"{"title":"Approve?","buttons":[{"title":"Yes"}],"expires_in":0.5}"#)
        await first.kill9()
        let second = try await first.restart()
        defer { second.cleanup() }
        let after = second.client()
        // Each wait returns as soon as the alert is terminal; the deadline itself is what we wait for.
        let dismissed = try await after.get("/v1/clients/ops/alerts/\(id(notice))?wait=10").jsonObject()
        #expect(dismissed["state"] as? String == "dismissed")
        let expired = try await after.get("/v1/clients/team/alerts/\(id(approval))?wait=10").jsonObject()
        #expect(expired["state"] as? String == "expired")
    }

    @Test("kill -9 with deliveries pending and right after an acknowledged choice: every event arrives after the restart")
    func killNineResumesDeliveries() async throws {
        let placeholder = try ReservedPort()
        let port = placeholder.port
        let url = "http://127.0.0.1:\(port)/hook"
        let first = try await Daemon.start(
            .init(config: callbackConfig(durability: "full", webhooks: [("ops", url)], retryInitial: 0.2, retryMax: 0.4)))
        defer { first.cleanup() }
        let http = first.client()
        var alertIDs: [String] = []
        for index in 0..<10 {
            let alert = try await http.postAlert("ops", #"{"title":"A\#(index)","buttons":[{"title":"OK"}]}"#)
            #expect(try await http.choose("ops", id(alert), #"{"button":"OK"}"#).status == 200)
            alertIDs.append(id(alert))
        }
        // Pending with failed attempts behind them...
        _ = try await deliveries(http, "ops", alertIDs[0]) { attempts($0.first ?? [:]).count >= 1 }
        // ...and one acknowledged just before the kill.
        let last = try await http.postAlert("ops", oneButton)
        #expect(try await http.choose("ops", id(last), #"{"button":"Deploy"}"#).status == 200)
        alertIDs.append(id(last))
        await first.kill9()

        placeholder.release()
        let hook = try await WebhookReceiver.listening(port: port)
        defer { hook.close() }
        let second = try await first.restart()
        defer { second.cleanup() }
        let received = try await hook.waitForRequests(count: 11, timeout: 30)
        let alerts = try received.map { try verifiedAlert($0) }
        #expect(Set(alerts.map(id)) == Set(alertIDs))
    }

    @Test("SIGTERM with a callback attempt hanging: alertd still exits 0 promptly, and the delivery is made after the restart")
    func shutdownWithAttemptInFlight() async throws {
        let hook = try await WebhookReceiver.listening()
        defer { hook.close() }
        hook.behave(.hang)
        let first = try await Daemon.start(.init(config: callbackConfig(durability: "full", webhooks: [("ops", hook.url)], timeout: 120)))
        defer { first.cleanup() }
        let http = first.client()
        let alert = try await http.postAlert("ops", oneButton)
        #expect(try await http.choose("ops", id(alert), #"{"button":"Deploy"}"#).status == 200)
        _ = try await hook.waitForRequests(count: 1, timeout: 20)

        let started = ContinuousClock.now
        #expect(try await first.terminate(timeout: .seconds(30)) == 0)
        #expect(ContinuousClock.now - started < .seconds(15), "the attempt in flight is cut off after a grace period")
        #expect(first.stderrText.contains("cut off by shutdown"))

        hook.behave(.status(204))
        let second = try await first.restart()
        defer { second.cleanup() }
        let received = try await hook.waitForRequests(count: 2, timeout: 20)
        #expect(received[1].header("webhook-id") == received[0].header("webhook-id"))
        let list = try await deliveries(second.client(), "ops", id(alert)) { $0.first?["state"] as? String == "delivered" }
        #expect(list.first?["state"] as? String == "delivered")
    }
}

@Suite("Graceful shutdown")
struct ShutdownTests {
    @Test("SIGTERM answers parked waiters with their current state and exits 0")
    func sigtermDrains() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try await http.postAlert("ops", #"{"title":"Still here","buttons":[{"title":"OK"}]}"#)
        let alertID = id(alert)
        let onCurrent = Parked(count: 20) { try await http.get("/v1/clients/ops/alerts/current?wait=60&after=\(alertID)") }
        let onAlert = Parked(count: 20) { try await http.get("/v1/clients/ops/alerts/\(alertID)?wait=60") }
        let onEmpty = Parked(count: 5) { try await http.get("/v1/clients/empty/alerts/current?wait=60") }
        try await http.awaitWaiters(45)
        #expect(try await daemon.terminate() == 0)
        for answer in try await onCurrent.awaitAll(timeout: .seconds(10)) {
            #expect(answer.status == 200)
            #expect(try answer.jsonObject()["id"] as? String == id(alert))
        }
        for answer in try await onAlert.awaitAll(timeout: .seconds(10)) {
            #expect(try answer.jsonObject()["state"] as? String == "displayed")
        }
        for answer in try await onEmpty.awaitAll(timeout: .seconds(10)) {
            #expect(answer.status == 204)
        }
        #expect(daemon.stderrText.contains("msg=stopped"))
    }
}
