import AlertdCore
import AlertdDelivery
import AlertdTestSupport
import AlertdWire
import Testing

private func delivery(
    _ id: String, to target: String = "http://a.test/hook", client: String = "ops", kind: DeliveryKind = .callback
) -> PendingDelivery {
    PendingDelivery(
        id: id, eventID: "msg_" + id, target: target, secret: "s", body: Array("{}".utf8), eventCreatedAt: eventTime,
        attemptsMade: 0, due: eventTime, kind: kind, client: client)
}

@Suite("Delivery fairness: backlogs per client, a lane for integrations, a refusal warned about once")
struct DeliveryFairnessTests {
    @Test("Each client's callback deliveries waiting or in flight are counted, until their attempt is over for good")
    func backlogPerClient() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 1)
        for n in 0..<3 { queue.add(delivery("a\(n)", client: "noisy")) }
        queue.add(delivery("b0", to: "http://b.test/h", client: "quiet"))
        queue.add(delivery("s0", to: "http://am.test/api/v2/silences", client: "noisy", kind: .alertmanagerSilence))
        #expect(queue.backlog(of: "noisy") == 3, "an integration's request is not a callback backlog")
        #expect(queue.backlog(of: "quiet") == 1)
        #expect(queue.backlog(of: "unknown") == 0)

        let taken = queue.takeDue(now: eventTime)
        #expect(queue.backlog(of: "noisy") == 3, "in flight still counts")
        // A failed attempt comes back: still one of the backlog.
        let first = taken.first { $0.id == "a0" }!
        queue.finished(first)
        queue.retry(first)
        #expect(queue.backlog(of: "noisy") == 3)
        for job in queue.takeDue(now: eventTime) { queue.finished(job) }
        for job in taken where job.id != "a0" { queue.finished(job) }
        #expect(queue.backlog(of: "quiet") == 0)
    }

    @Test("Integration requests have a lane of their own: callbacks filling every slot do not hold up a silence")
    func integrationLane() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 4, maxInFlight: 2, maxInFlightIntegrations: 1)
        for n in 0..<6 { queue.add(delivery("c\(n)", to: "http://slow\(n).test/h")) }
        let callbacks = queue.takeDue(now: eventTime)
        #expect(callbacks.count == 2, "the callbacks' bound")
        queue.add(delivery("s0", to: "http://am.test/api/v2/silences", kind: .alertmanagerSilence))
        queue.add(delivery("s1", to: "http://am.test/api/v2/silences", kind: .alertmanagerSilence))
        #expect(queue.nextDue == eventTime)
        #expect(queue.takeDue(now: eventTime).map(\.id) == ["s0"], "taken while callbacks are at their bound; the lane's own bound is 1")
        #expect(queue.inFlightCount == 3)
        #expect(queue.takeDue(now: eventTime).isEmpty)
        queue.finished(callbacks[0])
        let next = queue.takeDue(now: eventTime)
        #expect(next.count == 1 && next[0].kind == .callback, "a silence never takes a callback's slot either")
    }

    @Test("A refused target is warned about once per reason; its retries are not")
    func refusalOnce() {
        var log = RefusalLog(capacity: 2)
        var warned: [Bool] = []
        warned.append(log.isFirst(target: "http://10.0.0.5/h", reason: "10.0.0.0/8"))
        warned.append(log.isFirst(target: "http://10.0.0.5/h", reason: "10.0.0.0/8"))
        warned.append(log.isFirst(target: "http://10.0.0.5/h", reason: "resolves to a denied address"))
        // Bounded: past its capacity it starts over (and warns once more).
        warned.append(log.isFirst(target: "http://10.0.0.6/h", reason: "10.0.0.0/8"))
        warned.append(log.isFirst(target: "http://10.0.0.5/h", reason: "10.0.0.0/8"))
        #expect(warned == [true, false, true, true, true])
    }
}
