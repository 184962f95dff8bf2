import Foundation
import Synchronization
import Testing

@Suite("Durability: kill -9 and restart", .ownThreads)
struct DurabilityTests {
    static let states = "queued,displayed,answered,dismissed,expired,withdrawn"

    @Test("every acknowledged post, choice and withdrawal survives kill -9")
    func acknowledgedChangesSurvive() throws {
        let first = try Daemon.start(.init(config: "durability: full\n"))
        let http = first.client()
        var expected: [String: String] = [:]  // id → state
        var answered: [String: String] = [:]  // id → button
        for index in 0..<30 {
            let client = "team-\(index % 3)"
            let alert = try http.postAlert(
                client,
                #"{"title":"Alert \#(index)","buttons":[{"title":"Yes"},{"title":"No","style":"cancel"}],"metadata":{"n":\#(index)}}"#)
            expected[id(alert)] = alert["state"] as? String
        }
        // Answer the displayed alert of each client twice, withdraw one queued alert each.
        for client in ["team-0", "team-1", "team-2"] {
            for button in ["Yes", "No"] {
                let current = try http.get("/v1/clients/\(client)/alerts/current").jsonObject()
                let response = try http.choose(client, id(current), #"{"button":"\#(button)"}"#)
                #expect(response.status == 200)
                expected[id(current)] = "answered"
                answered[id(current)] = button
            }
            let queued = try http.get("/v1/clients/\(client)/alerts?state=queued&limit=1").jsonObject()["alerts"] as! [[String: Any]]
            #expect(try http.delete("/v1/clients/\(client)/alerts/\(id(queued[0]))").status == 200)
            expected[id(queued[0])] = "withdrawn"
            let displayed = try http.get("/v1/clients/\(client)/alerts/current").jsonObject()
            expected[id(displayed)] = "displayed"
        }
        first.kill9()

        let second = try first.restart()
        defer { second.cleanup() }
        let after = second.client()
        for (alertID, state) in expected {
            let client =
                try after.get("/v1/clients/team-0/alerts/\(alertID)").status == 200
                ? "team-0"
                : try after.get("/v1/clients/team-1/alerts/\(alertID)").status == 200 ? "team-1" : "team-2"
            let alert = try after.get("/v1/clients/\(client)/alerts/\(alertID)").jsonObject()
            #expect(alert["state"] as? String == state, "alert \(alertID)")
            if let button = answered[alertID] {
                #expect((alert["result"] as? [String: Any])?["button"] as? String == button)
            }
        }
        let clients = try after.get("/v1/clients").jsonObject()["clients"] as! [[String: Any]]
        #expect(clients.map { $0["client"] as? String } == ["team-0", "team-1", "team-2"])
        #expect(clients.allSatisfy { $0["pending"] as? Int == 7 })
    }

    @Test("posts acknowledged by concurrent clients survive a kill -9 in the middle of the load")
    func concurrentPostsSurvive() throws {
        let first = try Daemon.start(.init(config: "durability: full\n"))
        let acknowledged = Mutex<[String]>([])
        let port = first.port
        let threads = 8
        let started = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for worker in 0..<threads {
            group.enter()
            Thread {
                defer { group.leave() }
                let http = TestHTTPClient(port: port, timeout: 5)
                var count = 0
                while count < 2000 {
                    guard
                        let response = try? http.post(
                            "/v1/clients/load-\(worker % 2)/alerts", json: #"{"title":"n\#(count)","buttons":[{"title":"OK"}]}"#),
                        response.status == 201, let alert = try? response.jsonObject()
                    else { return }  // the daemon died under us
                    acknowledged.withLock { $0.append(alert["id"] as! String) }
                    count += 1
                    if count == 20 { started.signal() }
                }
            }.start()
        }
        for _ in 0..<threads { started.wait() }
        first.kill9()
        group.wait()

        let second = try first.restart()
        defer { second.cleanup() }
        let http = second.client()
        var stored: Set<String> = []
        for client in ["load-0", "load-1"] {
            var cursor: String?
            repeat {
                let page = try http.get("/v1/clients/\(client)/alerts?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? "")).jsonObject()
                for alert in page["alerts"] as! [[String: Any]] { stored.insert(id(alert)) }
                cursor = page["next_cursor"] as? String
            } while cursor != nil
        }
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count >= threads * 20)
        let missing = acked.filter { !stored.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) of \(acked.count) acknowledged posts are gone")
    }

    @Test("the callback events of an acknowledged choice survive kill -9 right after it")
    func outboxSurvives() throws {
        let config = """
            callbacks: { signing_secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }
            webhooks:
              - { client: ops, url: "http://127.0.0.1:9/hook", secret: "s" }
            """
        let first = try Daemon.start(.init(config: config))
        let http = first.client()
        var decided: [String] = []
        for index in 0..<10 {
            let alert = try http.postAlert(
                "ops", #"{"title":"n\#(index)","buttons":[{"title":"OK"}],"callback_url":"http://127.0.0.1:9/cb"}"#)
            #expect(try http.choose("ops", id(alert), #"{"button":"OK"}"#).status == 200)
            decided.append(id(alert))
        }
        first.kill9()
        let second = try first.restart()
        defer { second.cleanup() }
        let after = second.client()
        for alertID in decided {
            let deliveries = try after.get("/v1/clients/ops/alerts/\(alertID)/deliveries").jsonObject()["deliveries"] as! [[String: Any]]
            #expect(deliveries.count == 2, "alert \(alertID)")
            #expect(Set(deliveries.compactMap { $0["event_id"] as? String }).count == 1)
        }
    }

    @Test("an Idempotency-Key still replays the first alert after kill -9")
    func idempotencySurvives() throws {
        let first = try Daemon.start()
        let http = first.client()
        let body = #"{"title":"Once","buttons":[{"title":"OK"}]}"#
        let alert = try http.postAlert("ops", body, headers: [("Idempotency-Key", "deploy-42")])
        first.kill9()
        let second = try first.restart()
        defer { second.cleanup() }
        let replay = try second.client().post("/v1/clients/ops/alerts", json: body, headers: [("Idempotency-Key", "deploy-42")])
        #expect(replay.status == 200)
        #expect(try replay.jsonObject()["id"] as? String == id(alert))
        let list = try second.client().get("/v1/clients/ops/alerts").jsonObject()["alerts"] as! [[String: Any]]
        #expect(list.count == 1)
    }

    @Test("deadlines that passed while the daemon was dead fire after the restart")
    func deadlinesAfterRestart() throws {
        let first = try Daemon.start()
        let http = first.client()
        let notice = try http.postAlert("ops", #"{"title":"Backup finished","dismiss_after":0.5}"#)
        let approval = try http.postAlert("team", #"{"title":"Approve?","buttons":[{"title":"Yes"}],"expires_in":0.5}"#)
        first.kill9()
        let second = try first.restart()
        defer { second.cleanup() }
        let after = second.client()
        // Each wait returns as soon as the alert is terminal; the deadline itself is what we wait for.
        let dismissed = try after.get("/v1/clients/ops/alerts/\(id(notice))?wait=10").jsonObject()
        #expect(dismissed["state"] as? String == "dismissed")
        let expired = try after.get("/v1/clients/team/alerts/\(id(approval))?wait=10").jsonObject()
        #expect(expired["state"] as? String == "expired")
    }
}

@Suite("Graceful shutdown", .ownThreads)
struct ShutdownTests {
    @Test("SIGTERM answers parked waiters with their current state and exits 0")
    func sigtermDrains() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try http.postAlert("ops", #"{"title":"Still here","buttons":[{"title":"OK"}]}"#)
        let onCurrent = try ParkedRequests(
            port: daemon.port, count: 20, method: "GET", path: "/v1/clients/ops/alerts/current?wait=60&after=\(id(alert))")
        let onAlert = try ParkedRequests(port: daemon.port, count: 20, method: "GET", path: "/v1/clients/ops/alerts/\(id(alert))?wait=60")
        let onEmpty = try ParkedRequests(port: daemon.port, count: 5, method: "GET", path: "/v1/clients/empty/alerts/current?wait=60")
        try http.awaitWaiters(45)
        http.close()
        #expect(try daemon.terminate() == 0)
        for answer in try onCurrent.awaitAll(timeout: 10) {
            #expect(answer.status == 200)
            #expect(try answer.jsonObject()["id"] as? String == id(alert))
        }
        for answer in try onAlert.awaitAll(timeout: 10) {
            #expect(try answer.jsonObject()["state"] as? String == "displayed")
        }
        for answer in try onEmpty.awaitAll(timeout: 10) {
            #expect(answer.status == 204)
        }
        #expect(daemon.stderrText.contains("msg=stopped"))
    }
}
