// The delivery worker's side of Web Push (SPEC §11): it asks the engine (here a double that
// fails loudly on anything it was not told) for each attempt's request and sends it as made;
// a reminder sent stays pending until its next time and is sent again; a push the engine
// ends is failed without a request; a 410 tells the engine the subscription is gone.

import AlertdCore
import AlertdDelivery
import AlertdEngine
import AlertdReceipts
import AlertdSQLite
import AlertdTestSupport
import AlertdWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import AlertdDeliveryWorker

/// The engine as the worker sees it: what to send for each attempt, in turn.
final class Preparer: PushPreparing {
    let plan = NIOLockedValueBox<[PushPreparation]>([])
    let asked = NIOLockedValueBox(0)
    let gone = NIOLockedValueBox<[String]>([])

    func preparePush(_ delivery: PendingDelivery, now: Timestamp) async throws(EngineError) -> PushPreparation {
        asked.withLockedValue { $0 += 1 }
        guard let next = plan.withLockedValue({ $0.isEmpty ? nil : $0.removeFirst() }) else {
            Issue.record("an attempt the test did not plan for: \(delivery.id)")
            return .end("unplanned")
        }
        return next
    }

    func pushSubscriptionGone(_ delivery: PendingDelivery) async {
        gone.withLockedValue { $0.append(delivery.secret) }
    }
}

@Suite("The worker's pushes")
struct PushDeliveryTests {
    /// Runs `body` with a worker over a store in a temp directory, its loop running, and shuts it down after.
    static func withWorker(_ preparer: Preparer, _ body: (DeliveryWorker, SQLiteStore) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "alertd-push-worker-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(directory: directory, durability: .normal)
        let alertStore = try SQLiteAlertStore(
            persistent: store, settings: QueueSettings(), rules: AlertRules(), clock: SystemClock(), logger: Logger(label: "test"),
            receiptKey: .generate())
        alertStore.startWriter()
        let worker = DeliveryWorker(
            settings: .init(
                timeout: 5, policy: RetryPolicy(initial: 0.2, maxInterval: 0.4, maxAge: 600), deny: try DenyList(linkLocal),
                lookUp: { _, _ in [] }),
            log: alertStore, clock: SystemClock(), logger: Logger(label: "test"))
        worker.attach(preparer)
        let loop = Task { await worker.run() }
        defer {
            worker.shutdownNow()
            alertStore.shutdown()
            loop.cancel()
        }
        try await body(worker, store)
    }

    /// One push event to `target`, its subscription `ps_1`.
    static func push(to target: String, in store: SQLiteStore) throws -> OutboxEvent {
        let now = SystemClock().now()
        var ids = AlertIDGenerator()
        let event = OutboxEvent(
            id: "msg_1", alertID: ids.next(at: now), client: "ops", type: "push.alert.reminder", createdAt: now,
            body: Array(#"{"type":"alert.displayed","reminder":true,"alert":{"id":"x"}}"#.utf8),
            deliveries: [OutboxDelivery(id: "dl_1", target: target, webhookID: nil, secret: "ps_1")])
        try store.commit([.event(event)])
        return event
    }

    static func request(_ repeatAt: Timestamp?) -> PushPreparation {
        .send(
            PreparedPush(
                body: [1, 2, 3],
                headers: [("content-encoding", "aes128gcm"), ("ttl", "60"), ("topic", "x"), ("authorization", "vapid t=a, k=b")],
                giveUpAt: nil, repeatAt: repeatAt))
    }

    @Test("a reminder sent stays pending until its next time, is sent again then, and ends when the engine says so")
    func reminderRepeats() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(201))
        let preparer = Preparer()
        let now = SystemClock().now()
        let started = ContinuousClock.now
        preparer.plan.withLockedValue { $0 = [Self.request(now.adding(seconds: 0.5)), Self.request(nil)] }
        try await Self.withWorker(preparer) { worker, store in
            let event = try Self.push(to: service.url, in: store)
            worker.enqueue(event.pendingDeliveries)
            let requests = try await service.waitForRequests(count: 2, timeout: 20)
            // Sent as the engine made it: its body and headers, no JSON content type.
            #expect(
                requests.allSatisfy {
                    $0.body == [1, 2, 3] && $0.header("content-encoding") == "aes128gcm" && $0.header("content-type") == nil
                })
            // Due half a second after `now` (not after the first attempt, which a loaded machine
            // may send late): never before then (the timestamp's millisecond rounding aside).
            let due = requests[1].receivedAt - started
            #expect(due >= .milliseconds(495), "the second reminder came \(due) after the start, before its time")
            // The second said no next time: delivered, nothing pending.
            let deadline = ContinuousClock.now + .seconds(20)
            var record = try #require(try store.deliveries(of: event.alertID).first)
            while record.state != .delivered, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                record = try #require(try store.deliveries(of: event.alertID).first)
            }
            #expect(record.state == .delivered && record.attempts.count == 2, "\(record)")
            #expect(preparer.asked.withLockedValue { $0 } == 2)
        }
    }

    @Test("a push the engine ends is failed with its reason, and nothing is sent")
    func ended() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        let preparer = Preparer()
        preparer.plan.withLockedValue { $0 = [.end("not sent: the alert no longer waits for an answer")] }
        try await Self.withWorker(preparer) { worker, store in
            let event = try Self.push(to: service.url, in: store)
            worker.enqueue(event.pendingDeliveries)
            let deadline = ContinuousClock.now + .seconds(20)
            var record = try #require(try store.deliveries(of: event.alertID).first)
            while record.state == .pending, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                record = try #require(try store.deliveries(of: event.alertID).first)
            }
            #expect(record.state == .failed && record.attempts.first?.error == "not sent: the alert no longer waits for an answer")
            #expect(service.requests.isEmpty)
        }
    }

    @Test("a 410 from the push service fails the push at once and tells the engine its subscription is gone")
    func goneTellsTheEngine() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(410))
        let preparer = Preparer()
        preparer.plan.withLockedValue { $0 = [Self.request(nil)] }
        try await Self.withWorker(preparer) { worker, store in
            let event = try Self.push(to: service.url, in: store)
            worker.enqueue(event.pendingDeliveries)
            _ = try await service.waitForRequests(count: 1, timeout: 20)
            let deadline = ContinuousClock.now + .seconds(20)
            while preparer.gone.withLockedValue({ $0.isEmpty }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(preparer.gone.withLockedValue { $0 } == ["ps_1"])
            var record = try #require(try store.deliveries(of: event.alertID).first)
            while record.state == .pending, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                record = try #require(try store.deliveries(of: event.alertID).first)
            }
            #expect(record.state == .failed && record.attempts.count == 1)
        }
    }
}
