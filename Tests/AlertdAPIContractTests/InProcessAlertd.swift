// The one file that builds alertd in process. Everything it needs from the daemon's
// modules is here, so that when they move (the build function, the handler, the request
// and response types) only this file follows.

import AlertdCallbacks
import AlertdCore
import AlertdEngine
import AlertdPostgres
import AlertdHTTP
import AlertdStore
import AlertdTestSupport
import Foundation
import Logging
import Synchronization

@testable import AlertdAPI
@testable import AlertdDaemon

/// alertd built exactly as the daemon builds it, on a temporary state directory and the
/// system clock, answering through its HTTP handler without sockets.
///
/// Its loops run as the daemon's services would: the store's writer thread, and the
/// deadline and delivery loops as tasks.
///
/// `@unchecked Sendable`: its fields never change, and what `alertd` holds is made to be
/// called from any thread (the server calls the handler from libmicrohttpd's threads).
final class InProcessAlertd: TestClient, @unchecked Sendable {
    private let alertd: Alertd
    private let scratch: ScratchDirectory
    private let loops: [Task<Void, Never>]
    private let storeLoop: Task<Void, Never>?

    private init(config yaml: String) async throws {
        scratch = try ScratchDirectory()
        var config = try Config.parse(yaml: yaml)
        config.stateDir = scratch.url.path
        let settings = config
        // Opening blocks (SQLite, the state directory's lock): on a thread of its own, never the pool's.
        let alertd = try await Self.onOwnThread {
            try Alertd.open(
                config: settings, clock: SystemClock(), logger: Logger(label: "alertd-in-process") { _ in SwiftLogNoOpLogHandler() })
        }
        // PostgreSQL's pool, listener and counts run until the task is cancelled.
        let storeLoop = alertd.postgres.map { postgres in Task { _ = try? await postgres.run() } }
        do {
            try await alertd.start()
        } catch {
            storeLoop?.cancel()
            await storeLoop?.value
            // PostgresNIO's errors describe themselves only when reflected.
            throw TestFailure("alertd did not start: \(String(reflecting: error))")
        }
        alertd.sqlite?.startWriter()
        loops = [
            Task { try? await DeadlineService(engine: alertd.engine).run() },
            Task { await alertd.deliveries.run() },
        ]
        self.storeLoop = storeLoop
        self.alertd = alertd
    }

    /// Builds alertd from `yaml` (its `state_dir` is replaced by a temporary directory).
    static func start(config yaml: String) async throws -> InProcessAlertd {
        try await InProcessAlertd(config: yaml)
    }

    /// One round of the purge (`PurgeService` runs it once a minute).
    func purge() async { await alertd.engine.purge() }

    /// Answers parked waiters, commits what is queued and stops alertd's loops and threads.
    func shutdown() async {
        for loop in loops { loop.cancel() }
        await onOwnThread {
            self.alertd.engine.drain()
            self.alertd.deliveries.shutdownNow()
            self.alertd.sqlite?.shutdown()
            self.alertd.releaseStateDirectory()
        }
        storeLoop?.cancel()
        await storeLoop?.value
    }

    /// Building and stopping wait on alertd's own threads (the writer, the delivery
    /// worker's grace for attempts in flight): on a thread of their own, never the pool's.
    private static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    private func onOwnThread(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            Thread {
                work()
                continuation.resume()
            }.start()
        }
    }

    /// As the server does: the head is admitted (or refused) first, then the whole request
    /// is handled; path and query are percent-decoded (and `+` in the query is a space, as
    /// libmicrohttpd decodes arguments); a HEAD answer loses its body on the wire.
    func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) async throws -> TestResponse {
        let target = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let query: [(name: String, value: String)] =
            target.count > 1
            ? target[1].split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (Self.decoded(parts[0], plus: true), parts.count > 1 ? Self.decoded(parts[1], plus: true) : "")
            } : []
        var fields = headers.map { (name: $0.0, value: $0.1) }
        if !fields.contains(where: { $0.name.lowercased() == "host" }) { fields.append((name: "Host", value: "127.0.0.1")) }
        var request = HTTPRequest(
            method: method, path: Self.decoded(target[0], plus: false), query: query, headers: fields, body: body ?? [])
        let answer = OneAnswer()
        switch alertd.api.admit(request.head) {
        case .refuse(let response):
            answer.deliver(response)
        case .proceed(let admission):
            request.admission = admission
            alertd.api.handle(request, responder: Responder.inProcess { answer.deliver($0) })
        }
        let response = try await answer.value(timeout: .seconds(120))
        return TestResponse(
            status: response.status, headers: response.headers.map { ($0.name, $0.value) },
            body: method == "HEAD" ? [] : response.body)
    }

    /// `%XX` decoded as libmicrohttpd does (other bytes as they are).
    private static func decoded(_ text: Substring, plus: Bool) -> String {
        var bytes: [UInt8] = []
        var rest = Array(text.utf8)[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "%"), rest.count >= 2, let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                rest = rest.dropFirst(2)
            } else {
                bytes.append(plus && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// One response that arrives on any thread, now or later, awaited by one task.
private final class OneAnswer: Sendable {
    private let response = Observed<HTTPResponse?>(nil)

    func deliver(_ answer: HTTPResponse) {
        response.update { $0 = $0 ?? answer }
    }

    func value(timeout: Duration) async throws -> HTTPResponse {
        guard let answer = await response.wait(timeout: timeout, until: { $0 }) else {
            throw TestFailure("no answer within \(timeout)")
        }
        return answer
    }
}
