// One TCP connection that writes exactly the bytes it is given and reads whatever comes
// back: for what AsyncHTTPClient will not send (garbage, bodies that lie about their
// length, half a request, a byte at a time) and for checks of one connection's fate
// (kept alive, closed by the server). Built on SwiftNIO's ClientBootstrap.

import NIOCore
import NIOPosix

/// A raw connection to `host:port`.
///
/// ```swift
/// let connection = try await RawConnection.connect(port: daemon.port)
/// try await connection.send(Array("GARBAGE\r\n\r\n".utf8))
/// #expect(await connection.awaitClose(timeout: .seconds(10)))
/// ```
public final class RawConnection: Sendable {
    private let channel: any Channel
    private let received: Observed<RawConnectionReceived>

    private init(channel: any Channel, received: Observed<RawConnectionReceived>) {
        self.channel = channel
        self.received = received
    }

    deinit {
        channel.close(promise: nil)
    }

    public static func connect(host: String = "127.0.0.1", port: Int) async throws -> RawConnection {
        let received = Observed(RawConnectionReceived())
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(received: received))
                }
            }
            .connect(host: host, port: port).get()
        return RawConnection(channel: channel, received: received)
    }

    /// Whether the server has not closed the connection (unread bytes do not count).
    public var isOpen: Bool { !received.value.closed }

    /// Writes `bytes` as they are. Throws when the server closed the connection meanwhile;
    /// whatever it answered before closing can still be read.
    public func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
    }

    /// Sends one request, with `Host` and (for a body) `Content-Length` unless given, and
    /// reads its response on this connection.
    public func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil, timeout: Duration = .seconds(10)
    ) async throws -> TestResponse {
        func has(_ name: String) -> Bool { headers.contains { $0.0.lowercased() == name } }
        var head = "\(method) \(path) HTTP/1.1\r\n"
        if !has("host") { head += "Host: localhost\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !has("content-length"), !has("transfer-encoding") { head += "Content-Length: \(body.count)\r\n" }
        try await send(Array((head + "\r\n").utf8) + (body ?? []))
        return try await readResponse(timeout: timeout, forHEAD: method == "HEAD")
    }

    /// Reads the next response (an interim `100 Continue` too). `forHEAD`: it answers a
    /// HEAD request, so it has no body whatever its headers say.
    public func readResponse(timeout: Duration = .seconds(10), forHEAD: Bool = false) async throws -> TestResponse {
        let outcome = await received.wait(timeout: timeout) { received -> Result<ParsedResponse, TestFailure>? in
            do throws(TestFailure) {
                guard let parsed = try ParsedResponse.parse(received.bytes, noBody: forHEAD, atEOF: received.closed) else { return nil }
                return .success(parsed)
            } catch {
                return .failure(error)
            }
        }
        guard let outcome else {
            let bytes = received.value.bytes
            throw TestFailure(
                "no complete response within \(timeout)"
                    + (bytes.isEmpty
                        ? "" : "; got \(bytes.count) bytes: \(String(decoding: bytes.prefix(300), as: UTF8.self).debugDescription)"))
        }
        let parsed = try outcome.get()
        received.update { $0.bytes.removeFirst(parsed.consumed) }
        return parsed.response
    }

    /// Waits until the server closes the connection; false if it is still open after `timeout`.
    public func awaitClose(timeout: Duration) async -> Bool {
        await received.wait(timeout: timeout) { $0.closed ? true : nil } ?? false
    }

    /// Every byte received and not yet read as a response.
    public var unread: [UInt8] { received.value.bytes }

    /// Closes the connection from this side.
    public func close() async {
        try? await channel.close()
    }
}

private struct RawConnectionReceived: Sendable {
    var bytes: [UInt8] = []
    var closed = false
}

/// Appends what arrives; a reset or an error counts as the server closing.
private final class Collector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let received: Observed<RawConnectionReceived>

    init(received: Observed<RawConnectionReceived>) {
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        received.update { $0.bytes.append(contentsOf: buffer.readableBytesView) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        received.update { $0.closed = true }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// One response parsed from the front of a byte buffer.
struct ParsedResponse: Sendable {
    let response: TestResponse
    /// Bytes of the buffer it used.
    let consumed: Int

    private static let headerEnd: [UInt8] = [13, 10, 13, 10]

    /// nil: more bytes are needed. `atEOF`: nothing more will come.
    static func parse(_ buffer: [UInt8], noBody: Bool, atEOF: Bool) throws(TestFailure) -> ParsedResponse? {
        guard let end = buffer.firstRange(of: headerEnd) else {
            guard atEOF else { return nil }
            throw TestFailure(
                buffer.isEmpty
                    ? "the server closed the connection without a response"
                    : "the stream ended inside a response head: \(String(decoding: buffer.prefix(300), as: UTF8.self).debugDescription)")
        }
        let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        let statusLine = lines.popFirst() ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw TestFailure("bad status line: \(String(statusLine).debugDescription)")
        }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw TestFailure("bad header line: \(String(line).debugDescription)") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingSpaces))
        }
        let bodyStart = end.upperBound
        func done(_ bodyEnd: Int) -> ParsedResponse {
            ParsedResponse(
                response: TestResponse(status: status, headers: headers, body: Array(buffer[bodyStart..<bodyEnd])), consumed: bodyEnd)
        }
        if noBody || (100..<200).contains(status) || status == 204 || status == 304 { return done(bodyStart) }
        let lengths = Set(
            headers.filter { $0.0.lowercased() == "content-length" }.flatMap { $0.1.split(separator: ",") }.map(\.trimmingSpaces))
        if headers.contains(where: { $0.0.lowercased() == "transfer-encoding" }) {
            throw TestFailure("a Transfer-Encoding response (alertd sends none): \(head.debugDescription)")
        }
        if let text = lengths.first {
            guard lengths.count == 1, let length = Int(text), length >= 0 else { throw TestFailure("bad Content-Length: \(lengths)") }
            guard buffer.count - bodyStart >= length else {
                if atEOF { throw TestFailure("the stream ended after \(buffer.count - bodyStart) of \(length) body bytes") }
                return nil
            }
            return done(bodyStart + length)
        }
        // Delimited by the server closing the connection.
        return atEOF ? done(buffer.count) : nil
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
