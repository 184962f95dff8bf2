import AlertdWire
import Crypto
import Foundation

/// What the server remembers between tool calls: the `Idempotency-Key` of each question,
/// the agent's name, and the questions being waited for.
///
/// **Idempotency keys.** An agent (or its client) may send the same tool call again: after
/// a timeout, a dropped response, a restart of its own loop. Such a retry must not put a
/// second question on the operator's screen. The key of a post is therefore derived from
/// what it asks, not from the JSON-RPC request:
///
///     key = "alertctl-mcp-" + hex(SHA-256(session ‖ tool ‖ client ‖ the alert's JSON ‖ round))
///
/// - `session`: 16 random bytes drawn when `alertctl mcp` starts. alertd keeps a key 24 h;
///   a new session must not be handed an answer given to an earlier one.
/// - the alert's JSON: every field posted (title, message, buttons, priority, metadata…),
///   with sorted keys; `timeout_seconds` is not part of it — a retry that waits longer is
///   still the same question.
/// - `round`: how many times this session has already *given the agent* a final outcome
///   for this same question. While the agent has not seen an answer (the call timed out
///   with "not answered yet", was cancelled, or failed), the same call is a retry: alertd
///   answers with the alert it already has, and the call waits for it or returns its answer.
///   Once the agent was told the outcome (by ask_human, check_answer or withdraw_question),
///   asking the very same thing again is a new question, posted with the next round's key.
///
/// Two identical calls at the same moment share one alert and get the same answer.
actor Ledger {
    /// A question's identity without its round.
    struct Question: Hashable, Sendable {
        let digest: String
    }

    private let session: [UInt8]
    private var rounds: [Question: Int] = [:]
    private var questionOfAlert: [String: Question] = [:]
    /// Every alert this session posted, with its client: the questions check_answer and
    /// withdraw_question may act on (issue 44, item 4).
    private var asked: [String: String] = [:]
    private var waiting: [UInt64: (client: String, id: String)] = [:]
    private var nextWaiter: UInt64 = 0
    /// The MCP client's name and version, from its `initialize`.
    private(set) var agent: String?

    init(session: [UInt8]) {
        self.session = session
    }

    /// The MCP client's name and version as they go into every alert's metadata: without
    /// control characters or escape sequences (an escape that wrote the clipboard of whoever
    /// read the metadata on a terminal was seen), at most 200 characters (issue 44, item 10).
    func setAgent(name: String, version: String) {
        agent = Terminal.stripped(version.isEmpty ? name : "\(name) \(version)", limit: 200)
    }

    /// The question `alert` on `client` asked by `tool`.
    func question(tool: String, client: String, alert: NewAlert) -> Question {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(alert)) ?? Data()
        var hash = SHA256()
        hash.update(data: session)
        for part in [tool, client] {
            hash.update(data: Array(part.utf8) + [0])
        }
        hash.update(data: body)
        return Question(digest: Self.hex(hash.finalize()))
    }

    /// The `Idempotency-Key` to post `question` with now.
    func key(for question: Question) -> String {
        let round = rounds[question, default: 0]
        var hash = SHA256()
        hash.update(data: Array("\(question.digest)/\(round)".utf8))
        return "alertctl-mcp-" + Self.hex(hash.finalize())
    }

    /// `question` was posted as alert `id` on `client`.
    func posted(_ question: Question, as id: String, on client: String) {
        questionOfAlert[id] = question
        asked[id] = client
    }

    /// The client alert `id` was asked on, if this session asked it.
    func client(ofAsked id: String) -> String? { asked[id] }

    /// The agent was given alert `id`'s final outcome: the same question asked again is a new one.
    func told(_ id: String) {
        guard let question = questionOfAlert.removeValue(forKey: id) else { return }
        rounds[question, default: 0] += 1
    }

    /// Alert `id` on `client` is waited for until ``stopWaiting(_:)``; see ``waited``. A call
    /// waiting for a person is not busy (``drain(within:)``).
    func startWaiting(client: String, id: String) -> UInt64 {
        nextWaiter += 1
        waiting[nextWaiter] = (client, id)
        end()
        return nextWaiter
    }

    func stopWaiting(_ waiter: UInt64) {
        waiting[waiter] = nil
        begin()
    }

    // MARK: Calls in progress

    private var busy = 0
    private var idle: [CheckedContinuation<Void, Never>] = []

    /// A tool call started.
    func begin() { busy += 1 }

    /// A tool call ended.
    func end() {
        busy -= 1
        if busy == 0 { wake() }
    }

    /// Returns once no call is busy (calls waiting for a person do not count), or after
    /// `limit`: at the end of input, calls already read get their answers before the process exits.
    func drain(within limit: Duration) async {
        guard busy > 0 else { return }
        await withCheckedContinuation { continuation in
            idle.append(continuation)
            // Bounded: a call stuck on an unreachable alertd must not hold the exit.
            Task {
                try? await Task.sleep(for: limit)
                self.wake()
            }
        }
    }

    private func wake() {
        let waiting = idle
        idle = []
        for continuation in waiting { continuation.resume() }
    }

    /// The alerts ask_human calls are waiting for now, once each.
    var waited: [(client: String, id: String)] {
        var seen = Set<String>()
        return waiting.values.filter { seen.insert($0.client + "/" + $0.id).inserted }
    }

    private static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }
}
