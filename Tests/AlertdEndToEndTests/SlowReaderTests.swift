import AlertdTestSupport
import Foundation
import Glibc
import Testing

/// A TCP connection with a tiny receive window that sends one request and never reads
/// its answer: the slow reader of issue 27, item 3.
final class SlowReader: Sendable {
    let fd: Int32

    init(port: Int, request: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        // Before connect, so the window the client advertises stays small.
        var size: Int32 = 2048
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let connected = connectLoopback(fd, port: port)
        try #require(fd >= 0 && connected == 0, "cannot connect to 127.0.0.1:\(port)")
        let bytes = Array(request.utf8)
        try #require(bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count)
    }

    deinit { close(fd) }
}

/// A metric's value in a `/metrics` text (the first series whose name and labels start with `series`).
func metric(_ text: String, _ series: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.split(separator: " ").last ?? "")
    }
    return nil
}

/// The daemon's resident memory (VmRSS), in bytes.
func residentBytes(_ pid: pid_t) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
}

/// Polls `/metrics` until `done` holds for its text; the last text either way.
func awaitMetrics(_ daemon: Daemon, timeout: Duration = .seconds(30), until done: (String) -> Bool) async throws -> String {
    let deadline = ContinuousClock.now + timeout
    var text = ""
    while ContinuousClock.now < deadline {
        // A refused connection (the daemon at a limit) is one more try, not a failure.
        text = (try? await daemon.client(timeout: .seconds(5)).get("/metrics").text) ?? ""
        if done(text) { return text }
        try await Task.sleep(for: .milliseconds(50))
    }
    return text
}

@Suite("Slow readers: answers not taken are bounded in bytes and in time, requests in flight per token")
struct SlowReaderTests {
    /// An alert whose resource is about 30 KB: a message of control characters, each written as `\u0001`.
    /// It has a button, so it stays pending however slowly the 200 are posted: a buttonless
    /// one is dismissed 2 s after it is displayed, and under AddressSanitizer on a loaded
    /// machine the page came back 15 % short.
    static let bigAlert =
        #"{"title":"big","message":""# + String(repeating: "\\u0001", count: 4000) + #"","buttons":[{"title":"OK"}],"metadata":{"pad":""#
        + String(repeating: "x", count: 4000) + #""}}"#

    static func postBigAlerts(_ daemon: Daemon, count: Int, headers: [(String, String)] = []) async throws {
        let http = daemon.client()
        for _ in 0..<count {
            let posted = try await http.post("/v1/clients/ops/alerts", json: bigAlert, headers: headers)
            try #require(posted.status == 201, "\(posted.text.prefix(300))")
        }
    }

    // Pages larger than the kernel's send buffer (up to 4 MB here, tcp_wmem): a smaller
    // answer goes whole into the kernel, and libmicrohttpd holds none of it.
    static let pageAlerts = 200

    @Test("30 readers that never read a 5.7 MB page: bytes in flight stay under the limit, then the write deadline frees them")
    func boundedBytes() async throws {
        let daemon = try await Daemon.start(
            .init(
                config: "limits: { max_response_bytes_in_flight: 16777216, write_timeout_seconds: 3 }\n",
                environment: Sanitizer.measuredMemoryEnvironment))
        defer { daemon.cleanup() }
        try await Self.postBigAlerts(daemon, count: Self.pageAlerts)
        let page = "GET /v1/clients/ops/alerts?limit=\(Self.pageAlerts) HTTP/1.1\r\nHost: localhost\r\n\r\n"
        // One page read whole first, so the allocator has seen a page before the baseline.
        let whole = try await daemon.client().get("/v1/clients/ops/alerts?limit=\(Self.pageAlerts)")
        try #require(whole.status == 200 && whole.body.count > 5_000_000, "page of \(whole.body.count) bytes")
        let before = residentBytes(daemon.pid)
        let readers = try (0..<30).map { _ in try SlowReader(port: daemon.port, request: page) }
        // Every request answered: each page built, then queued or (over the limit) replaced by a refusal.
        let held = try await awaitMetrics(daemon) { text in
            (metric(text, #"alertd_http_requests_total{route="list_alerts",status="200"}"#) ?? 0) >= 31
        }
        let grown = residentBytes(daemon.pid) - before
        let inFlight = metric(held, "alertd_http_response_bytes_in_flight") ?? -1
        #expect(inFlight >= 0 && inFlight <= 16_777_216 + 30 * 16_384, "bytes in flight: \(inFlight)")
        // Unbounded, 30 copies of a 5.7 MB page stay resident (170 MB); bounded, two.
        #expect(grown < Sanitizer.memoryBound(80_000_000), "RSS grew by \(grown / 1_000_000) MB with 30 slow readers")
        // The write deadline (3 s) cuts the readers that hold an answer, and frees its bytes.
        let freed = try await awaitMetrics(daemon, timeout: .seconds(20)) { text in
            (metric(text, "alertd_http_response_bytes_in_flight") ?? .infinity) < 16_384
                && (metric(text, #"alertd_http_connections_cut_total{waiting="answer"}"#) ?? 0) >= 1
        }
        #expect((metric(freed, "alertd_http_response_bytes_in_flight") ?? .infinity) < 16_384, "\(freed)")
        #expect((metric(freed, #"alertd_http_connections_cut_total{waiting="answer"}"#) ?? 0) >= 1)
        withExtendedLifetime(readers) {}
        #expect(try await daemon.client().get("/healthz").status == 200)
    }

    @Test(
        "limits.max_requests_per_token: a third request while two answers are not taken is 429 rate-limited; parked long-polls do not count"
    )
    func requestsPerToken() async throws {
        let (poster, other) = ("poster-secret-1", "other-secret-2")
        let (posterHex, otherHex) = (await Program.sha256Hex(poster), await Program.sha256Hex(other))
        let daemon = try await Daemon.start(
            .init(
                config: """
                    limits: { max_requests_per_token: 2, write_timeout_seconds: 10 }
                    auth:
                      tokens:
                        - { name: poster, sha256: "\(posterHex)", roles: [post], clients: ['*'] }
                        - { name: other, sha256: "\(otherHex)", roles: [read], clients: ['*'] }

                    """))
        defer { daemon.cleanup() }
        // The write deadline (10 s) must not cut the readers before the third request is
        // refused: at 2 s, under ThreadSanitizer on a loaded machine, it did (answered 200).
        let bearer = [("Authorization", "Bearer \(poster)")]
        try await Self.postBigAlerts(daemon, count: Self.pageAlerts, headers: bearer)
        let http = daemon.client()
        // Two long-polls parked for the token: they do not count.
        let parked = try await [daemon.rawConnection(), daemon.rawConnection()]
        for connection in parked {
            try await connection.send(
                Array(
                    "GET /v1/clients/idle/alerts/current?wait=30 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(poster)\r\n\r\n"
                        .utf8))
        }
        _ = try await awaitMetrics(daemon) { metric($0, "alertd_waiters") == 2 }
        #expect(try await http.get("/v1/clients/ops/alerts?limit=1", headers: bearer).status == 200)
        // Two pages of 5.7 MB that their readers never take: the token's two requests in flight.
        let page =
            "GET /v1/clients/ops/alerts?limit=\(Self.pageAlerts) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(poster)\r\n\r\n"
        let readers = try [SlowReader(port: daemon.port, request: page), SlowReader(port: daemon.port, request: page)]
        _ = try await awaitMetrics(daemon) { metric($0, #"alertd_http_requests_total{route="list_alerts",status="200"}"#) == 3 }
        let refused = try await http.get("/v1/clients/ops/alerts?limit=1", headers: bearer)
        #expect(refused.status == 429, "\(refused.text)")
        #expect(try refused.jsonObject()["code"] as? String == "rate-limited")
        #expect(refused.header("Retry-After") != nil)
        // Another token is served meanwhile.
        #expect(try await http.get("/v1/clients/ops/alerts?limit=1", headers: [("Authorization", "Bearer \(other)")]).status == 200)
        // The write deadline cuts the readers; the token is served again.
        let deadline = ContinuousClock.now + .seconds(40)
        var status = 0
        while status != 200, ContinuousClock.now < deadline {
            status = try await http.get("/v1/clients/ops/alerts?limit=1", headers: bearer).status
            if status != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(status == 200)
        withExtendedLifetime((readers, parked)) {}
    }
}
