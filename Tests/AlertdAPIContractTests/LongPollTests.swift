// Long-polls (§4): waiters park without holding a thread and wake on the change they wait
// for. Moved from the end-to-end tier; "three hundred waiters" runs live too.

import AlertdTestSupport
import Foundation
import Testing

@Suite("Long-poll")
struct LongPollTests {
    @Test("current?wait returns at once when the displayed alert differs from after")
    func returnsAtOnce() async throws {
        try await withTestClient { http in
            let alert = try await http.postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#)
            let started = ContinuousClock.now
            let response = try await http.get("/v1/clients/ops/alerts/current?wait=30&after=")
            #expect(response.status == 200)
            #expect(try response.jsonObject()["id"] as? String == id(alert))
            #expect(ContinuousClock.now - started < .seconds(5))
            let again = try await http.get("/v1/clients/ops/alerts/\(id(alert))?wait=0")
            #expect(again.status == 200)
        }
    }

    @Test("a parked current waiter wakes on a choice made on another request", arguments: TestMode.both)
    func wakesOnChange(mode: TestMode) async throws {
        try await withTestClient(mode) { http in
            let first = try await http.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
            let second = try await http.postAlert("ops", #"{"title":"Second","buttons":[{"title":"OK"}]}"#)
            let firstID = Contract.id(first)
            let parked = Parked(count: 1) { try await http.get("/v1/clients/ops/alerts/current?wait=60&after=\(firstID)") }
            try await http.awaitWaiters(1)
            #expect(!parked.anyAnswered)
            #expect(try await http.choose("ops", id(first), #"{"button":"OK"}"#).status == 200)
            let answers = try await parked.awaitAll(timeout: .seconds(10))
            #expect(answers[0].status == 200)
            #expect(try answers[0].jsonObject()["id"] as? String == id(second))
        }
    }

    @Test("a parked alert waiter wakes with the answered alert")
    func alertWaiterWakes() async throws {
        try await withTestClient { http in
            let alert = try await http.postAlert(
                "ops", #"{"title":"Restart db?","buttons":[{"title":"Restart","style":"destructive"},{"title":"No","style":"cancel"}]}"#)
            let alertID = Contract.id(alert)
            let parked = Parked(count: 1) { try await http.get("/v1/clients/ops/alerts/\(alertID)?wait=60") }
            try await http.awaitWaiters(1)
            #expect(try await http.choose("ops", id(alert), #"{"button":"No"}"#).status == 200)
            let answer = try await parked.awaitAll(timeout: .seconds(10))[0].jsonObject()
            #expect(answer["state"] as? String == "answered")
            let result = try #require(answer["result"] as? [String: Any])
            #expect(result["button"] as? String == "No")
            #expect(result["cancelled"] as? Bool == true)
        }
    }

    @Test("a wait with no change times out after its seconds and answers with the state as it is")
    func timesOut() async throws {
        try await withTestClient { http in
            let alert = try await http.postAlert("ops", #"{"title":"Hold","buttons":[{"title":"OK"}]}"#)
            let started = ContinuousClock.now
            let current = try await http.get("/v1/clients/ops/alerts/current?wait=1&after=\(id(alert))")
            let elapsed = ContinuousClock.now - started
            #expect(current.status == 200)
            #expect(try current.jsonObject()["id"] as? String == id(alert))
            #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(60), "took \(elapsed)")
            let empty = try await http.get("/v1/clients/nobody/alerts/current?wait=1")
            #expect(empty.status == 204)
            let one = try await http.get("/v1/clients/ops/alerts/\(id(alert))?wait=1")
            #expect(try one.jsonObject()["state"] as? String == "displayed")
        }
    }

    @Test("wait is clamped to limits.max_wait_seconds")
    func clamped() async throws {
        try await withTestClient(config: Contract.baseConfig + "limits:\n  max_wait_seconds: 1\n") { http in
            let started = ContinuousClock.now
            let response = try await http.get("/v1/clients/ops/alerts/current?wait=3600")
            let elapsed = ContinuousClock.now - started
            #expect(response.status == 204)
            // Clamped to a second, not an hour; the upper bound is for a heavily loaded machine.
            #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(60), "took \(elapsed)")
        }
    }

    @Test("three hundred parked waiters are all woken by one choice", arguments: TestMode.both)
    func manyWaiters(mode: TestMode) async throws {
        try await withTestClient(mode) { http in
            let first = try await http.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
            let second = try await http.postAlert("ops", #"{"title":"Second","buttons":[{"title":"OK"}]}"#)
            let firstID = Contract.id(first)
            let onCurrent = Parked(count: 200) { try await http.get("/v1/clients/ops/alerts/current?wait=60&after=\(firstID)") }
            let onAlert = Parked(count: 100) { try await http.get("/v1/clients/ops/alerts/\(firstID)?wait=60") }
            try await http.awaitWaiters(300)
            #expect(!onCurrent.anyAnswered && !onAlert.anyAnswered)
            #expect(try await http.choose("ops", id(first), #"{"button_index":0}"#).status == 200)
            for answer in try await onCurrent.awaitAll(timeout: .seconds(20)) {
                #expect(try answer.jsonObject()["id"] as? String == id(second))
            }
            for answer in try await onAlert.awaitAll(timeout: .seconds(20)) {
                #expect(try answer.jsonObject()["state"] as? String == "answered")
            }
            #expect(try await http.waiters() == 0)
        }
    }
}
