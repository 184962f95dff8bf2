import AlertdInProcess
import AlertdTestSupport
import AlertdEngine
import Foundation
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdCore
import AlertdHTTP
import NIOConcurrencyHelpers

@Suite("Deadlines through the API, on a manual clock")
struct DeadlineTests {
    @Test("a buttonless alert is dismissed dismiss_after seconds after it is displayed, then the next one shows")
    func dismissal() async throws {
        try await withAlertd { daemon in
            let notice = try await daemon.postAlert("ops", #"{"title":"Backup done","dismiss_after":2}"#)
            let next = try await daemon.postAlert("ops", #"{"title":"Next","buttons":[{"title":"OK"}]}"#)
            let id = notice["id"] as! String

            daemon.clock.advance(seconds: 1.999)
            await daemon.fireDeadlines()
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)").jsonObject()["state"] as? String == "displayed")

            daemon.clock.advance(seconds: 0.001)
            await daemon.fireDeadlines()
            let dismissed = try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)").jsonObject()
            #expect(dismissed["state"] as? String == "dismissed")
            #expect(dismissed["position"] is NSNull)
            let result = try #require(dismissed["result"] as? [String: Any])
            #expect(result["outcome"] as? String == "dismissed")
            #expect(result["button"] is NSNull)
            #expect(result["decided_by"] is NSNull)
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").jsonObject()["id"] as? String == next["id"] as? String)
        }
    }

    @Test("the default dismissal delay comes from alerts.default_dismiss_after")
    func defaultDismissal() async throws {
        try await withAlertd(config: "alerts: {default_dismiss_after: 5}") { daemon in
            let notice = try await daemon.postAlert("ops", #"{"title":"FYI"}"#)
            #expect(notice["dismiss_after"] as? Int == 5)
            daemon.clock.advance(seconds: 4.9)
            await daemon.fireDeadlines()
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").status == 200)
            daemon.clock.advance(seconds: 0.1)
            await daemon.fireDeadlines()
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").status == 204)
        }
    }

    @Test("a queued alert expires at expires_at without ever being displayed")
    func queuedExpiry() async throws {
        try await withAlertd { daemon in
            _ = try await daemon.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
            let second = try await daemon.postAlert("ops", #"{"title":"Second","buttons":[{"title":"OK"}],"expires_in":30}"#)
            let id = second["id"] as! String
            #expect(second["position"] as? Int == 1)
            daemon.clock.advance(seconds: 30)
            await daemon.fireDeadlines()
            let expired = try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)").jsonObject()
            #expect(expired["state"] as? String == "expired")
            #expect(expired["displayed_at"] is NSNull)
            let list = try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as! [[String: Any]]
            #expect(list.map { $0["title"] as? String } == ["First"])
        }
    }

    @Test("a parked waiter on an alert is answered when the alert expires")
    func waiterSeesExpiry() async throws {
        try await withAlertd { daemon in
            let alert = try await daemon.postAlert("ops", #"{"title":"Approve?","buttons":[{"title":"Yes"}],"expires_in":10}"#)
            let waiter = daemon.begin("GET", "/v1/clients/ops/alerts/\(alert["id"] as! String)?wait=60")
            await daemon.barrier()
            #expect(!waiter.isAnswered)
            daemon.clock.advance(seconds: 10)
            await daemon.fireDeadlines()
            let answer = try await waiter.value()
            #expect(answer.status == 200)
            #expect(try answer.jsonObject()["state"] as? String == "expired")
        }
    }

    @Test("deadlines that passed while the daemon was down fire at once after the restart")
    func deadlinesAcrossRestart() async throws {
        try await withAlertd { daemon in
            let notice = try await daemon.postAlert("ops", #"{"title":"Gone soon","dismiss_after":1}"#)
            let approval = try await daemon.postAlert("team", #"{"title":"Approve?","buttons":[{"title":"Yes"}],"expires_in":60}"#)
            try await daemon.stop()
            daemon.clock.advance(seconds: 3600)
            try await daemon.start()
            await daemon.fireDeadlines()
            #expect(
                try await daemon.send("GET", "/v1/clients/ops/alerts/\(notice["id"] as! String)").jsonObject()["state"] as? String
                    == "dismissed")
            #expect(
                try await daemon.send("GET", "/v1/clients/team/alerts/\(approval["id"] as! String)").jsonObject()["state"] as? String
                    == "expired")
        }
    }
}

@Suite("Queues through the API")
struct QueueTests {
    @Test("a stack client shows the newest alert at once and the covered one again when it is answered")
    func stackPolicy() async throws {
        try await withAlertd(config: "clients:\n  ops: { policy: stack }\n") { daemon in
            let older = try await daemon.postAlert("ops", #"{"title":"Older","buttons":[{"title":"OK"}]}"#)
            let newer = try await daemon.postAlert("ops", #"{"title":"Newer","buttons":[{"title":"OK"}]}"#)
            #expect(newer["state"] as? String == "displayed")
            let covered = try await daemon.send("GET", "/v1/clients/ops/alerts/\(older["id"] as! String)").jsonObject()
            #expect(covered["state"] as? String == "queued")
            #expect(covered["position"] as? Int == 1)
            #expect(covered["displayed_at"] is NSNull)
            _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(newer["id"] as! String)/choice", json: #"{"button":"OK"}"#)
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").jsonObject()["id"] as? String == older["id"] as? String)
        }
    }

    @Test("a fifo client keeps the displayed alert when a higher priority arrives, then shows the highest priority")
    func fifoPolicy() async throws {
        try await withAlertd { daemon in
            let first = try await daemon.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
            _ = try await daemon.postAlert("ops", #"{"title":"Low","buttons":[{"title":"OK"}]}"#)
            let urgent = try await daemon.postAlert("ops", #"{"title":"Urgent","priority":50,"buttons":[{"title":"OK"}]}"#)
            #expect(urgent["state"] as? String == "queued")
            #expect(urgent["position"] as? Int == 1)
            let list = try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as! [[String: Any]]
            #expect(list.map { $0["title"] as? String } == ["First", "Urgent", "Low"])
            #expect(list.map { $0["position"] as? Int } == [0, 1, 2])
            _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(first["id"] as! String)/choice", json: #"{"button_index":0}"#)
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").jsonObject()["title"] as? String == "Urgent")
        }
    }

    @Test("switching a client to stack in the config re-orders its queue on restart")
    func policyChangeOnRestart() async throws {
        try await withAlertd { daemon in
            _ = try await daemon.postAlert("ops", #"{"title":"Older","buttons":[{"title":"OK"}]}"#)
            _ = try await daemon.postAlert("ops", #"{"title":"Newer","buttons":[{"title":"OK"}]}"#)
            try await daemon.restart(config: "clients:\n  ops: { policy: stack }\n")
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").jsonObject()["title"] as? String == "Newer")
        }
    }
}

@Suite("Long-poll waiters in process")
struct WaiterTests {
    @Test("a current waiter parks while the displayed id equals after, and wakes with the next alert")
    func currentWakes() async throws {
        try await withAlertd { daemon in
            let first = try await daemon.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
            let second = try await daemon.postAlert("ops", #"{"title":"Second","buttons":[{"title":"OK"}]}"#)
            let waiters = (0..<50).map { _ in daemon.begin("GET", "/v1/clients/ops/alerts/current?wait=60&after=\(first["id"] as! String)")
            }
            await daemon.barrier()
            #expect(waiters.allSatisfy { !$0.isAnswered })
            #expect(daemon.alertd.engine.waiterCount == 50)
            _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(first["id"] as! String)/choice", json: #"{"button":"OK"}"#)
            for waiter in waiters {
                #expect(try await waiter.value().jsonObject()["id"] as? String == second["id"] as? String)
            }
            #expect(daemon.alertd.engine.waiterCount == 0)
        }
    }

    @Test("a current waiter without after parks only while nothing is displayed")
    func currentWithoutAfter() async throws {
        try await withAlertd { daemon in
            let waiter = daemon.begin("GET", "/v1/clients/ops/alerts/current?wait=60")
            await daemon.barrier()
            #expect(!waiter.isAnswered)
            let posted = try await daemon.postAlert("ops", #"{"title":"Hello","buttons":[{"title":"OK"}]}"#)
            #expect(try await waiter.value().jsonObject()["id"] as? String == posted["id"] as? String)
            // Something is displayed now: no parking at all.
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current?wait=60").status == 200)
        }
    }

    @Test("draining answers every parked waiter with the state it waited on")
    func drainAnswers() async throws {
        try await withAlertd { daemon in
            let posted = try await daemon.postAlert("ops", #"{"title":"Hello","buttons":[{"title":"OK"}]}"#)
            let onCurrent = daemon.begin("GET", "/v1/clients/ops/alerts/current?wait=60&after=\(posted["id"] as! String)")
            let onAlert = daemon.begin("GET", "/v1/clients/ops/alerts/\(posted["id"] as! String)?wait=60")
            await daemon.barrier()
            daemon.alertd.engine.drain()
            // Answered by the drain, not by their 60-s waits: 20 s is a bound for a loaded
            // two-core machine (2 s failed there), still a third of the wait.
            #expect(try await onCurrent.value(timeout: .seconds(20)).jsonObject()["id"] as? String == posted["id"] as? String)
            #expect(try await onAlert.value(timeout: .seconds(20)).jsonObject()["state"] as? String == "displayed")
            let refused = try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"Late"}"#)
            #expect(refused.status == 503)
            #expect(try refused.jsonObject()["code"] as? String == "unavailable")
        }
    }
}

@Suite("Retention")
struct RetentionTests {
    @Test("decided alerts are deleted once alerts.retention has passed, pending ones never")
    func purge() async throws {
        try await withAlertd(config: "alerts: { retention: 3600 }") { daemon in
            let decided = try await daemon.postAlert("ops", #"{"title":"Old","buttons":[{"title":"OK"}]}"#)
            let pending = try await daemon.postAlert("ops", #"{"title":"Still waiting","buttons":[{"title":"OK"}]}"#)
            _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(decided["id"] as! String)/choice", json: #"{"button":"OK"}"#)

            daemon.clock.advance(seconds: 3599)
            await daemon.alertd.engine.purge()
            await daemon.barrier()
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(decided["id"] as! String)").status == 200)

            daemon.clock.advance(seconds: 2)
            await daemon.alertd.engine.purge()
            await daemon.barrier()
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(decided["id"] as! String)").status == 404)
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(pending["id"] as! String)").status == 200)
            let listed = try await daemon.send("GET", "/v1/clients/ops/alerts?state=answered").jsonObject()["alerts"] as! [Any]
            #expect(listed.isEmpty)
        }
    }
}

@Suite("Idempotency window")
struct IdempotencyWindowTests {
    @Test("an Idempotency-Key replays for 24 hours, then the same key creates a new alert")
    func twentyFourHours() async throws {
        try await withAlertd { daemon in
            let body = #"{"title":"Deploy?","buttons":[{"title":"Deploy"}],"expires_in":604800}"#
            let key = [("Idempotency-Key", "deploy-7")]
            let first = try await daemon.send("POST", "/v1/clients/ops/alerts", json: body, headers: key)
            #expect(first.status == 201)
            let firstID = try first.jsonObject()["id"] as? String

            daemon.clock.advance(seconds: 86_399)
            let replay = try await daemon.send("POST", "/v1/clients/ops/alerts", json: body, headers: key)
            #expect(replay.status == 200)
            #expect(try replay.jsonObject()["id"] as? String == firstID)
            let mismatch = try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"Other"}"#, headers: key)
            #expect(mismatch.status == 422)

            daemon.clock.advance(seconds: 2)
            let fresh = try await daemon.send("POST", "/v1/clients/ops/alerts", json: body, headers: key)
            #expect(fresh.status == 201)
            #expect(try fresh.jsonObject()["id"] as? String != firstID)
            // Keys belong to their client.
            #expect(try await daemon.send("POST", "/v1/clients/team/alerts", json: body, headers: key).status == 201)
        }
    }
}
