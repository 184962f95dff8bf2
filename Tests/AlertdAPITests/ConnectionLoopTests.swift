import AlertdTestSupport
import Foundation
import Glibc
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import AlertdHTTP

/// The HTTP server's connection loops (issue 46): libmicrohttpd in external mode, each
/// daemon driven by a thread that is also the task executor of the requests it reads.
@Suite("Connection loops: a request's work runs on its connection's thread")
struct ConnectionLoopTests {
    /// Answers each request from a task that prefers the connection's loop, after a hop to
    /// another thread (as a commit's completion comes from the store writer): the body
    /// says on which threads the handler, the task's start and its end ran.
    final class HoppingHandler: HTTPHandler, @unchecked Sendable {
        final class Admitted: Sendable {}
        let executors = NIOLockedValueBox<[ObjectIdentifier]>([])
        func admit(_ head: HTTPRequestHead) -> HTTPAdmission { .proceed(Admitted()) }
        func handle(_ request: HTTPRequest, responder: Responder) {
            let handlerThread = pthread_self()
            if let executor = responder.executor { executors.withLockedValue { $0.append(ObjectIdentifier(executor as AnyObject)) } }
            Task(executorPreference: responder.executor) {
                let started = pthread_self()
                // Resumed from a thread of its own, as the store writer resumes a commit's waiter.
                let resumer: pthread_t = await withCheckedContinuation { continuation in
                    Thread { continuation.resume(returning: pthread_self()) }.start()
                }
                let ended = pthread_self()
                let verdict = [
                    pthread_equal(started, handlerThread) != 0 ? "started-on-loop" : "started-elsewhere",
                    pthread_equal(ended, handlerThread) != 0 ? "ended-on-loop" : "ended-elsewhere",
                    pthread_equal(resumer, handlerThread) != 0 ? "resumer-is-loop" : "resumer-elsewhere",
                ].joined(separator: " ")
                responder.respond(HTTPResponse(status: 200, body: Array(verdict.utf8)))
            }
        }
        func reject(_ rejection: HTTPRejection) -> HTTPResponse { HTTPResponse(status: 503) }
    }

    /// A ``HoppingHandler`` that keeps the loop of the last request it served.
    final class Capturing: HTTPHandler, @unchecked Sendable {
        let inner = HoppingHandler()
        let loop = NIOLockedValueBox<ConnectionLoop?>(nil)
        func admit(_ head: HTTPRequestHead) -> HTTPAdmission { inner.admit(head) }
        func handle(_ request: HTTPRequest, responder: Responder) {
            loop.withLockedValue { $0 = responder.loop }
            inner.handle(request, responder: responder)
        }
        func reject(_ rejection: HTTPRejection) -> HTTPResponse { inner.reject(rejection) }
    }

    static func server(_ handler: any HTTPHandler, threads: Int = 2) throws -> (HTTPServer, Int) {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: .address(host: "127.0.0.1", port: 0), threads: threads),
            handler: handler, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
        return (server, Int(server.boundAddress.split(separator: ":").last!)!)
    }

    @Test(
        "a task that prefers the responder's executor starts on the connection's thread and comes back to it after another thread resumes it"
    )
    func taskRunsOnTheLoop() async throws {
        let handler = HoppingHandler()
        let (server, port) = try Self.server(handler)
        let reply = try await onOwnThread { () throws -> String in
            let client = try RawClient(port: port)
            try client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
            return client.readAll()
        }
        #expect(await onOwnThread { server.stop(grace: 10) })
        #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply.prefix(60))")
        #expect(reply.hasSuffix("started-on-loop ended-on-loop resumer-elsewhere"), "\(reply)")
        #expect(handler.executors.withLockedValue { $0.count } == 1, "a served request's responder names its loop")
    }

    @Test(
        "1,000 requests on one keep-alive connection, each answered after a hop to another thread: every answer keeps the connection open")
    func keepAliveThroughHops() async throws {
        let handler = HoppingHandler()
        let (server, port) = try Self.server(handler, threads: 1)
        let replies = try await onOwnThread { () throws -> [String] in
            let client = try RawClient(port: port)
            return try (0..<1000).map { _ in
                try client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return client.readAll()
            }
        }
        #expect(await onOwnThread { server.stop(grace: 10) })
        #expect(replies.count == 1000)
        #expect(replies.allSatisfy { $0.hasPrefix("HTTP/1.1 200") && $0.hasSuffix("started-on-loop ended-on-loop resumer-elsewhere") })
        let closing = replies.filter { $0.lowercased().contains("connection: close") }
        #expect(closing.isEmpty, "\(closing.count) answers closed the connection: \(closing.first ?? "")")
        #expect(Set(handler.executors.withLockedValue { $0 }).count == 1, "one connection, one loop")
    }

    @Test("a job enqueued on a loop after the server stopped still runs (on the global executor)")
    func jobsAfterStopRun() async throws {
        let capturing = Capturing()
        let (server, port) = try Self.server(capturing, threads: 1)
        _ = try await onOwnThread { () throws -> String in
            let client = try RawClient(port: port)
            try client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
            return client.readAll()
        }
        #expect(await onOwnThread { server.stop(grace: 10) })
        let executor: any TaskExecutor = try #require(capturing.loop.withLockedValue { $0 })
        let ran = Observed(false)
        Task(executorPreference: executor) { ran.update { $0 = true } }
        #expect(await ran.wait(timeout: .seconds(20)) { $0 ? true : nil } == true, "the job never ran")
    }

    @Test("the watchdog's probe connections are added on each loop and answered there")
    func probeConnections() async throws {
        let handler = HoppingHandler()
        let (server, _) = try Self.server(handler, threads: 2)
        let ends = await server.addProbeConnections()
        #expect(ends.count == 2 && ends.allSatisfy { $0 >= 0 }, "\(ends)")
        let replies = await onOwnThread {
            ends.map { fd -> String in
                defer { close(fd) }
                let request = Array("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
                guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return "send failed" }
                var limit = timeval(tv_sec: 10, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: received, as: UTF8.self).hasSuffix("resumer-elsewhere") {
                    let count = recv(fd, &buffer, buffer.count, 0)
                    if count <= 0 { break }
                    received += buffer[..<count]
                }
                return String(decoding: received, as: UTF8.self)
            }
        }
        #expect(await onOwnThread { server.stop(grace: 10) })
        for reply in replies {
            #expect(reply.hasPrefix("HTTP/1.1 200") && reply.hasSuffix("started-on-loop ended-on-loop resumer-elsewhere"), "\(reply)")
        }
        #expect(Set(handler.executors.withLockedValue { $0 }).count == 2, "one probe per loop")
    }

    @Test("after stopAccepting() a new connection is refused, and a connection already open is still served")
    func stopAcceptingOnTheLoops() async throws {
        let handler = HoppingHandler()
        let (server, port) = try Self.server(handler, threads: 2)
        let open = try RawClient(port: port)
        await server.stopAccepting()
        #expect(throws: (any Error).self, "a new connection after stopAccepting()") { _ = try RawClient(port: port) }
        let reply = try await onOwnThread { () throws -> String in
            try open.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
            return open.readAll()
        }
        #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply.prefix(60))")
        #expect(reply.lowercased().contains("connection: close"), "a draining server closes after answering")
        #expect(await onOwnThread { server.stop(grace: 10) })
    }

    /// Answers every request at once, from the handler.
    final class InlineHandler: HTTPHandler, @unchecked Sendable {
        final class Admitted: Sendable {}
        func admit(_ head: HTTPRequestHead) -> HTTPAdmission { .proceed(Admitted()) }
        func handle(_ request: HTTPRequest, responder: Responder) { responder.respond(HTTPResponse(status: 200, body: Array("ok".utf8))) }
        func reject(_ rejection: HTTPRejection) -> HTTPResponse { HTTPResponse(status: 503) }
    }

    @Test(
        "256 keep-alive connections with a request each ready at once, ten rounds, on one loop: every request is answered (libmicrohttpd's own blocking epoll loop stalls at exactly 128 ready events)"
    )
    func manyReadyConnections() async throws {
        let (server, port) = try Self.server(InlineHandler(), threads: 1)
        let answered = try await onOwnThread { () throws -> Int in
            let clients = try (0..<256).map { _ in try RawClient(port: port) }
            var answered = 0
            for _ in 0..<10 {
                for client in clients { try client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n") }
                for client in clients where client.readAll().hasPrefix("HTTP/1.1 200") { answered += 1 }
            }
            return answered
        }
        #expect(answered == 2560)
        #expect(await onOwnThread { server.stop(grace: 10) })
    }

    @Test(
        "a daemon filled to its connection limit stops listening; once its connections close, a new connection is served (the loop runs libmicrohttpd again, which listens again)"
    )
    func listensAgainAfterTheLimit() async throws {
        // One loop; its daemon takes maxConnections + 64 clients and 4 probe connections.
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: .address(host: "127.0.0.1", port: 0), threads: 1, maxConnections: 100),
            handler: InlineHandler(), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
        let port = Int(server.boundAddress.split(separator: ":").last!)!
        let clientLimit = 100 + HTTPServer.connectionHeadroom
        // The clients' slots taken: one more connection is refused for capacity, and
        // connections are accepted in the order they came.
        let clients = try (0..<clientLimit).map { _ in try RawClient(port: port) }
        let extra = try RawClient(port: port)
        let deadline = ContinuousClock.now + .seconds(20)
        while server.counts.refused.first(where: { $0.reason == "capacity" })?.count != 1, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        try #require(server.counts.refused.first(where: { $0.reason == "capacity" })?.count == 1, "the extra connection was not refused")
        _ = extra
        var probes: [Int32] = []
        for _ in 0..<HTTPServer.probeReserve { probes += await server.addProbeConnections() }
        #expect(probes.count == HTTPServer.probeReserve && probes.allSatisfy { $0 >= 0 }, "\(probes)")
        // Every slot is taken: the daemon has taken its listening socket out of its epoll set.
        // Now all of them close.
        for probe in probes { close(probe) }
        @Sendable func refusedForCapacity() -> Int { server.counts.refused.first(where: { $0.reason == "capacity" })?.count ?? 0 }
        let reply = try await onOwnThread { () throws -> String in
            for client in clients { shutdown(client.fd, Int32(SHUT_RDWR)) }
            // The daemon takes the closes a batch at a time: a connection it accepts before
            // enough of them is refused for capacity (counted, and closed at once), and tried
            // again. One left unserved waits out RawClient's 10 s and is not counted.
            var refused = refusedForCapacity()
            for _ in 0..<200 {
                let late = try RawClient(port: port)
                try? late.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let reply = late.readAll()
                guard !reply.hasPrefix("HTTP/1.1 200"), refusedForCapacity() > refused else { return reply }
                refused = refusedForCapacity()
            }
            return "still refused for capacity after 200 tries"
        }
        #expect(reply.hasPrefix("HTTP/1.1 200"), "a connection after the limit was left unserved: \(reply.prefix(60))")
        #expect(await onOwnThread { server.stop(grace: 10) })
    }

    @Test("perform on a stopped loop does not run its body (it would call a stopped libmicrohttpd)")
    func performAfterStop() async throws {
        let capturing = Capturing()
        let (server, port) = try Self.server(capturing, threads: 1)
        _ = try await onOwnThread { () throws -> String in
            let client = try RawClient(port: port)
            try client.send("GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
            return client.readAll()
        }
        let loop = try #require(capturing.loop.withLockedValue { $0 })
        #expect(await loop.perform { 7 } == 7, "a running loop runs it")
        #expect(await onOwnThread { server.stop(grace: 10) })
        #expect(await loop.perform { 7 } == nil, "a stopped loop does not")
        #expect(await server.addProbeConnections().isEmpty)
    }
}
