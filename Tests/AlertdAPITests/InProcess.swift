import AlertdCallbacks
import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdStore
import AlertdWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import Synchronization

@testable import AlertdAPI
@testable import AlertdDaemon

/// alertd built exactly as the daemon builds it (`Alertd.build`), with a
/// manual clock and a temp state dir, driven through its HTTP handler without
/// sockets. Its loops run as the daemon's services would: the store's writer
/// thread, and the deadline and delivery loops as tasks.
final class InProcessDaemon: @unchecked Sendable {
    let clock: ManualClock
    let stateDir: String
    let config: Config
    let alertd: Alertd
    private let ownsDir: Bool
    private let loops: [Task<Void, Never>]
    private let stopped = Atomic<Bool>(false)

    init(
        config yaml: String = "", stateDir: String? = nil, clock: ManualClock = ManualClock(),
        wrapStore: @escaping @Sendable (any PersistentStore) -> any PersistentStore = { $0 }
    ) async throws {
        self.clock = clock
        self.ownsDir = stateDir == nil
        self.stateDir = stateDir ?? NSTemporaryDirectory() + "alertd-api-\(UUID().uuidString)"
        var config = try Config.parse(yaml: yaml)
        config.stateDir = self.stateDir
        self.config = config
        let settings = config
        // Opening blocks (SQLite, the state directory's lock): on a thread of its own, never the pool's.
        let alertd = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Alertd, any Error>) in
            Thread {
                continuation.resume(
                    with: Result {
                        try Alertd.open(config: settings, clock: clock, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }) {
                            wrapStore(try SQLiteStore(directory: $0.stateDir, durability: $0.durability))
                        }
                    })
            }.start()
        }
        try await alertd.start()
        self.alertd = alertd
        alertd.sqlite!.startWriter()
        loops = [
            Task { try? await DeadlineService(engine: alertd.engine).run() },
            Task { await alertd.deliveries.run() },
        ]
    }

    /// Stops this instance (like a crash would, minus losing anything committed).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        for loop in loops { loop.cancel() }
        alertd.engine.drain()
        alertd.deliveries.shutdownNow()
        alertd.sqlite!.shutdown()
        alertd.releaseStateDirectory()
    }

    /// A new instance on the same state dir: a restart.
    func restart(config yaml: String = "") async throws -> InProcessDaemon {
        stop()
        return try await InProcessDaemon(config: yaml, stateDir: stateDir, clock: clock)
    }

    func cleanUp() {
        stop()
        if ownsDir { try? FileManager.default.removeItem(atPath: stateDir) }
    }

    /// Starts a request; its answer may come later (a parked waiter).
    func start(_ method: String, _ target: String, json: String? = nil, headers: [(String, String)] = []) -> PendingAnswer {
        let pending = PendingAnswer()
        let parts = target.split(separator: "?", maxSplits: 1)
        let query: [(name: String, value: String)] =
            parts.count > 1
            ? parts[1].split(separator: "&").map { pair in
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (String(kv[0]), kv.count > 1 ? String(kv[1]) : "")
            } : []
        var allHeaders = headers.map { (name: $0.0, value: $0.1) }
        if json != nil { allHeaders.append((name: "Content-Type", value: "application/json")) }
        let request = HTTPRequest(
            method: method, path: String(parts[0]), query: query, headers: allHeaders, body: Array((json ?? "").utf8))
        alertd.api.handle(request, responder: Responder.inProcess { pending.fulfil($0) })
        return pending
    }

    /// Sends a request and waits (at most 10 s) for its answer.
    func send(_ method: String, _ target: String, json: String? = nil, headers: [(String, String)] = []) async throws -> HTTPResponse {
        try await start(method, target, json: json, headers: headers).value()
    }

    /// Sends a request and blocks the calling thread for its answer: only on a
    /// test's own `Thread`s (many clients at once), never in an async test.
    func sendBlocking(_ method: String, _ target: String, json: String? = nil, headers: [(String, String)] = []) -> HTTPResponse? {
        let answered = DispatchSemaphore(value: 0)
        let answer = NIOLockedValueBox<HTTPResponse?>(nil)
        let request = start(method, target, json: json, headers: headers)
        Task {
            let response = try? await request.value()
            answer.withLockedValue { $0 = response }
            answered.signal()
        }
        answered.wait()
        return answer.withLockedValue { $0 }
    }

    /// Fires the deadlines due at the manual clock's time and waits for their commit.
    func fireDeadlines() async {
        alertd.engine.fireDeadlines()
        await barrier()
    }

    /// Returns once everything submitted so far is committed and published.
    func barrier() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            alertd.store.transact(client: "barrier", now: clock.now(), idempotencyKey: nil) { _, _ in
                Mutation((), afterEarlierCommits: true)
            } completion: {
                _ in
                done.resume()
            }
        }
    }

    func post(_ client: String, _ json: String) async throws -> [String: Any] {
        let response = try await send("POST", "/v1/clients/\(client)/alerts", json: json)
        guard response.status == 201 else { throw Unexpected(response) }
        return try response.object()
    }
}

struct Unexpected: Error, CustomStringConvertible {
    let response: HTTPResponse
    init(_ response: HTTPResponse) { self.response = response }
    var description: String { "unexpected \(response.status): \(String(decoding: response.body, as: UTF8.self))" }
}

/// The answer of a request made in process; awaited, never waited for on a thread.
final class PendingAnswer: Sendable {
    private struct State {
        var answer: HTTPResponse?
        var waiter: CheckedContinuation<HTTPResponse?, Never>?
    }

    private let state = NIOLockedValueBox(State())

    func fulfil(_ response: HTTPResponse) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<HTTPResponse?, Never>? in
            state.answer = response
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: response)
    }

    var isAnswered: Bool { state.withLockedValue { $0.answer != nil } }

    struct TimedOut: Error {}

    /// The answer, once it comes (at most `seconds`).
    func value(seconds: Double = 10) async throws -> HTTPResponse {
        let answer = await withTaskGroup(of: HTTPResponse?.self) { group in
            group.addTask { await self.arrival() }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let answer else { throw TimedOut() }
        return answer
    }

    private func arrival() async -> HTTPResponse? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse?, Never>) in
                let now = state.withLockedValue { state -> HTTPResponse?? in
                    if let answer = state.answer { return .some(answer) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<HTTPResponse?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
}

extension HTTPResponse {
    func object() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw Unexpected(self)
        }
        return object
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}
