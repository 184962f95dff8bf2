/// At most `width` holders at once; the others wait in line, first come first served.
public actor Gate {
    private let width: Int
    private var holders = 0
    private var queue: [CheckedContinuation<Void, Never>] = []

    public init(width: Int) { self.width = width }

    /// Waits for a place; call ``leave()`` when done with it.
    public func enter() async {
        if holders < width {
            holders += 1
        } else {
            // `leave` hands its place straight to the first in line: `holders` stays.
            await withCheckedContinuation { queue.append($0) }
        }
    }

    public func leave() {
        if queue.isEmpty { holders -= 1 } else { queue.removeFirst().resume() }
    }

    /// Runs `body` in a place of its own.
    public func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }
}
