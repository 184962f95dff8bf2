import AlertdEngine
import AlertdTestSupport
import Foundation
import Glibc
import Logging
import NIOConcurrencyHelpers
import Synchronization
import Testing

@testable import AlertdHTTP

@Suite("Suspended connections and shutdown")
struct SuspendResumeTests {
    @Test("a connection stays listed until its resume returned: an emptiness check cannot slip in between")
    func resumeBeforeUnlisting() async throws {
        // Only the test's own threads block (the resume on `answering`, the check on its
        // thread); the test awaits what they do.
        let entered = Observed(false)
        let gate = DispatchSemaphore(value: 0)
        let resumeReturned = Atomic<Bool>(false)
        let registry = SuspendedConnections(
            suspend: { _ in },
            resume: { _ in
                entered.update { $0 = true }
                gate.wait()
                resumeReturned.store(true, ordering: .sequentiallyConsistent)
            })
        let connection = ConnectionHandle(pointer: try #require(OpaquePointer(bitPattern: 0x10)))
        let responder = Responder(connection: connection, registry: registry)
        #expect(responder.afterHandler() == nil, "no answer yet: the connection is suspended")
        #expect(registry.count == 1)
        #expect(!registry.isEmpty, "a suspended connection keeps the server from stopping")

        let answering = Thread { responder.respond(HTTPResponse(status: 200)) }
        answering.start()
        try #require(await entered.wait(timeout: .seconds(20)) { $0 ? true : nil } == true, "the resume never began")
        // The resume is under way: a check now must wait for it, never see an empty list.
        let checking = Observed(false)
        let closed = Observed<(Bool, Bool)?>(nil)
        Thread {
            checking.update { $0 = true }
            let result = registry.isEmpty
            closed.update { $0 = (result, resumeReturned.load(ordering: .sequentiallyConsistent)) }
        }.start()
        try #require(await checking.wait(timeout: .seconds(20)) { $0 ? true : nil } == true, "the check never began")
        // The check began and must now be held by the resume still under way: a check that
        // returned here (it takes microseconds) saw the list without waiting. Half a second
        // is the bound of a negative, for a loaded machine; the gate opens only after it.
        let returnedEarly = await closed.wait(timeout: .milliseconds(500)) { $0 }
        #expect(returnedEarly == nil, "the check returned \(String(describing: returnedEarly)) while the resume was under way")
        gate.signal()
        let (result, afterResume) = try #require(await closed.wait(timeout: .seconds(20)) { $0 }, "the check never returned")
        #expect(result)
        #expect(afterResume, "the list was empty only once the resume had returned")
        #expect(responder.takeResumedResponse()?.status == 200)
    }

    /// Parks every request; the test answers them.
    final class ParkingHandler: HTTPHandler, @unchecked Sendable {
        let parked = NIOLockedValueBox<[Responder]>([])
        final class Admitted: Sendable {}
        func admit(_ head: HTTPRequestHead) -> HTTPAdmission { .proceed(Admitted()) }
        func handle(_ request: HTTPRequest, responder: Responder) { parked.withLockedValue { $0.append(responder) } }
        func reject(_ rejection: HTTPRejection) -> HTTPResponse { HTTPResponse(status: 503) }
    }

    @Test("stop() waits for answers in flight: every waiter answered during shutdown gets its answer", arguments: 0..<10)
    func stopWaitsForAnswers(round: Int) async throws {
        let handler = ParkingHandler()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: .address(host: "127.0.0.1", port: 0), threads: 2),
            handler: handler, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
        let port = Int(server.boundAddress.split(separator: ":").last!)!
        let clients = try (0..<16).map { _ in try RawClient(port: port) }
        for client in clients { try client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n") }
        // The server counts what it suspended; look again every millisecond, without
        // holding a thread meanwhile.
        let deadline = ContinuousClock.now + .seconds(20)
        while server.suspendedRequests < clients.count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        try #require(server.suspendedRequests == clients.count)

        // Answer from another thread while the server stops.
        let answering = Thread {
            for responder in handler.parked.withLockedValue({ $0 }) {
                responder.respond(HTTPResponse(status: 200, body: Array("answered".utf8)))
            }
        }
        answering.start()
        // Stopping joins libmicrohttpd's threads, and the clients read with blocking calls:
        // on threads of their own.
        let stopped = await onOwnThread { server.stop(grace: 10) }
        #expect(stopped)
        let replies = await onOwnThread { clients.map { $0.readAll() } }
        for reply in replies {
            #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply.prefix(40))")
            #expect(reply.hasSuffix("answered"))
        }
    }
}

/// A blocking TCP client that sends bytes and reads until the server closes or a response is whole.
/// Used by one thread at a time (the test's, then the one it hands the reads to).
final class RawClient: @unchecked Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw POSIXError(.EPIPE) }
    }

    /// Reads one response with a Content-Length body (or until the server closes).
    func readAll() -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[..<count]
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n"),
                let line = text[..<end.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                let length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)),
                text.utf8.distance(from: end.upperBound.samePosition(in: text.utf8)!, to: text.utf8.endIndex) >= length
            {
                break
            }
        }
        return String(decoding: received, as: UTF8.self)
    }
}
