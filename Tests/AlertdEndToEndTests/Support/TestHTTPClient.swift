// A deliberately small HTTP/1.1 client over blocking POSIX sockets.
//
// URLSession cannot send what the end-to-end tests need to send: bodies that are not
// UTF-8, a Content-Length that lies, half a request, raw garbage. So this client writes
// exactly the bytes it is given and parses answers itself (Content-Length, chunked, or
// delimited by close). Every socket has SO_RCVTIMEO/SO_SNDTIMEO, so a hung server fails
// the test with `TestHTTPError.timedOut` instead of hanging the run.
//
// Linux only (Glibc), like the daemon it tests.

import Foundation
import Glibc
import Testing

// MARK: - Response

/// One HTTP response as it came off the wire.
struct TestResponse: Sendable {
    let status: Int
    /// In wire order, names as sent; chunked trailers are appended at the end.
    let headers: [(String, String)]
    let body: [UInt8]

    /// The first header with this name, compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    /// Every header with this name, in wire order.
    func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.caseInsensitiveCompare(name) == .orderedSame }.map(\.1)
    }

    /// The body decoded as UTF-8; invalid sequences become U+FFFD.
    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body through `JSONSerialization` (fragments allowed).
    func json() throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        } catch {
            throw TestHTTPError(.notJSON, "status \(status), body is not JSON: \(text.prefix(500))")
        }
    }

    /// The body as a JSON object; throws when it is anything else.
    func jsonObject() throws -> [String: Any] {
        guard let object = try json() as? [String: Any] else {
            throw TestHTTPError(.notJSON, "status \(status), body is not a JSON object: \(text.prefix(500))")
        }
        return object
    }
}

// MARK: - Errors

/// What went wrong talking to a server. Compare `code`; `detail` is for humans.
struct TestHTTPError: Error, CustomStringConvertible {
    struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        var description: String { name }

        /// No TCP connection could be made (refused, unresolvable host).
        static let connectFailed = Code("connect-failed")
        /// The server sent nothing for `timeout` seconds while an answer was due.
        static let timedOut = Code("timed-out")
        /// The server closed (or reset) the connection before a response started.
        static let connectionClosed = Code("connection-closed")
        /// The bytes received are not an HTTP/1.x response, or it was cut short.
        static let malformedResponse = Code("malformed-response")
        /// Any other socket error.
        static let ioFailed = Code("io-failed")
        /// `json()`/`jsonObject()` on a body that is not the JSON asked for.
        static let notJSON = Code("not-json")
    }

    let code: Code
    let detail: String

    init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    var description: String { "TestHTTPError(\(code)): \(detail)" }
}

// MARK: - Client

/// One keep-alive HTTP/1.1 connection, opened lazily, reopened when the server closed it.
///
/// Not `Sendable`: a connection carries one conversation, so it belongs to one task.
/// Make one client per task instead (`daemon.client()` is cheap). Calls block the calling
/// thread for at most `timeout` seconds per socket read or write.
///
/// ```swift
/// let client = daemon.client()
/// let created = try client.post("/v1/clients/ops/alerts", json: jsonBody(["title": "Deploy?"]))
/// #expect(created.status == 201)
/// let head = "POST /v1/clients/ops/alerts HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
/// try client.sendRaw(Array(head.utf8) + [0xFF, 0xFE])  // a body that is not UTF-8
/// #expect(try client.readResponse().status == 400)
/// ```
final class TestHTTPClient {
    let host: String
    let port: Int
    /// Seconds any single read or write may block; applied to each new connection.
    let timeout: Double

    /// How many TCP connections this client has opened so far (keep-alive checks).
    private(set) var connectionsOpened = 0

    /// Keeps whatever created this client (a `Daemon`) alive while the client is in use.
    private let owner: AnyObject?
    private var fd: Int32 = -1
    /// Bytes read past the end of the last response.
    private var buffer: [UInt8] = []

    /// `owner`: an object to keep alive as long as this client (`Daemon.client()` passes itself).
    init(host: String = "127.0.0.1", port: Int, timeout: Double = 30, owner: AnyObject? = nil) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.owner = owner
    }

    deinit { close() }

    /// True while a connection is open and the server has not closed its end.
    var isConnected: Bool { fd >= 0 && TestSocket.peerIsOpen(fd) }

    /// Sends one request and reads its final response (interim 1xx answers are skipped).
    ///
    /// Adds `Host`, and `Content-Length` when there is a body, unless `headers` already has
    /// them (or `Transfer-Encoding`), so a test can send a wrong length on purpose; the body
    /// is sent as given either way. A GET/HEAD/PUT/DELETE/OPTIONS on a reused connection the
    /// server closed before answering is retried once on a new one, like browsers do.
    func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) throws -> TestResponse {
        let wire = serialize(method, path, headers: headers, body: body)
        let asksClose = headers.contains {
            $0.0.caseInsensitiveCompare("Connection") == .orderedSame && $0.1.lowercased().contains("close")
        }
        let reused = try openIfNeeded()
        do {
            return try exchange(wire, method: method, closeAfter: asksClose)
        } catch let error as TestHTTPError
            where error.code == .connectionClosed && reused && Self.idempotent.contains(method.uppercased())
        {
            close()
            _ = try openIfNeeded()
            return try exchange(wire, method: method, closeAfter: asksClose)
        }
    }

    func get(_ path: String, headers: [(String, String)] = []) throws -> TestResponse {
        try request("GET", path, headers: headers)
    }

    /// POSTs `json` (as UTF-8) with `Content-Type: application/json` unless `headers` sets one.
    func post(_ path: String, json: String, headers: [(String, String)] = []) throws -> TestResponse {
        var all = headers
        if !all.contains(where: { $0.0.caseInsensitiveCompare("Content-Type") == .orderedSame }) {
            all.append(("Content-Type", "application/json"))
        }
        return try request("POST", path, headers: all, body: Array(json.utf8))
    }

    func delete(_ path: String, headers: [(String, String)] = []) throws -> TestResponse {
        try request("DELETE", path, headers: headers)
    }

    /// Writes `bytes` as they are on the connection (opening or reopening it first if needed).
    ///
    /// A failed write (the server already closed) throws but leaves the connection open, so
    /// `readResponse()` can still collect what the server said before closing.
    func sendRaw(_ bytes: [UInt8]) throws {
        _ = try openIfNeeded()
        try TestSocket.sendAll(fd, bytes)
    }

    /// Reads the next response on the connection, including an interim `100 Continue`.
    ///
    /// Pass `method: "HEAD"` after sending a HEAD request by hand: its response has no body
    /// whatever its headers say. Closes the connection when the response says so.
    func readResponse(method: String = "GET") throws -> TestResponse {
        guard fd >= 0 else { throw TestHTTPError(.connectionClosed, "no open connection to read from") }
        return try readOne(noBody: method.uppercased() == "HEAD")
    }

    /// Waits until the server closes the connection; false if it is still open after `timeout`.
    /// Bytes that arrive meanwhile are kept for `readResponse()` only if it stays open.
    func awaitServerClose(timeout: Double) -> Bool {
        let deadline = TestDeadline(after: timeout)
        while fd >= 0 {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poller, 1, deadline.millisecondsLeft)
            if ready == 0 { return false }
            if ready < 0 {
                if errno == EINTR { continue }
                return false
            }
            switch TestSocket.receive(fd, into: &buffer, wait: false) {
            case .data, .wouldBlock: continue
            case .closed, .failed: close()
            }
        }
        return true
    }

    /// Closes the connection; the next request opens a new one.
    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        buffer = []
    }

    // MARK: Internals

    private static let idempotent: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]

    private func serialize(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) -> [UInt8] {
        func has(_ name: String) -> Bool {
            headers.contains { $0.0.caseInsensitiveCompare(name) == .orderedSame }
        }
        var head = "\(method) \(path) HTTP/1.1\r\n"
        if !has("Host") { head += "Host: \(host):\(port)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !has("Content-Length"), !has("Transfer-Encoding") {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + (body ?? [])
    }

    /// Returns whether an already open connection is being reused.
    private func openIfNeeded() throws -> Bool {
        if fd >= 0 {
            if TestSocket.peerIsOpen(fd) { return true }
            close()
        }
        fd = try TestSocket.connect(host: host, port: port, timeout: timeout)
        connectionsOpened += 1
        return false
    }

    private func exchange(_ wire: [UInt8], method: String, closeAfter: Bool) throws -> TestResponse {
        let noBody = method.uppercased() == "HEAD"
        do {
            try TestSocket.sendAll(fd, wire)
        } catch let writeError as TestHTTPError where writeError.code == .connectionClosed || writeError.code == .timedOut {
            // The server may have answered (413, 400…) and closed or stopped reading before
            // taking everything.
            if let early = try? readFinal(noBody: noBody) { return early }
            close()
            throw writeError
        }
        let response = try readFinal(noBody: noBody)
        if closeAfter { close() }
        return response
    }

    private func readFinal(noBody: Bool) throws -> TestResponse {
        while true {
            let response = try readOne(noBody: noBody)
            if response.status >= 200 || response.status == 101 { return response }
        }
    }

    private func readOne(noBody: Bool) throws -> TestResponse {
        do {
            while true {
                if let parsed = try TestResponseParser.parse(buffer, noBody: noBody, atEOF: false) {
                    return finish(parsed)
                }
                switch TestSocket.receive(fd, into: &buffer, wait: true) {
                case .data:
                    continue
                case .closed:
                    guard let parsed = try TestResponseParser.parse(buffer, noBody: noBody, atEOF: true) else {
                        throw TestHTTPError(.malformedResponse, "incomplete response at end of stream")
                    }
                    let response = finish(parsed)
                    close()
                    return response
                case .wouldBlock:
                    throw TestHTTPError(
                        .timedOut,
                        "no complete response from \(host):\(port) within \(timeout) s"
                            + (buffer.isEmpty ? "" : "; got \(buffer.count) bytes: \(Self.preview(buffer))"))
                case .failed(let error):
                    throw error
                }
            }
        } catch {
            close()  // the stream position is unknown now
            throw error
        }
    }

    private func finish(_ parsed: TestResponseParser.Parsed) -> TestResponse {
        buffer.removeFirst(parsed.consumed)
        if !parsed.keepAlive { close() }
        return parsed.response
    }

    static func preview(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(300), as: UTF8.self).debugDescription
    }
}

// MARK: - Parked requests

/// Many connections that each sent one request and wait for its answer, for tests with
/// hundreds of parked long-poll waiters.
///
/// ```swift
/// let waiters = try ParkedRequests(port: daemon.port, count: 500, method: "GET",
///                                  path: "/v1/clients/ops/alerts/current?wait=30")
/// #expect(!waiters.anyAnswered())
/// _ = try client.post("/v1/clients/ops/alerts", json: jsonBody(["title": "hi"]))
/// let answers = try waiters.awaitAll(timeout: 10)
/// ```
///
/// Not `Sendable`; one task owns it. Connections are closed once answered and on `deinit`.
final class ParkedRequests {
    let count: Int

    private struct Slot {
        var fd: Int32
        var buffer: [UInt8] = []
        var response: TestResponse? = nil
        var failure: String? = nil
        var done: Bool { response != nil || failure != nil }
    }

    private var slots: [Slot] = []
    private let noBody: Bool

    /// Opens `count` connections one after another and sends the request on each.
    init(
        host: String = "127.0.0.1", port: Int, count: Int, method: String, path: String,
        headers: [(String, String)] = [], body: [UInt8]? = nil, timeout: Double = 30
    ) throws {
        self.count = count
        self.noBody = method.uppercased() == "HEAD"
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        let wire = Array((head + "\r\n").utf8) + (body ?? [])
        slots.reserveCapacity(count)
        for index in 0..<count {
            do {
                let fd = try TestSocket.connect(host: host, port: port, timeout: timeout)
                slots.append(Slot(fd: fd))
                try TestSocket.sendAll(fd, wire)
            } catch let error as TestHTTPError {
                close()
                throw TestHTTPError(error.code, "parking request \(index + 1) of \(count): \(error.detail)")
            }
        }
    }

    deinit { close() }

    /// Number of requests whose response (or failure) has been read so far.
    var answeredCount: Int { slots.count { $0.done } }

    /// True when any request has an answer: already read, or waiting on its socket
    /// (data or the server closing). Never blocks and consumes nothing.
    func anyAnswered() -> Bool {
        if slots.contains(where: \.done) { return true }
        var pollers = slots.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        guard !pollers.isEmpty else { return false }
        let ready = Glibc.poll(&pollers, nfds_t(pollers.count), 0)
        return ready > 0
    }

    /// Reads every response as it arrives (poll(2) over all sockets) and returns them in
    /// the order the requests were sent. Throws when `timeout` passes first, or when a
    /// server closed a connection without a complete response; both name how many answered.
    func awaitAll(timeout: Double) throws -> [TestResponse] {
        let deadline = TestDeadline(after: timeout)
        while true {
            let pending = slots.indices.filter { !slots[$0].done }
            if pending.isEmpty { break }
            var pollers = pending.map { pollfd(fd: slots[$0].fd, events: Int16(POLLIN), revents: 0) }
            let ready = Glibc.poll(&pollers, nfds_t(pollers.count), deadline.millisecondsLeft)
            if ready < 0 {
                if errno == EINTR { continue }
                throw TestHTTPError(.ioFailed, "poll: \(String(cString: strerror(errno)))")
            }
            if ready == 0 {
                throw TestHTTPError(
                    .timedOut, "only \(answeredCount) of \(count) parked requests answered within \(timeout) s")
            }
            for (position, index) in pending.enumerated() where pollers[position].revents != 0 {
                readAvailable(index)
            }
        }
        let failures = slots.enumerated().compactMap { item in item.element.failure.map { "#\(item.offset): \($0)" } }
        guard failures.isEmpty else {
            throw TestHTTPError(
                .connectionClosed,
                "\(failures.count) of \(count) parked requests failed: \(failures.prefix(5).joined(separator: "; "))")
        }
        return slots.map { $0.response! }
    }

    /// Closes every connection that is still open.
    func close() {
        for index in slots.indices where slots[index].fd >= 0 {
            Glibc.close(slots[index].fd)
            slots[index].fd = -1
            if !slots[index].done { slots[index].failure = "closed by the test" }
        }
    }

    private func readAvailable(_ index: Int) {
        var slot = slots[index]
        defer { slots[index] = slot }
        let outcome = TestSocket.receive(slot.fd, into: &slot.buffer, wait: false)
        let atEOF: Bool
        switch outcome {
        case .data: atEOF = false
        case .wouldBlock: return
        case .closed: atEOF = true
        case .failed(let error):
            slot.failure = error.description
            Glibc.close(slot.fd)
            slot.fd = -1
            return
        }
        do {
            if let parsed = try TestResponseParser.parse(slot.buffer, noBody: noBody, atEOF: atEOF) {
                slot.response = parsed.response
            } else if atEOF {
                slot.failure = "incomplete response at end of stream"
            }
        } catch {
            slot.failure = "\(error)"
        }
        if slot.done {
            Glibc.close(slot.fd)
            slot.fd = -1
        }
    }
}

// MARK: - JSON helper

/// `object` serialised as compact JSON with sorted keys, for request bodies.
/// Records a test issue (and returns `null`) when `object` is not JSON-serialisable.
func jsonBody(_ object: Any, sourceLocation: SourceLocation = #_sourceLocation) -> String {
    // Wrapping in an array lets top-level fragments ("text", 3) through the validity check.
    guard JSONSerialization.isValidJSONObject([object]) else {
        Issue.record("jsonBody: not JSON-serialisable: \(object)", sourceLocation: sourceLocation)
        return "null"
    }
    do {
        let data = try JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    } catch {
        Issue.record("jsonBody: \(error)", sourceLocation: sourceLocation)
        return "null"
    }
}

// MARK: - Response parser

/// Parses one response from the front of a byte buffer; pure, so it serves both the
/// blocking client and the poll-driven `ParkedRequests`.
enum TestResponseParser {
    struct Parsed {
        let response: TestResponse
        /// Bytes of the buffer this response used.
        let consumed: Int
        /// False when the connection cannot carry another response.
        let keepAlive: Bool
    }

    private static let crlf: [UInt8] = [13, 10]
    private static let headerEnd: [UInt8] = [13, 10, 13, 10]
    private static let maxHead = 1 << 20

    /// nil: more bytes are needed. `atEOF`: the server closed, nothing more will come.
    /// `noBody`: the response answers a HEAD request.
    static func parse(_ buffer: [UInt8], noBody: Bool, atEOF: Bool) throws -> Parsed? {
        guard let end = buffer.firstRange(of: headerEnd) else {
            if atEOF {
                if buffer.isEmpty {
                    throw TestHTTPError(.connectionClosed, "server closed the connection without a response")
                }
                throw TestHTTPError(.malformedResponse, "stream ended inside the response head: \(TestHTTPClient.preview(buffer))")
            }
            if buffer.count > maxHead {
                throw TestHTTPError(.malformedResponse, "no end of response head in \(buffer.count) bytes")
            }
            return nil
        }
        let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        let statusLine = lines.popFirst() ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw TestHTTPError(.malformedResponse, "bad status line: \(String(statusLine).debugDescription)")
        }
        let version = String(parts[0])
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                throw TestHTTPError(.malformedResponse, "bad header line: \(String(line).debugDescription)")
            }
            headers.append((String(line[..<colon]), trimmed(line[line.index(after: colon)...])))
        }
        func values(_ name: String) -> [String] {
            headers.filter { $0.0.caseInsensitiveCompare(name) == .orderedSame }.map(\.1)
        }
        let connectionTokens = Set(values("Connection").flatMap { tokens($0) })
        var keepAlive =
            version == "HTTP/1.1" ? !connectionTokens.contains("close") : connectionTokens.contains("keep-alive")
        let bodyStart = end.upperBound

        func done(_ body: [UInt8], consumed: Int, extra: [(String, String)] = []) -> Parsed {
            Parsed(
                response: TestResponse(status: status, headers: headers + extra, body: body),
                consumed: consumed, keepAlive: keepAlive)
        }

        if noBody || (100..<200).contains(status) || status == 204 || status == 304 {
            return done([], consumed: bodyStart)
        }
        let codings = values("Transfer-Encoding").flatMap { tokens($0) }
        if let last = codings.last {
            if last == "chunked" {
                return try parseChunked(buffer, from: bodyStart, atEOF: atEOF).map {
                    done($0.body, consumed: $0.consumed, extra: $0.trailers)
                }
            }
            keepAlive = false  // any other coding: the body runs to the end of the stream
        } else {
            let lengths = Set(values("Content-Length").flatMap { $0.split(separator: ",").map { trimmed($0) } })
            if !lengths.isEmpty {
                guard lengths.count == 1, let length = Int(lengths.first!), length >= 0 else {
                    throw TestHTTPError(.malformedResponse, "bad Content-Length: \(values("Content-Length"))")
                }
                guard buffer.count - bodyStart >= length else {
                    if atEOF {
                        throw TestHTTPError(
                            .malformedResponse,
                            "stream ended after \(buffer.count - bodyStart) of \(length) body bytes (status \(status))")
                    }
                    return nil
                }
                return done(Array(buffer[bodyStart..<bodyStart + length]), consumed: bodyStart + length)
            }
            keepAlive = false
        }
        // Delimited by the server closing the connection.
        guard atEOF else { return nil }
        return done(Array(buffer[bodyStart...]), consumed: buffer.count)
    }

    private static func parseChunked(_ buffer: [UInt8], from start: Int, atEOF: Bool) throws
        -> (body: [UInt8], trailers: [(String, String)], consumed: Int)?
    {
        func incomplete() throws -> (body: [UInt8], trailers: [(String, String)], consumed: Int)? {
            if atEOF { throw TestHTTPError(.malformedResponse, "stream ended inside a chunked body") }
            return nil
        }
        var body: [UInt8] = []
        var index = start
        while true {
            guard let lineEnd = buffer[index...].firstRange(of: crlf) else { return try incomplete() }
            let sizeLine = String(decoding: buffer[index..<lineEnd.lowerBound], as: UTF8.self)
            let sizeText = trimmed(sizeLine.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0])
            guard let size = Int(sizeText, radix: 16), size >= 0 else {
                throw TestHTTPError(.malformedResponse, "bad chunk size line: \(sizeLine.debugDescription)")
            }
            index = lineEnd.upperBound
            if size == 0 { break }
            guard buffer.count - index >= size + 2 else { return try incomplete() }
            body.append(contentsOf: buffer[index..<index + size])
            guard buffer[index + size] == 13, buffer[index + size + 1] == 10 else {
                throw TestHTTPError(.malformedResponse, "chunk of \(size) bytes not followed by CRLF")
            }
            index += size + 2
        }
        var trailers: [(String, String)] = []
        while true {
            guard let lineEnd = buffer[index...].firstRange(of: crlf) else { return try incomplete() }
            let line = String(decoding: buffer[index..<lineEnd.lowerBound], as: UTF8.self)
            index = lineEnd.upperBound
            if line.isEmpty { return (body, trailers, index) }
            if let colon = line.firstIndex(of: ":") {
                trailers.append((String(line[..<colon]), trimmed(line[line.index(after: colon)...])))
            }
        }
    }

    private static func trimmed(_ text: some StringProtocol) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    private static func tokens(_ value: String) -> [String] {
        value.split(separator: ",").map { trimmed($0).lowercased() }
    }
}

// MARK: - Sockets

/// A point in time expressed for poll(2).
struct TestDeadline {
    private let end: ContinuousClock.Instant

    init(after seconds: Double) {
        end = .now + .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// Milliseconds until the deadline, rounded up, never negative.
    var millisecondsLeft: Int32 {
        let left = ContinuousClock.now.duration(to: end)
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    var hasPassed: Bool { ContinuousClock.now >= end }
}

/// Thin wrappers over the socket calls, with errors turned into `TestHTTPError`.
enum TestSocket {
    enum Received {
        case data, closed, wouldBlock
        case failed(TestHTTPError)
    }

    static func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    /// A connected, blocking TCP socket with read/write timeouts, TCP_NODELAY and CLOEXEC.
    static func connect(host: String, port: Int, timeout: Double) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0 else {
            throw TestHTTPError(.connectFailed, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(found) }
        var lastError = "no address"
        var candidate = found
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(
                info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
                info.pointee.ai_protocol)
            if fd < 0 {
                lastError = errnoText()
                continue
            }
            setTimeouts(fd, seconds: timeout)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var result: Int32
            repeat {
                result = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
            } while result != 0 && errno == EINTR
            if result == 0 { return fd }
            lastError = errnoText()
            Glibc.close(fd)
        }
        throw TestHTTPError(.connectFailed, "cannot connect to \(host):\(port): \(lastError)")
    }

    static func setTimeouts(_ fd: Int32, seconds: Double) {
        let whole = seconds.rounded(.down)
        var value = timeval(tv_sec: Int(whole), tv_usec: Int((seconds - whole) * 1_000_000))
        let size = socklen_t(MemoryLayout<timeval>.size)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, size)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, size)
    }

    /// Writes everything; MSG_NOSIGNAL so a closed peer is an error, not a SIGPIPE.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if result >= 0 {
                sent += result
                continue
            }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                throw TestHTTPError(.timedOut, "server stopped reading; \(sent) of \(bytes.count) bytes written")
            case EPIPE, ECONNRESET:
                throw TestHTTPError(.connectionClosed, "server closed the connection after \(sent) of \(bytes.count) bytes were written")
            default:
                throw TestHTTPError(.ioFailed, "send: \(errnoText(code))")
            }
        }
    }

    /// One recv(2) appended to `buffer`. With `wait`, blocks up to the socket's SO_RCVTIMEO
    /// (`.wouldBlock` then means timed out).
    static func receive(_ fd: Int32, into buffer: inout [UInt8], wait: Bool) -> Received {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { raw in
                Glibc.recv(fd, raw.baseAddress!, raw.count, wait ? 0 : Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                buffer.append(contentsOf: chunk[..<count])
                return .data
            }
            if count == 0 { return .closed }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET: return .closed  // the parser tells "nothing came" from "cut short"
            default: return .failed(TestHTTPError(.ioFailed, "recv: \(errnoText(code))"))
            }
        }
    }

    /// Whether the peer still has its end open (unread data counts as open). Never blocks.
    static func peerIsOpen(_ fd: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poller, 1, 0) >= 0 else { return false }
        if poller.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return false }
        if poller.revents & Int16(POLLIN) == 0 { return true }
        var byte: UInt8 = 0
        let peeked = Glibc.recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return peeked > 0 || (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    }
}
