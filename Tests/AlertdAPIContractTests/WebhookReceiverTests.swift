// The webhook receiver (Tests/AlertdTestSupport) is a real peer the callback suites rely
// on: these check the behaviours they script (statuses with headers, delays, hangs, closed
// connections, waiting for arrivals) over plain sockets. Nothing here talks to alertd.

import AlertdTestSupport
import Foundation
import Testing

@Suite("WebhookReceiver")
struct WebhookReceiverTests {
    private static let signed: [(String, String)] = [
        ("Content-Type", "application/json"), ("Webhook-Id", "msg_2p7Yk"), ("Webhook-Timestamp", "1700000000"),
        ("Webhook-Signature", "v1,c2lnbmF0dXJl"),
    ]

    private static func post(_ connection: RawConnection, _ json: String = "{}", path: String = "/hook") async throws -> TestResponse {
        try await connection.request("POST", path, headers: signed, body: Array(json.utf8))
    }

    @Test("records method, path, lowercased headers, body and arrival time of each request")
    func records() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        #expect(receiver.url == "http://127.0.0.1:\(receiver.port)/hook")
        let before = ContinuousClock.now
        let response = try await Self.post(RawConnection.connect(port: receiver.port), #"{"type":"alert.chosen"}"#, path: "/hook?attempt=1")
        #expect(response.status == 204)
        #expect(response.header("Content-Length") == nil, "a 204 carries no Content-Length")
        let received = try #require(receiver.requests.first)
        #expect(receiver.requests.count == 1)
        #expect(received.method == "POST" && received.uri == "/hook?attempt=1" && received.path == "/hook")
        #expect(received.header("Webhook-Timestamp") == "1700000000" && received.header("webhook-id") == "msg_2p7Yk")
        #expect(received.headers.allSatisfy { $0.0 == $0.0.lowercased() })
        #expect(try received.jsonObject()["type"] as? String == "alert.chosen")
        #expect(before <= received.receivedAt && received.receivedAt <= ContinuousClock.now)
    }

    @Test("answers the standing status with its extra headers on one kept-alive connection, and changes at run time")
    func statusAndHeaders() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        let connection = try await RawConnection.connect(port: receiver.port)
        #expect(try await Self.post(connection).status == 204)
        receiver.behave(.status(503, headers: [("Retry-After", "7"), ("X-Receiver", "down")]))
        let unavailable = try await Self.post(connection)
        #expect(unavailable.status == 503 && unavailable.header("Retry-After") == "7" && unavailable.header("X-Receiver") == "down")
        #expect(try await Self.post(connection).status == 503, "a standing behaviour is not consumed")
        receiver.behave(.status(200))
        #expect(try await Self.post(connection).status == 200)
        #expect(connection.isOpen && receiver.connectionsAccepted == 1)
        #expect(receiver.requests.map(\.connection) == [1, 1, 1, 1])
    }

    @Test("delay answers only after the delay, recorded on arrival; hang never answers; close drops the connection")
    func delayHangClose() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        receiver.behave(.delay(seconds: 0.4, status: 202))
        let started = ContinuousClock.now
        #expect(try await Self.post(RawConnection.connect(port: receiver.port)).status == 202)
        let answered = ContinuousClock.now
        #expect(answered - started >= .milliseconds(400))
        #expect(
            answered - (try #require(receiver.requests.first).receivedAt) >= .milliseconds(400), "recorded on arrival, not on answering")

        receiver.behave(.hang)
        let hanging = try await RawConnection.connect(port: receiver.port)
        await #expect(throws: TestFailure.self) {
            try await hanging.request("POST", "/hook", body: Array("{}".utf8), timeout: .milliseconds(500))
        }
        receiver.behave(.close)
        let closing = try await RawConnection.connect(port: receiver.port)
        await #expect(throws: TestFailure.self) { try await Self.post(closing) }
        #expect(await closing.awaitClose(timeout: .seconds(5)))
        #expect(receiver.requests.count == 3)
    }

    @Test("a script is consumed one behaviour per request, in order, then the standing one answers")
    func script() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        receiver.behave(.status(200))
        receiver.script([.status(503, headers: [("Retry-After", "1")]), .close, .status(201), .delay(seconds: 0.01, status: 410)])
        var connection = try await RawConnection.connect(port: receiver.port)
        var outcomes: [String] = []
        for _ in 0..<6 {
            do {
                let response = try await Self.post(connection)
                outcomes.append("\(response.status)" + (response.header("Retry-After").map { " retry \($0)" } ?? ""))
            } catch {
                outcomes.append("closed")
                connection = try await RawConnection.connect(port: receiver.port)
            }
        }
        #expect(outcomes == ["503 retry 1", "closed", "201", "410", "200", "200"])
        #expect(receiver.requests.map(\.connection) == [1, 1, 2, 2, 2, 2], "the close ended the first connection")
    }

    @Test("waitForRequests is resumed by the request that completes the count, throws after its timeout, ends when cancelled")
    func waiting() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        async let waited = receiver.waitForRequests(count: 3, timeout: 60)
        while receiver.pendingWaiters == 0 { await Task.yield() }
        let connection = try await RawConnection.connect(port: receiver.port)
        for attempt in 1...3 { #expect(try await Self.post(connection, #"{"attempt":\#(attempt)}"#).status == 204) }
        #expect(try await waited.map(\.text) == [#"{"attempt":1}"#, #"{"attempt":2}"#, #"{"attempt":3}"#])
        #expect(try await receiver.waitForRequests(count: 2, timeout: 0).count == 3, "already there: at once, everything")

        let started = ContinuousClock.now
        let error = await #expect(throws: WebhookReceiverError.self) { try await receiver.waitForRequests(count: 4, timeout: 0.3) }
        #expect(error?.code == .timedOut && error?.received.count == 3 && error?.description.contains("webhook-id=msg_2p7Yk") == true)
        #expect(ContinuousClock.now - started >= .milliseconds(300))

        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await receiver.waitForRequests(count: 10, timeout: 30) }
            while receiver.pendingWaiters == 0 { await Task.yield() }
            group.cancelAll()
            await #expect(throws: CancellationError.self) { try await group.next() }
        }
        #expect(receiver.pendingWaiters == 0)
    }

    @Test("stop closes the listener and open connections; restart serves on the same port with its records")
    func stopAndRestart() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        let port = receiver.port
        receiver.behave(.hang)
        let parked = try await RawConnection.connect(port: port)
        try await parked.send(Array("POST /hook HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}".utf8))
        _ = try await receiver.waitForRequests(count: 1, timeout: 10)
        receiver.close()
        #expect(!receiver.isRunning)
        #expect(await parked.awaitClose(timeout: .seconds(5)), "stop closed the hanging connection")
        await #expect(throws: (any Error).self) { try await RawConnection.connect(port: port) }

        receiver.behave(.status(200))
        try await receiver.relisten()
        #expect(receiver.port == port)
        #expect(try await Self.post(RawConnection.connect(port: port)).status == 200)
        #expect(receiver.requests.count == 2)
        let twice = await #expect(throws: WebhookReceiverError.self) { try await receiver.relisten() }
        #expect(twice?.code == .alreadyRunning)
    }
}
