/// Durations as Alertmanager and Prometheus write them: `90s`, `30m`, `1h`,
/// `1h30m`, `7d`, `1w` (units `ms`, `s`, `m`, `h`, `d`, `w`, largest first), or
/// a plain number of seconds. One parser for every place alertd and alertctl
/// take seconds: the Alertmanager buttons' `silence`, the config's seconds keys,
/// `alertctl post --expires-in`, `--dismiss-after`, `--retry-for`.
///
/// ```swift
/// DurationText.seconds("90s")    // 90
/// DurationText.seconds("1h30m")  // 5400
/// DurationText.seconds("0.05")   // 0.05
/// DurationText.seconds("5 min")  // nil
/// ```
public enum DurationText {
    /// Seconds, or nil when `text` is not a duration greater than zero.
    public static func seconds(_ text: String) -> Double? {
        if let plain = Double(text) { return plain.isFinite && plain > 0 ? plain : nil }
        let units: [(String, Double)] = [("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60), ("s", 1), ("ms", 0.001)]
        var rest = Substring(text)
        var total = 0.0
        var lastUnit = -1
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let value = Double(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            // "ms" before "m": the longest unit name that matches.
            guard let index = units.indices.filter({ rest.hasPrefix(units[$0].0) }).max(by: { units[$0].0.count < units[$1].0.count }),
                index > lastUnit
            else { return nil }
            rest = rest.dropFirst(units[index].0.count)
            lastUnit = index
            total += value * units[index].1
        }
        return total > 0 && total.isFinite ? total : nil
    }
}
