import AlertdHTTP
import AlertdWire

/// A request's query arguments, checked against the names an endpoint takes.
struct Query {
    private var values: [String: String] = [:]

    init(_ request: HTTPRequest, allowed: [String]) throws(Problem) {
        for (name, value) in request.query {
            guard allowed.contains(name) else {
                throw Problem(
                    .badRequest,
                    allowed.isEmpty
                        ? "this endpoint takes no query parameters, got \(name)"
                        : "unknown query parameter \(name); this endpoint takes \(allowed.sorted().joined(separator: ", "))")
            }
            guard values.updateValue(value, forKey: name) == nil else {
                throw Problem(.badRequest, "query parameter \(name) is given twice")
            }
        }
    }

    subscript(name: String) -> String? { values[name] }

    /// `limit`: 1–1000, for the paged lists; `standard` when absent.
    func limit(standard: Int = 100) throws(Problem) -> Int {
        guard let text = values["limit"] else { return standard }
        guard text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let limit = Int(text), (1...1000).contains(limit) else {
            throw Problem(.badRequest, "limit must be an integer from 1 to 1000, not \"\(text)\"")
        }
        return limit
    }

    /// `votes` (of `current`): the number of votes of the `after` alert the reader shows, a
    /// non-negative integer; nil when absent. (An alert has at most 10: any larger number
    /// differs from every alert's, as a wrong one does.)
    func votes() throws(Problem) -> Int? {
        guard let text = values["votes"] else { return nil }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw Problem(.badRequest, "votes must be a non-negative integer (the votes of the alert you show), not \"\(text)\"")
        }
        return Int(text.suffix(18)).map { text.count > 9 ? Int.max : $0 } ?? Int.max
    }

    /// `wait`: a non-negative integer of seconds; 0 when absent.
    func wait() throws(Problem) -> Int {
        guard let text = values["wait"] else { return 0 }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw Problem(.badRequest, "wait must be a non-negative integer number of seconds, not \"\(text)\"")
        }
        // Any larger value is clamped to max_wait_seconds anyway.
        return Int(text.suffix(18)).map { text.count > 9 ? Int.max : $0 } ?? Int.max
    }
}
