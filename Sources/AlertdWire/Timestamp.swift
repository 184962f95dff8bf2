/// A point in time with millisecond precision: milliseconds since the Unix epoch, UTC.
///
/// alertd writes every time as RFC 3339 UTC with milliseconds,
/// `2026-11-21T19:01:00.123Z`.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    /// This time plus a number of seconds (fractions are kept to the millisecond).
    public func adding(seconds: Double) -> Timestamp {
        Timestamp(milliseconds: milliseconds + Int64((seconds * 1000).rounded()))
    }

    public func adding(milliseconds delta: Int64) -> Timestamp {
        Timestamp(milliseconds: milliseconds + delta)
    }

    public var description: String { rfc3339 }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    public var rfc3339: String { String(decoding: rfc3339Bytes, as: UTF8.self) }

    /// The 24 bytes of ``rfc3339``.
    public var rfc3339Bytes: [UInt8] {
        var ms = milliseconds
        let days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
        ms -= days * 86_400_000
        let (year, month, day) = Self.civil(fromDays: days)
        var out: [UInt8] = Array("0000-00-00T00:00:00.000Z".utf8)
        func put(_ value: Int64, at end: Int, width: Int) {
            var v = value
            for i in stride(from: end, to: end - width, by: -1) {
                out[i] = UInt8(48 + v % 10)
                v /= 10
            }
        }
        put(year, at: 3, width: 4)
        put(month, at: 6, width: 2)
        put(day, at: 9, width: 2)
        put(ms / 3_600_000, at: 12, width: 2)
        put(ms / 60_000 % 60, at: 15, width: 2)
        put(ms / 1000 % 60, at: 18, width: 2)
        put(ms % 1000, at: 22, width: 3)
        return out
    }

    /// Parses RFC 3339 with a `Z` or numeric offset and up to nine fraction digits.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, b[4] == 45, b[7] == 45, b[10] == 84 || b[10] == 116, b[13] == 58, b[16] == 58,
            let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2),
            let s = num(17, 2), (1...12).contains(mo), (1...Self.daysIn(month: mo, year: y)).contains(d), h < 24, mi < 60,
            s < 61
        else { return nil }
        var i = 19
        var fraction: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 3 { fraction = fraction * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 {
                for _ in digits..<3 { fraction *= 10 }
            }
        }
        guard i < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45, let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == 58,
            let om = num(i + 4, 2), oh < 24, om < 60
        {
            offsetMinutes = (oh * 60 + om) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Self.days(fromCivil: y, mo, d)
        milliseconds = ((days * 24 + h) * 60 + mi - offsetMinutes) * 60_000 + s * 1000 + fraction
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's civil-from-days algorithms.
    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
