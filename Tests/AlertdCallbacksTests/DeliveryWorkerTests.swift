import AlertdCallbacks
import AlertdCore
import AlertdDelivery
import AlertdStore
import AlertdTestSupport
import AlertdWire
import Foundation
import Logging
import Synchronization
import Testing

/// The worker over a real store and committer in a temp directory, with a
/// name resolver the test controls (so a name can resolve to several addresses).
private final class Harness: Sendable {
    let directory: String
    let store: SQLiteStore
    let committer: GroupCommitter
    let worker: DeliveryWorker

    init(timeout: Double = 5, deny: [String] = DenyList.defaultEntries, lookUp: @escaping HostLookup) throws {
        directory = NSTemporaryDirectory() + "alertd-worker-\(UUID().uuidString)"
        store = try SQLiteStore(directory: directory, durability: .normal)
        let logger = Logger(label: "test")
        committer = GroupCommitter(store: store, logger: logger)
        committer.start()
        worker = DeliveryWorker(
            settings: .init(
                timeout: timeout, policy: RetryPolicy(initial: 0.2, maxInterval: 0.4, maxAge: 600), deny: try DenyList(deny),
                lookUp: lookUp),
            committer: committer, clock: SystemClock(), logger: logger)
    }

    /// Writes an event with one delivery to `target` and hands it to the worker, as a commit does.
    func deliver(to target: String, id: String = "1") throws -> String {
        let now = SystemClock().now()
        var ids = AlertIDGenerator()
        let event = OutboxEvent(
            id: "msg_\(id)", alertID: ids.next(at: now), client: "ops", type: "alert.answered", createdAt: now,
            body: Array(#"{"type":"alert.answered"}"#.utf8),
            deliveries: [
                OutboxDelivery(id: "dl_\(id)", target: target, webhookID: "wh_1", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            ])
        try store.commit([.event(event)])
        worker.enqueue(event.pendingDeliveries)
        return event.alertID.description
    }

    /// Polls the store until the delivery has `count` attempts recorded (bounded).
    func attempts(of alertID: String, count: Int, timeout: Double = 15) throws -> DeliveryRecord {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let record = try #require(try store.deliveries(of: AlertID(alertID)!).first)
            if record.attempts.count >= count || Date() > deadline { return record }
            usleep(5_000)
        }
    }

    func stop() {
        worker.shutdown()
        committer.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite("The delivery worker resolves names, checks them and falls back between addresses", .serialized)
struct DeliveryWorkerTests {
    @Test("a name resolving to an address that refuses, then to the receiver's, is delivered through the second; Host keeps the name")
    func fallsBackToTheNextAddress() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let resolved = Mutex<[String]>([])
        let harness = try Harness { host, _ in
            resolved.withLock { $0.append(host) }
            // 127.0.0.2 is loopback too, but the receiver listens on 127.0.0.1 only: refused.
            return [IPAddress("127.0.0.2")!, IPAddress("127.0.0.1")!]
        }
        harness.worker.start(restoring: [])
        defer { harness.stop() }
        let alertID = try harness.deliver(to: "http://receiver.test:\(receiver.port)/hook")
        let requests = try receiver.waitForRequestsBlocking(count: 1, timeout: 15)
        #expect(requests[0].header("host") == "receiver.test:\(receiver.port)")
        #expect(requests[0].header("webhook-id") == "msg_1")
        let record = try harness.attempts(of: alertID, count: 1)
        #expect(record.state == .delivered && record.attempts.map(\.statusCode) == [204])
        #expect(resolved.withLock { $0 } == ["receiver.test"])
    }

    @Test("a name resolving to a denied address is refused without a connection, and the reason recorded")
    func resolvedAddressDenied() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let harness = try Harness(deny: ["127.0.0.0/8"]) { _, _ in [IPAddress("127.0.0.1")!] }
        harness.worker.start(restoring: [])
        defer { harness.stop() }
        let alertID = try harness.deliver(to: "http://sneaky.test:\(receiver.port)/hook")
        let record = try harness.attempts(of: alertID, count: 1)
        let error = try #require(record.attempts.first?.error)
        #expect(error.contains("127.0.0.1 is in callbacks.deny entry 127.0.0.0/8"), "\(error)")
        #expect(record.state == .pending && record.nextAttemptAt != nil)
        #expect(receiver.requests.isEmpty && receiver.connectionsAccepted == 0)
    }

    @Test("a name that does not resolve is a failed attempt naming the host, retried later")
    func resolutionFailure() throws {
        struct NoSuchHost: Error, CustomStringConvertible { var description: String { "no such host" } }
        let harness = try Harness { _, _ in throw NoSuchHost() }
        harness.worker.start(restoring: [])
        defer { harness.stop() }
        let alertID = try harness.deliver(to: "http://nowhere.test/hook")
        let record = try harness.attempts(of: alertID, count: 2)
        #expect(record.attempts.count >= 2)
        #expect(record.attempts.allSatisfy { $0.error?.contains("no such host") == true }, "\(record.attempts)")
    }

    @Test("a name server that hangs ends the attempt at its timeout, and another name is not held up")
    func hangingResolution() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let release = DispatchSemaphore(value: 0)
        let harness = try Harness(timeout: 0.5) { host, _ in
            if host == "slow.test" { _ = release.wait(timeout: .now() + 10) }
            return [IPAddress("127.0.0.1")!]
        }
        harness.worker.start(restoring: [])
        defer {
            release.signal()
            harness.stop()
        }
        let slow = try harness.deliver(to: "http://slow.test:\(receiver.port)/hook", id: "slow")
        let started = ContinuousClock.now
        _ = try harness.deliver(to: "http://fast.test:\(receiver.port)/hook", id: "fast")
        let requests = try receiver.waitForRequestsBlocking(count: 1, timeout: 10)
        #expect(requests[0].header("host") == "fast.test:\(receiver.port)")
        #expect(ContinuousClock.now - started < .seconds(5))
        let record = try harness.attempts(of: slow, count: 1)
        #expect(record.attempts.first?.error == "timed out", "\(record.attempts)")
    }
}
