import AlertdEngine
import AlertdTestSupport
import Foundation
import Glibc
import NIOCore

import Testing

@testable import AlertdAPI
@testable import AlertdDaemon

@Suite("The watchdog pings only when its probe gets 200 from /healthz")
struct WatchdogProbeTests {
    /// The probe over one end of a socket pair, run synchronously (its deadline is on an
    /// event loop): the time measured is the probe's, not the cooperative pool's. It
    /// blocks a thread of its own while it waits, never one of the pool's.
    static func probe(_ fd: Int32, timeout: Double) async -> (healthy: Bool, took: Duration) {
        await onOwnThread {
            let started = ContinuousClock.now
            let healthy = (try? WatchdogService.probe(fd: fd, ssl: nil, timeout: timeout, token: "t0k3n").wait()) ?? false
            return (healthy, ContinuousClock.now - started)
        }
    }

    static func socketPair() -> (Int32, Int32) {
        var pair: [Int32] = [-1, -1]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        return (pair[0], pair[1])
    }

    /// Reads the request head from `fd` (blocking, on a thread of its own) and answers it with `status`.
    static func answer(_ fd: Int32, status: Int) -> Thread {
        let thread = Thread {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !received.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { break }
                received += buffer[..<count]
            }
            let head = String(decoding: received, as: UTF8.self)
            let answer = head.contains("GET /healthz ") && head.contains("X-Alertd-Probe: t0k3n") ? status : 400
            let response = Array("HTTP/1.1 \(answer) X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
            _ = response.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        thread.start()
        return thread
    }

    @Test("A peer that answers 200 to GET /healthz with the probe's token: healthy")
    func answered() async {
        let (probeEnd, serverEnd) = Self.socketPair()
        defer { close(serverEnd) }
        _ = Self.answer(serverEnd, status: 200)
        #expect(await Self.probe(probeEnd, timeout: 5).healthy)
    }

    @Test("A peer that answers 503: not healthy")
    func unhealthy() async {
        let (probeEnd, serverEnd) = Self.socketPair()
        defer { close(serverEnd) }
        _ = Self.answer(serverEnd, status: 503)
        #expect(!(await Self.probe(probeEnd, timeout: 5).healthy))
    }

    @Test("A peer that never answers: the probe fails within its timeout")
    func hung() async {
        let (probeEnd, serverEnd) = Self.socketPair()
        defer { close(serverEnd) }
        let (healthy, took) = await Self.probe(probeEnd, timeout: 0.3)
        #expect(!healthy)
        #expect(took < .seconds(3))
    }

    @Test("A peer that hangs up, or no connection at all (-1): the probe fails at once")
    func closed() async {
        let (probeEnd, serverEnd) = Self.socketPair()
        close(serverEnd)
        let (healthy, took) = await Self.probe(probeEnd, timeout: 10)
        #expect(!healthy && took < .seconds(5))
        #expect(!(await Self.probe(-1, timeout: 10).healthy))
    }
}
