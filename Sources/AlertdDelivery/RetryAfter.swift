public import AlertdWire

/// The `Retry-After` header (RFC 9110 §10.2.3): a number of seconds, or an HTTP date.
///
/// ```swift
/// RetryAfter.parse("120", now: now)                            // 120
/// RetryAfter.parse("Wed, 21 Oct 2026 07:28:00 GMT", now: now)  // seconds from now to then, 0 if past
/// RetryAfter.parse("soon", now: now)                           // nil
/// ```
public enum RetryAfter {
    /// Seconds to wait from `now`, never negative; nil when `value` is neither form.
    ///
    /// Dates are accepted in the three forms RFC 9110 §5.6.7 requires
    /// recipients to read: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC
    /// 850 (`Sunday, 06-Nov-94 08:49:37 GMT`, a two-digit year more than 50
    /// years ahead meaning the century before) and asctime
    /// (`Sun Nov  6 08:49:37 1994`).
    public static func parse(_ value: String, now: Timestamp) -> Double? {
        let text = value.trimmingSpaces
        guard !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return Double(text)
        }
        guard let date = httpDate(String(text), now: now) else { return nil }
        return max(0, Double(date.milliseconds - now.milliseconds) / 1000)
    }

    /// The time an HTTP date names; nil when it is not one of the three forms.
    public static func httpDate(_ text: String, now: Timestamp) -> Timestamp? {
        let tokens = text.split(separator: " ")
        let day: Substring, month: Substring, year: Int, time: Substring
        switch tokens.count {
        case 6:  // Sun, 06 Nov 1994 08:49:37 GMT
            guard tokens[0].hasSuffix(","), tokens[5] == "GMT", tokens[1].count == 2, tokens[3].count == 4, let y = number(tokens[3]) else {
                return nil
            }
            (day, month, year, time) = (tokens[1], tokens[2], y, tokens[4])
        case 4:  // Sunday, 06-Nov-94 08:49:37 GMT
            let parts = tokens[1].split(separator: "-", omittingEmptySubsequences: false)
            guard tokens[0].hasSuffix(","), tokens[3] == "GMT", parts.count == 3, parts[0].count == 2, parts[2].count == 2,
                let yy = number(parts[2])
            else { return nil }
            // Two-digit year: this century, unless that is more than 50 years ahead.
            let currentYear = Int(now.rfc3339.prefix(4)) ?? 2000
            var y = currentYear - currentYear % 100 + yy
            if y > currentYear + 50 { y -= 100 }
            (day, month, year, time) = (parts[0], parts[1], y, tokens[2])
        case 5:  // Sun Nov  6 08:49:37 1994
            guard !tokens[0].hasSuffix(","), (1...2).contains(tokens[2].count), tokens[4].count == 4, let y = number(tokens[4]) else {
                return nil
            }
            (day, month, year, time) = (tokens[2], tokens[1], y, tokens[3])
        default:
            return nil
        }
        guard tokens[0].dropLast(tokens[0].hasSuffix(",") ? 1 : 0).allSatisfy({ $0.isASCII && $0.isLetter }),
            let monthNumber = months.firstIndex(of: month.lowercased()).map({ $0 + 1 }),
            let dayNumber = number(day), time.count == 8
        else { return nil }
        // Timestamp's RFC 3339 parser checks the ranges (day of month, hour, …).
        return Timestamp(rfc3339: "\(pad(year, 4))-\(pad(monthNumber, 2))-\(pad(dayNumber, 2))T\(time)Z")
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// ASCII digits only (no sign), as a number.
    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension String {
    fileprivate var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...last]
    }
}
