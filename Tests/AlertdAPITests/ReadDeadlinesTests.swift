import Dispatch
import Glibc
import Testing

@testable import AlertdHTTP

@Suite("Connection deadlines: the first byte, then the whole request")
struct ReadDeadlinesTests {
    /// A connected socket pair: the server's end (the one deadlines cut) and the client's.
    static func pair() -> (server: Int32, client: Int32) {
        var fds: [Int32] = [-1, -1]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        return (fds[0], fds[1])
    }

    /// Whether the client's end sees the server's end shut down (end of file).
    static func isCut(_ client: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(client, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test("a silent connection is cut at its first-byte deadline; one that sent bytes gets the read timeout from its opening")
    func firstByteThenRequest() {
        let (silent, talking) = (Self.pair(), Self.pair())
        defer { for fd in [silent.server, silent.client, talking.server, talking.client] { close(fd) } }
        let deadlines = ReadDeadlines(
            timeout: 10, firstByteTimeout: 1, writeTimeout: 5, bytesReceived: { $0 == talking.server ? 42 : 0 })
        var contexts: [UnsafeMutableRawPointer?] = [nil, nil]
        let opened = DispatchTime.now().uptimeNanoseconds
        deadlines.opened(fd: silent.server, context: &contexts[0])
        deadlines.opened(fd: talking.server, context: &contexts[1])
        defer {
            deadlines.closed(context: &contexts[0])
            deadlines.closed(context: &contexts[1])
        }
        #expect(deadlines.sweep(now: opened + 500_000_000) == 0)
        #expect(deadlines.sweep(now: opened + 2_000_000_000) == 1)
        #expect(Self.isCut(silent.client) && !Self.isCut(talking.client))
        #expect(deadlines.connectionsCut(waiting: .firstByte) == 1)
        // Past its first-byte deadline, the connection that sent something has until 10 s after it opened.
        #expect(deadlines.sweep(now: opened + 9_000_000_000) == 0)
        #expect(deadlines.sweep(now: opened + 11_000_000_000) == 1)
        #expect(Self.isCut(talking.client))
        #expect(deadlines.connectionsCut(waiting: .request) == 1 && deadlines.connectionsCut == 2)
    }

    @Test("the first-byte timeout is never longer than the read timeout; sweeps come ten times per shortest timeout")
    func bounds() {
        let deadlines = ReadDeadlines(timeout: 2, firstByteTimeout: 30, writeTimeout: 60, bytesReceived: { _ in 0 })
        let (server, client) = Self.pair()
        defer { for fd in [server, client] { close(fd) } }
        var context: UnsafeMutableRawPointer?
        let opened = DispatchTime.now().uptimeNanoseconds
        deadlines.opened(fd: server, context: &context)
        defer { deadlines.closed(context: &context) }
        #expect(deadlines.sweep(now: opened + 2_500_000_000) == 1)
        #expect(deadlines.sweepInterval == .milliseconds(200))
    }
}
