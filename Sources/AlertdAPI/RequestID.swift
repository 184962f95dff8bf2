import Synchronization

/// Request ids: the client's `X-Request-Id` when it is a sane token (1–64 of
/// letters, digits, `.`, `_`, `-`), else a new one: a per-process random
/// prefix and a counter, unique and cheap.
enum RequestID {
    private static let prefix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
    private static let counter = Atomic<UInt64>(0)

    static func of(_ given: String?) -> String {
        if let given, !given.isEmpty, given.utf8.count <= 64,
            given.utf8.allSatisfy({ byte in
                (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 45 || byte == 46
                    || byte == 95
            })
        {
            return given
        }
        let next = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return prefix + "-" + String(next, radix: 36)
    }
}
