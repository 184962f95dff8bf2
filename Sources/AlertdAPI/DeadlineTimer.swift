import AlertdCore
import Foundation
import Glibc

/// Runs callbacks at monotonic deadlines from one thread: the deadlines of
/// parked waiters. Cancelling is O(1); a cancelled entry is skipped when due.
final class DeadlineTimer: @unchecked Sendable {
    typealias Token = UInt64

    private struct Entry: Comparable, Sendable {
        var at: UInt64  // monotonic nanoseconds
        var token: Token
        static func < (a: Entry, b: Entry) -> Bool { a.at != b.at ? a.at < b.at : a.token < b.token }
    }

    // Guarded by `condition`.
    private var heap = Heap<Entry>()
    private var actions: [Token: @Sendable () -> Void] = [:]
    private var nextToken: Token = 1
    private var stopped = false
    private let condition = NSCondition()

    init(name: String) {
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.start()
    }

    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// Calls `action` on the timer thread once `seconds` have passed, unless cancelled.
    func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Token {
        let at = Self.now() + UInt64(max(0, seconds) * 1e9)
        condition.lock()
        defer { condition.unlock() }
        let token = nextToken
        nextToken += 1
        actions[token] = action
        heap.insert(Entry(at: at, token: token))
        if heap.min?.token == token { condition.signal() }
        return token
    }

    /// Cancels a scheduled action; true when it had not run yet.
    @discardableResult
    func cancel(_ token: Token) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return actions.removeValue(forKey: token) != nil
    }

    func stop() {
        condition.lock()
        stopped = true
        actions.removeAll()
        condition.signal()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while !stopped {
            guard let first = heap.min else {
                condition.wait()
                continue
            }
            let now = Self.now()
            if first.at > now {
                let wait = Double(first.at - now) / 1e9
                _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
                continue
            }
            heap.popMin()
            heap.shrink()
            guard let action = actions.removeValue(forKey: first.token) else { continue }
            condition.unlock()
            action()
            condition.lock()
        }
        condition.unlock()
    }
}
