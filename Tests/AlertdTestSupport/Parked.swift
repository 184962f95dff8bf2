/// Requests sent together that park (long-polls) and are answered later, each on a task
/// of its own: the test goes on while they wait, then awaits their answers.
///
/// ```swift
/// let waiters = Parked(count: 3) { try await api.get("/v1/clients/ops/alerts/current?wait=30") }
/// try await api.awaitWaiters(3)
/// _ = try await api.create("ops")
/// for answer in try await waiters.awaitAll() { #expect(answer.status == 200) }
/// ```
public final class Parked: Sendable {
    public let count: Int
    private let answers = Observed<[Result<TestResponse, TestFailure>]>([])

    public init(count: Int, _ request: @escaping @Sendable () async throws -> TestResponse) {
        self.count = count
        for _ in 0..<count {
            Task { [answers] in
                let answer: Result<TestResponse, TestFailure>
                do {
                    answer = .success(try await request())
                } catch {
                    answer = .failure(TestFailure("\(error)"))
                }
                answers.update { $0.append(answer) }
            }
        }
    }

    /// Whether any request has been answered (or failed) yet.
    public var anyAnswered: Bool { !answers.value.isEmpty }

    /// Every answer, in the order they came; throws after `timeout` or when one failed.
    public func awaitAll(timeout: Duration = .seconds(15)) async throws -> [TestResponse] {
        let count = count
        guard let all = await answers.wait(timeout: timeout, until: { $0.count == count ? $0 : nil }) else {
            throw TestFailure("only \(answers.value.count) of \(count) parked requests were answered within \(timeout)")
        }
        return try all.map { try $0.get() }
    }
}
