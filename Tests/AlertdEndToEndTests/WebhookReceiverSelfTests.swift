// Tests of the webhook receiver itself, driven by the plain `TestHTTPClient`. Nothing here
// talks to alertd.

import AlertdTestSupport
import Foundation
import Testing

@Suite("WebhookReceiver", .ownThreads)
struct WebhookReceiverSelfTests {
    private let signed: [(String, String)] = [
        ("Webhook-Id", "msg_2p7Yk"), ("Webhook-Timestamp", "1700000000"), ("Webhook-Signature", "v1,c2lnbmF0dXJl"),
    ]

    @Test("records method, path, lowercased headers, body and arrival time of each request")
    func records() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        #expect(receiver.port > 0)
        #expect(receiver.url == "http://127.0.0.1:\(receiver.port)/hook")
        let before = (ContinuousClock.now, Date())
        let response = try TestHTTPClient(port: receiver.port, timeout: 10)
            .post("/hook?attempt=1", json: #"{"type":"alert.chosen"}"#, headers: signed)
        let after = (ContinuousClock.now, Date())
        #expect(response.status == 204)
        #expect(response.header("Content-Length") == nil, "a 204 carries no Content-Length")

        let received = try #require(receiver.requests.first)
        #expect(receiver.requests.count == 1)
        #expect(received.method == "POST")
        #expect(received.uri == "/hook?attempt=1")
        #expect(received.path == "/hook")
        #expect(received.header("webhook-id") == "msg_2p7Yk")
        #expect(received.header("Webhook-Timestamp") == "1700000000")
        #expect(received.header("webhook-signature") == "v1,c2lnbmF0dXJl")
        #expect(received.header("content-type") == "application/json")
        #expect(received.headers.contains { $0.0 == "webhook-id" })
        #expect(received.headers.allSatisfy { $0.0 == $0.0.lowercased() })
        #expect(received.body == Array(#"{"type":"alert.chosen"}"#.utf8))
        #expect(try received.jsonObject()["type"] as? String == "alert.chosen")
        #expect(before.0 <= received.receivedAt && received.receivedAt <= after.0)
        #expect(before.1 <= received.receivedAtDate && received.receivedAtDate <= after.1)
    }

    @Test("records a body of several hundred KiB byte for byte")
    func largeBody() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let body = (0..<(400 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let response = try TestHTTPClient(port: receiver.port, timeout: 10).request("POST", "/hook", body: body)
        #expect(response.status == 204)
        let received = try #require(receiver.requests.first)
        #expect(received.body.count == body.count)
        #expect(received.body == body)
        #expect(received.header("content-length") == "\(body.count)")
    }

    @Test("answers the standing status with its extra headers, and changes at run time")
    func statusAndHeaders() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let client = TestHTTPClient(port: receiver.port, timeout: 10)
        #expect(try client.post("/hook", json: "{}").status == 204)
        receiver.behave(.status(503, headers: [("Retry-After", "7"), ("X-Receiver", "down")]))
        let unavailable = try client.post("/hook", json: "{}")
        #expect(unavailable.status == 503)
        #expect(unavailable.header("Retry-After") == "7")
        #expect(unavailable.header("X-Receiver") == "down")
        #expect(unavailable.header("Content-Length") == "0")
        #expect(try client.post("/hook", json: "{}").status == 503, "a standing behaviour is not consumed")
        receiver.behave(.status(200))
        #expect(try client.post("/hook", json: "{}").status == 200)
        #expect(client.connectionsOpened == 1, "every answer kept the connection alive")
        #expect(receiver.connectionsAccepted == 1)
        #expect(receiver.requests.map(\.connection) == [1, 1, 1, 1])
    }

    @Test("delay answers only after the delay, without holding up the recording")
    func delay() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        receiver.behave(.delay(seconds: 0.4, status: 202))
        let started = ContinuousClock.now
        let response = try TestHTTPClient(port: receiver.port, timeout: 10).post("/hook", json: "{}")
        let elapsed = ContinuousClock.now - started
        #expect(response.status == 202)
        #expect(elapsed >= .milliseconds(400))
        #expect(elapsed < .seconds(5))
        let received = try #require(receiver.requests.first)
        #expect(received.receivedAt - started < .milliseconds(400), "recorded on arrival, not on answering")
    }

    @Test("hang never answers: the client times out and the request is still recorded")
    func hang() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        receiver.behave(.hang)
        let client = TestHTTPClient(port: receiver.port, timeout: 0.5)
        let error = #expect(throws: TestHTTPError.self) { try client.post("/hook", json: "{}") }
        #expect(error?.code == .timedOut)
        #expect(receiver.requests.count == 1)
    }

    @Test("close drops the connection without an answer")
    func close() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        receiver.behave(.close)
        let client = TestHTTPClient(port: receiver.port, timeout: 10)
        let error = #expect(throws: TestHTTPError.self) { try client.post("/hook", json: "{}") }
        #expect(error?.code == .connectionClosed)
        #expect(receiver.requests.count == 1)
    }

    @Test("a script is consumed one behaviour per request, in order, then the standing one answers")
    func script() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        receiver.behave(.status(200))
        receiver.script([.status(503, headers: [("Retry-After", "1")]), .close, .status(201), .delay(seconds: 0.01, status: 410)])
        let client = TestHTTPClient(port: receiver.port, timeout: 10)
        var outcomes: [String] = []
        for _ in 0..<6 {
            do {
                let response = try client.post("/hook", json: "{}")
                outcomes.append("\(response.status)" + (response.header("Retry-After").map { " retry \($0)" } ?? ""))
            } catch let error as TestHTTPError {
                outcomes.append("\(error.code)")
            }
        }
        #expect(outcomes == ["503 retry 1", "connection-closed", "201", "410", "200", "200"])
        #expect(receiver.requests.count == 6)
        #expect(receiver.requests.map(\.connection) == [1, 1, 2, 2, 2, 2], "the close ended the first connection")
    }

    @Test("waitForRequests is resumed by the request that completes the count")
    func waitResumes() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let started = ContinuousClock.now
        async let waited = receiver.waitForRequests(count: 3, timeout: 60)
        try await awaitSuspendedWaiter(receiver)
        let client = TestHTTPClient(port: receiver.port, timeout: 10)
        for attempt in 1...3 {
            #expect(try client.post("/hook", json: #"{"attempt":\#(attempt)}"#).status == 204)
        }
        let received = try await waited
        #expect(ContinuousClock.now - started < .seconds(30), "returned on arrival, not at the timeout")
        #expect(received.map(\.text) == [#"{"attempt":1}"#, #"{"attempt":2}"#, #"{"attempt":3}"#])
        #expect(receiver.pendingWaiters == 0)
        let again = try await receiver.waitForRequests(count: 2, timeout: 0)
        #expect(again.count == 3, "already there: returns at once with everything recorded")
    }

    @Test("waitForRequests throws after its timeout, naming what did arrive")
    func waitTimesOut() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        _ = try TestHTTPClient(port: receiver.port, timeout: 10).post("/hook", json: "{}", headers: signed)
        let started = ContinuousClock.now
        let error = await #expect(throws: WebhookReceiverError.self) {
            try await receiver.waitForRequests(count: 2, timeout: 0.3)
        }
        let elapsed = ContinuousClock.now - started
        #expect(error?.code == .timedOut)
        #expect(error?.received.count == 1)
        #expect(error?.description.contains("1 arrived") == true)
        #expect(error?.description.contains("webhook-id=msg_2p7Yk") == true)
        #expect(elapsed >= .milliseconds(300))
        // Generous: under the full suite, synchronous tests occupy the cooperative pool this resumes on.
        #expect(elapsed < .seconds(60))
        #expect(receiver.pendingWaiters == 0)
    }

    @Test("waitForRequests ends with CancellationError when its task is cancelled")
    func waitCancelled() async throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await receiver.waitForRequests(count: 1, timeout: 30) }
            try await awaitSuspendedWaiter(receiver)
            group.cancelAll()
            await #expect(throws: CancellationError.self) { try await group.next() }
        }
        #expect(receiver.pendingWaiters == 0)
    }

    @Test("waitForRequestsBlocking wakes when the count arrives and throws after its timeout")
    func waitBlocking() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let port = receiver.port
        let sender = Thread {
            let client = TestHTTPClient(port: port, timeout: 10)
            _ = try? client.post("/hook", json: "{}")
            _ = try? client.post("/hook", json: "{}")
        }
        let started = ContinuousClock.now
        sender.start()
        let received = try receiver.waitForRequestsBlocking(count: 2, timeout: 60)
        #expect(received.count == 2)
        #expect(ContinuousClock.now - started < .seconds(30), "returned on arrival, not at the timeout")

        let waited = ContinuousClock.now
        let error = #expect(throws: WebhookReceiverError.self) { try receiver.waitForRequestsBlocking(count: 3, timeout: 0.3) }
        #expect(error?.code == .timedOut)
        #expect(error?.received.count == 2)
        #expect(ContinuousClock.now - waited >= .milliseconds(300))
    }

    @Test("stop closes the listener and open connections; restart serves on the same port with its records")
    func stopAndRestart() throws {
        let receiver = try WebhookReceiver.start()
        defer { receiver.stop() }
        let port = receiver.port
        receiver.behave(.hang)
        let parked = try ParkedRequests(port: port, count: 2, method: "POST", path: "/hook", body: Array("{}".utf8), timeout: 10)
        _ = try receiver.waitForRequestsBlocking(count: 2, timeout: 10)

        let stopping = ContinuousClock.now
        receiver.stop()
        #expect(!receiver.isRunning)
        let dropped = #expect(throws: TestHTTPError.self) { try parked.awaitAll(timeout: 5) }
        #expect(dropped?.code == .connectionClosed, "stop closed the hanging connections")
        #expect(ContinuousClock.now - stopping < .seconds(5))
        let refused = #expect(throws: TestHTTPError.self) { try TestHTTPClient(port: port, timeout: 5).post("/hook", json: "{}") }
        #expect(refused?.code == .connectFailed)
        receiver.stop()  // idempotent

        receiver.behave(.status(200))
        try receiver.restart()
        #expect(receiver.port == port)
        #expect(try TestHTTPClient(port: port, timeout: 10).post("/hook", json: "{}").status == 200)
        #expect(receiver.requests.count == 3)
        let twice = #expect(throws: WebhookReceiverError.self) { try receiver.restart() }
        #expect(twice?.code == .alreadyRunning)
    }

    @Test("a new receiver can start on the port of a stopped one, even after it closed connections")
    func startOnPreviousPort() throws {
        let first = try WebhookReceiver.start()
        let client = TestHTTPClient(port: first.port, timeout: 10)
        #expect(try client.post("/hook", json: "{}").status == 204)
        first.stop()  // closes the kept-alive connection from the receiver's side: TIME_WAIT there

        let second = try WebhookReceiver.start(port: first.port)
        defer { second.stop() }
        second.behave(.status(202))
        #expect(second.port == first.port)
        #expect(try TestHTTPClient(port: second.port, timeout: 10).post("/hook", json: "{}").status == 202)
        #expect(first.requests.count == 1)
        #expect(second.requests.count == 1)
    }

    @Test("two receivers keep their own ports, behaviours and records")
    func independent() throws {
        let one = try WebhookReceiver.start()
        defer { one.stop() }
        let two = try WebhookReceiver.start()
        defer { two.stop() }
        #expect(one.port != two.port)
        two.behave(.status(500))
        two.script([.status(429, headers: [("Retry-After", "3")])])
        #expect(try TestHTTPClient(port: one.port, timeout: 10).post("/hook", json: #"{"to":1}"#).status == 204)
        let toTwo = TestHTTPClient(port: two.port, timeout: 10)
        #expect(try toTwo.post("/hook", json: #"{"to":2}"#).status == 429)
        #expect(try toTwo.post("/hook", json: #"{"to":2}"#).status == 500)
        #expect(one.requests.map(\.text) == [#"{"to":1}"#])
        #expect(two.requests.map(\.text) == [#"{"to":2}"#, #"{"to":2}"#])
        one.stop()
        #expect(try toTwo.post("/hook", json: "{}").status == 500, "stopping one leaves the other serving")
    }

    /// Returns once a `waitForRequests` call is suspended on `receiver`, so the requests a test
    /// sends next must resume it rather than be found on entry.
    private func awaitSuspendedWaiter(_ receiver: WebhookReceiver) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while receiver.pendingWaiters == 0 {
            try #require(ContinuousClock.now < deadline, "no waiter suspended within 30 s")
            await Task.yield()
        }
    }
}
