import Foundation
import Testing

@Suite("Long-poll against the real daemon", .ownThreads)
struct LongPollTests {
    @Test("current?wait returns at once when the displayed alert differs from after")
    func returnsAtOnce() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try http.postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#)
        let started = Date()
        let response = try http.get("/v1/clients/ops/alerts/current?wait=30&after=")
        #expect(response.status == 200)
        #expect(try response.jsonObject()["id"] as? String == id(alert))
        #expect(Date().timeIntervalSince(started) < 5)
        let again = try http.get("/v1/clients/ops/alerts/\(id(alert))?wait=0")
        #expect(again.status == 200)
    }

    @Test("a parked current waiter wakes on a choice made on another connection")
    func wakesOnChange() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let first = try http.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
        let second = try http.postAlert("ops", #"{"title":"Second","buttons":[{"title":"OK"}]}"#)
        let parked = try ParkedRequests(
            port: daemon.port, count: 1, method: "GET", path: "/v1/clients/ops/alerts/current?wait=60&after=\(id(first))")
        try http.awaitWaiters(1)
        #expect(!parked.anyAnswered())
        #expect(try http.choose("ops", id(first), #"{"button":"OK"}"#).status == 200)
        let answers = try parked.awaitAll(timeout: 10)
        #expect(answers[0].status == 200)
        #expect(try answers[0].jsonObject()["id"] as? String == id(second))
    }

    @Test("a parked alert waiter wakes with the answered alert")
    func alertWaiterWakes() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try http.postAlert(
            "ops", #"{"title":"Restart db?","buttons":[{"title":"Restart","style":"destructive"},{"title":"No","style":"cancel"}]}"#)
        let parked = try ParkedRequests(port: daemon.port, count: 1, method: "GET", path: "/v1/clients/ops/alerts/\(id(alert))?wait=60")
        try http.awaitWaiters(1)
        #expect(try http.choose("ops", id(alert), #"{"button":"No"}"#).status == 200)
        let answer = try parked.awaitAll(timeout: 10)[0].jsonObject()
        #expect(answer["state"] as? String == "answered")
        let result = try #require(answer["result"] as? [String: Any])
        #expect(result["button"] as? String == "No")
        #expect(result["cancelled"] as? Bool == true)
    }

    @Test("a wait with no change times out after its seconds and answers with the state as it is")
    func timesOut() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try http.postAlert("ops", #"{"title":"Hold","buttons":[{"title":"OK"}]}"#)
        let started = Date()
        let current = try http.get("/v1/clients/ops/alerts/current?wait=1&after=\(id(alert))")
        let elapsed = Date().timeIntervalSince(started)
        #expect(current.status == 200)
        #expect(try current.jsonObject()["id"] as? String == id(alert))
        #expect(elapsed >= 0.95 && elapsed < 5, "took \(elapsed) s")
        let empty = try http.get("/v1/clients/nobody/alerts/current?wait=1")
        #expect(empty.status == 204)
        let one = try http.get("/v1/clients/ops/alerts/\(id(alert))?wait=1")
        #expect(try one.jsonObject()["state"] as? String == "displayed")
    }

    @Test("wait is clamped to limits.max_wait_seconds")
    func clamped() throws {
        let daemon = try Daemon.start(.init(config: "limits:\n  max_wait_seconds: 1\n"))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let started = Date()
        let response = try http.get("/v1/clients/ops/alerts/current?wait=3600")
        let elapsed = Date().timeIntervalSince(started)
        #expect(response.status == 204)
        #expect(elapsed >= 0.95 && elapsed < 10, "took \(elapsed) s")
    }

    @Test("three hundred parked waiters are all woken by one choice")
    func manyWaiters() throws {
        let daemon = try Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let first = try http.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
        let second = try http.postAlert("ops", #"{"title":"Second","buttons":[{"title":"OK"}]}"#)
        let onCurrent = try ParkedRequests(
            port: daemon.port, count: 200, method: "GET", path: "/v1/clients/ops/alerts/current?wait=60&after=\(id(first))")
        let onAlert = try ParkedRequests(port: daemon.port, count: 100, method: "GET", path: "/v1/clients/ops/alerts/\(id(first))?wait=60")
        try http.awaitWaiters(300)
        #expect(!onCurrent.anyAnswered() && !onAlert.anyAnswered())
        #expect(try http.choose("ops", id(first), #"{"button_index":0}"#).status == 200)
        for answer in try onCurrent.awaitAll(timeout: 20) {
            #expect(try answer.jsonObject()["id"] as? String == id(second))
        }
        for answer in try onAlert.awaitAll(timeout: 20) {
            #expect(try answer.jsonObject()["state"] as? String == "answered")
        }
        #expect(try http.waiters() == 0)
    }
}
