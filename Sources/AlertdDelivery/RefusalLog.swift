/// Which refused callback targets have been logged: a target the deny list refuses
/// is refused again at every retry (for up to `callbacks.max_age`), and a warning
/// each time would bury the log. The first refusal of a target for a reason is a
/// warning; the repeats are debug lines. Bounded: past ``capacity`` targets it
/// starts over (a target is then warned about once more).
///
/// Pure; the delivery worker keeps it under a lock.
///
/// ```swift
/// var log = RefusalLog()
/// log.isFirst(target: "http://10.0.0.5/hook", reason: "10.0.0.0/8")  // true: warn
/// log.isFirst(target: "http://10.0.0.5/hook", reason: "10.0.0.0/8")  // false: debug
/// ```
public struct RefusalLog: Sendable {
    public let capacity: Int
    private var seen: Set<String> = []

    public init(capacity: Int = 4096) { self.capacity = capacity }

    /// Whether this is the first refusal of `target` for `reason` (since the set last started over).
    public mutating func isFirst(target: String, reason: String) -> Bool {
        let key = target + "\u{0}" + reason
        if seen.contains(key) { return false }
        if seen.count >= capacity { seen.removeAll(keepingCapacity: true) }
        seen.insert(key)
        return true
    }
}
