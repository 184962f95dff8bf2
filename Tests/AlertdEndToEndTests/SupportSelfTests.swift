// Tests of the end-to-end support code itself, against servers these tests start:
// a scripted socket server on a thread (for the HTTP client) and a stand-in daemon in
// Python (for `Daemon`). Nothing here talks to alertd.

import Foundation
import Glibc
import Synchronization
import Testing

// MARK: - A scripted server

/// Accepts connections on 127.0.0.1 and runs `script` for each on its own thread.
final class SelfTestServer: Sendable {
    let port: Int
    private let listener: Int32
    private let script: @Sendable (SelfTestConnection) -> Void
    private let accepted = Mutex(0)
    private let requests = Mutex<[[UInt8]]>([])

    /// Connections accepted so far.
    var acceptedCount: Int { accepted.withLock { $0 } }
    /// Every request head+body read by `SelfTestConnection.readRequest`, in arrival order.
    var receivedRequests: [[UInt8]] { requests.withLock { $0 } }

    init(_ script: @escaping @Sendable (SelfTestConnection) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard fd >= 0, bound == 0, listen(fd, 512) == 0 else {
            throw TestHTTPError(.ioFailed, "scripted server: \(TestSocket.errnoText())")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        self.script = script
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Stops accepting; connections already handed to the script finish on their own.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))  // wakes the blocked accept(2)
    }

    fileprivate func record(_ request: [UInt8]) {
        requests.withLock { $0.append(request) }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                break
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let index = accepted.withLock { count in
                count += 1
                return count - 1
            }
            let thread = Thread { [self] in
                let connection = SelfTestConnection(fd: fd, index: index, server: self)
                script(connection)
                connection.close()
            }
            thread.start()
        }
        Glibc.close(listener)
    }
}

/// The server side of one connection, used from its own thread only.
final class SelfTestConnection {
    let index: Int
    private var fd: Int32
    private var buffer: [UInt8] = []
    private let server: SelfTestServer

    fileprivate init(fd: Int32, index: Int, server: SelfTestServer) {
        self.fd = fd
        self.index = index
        self.server = server
        TestSocket.setTimeouts(fd, seconds: 20)
    }

    /// Reads a request head and a Content-Length body; nil when the client closed first.
    @discardableResult
    func readRequest() -> (head: String, body: [UInt8])? {
        while true {
            if let end = buffer.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                let length =
                    head.split(separator: "\r\n").compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                if buffer.count - end.upperBound >= length {
                    let total = end.upperBound + length
                    let body = Array(buffer[end.upperBound..<total])
                    server.record(Array(buffer[..<total]))
                    buffer.removeFirst(total)
                    return (head, body)
                }
            }
            guard case .data = TestSocket.receive(fd, into: &buffer, wait: true) else { return nil }
        }
    }

    /// Reads until the client has sent `count` bytes in total (for raw byte checks).
    func readBytes(_ count: Int) -> [UInt8] {
        while buffer.count < count {
            guard case .data = TestSocket.receive(fd, into: &buffer, wait: true) else { break }
        }
        return buffer
    }

    func write(_ text: String) {
        write(Array(text.utf8))
    }

    func write(_ bytes: [UInt8]) {
        try? TestSocket.sendAll(fd, bytes)
    }

    /// `200 OK` with `body` and a Content-Length.
    func respond(_ body: String, status: String = "200 OK", headers: String = "") {
        write("HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\n\(headers)\r\n\(body)")
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}

/// A one-shot gate threads can wait on.
final class SelfTestGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let waiters: Int

    init(waiters: Int = 1) { self.waiters = waiters }

    func open() {
        for _ in 0..<waiters { semaphore.signal() }
    }

    func wait() {
        _ = semaphore.wait(timeout: .now() + 20)
    }
}

// MARK: - The HTTP client

@Suite("TestHTTPClient against a scripted server", .ownThreads)
struct HTTPClientSelfTests {
    @Test("parses a Content-Length response, headers case-insensitively, and JSON")
    func contentLength() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.respond(#"{"ok":true,"n":3}"#, headers: "Content-Type: application/json\r\nX-Twice: a\r\nx-twice: b\r\n")
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        let response = try client.get("/healthz")
        #expect(response.status == 200)
        #expect(response.header("content-type") == "application/json")
        #expect(response.headerValues("X-TWICE") == ["a", "b"])
        #expect(response.text == #"{"ok":true,"n":3}"#)
        let object = try response.jsonObject()
        #expect(object["ok"] as? Bool == true)
        #expect(object["n"] as? Int == 3)
    }

    @Test("decodes a chunked body sent in pieces, with extensions and trailers")
    func chunked() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel")
            Thread.sleep(forTimeInterval: 0.05)  // makes the client read a partial chunk
            connection.write("lo\r\n7\r\n, world\r\n0\r\nX-Trailer: yes\r\n\r\n")
            connection.readRequest()
            connection.respond("second")
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        let first = try client.get("/a")
        #expect(first.text == "hello, world")
        #expect(first.header("x-trailer") == "yes")
        #expect(try client.get("/b").text == "second")
        #expect(client.connectionsOpened == 1)
    }

    @Test("reuses one connection for sequential requests")
    func keepAlive() throws {
        let server = try SelfTestServer { connection in
            while connection.readRequest() != nil { connection.respond("n\(connection.index)") }
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        for _ in 0..<5 { #expect(try client.get("/").text == "n0") }
        #expect(client.isConnected)
        #expect(client.connectionsOpened == 1)
        #expect(server.acceptedCount == 1)
    }

    @Test("honours Connection: close and reconnects for the next request")
    func connectionClose() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.respond("bye\(connection.index)", headers: "Connection: close\r\n")
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        #expect(try client.get("/").text == "bye0")
        #expect(!client.isConnected)
        #expect(try client.get("/").text == "bye1")
        #expect(client.connectionsOpened == 2)
    }

    @Test("reconnects when the server closed an idle keep-alive connection")
    func idleClose() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.respond("one")  // no Connection: close, yet the server hangs up
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        #expect(try client.get("/").text == "one")
        #expect(client.awaitServerClose(timeout: 5))
        #expect(!client.isConnected)
        #expect(try client.post("/", json: "{}").text == "one")
        #expect(client.connectionsOpened == 2)
    }

    @Test("reads a body delimited by the server closing the connection")
    func closeDelimited() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        #expect(try client.get("/").text == "until the end")
        #expect(!client.isConnected)
    }

    @Test("reads no body for HEAD, 204 and 304 even with a Content-Length")
    func noBody() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
            connection.readRequest()
            connection.write("HTTP/1.1 204 No Content\r\n\r\n")
            connection.readRequest()
            connection.write("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n")
            connection.readRequest()
            connection.respond("last")
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port, timeout: 5)
        let head = try client.request("HEAD", "/")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try client.delete("/x").status == 204)
        #expect(try client.get("/").status == 304)
        #expect(try client.get("/").text == "last")
        #expect(client.connectionsOpened == 1)
    }

    @Test("skips 100 Continue in request() but returns it from readResponse()")
    func interim() throws {
        let server = try SelfTestServer { connection in
            for _ in 0..<2 {
                connection.readRequest()
                connection.write("HTTP/1.1 100 Continue\r\n\r\n")
                connection.respond("final")
            }
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        let response = try client.post("/", json: "{}", headers: [("Expect", "100-continue")])
        #expect(response.status == 200 && response.text == "final")
        try client.sendRaw(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        #expect(try client.readResponse().status == 100)
        #expect(try client.readResponse().text == "final")
    }

    @Test("sends raw bytes verbatim, invalid UTF-8 and lying Content-Length included")
    func rawBytes() throws {
        let raw: [UInt8] = Array("POST /v1/x HTTP/1.1\r\nContent-Length: 3\r\n\r\n".utf8) + [0xFF, 0xFE, 0xC3]
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.respond("", status: "400 Bad Request", headers: "Connection: close\r\n")
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        try client.sendRaw(raw)
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(server.receivedRequests == [raw])
        #expect(!client.isConnected)
    }

    @Test("adds Host and Content-Length, but never a second Content-Length")
    func headerDefaults() throws {
        let server = try SelfTestServer { connection in
            while connection.readRequest() != nil { connection.respond("ok") }
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        _ = try client.post("/a", json: #"{"title":"é"}"#)
        _ = try client.request("POST", "/b", headers: [("Content-Length", "2")], body: Array("hi".utf8))
        let sent = server.receivedRequests.map { String(decoding: $0, as: UTF8.self) }
        #expect(sent.count == 2)
        #expect(
            sent.first == "POST /a HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"title\":\"é\"}")
        #expect(sent.last?.components(separatedBy: "Content-Length").count == 2)
    }

    @Test("a server that never answers fails with timedOut instead of hanging")
    func timeout() throws {
        let release = SelfTestGate()
        let server = try SelfTestServer { connection in
            connection.readRequest()
            release.wait()
        }
        defer {
            release.open()
            server.stop()
        }
        let client = TestHTTPClient(port: server.port, timeout: 0.5)
        let started = ContinuousClock.now
        let error = #expect(throws: TestHTTPError.self) { try client.get("/hang") }
        #expect(error?.code == .timedOut)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test("a server that closes without answering fails with connectionClosed")
    func closedWithoutAnswer() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
        }
        defer { server.stop() }
        let client = TestHTTPClient(port: server.port)
        let error = #expect(throws: TestHTTPError.self) { try client.post("/", json: "{}") }
        #expect(error?.code == .connectionClosed)
    }

    @Test("a truncated Content-Length body is malformed, not a short success")
    func truncated() throws {
        let server = try SelfTestServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        }
        defer { server.stop() }
        let error = #expect(throws: TestHTTPError.self) { try TestHTTPClient(port: server.port).get("/") }
        #expect(error?.code == .malformedResponse)
    }

    @Test("connecting to a closed port fails with connectFailed")
    func refused() throws {
        let server = try SelfTestServer { _ in }
        let port = server.port
        server.stop()
        #expect(TestHTTPClient(port: port).isConnected == false)
        let error = #expect(throws: TestHTTPError.self) { try TestHTTPClient(port: port).get("/") }
        #expect(error?.code == .connectFailed)
    }

    @Test("jsonBody writes compact JSON with sorted keys that the server reads back")
    func jsonHelper() throws {
        let body = jsonBody(["title": "a/b", "buttons": [["title": "OK"]], "priority": 5, "flag": true])
        #expect(body == #"{"buttons":[{"title":"OK"}],"flag":true,"priority":5,"title":"a/b"}"#)
        #expect(jsonBody("text") == #""text""#)
    }
}

@Suite("ParkedRequests against a scripted server", .ownThreads)
struct ParkedRequestsSelfTests {
    @Test("parks many requests, sees none answered, then reads every answer in order")
    func parkAndRelease() throws {
        let count = 200
        let release = SelfTestGate(waiters: count)
        let server = try SelfTestServer { connection in
            connection.readRequest()
            release.wait()
            connection.respond("answer \(connection.index)")
        }
        defer {
            release.open()
            server.stop()
        }
        let parked = try ParkedRequests(port: server.port, count: count, method: "GET", path: "/wait?wait=30")
        #expect(parked.count == count)
        #expect(!parked.anyAnswered())
        release.open()
        let responses = try parked.awaitAll(timeout: 20)
        #expect(responses.count == count)
        #expect(responses.map(\.text) == (0..<count).map { "answer \($0)" })
        #expect(parked.anyAnswered())
        #expect(server.acceptedCount == count)
    }

    @Test("awaitAll times out naming how many answered")
    func partialTimeout() throws {
        let release = SelfTestGate(waiters: 2)
        let server = try SelfTestServer { connection in
            connection.readRequest()
            if connection.index == 0 {
                connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
            }
            release.wait()
        }
        defer {
            release.open()
            server.stop()
        }
        let parked = try ParkedRequests(port: server.port, count: 3, method: "GET", path: "/")
        let error = #expect(throws: TestHTTPError.self) { try parked.awaitAll(timeout: 0.5) }
        #expect(error?.code == .timedOut)
        #expect(error?.detail.contains("1 of 3") == true)
        #expect(parked.anyAnswered())
    }
}

// MARK: - Daemon, against a stand-in written in Python

/// A fake `alertd`: same flags, same `msg=listening` line, a tiny JSON server.
/// `FAKE_MODE`: `crash` exits 3 at once, `silent` never logs listening,
/// `ignore-term` ignores SIGTERM.
private let fakeDaemonScript = #"""
    #!/usr/bin/env python3
    import http.server, json, os, signal, sys, time

    args = sys.argv[1:]
    def flag(name):
        return args[args.index(name) + 1]
    config, listen, state = flag("--config"), flag("--listen"), flag("--state-dir")
    mode = os.environ.get("FAKE_MODE", "normal")

    def log(msg, **fields):
        extra = "".join(f" {k}={v}" for k, v in fields.items())
        sys.stderr.write(f"ts={time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime())} level=info msg={msg}{extra}\n")
        sys.stderr.flush()

    if mode == "crash":
        log("config-invalid", reason="boom")
        sys.exit(3)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if mode == "ignore-term" else (lambda *_: os._exit(0)))
    log("starting", config=config)
    body = open(config).read()
    boots_file = os.path.join(state, "boots")
    boots = int(open(boots_file).read()) + 1 if os.path.exists(boots_file) else 1
    open(boots_file, "w").write(str(boots))

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            if self.path == "/spam":
                for i in range(4000):
                    sys.stderr.write("level=debug msg=spam line=%d padding=%s\n" % (i, "x" * 100))
                log("spam-done")
            payload = json.dumps({"boots": boots, "config": body, "state_dir": state, "env": os.environ.get("FAKE_ENV")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        def log_message(self, *_):
            pass

    host, port = listen.rsplit(":", 1)
    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    if mode != "silent":
        log("listening", address=f'"{host}:{server.server_address[1]}"')
    server.serve_forever()
    """#

/// Whether python3 is on PATH, to run the fake daemon.
private let pythonAvailable: Bool = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").contains { access("\($0)/python3", X_OK) == 0 }
}()

@Suite("Daemon against a fake alertd", .enabled(if: pythonAvailable, "needs python3"), .ownThreads)
struct DaemonSelfTests {
    /// The fake's directory lives as long as this suite instance, i.e. one test.
    private let scratch: ScratchDirectory
    private let fakeDaemon: String

    init() throws {
        scratch = try ScratchDirectory()
        fakeDaemon = scratch.url.appendingPathComponent("fake-alertd").path
        try #require(
            FileManager.default.createFile(
                atPath: fakeDaemon, contents: Data(fakeDaemonScript.utf8), attributes: [.posixPermissions: 0o755]))
    }

    private func options(_ mode: String = "normal", config: String? = nil) -> Daemon.Options {
        Daemon.Options(config: config, environment: ["FAKE_MODE": mode, "FAKE_ENV": "passed"], executable: fakeDaemon)
    }

    @Test("start waits for the listening line, and the daemon serves on the logged port")
    func startAndServe() throws {
        let daemon = try Daemon.start(options(config: "log:\n  level: debug\n"))
        defer { daemon.cleanup() }
        #expect(daemon.baseURL == "http://127.0.0.1:\(daemon.port)")
        #expect(daemon.stderrText.contains("msg=listening"))
        let state = try daemon.client().get("/").jsonObject()
        #expect(state["config"] as? String == "log:\n  level: debug\n")
        #expect(state["state_dir"] as? String == daemon.stateDir.path)
        #expect(state["env"] as? String == "passed")
        #expect(try daemon.terminate() == 0)
        #expect(!daemon.isRunning)
        #expect(daemon.exitStatus == 0)
    }

    @Test("stderr keeps being drained, so a chatty daemon never blocks")
    func draining() throws {
        let daemon = try Daemon.start(options())
        defer { daemon.cleanup() }
        let client = daemon.client(timeout: 10)
        #expect(try client.get("/spam").status == 200)  // ~450 KB of stderr, far over a pipe's 64 KiB
        try daemon.waitForStderr(containing: "msg=spam-done")
        #expect(daemon.stderrText.contains("line=3999 "))
    }

    @Test("restart runs on the same state dir; the temp dir goes when both are cleaned up")
    func restart() throws {
        let first = try Daemon.start(options())
        let scratch = first.configFile.deletingLastPathComponent().path
        #expect(try first.client().get("/").jsonObject()["boots"] as? Int == 1)
        first.kill9()
        #expect(first.exitStatus == 137)
        let second = try first.restart()
        defer { second.cleanup() }
        #expect(second.stateDir == first.stateDir)
        #expect(try second.client().get("/").jsonObject()["boots"] as? Int == 2)
        first.cleanup()
        #expect(FileManager.default.fileExists(atPath: scratch))
        _ = try second.terminate()
        second.cleanup()
        #expect(!FileManager.default.fileExists(atPath: scratch))
    }

    @Test("restart after rewriteConfig reads the new config")
    func rewrite() throws {
        let first = try Daemon.start(options(config: "a: 1\n"))
        defer { first.cleanup() }
        try first.rewriteConfig("a: 2\n")
        let second = try first.restart()  // stops the running one first
        defer { second.cleanup() }
        #expect(first.exitStatus == 0)
        #expect(try second.client().get("/").jsonObject()["config"] as? String == "a: 2\n")
    }

    @Test("a daemon that exits at startup fails start with its exit status and stderr")
    func crashAtStartup() throws {
        let error = #expect(throws: DaemonError.self) { try Daemon.start(options("crash")) }
        #expect(error?.exitStatus == 3)
        #expect(error?.stderr.contains("reason=boom") == true)
        #expect(error?.description.contains("reason=boom") == true)
    }

    @Test("a daemon that never logs listening fails start after the timeout and is killed")
    func silent() throws {
        var silent = options("silent")
        // Long enough for the fake (a Python script) to start and write its first line
        // on a machine busy with the rest of the suite.
        silent.startTimeout = 5
        let started = ContinuousClock.now
        let error = #expect(throws: DaemonError.self) { try Daemon.start(silent) }
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(error?.exitStatus == 137)
        #expect(error?.stderr.contains("msg=starting") == true)
    }

    @Test("terminate SIGKILLs and throws when SIGTERM is ignored")
    func stubborn() throws {
        let daemon = try Daemon.start(options("ignore-term"))
        defer { daemon.cleanup() }
        #expect(throws: DaemonError.self) { try daemon.terminate(timeout: 0.5) }
        #expect(!daemon.isRunning)
        #expect(daemon.exitStatus == 137)
    }

    @Test("kill9 stops the daemon at once; its port stops answering")
    func kill9() throws {
        let daemon = try Daemon.start(options())
        defer { daemon.cleanup() }
        daemon.kill9()
        #expect(!daemon.sendSignal(SIGHUP))
        let error = #expect(throws: TestHTTPError.self) { try daemon.client().get("/") }
        #expect(error?.code == .connectFailed)
    }

    @Test("dropping the last reference kills and reaps the process")
    func deinitKills() throws {
        var daemon: Daemon? = try Daemon.start(options())
        let pid = try #require(daemon?.pid)
        #expect(kill(pid, 0) == 0)
        daemon = nil
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }

    @Test("the binary comes from the override, then ALERTD_BINARY, then beside the test bundle")
    func locate() throws {
        #expect(try Daemon.locateBinary(override: "/bin/sh", environment: ["ALERTD_BINARY": "/nope"], testExecutable: "/x/y") == "/bin/sh")
        #expect(try Daemon.locateBinary(override: nil, environment: ["ALERTD_BINARY": "/bin/sh"], testExecutable: "/x/y") == "/bin/sh")
        let directory = try ScratchDirectory()
        let binary = directory.url.appendingPathComponent("alertd").path
        #expect(
            FileManager.default.createFile(
                atPath: binary, contents: Data("#!/bin/sh\n".utf8),
                attributes: [.posixPermissions: 0o755]))
        let bundle = directory.url.appendingPathComponent("alertdPackageTests.xctest").path
        #expect(try Daemon.locateBinary(override: nil, environment: [:], testExecutable: bundle) == binary)
        #expect(try Daemon.locateBinary(override: nil, environment: ["ALERTD_BINARY": ""], testExecutable: bundle) == binary)
        let error = #expect(throws: DaemonError.self) {
            try Daemon.locateBinary(override: nil, environment: [:], testExecutable: "/nonexistent/dir/tests.xctest")
        }
        #expect(error?.description.contains("/nonexistent/dir/alertd") == true)
    }
}

@Suite("Daemon's log parsing", .ownThreads)
struct DaemonLogParsingSelfTests {
    @Test(
        "finds the port in a listening line, quoted or not",
        arguments: [
            "ts=2026-11-21T19:01:00.123Z level=info msg=listening address=127.0.0.1:40123\n",
            "level=info msg=\"listening\" address=\"127.0.0.1:40123\"\n",
            "level=info msg=starting\nlevel=info msg=listening address=[::1]:40123 extra\n",
        ])
    func port(line: String) {
        #expect(Daemon.listeningPort(in: Array(line.utf8)) == 40123)
    }

    @Test(
        "ignores incomplete and unrelated lines",
        arguments: [
            "level=info msg=listening address=127.0.0.1:40123",  // no newline yet
            "level=info msg=\"listening soon\" address=127.0.0.1:40123\n",
            "level=info msg=listening\n",
            "level=info msg=listening address=127.0.0.1:0\n",
        ])
    func noPort(line: String) {
        #expect(Daemon.listeningPort(in: Array(line.utf8)) == nil)
    }

    @Test("parses logfmt values with quotes and escapes")
    func logfmt() {
        let fields = Daemon.logfmtFields(#"a=1 b="two words" c="q\"x" flag d="#)
        #expect(fields == ["a": "1", "b": "two words", "c": "q\"x", "flag": "", "d": ""])
    }
}

// MARK: - Tests on threads of their own

/// Whether the calling thread is one of the running test's dedicated threads.
private func onOwnThread() -> Bool { OwnThreads.executor?.runsCurrentThread ?? false }

@Suite("OwnThreads: tests off the cooperative pool, a few at a time", .ownThreads)
struct OwnThreadsSelfTests {
    @Test("a synchronous test runs on a dedicated thread")
    func synchronous() {
        #expect(onOwnThread())
    }

    @Test("each case of a parameterized test runs on a dedicated thread", arguments: [1, 2, 3])
    func parameterized(_ value: Int) {
        #expect(onOwnThread(), "case \(value)")
    }

    @Test("an async test runs on its threads, after suspensions too, and so do its children")
    func suspensions() async throws {
        #expect(onOwnThread(), "at the start")
        try await Task.sleep(for: .milliseconds(10))
        #expect(onOwnThread(), "after a sleep")
        async let child: Bool = {
            await Task.yield()
            return onOwnThread()
        }()
        let childOnOwnThread = await child
        #expect(childOnOwnThread, "in an async let child")
    }

    @Test("slots bound how many bodies run at once, and every body runs")
    func slots() async throws {
        final class Counts: Sendable {
            let value = Mutex((running: 0, most: 0, done: 0))
        }
        let slots = E2ESlots(width: 2)
        let counts = Counts()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    try await slots.run {
                        counts.value.withLock {
                            $0.running += 1; $0.most = max($0.most, $0.running)
                        }
                        try await Task.sleep(for: .milliseconds(30))
                        counts.value.withLock {
                            $0.running -= 1; $0.done += 1
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let final = counts.value.withLock { $0 }
        #expect(final.done == 6)
        #expect(final.most <= 2, "\(final.most) bodies ran at once")
    }

    @Test("every top-level suite of this target has the trait")
    func everySuite() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        var suites = 0
        var missing: [String] = []
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            // A top-level suite's attribute starts a line; it may span lines up to its type.
            for attribute in text.components(separatedBy: "\n@Suite(").dropFirst() {
                suites += 1
                let declaration = attribute.prefix { $0 != "{" }
                if !declaration.contains(".ownThreads") { missing.append("\(file): @Suite(\(declaration.prefix(60))") }
            }
        }
        #expect(suites >= 20, "found only \(suites) suites in \(directory.path)")
        #expect(missing.isEmpty, "give these suites the .ownThreads trait:\n\(missing.joined(separator: "\n"))")
    }

    @Test("a job enqueued after shutdown still runs (on the global executor)", .timeLimit(.minutes(1)))
    func afterShutdown() async throws {
        let executor = DedicatedThreads(name: "e2e-gone", count: 1)
        executor.shutdown()
        // The thread may or may not have ended yet; either way the body must complete.
        let ran = try await withTaskExecutorPreference(executor) {
            try await Task.sleep(for: .milliseconds(20))
            return true
        }
        #expect(ran)
    }
}
