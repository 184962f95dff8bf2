import AlertdWire
import Testing

@Suite("Timestamps are written as RFC 3339 UTC with milliseconds")
struct TimestampFormatTests {
    @Test(
        "Known instants are written exactly",
        arguments: [
            (0, "1970-01-01T00:00:00.000Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (1_795_287_660_123, "2026-11-21T19:01:00.123Z"),
            (1_767_225_600_000, "2026-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (4_102_444_799_999, "2099-12-31T23:59:59.999Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (-1000, "1969-12-31T23:59:59.000Z"),
            (-86_400_000, "1969-12-31T00:00:00.000Z"),
            (-86_400_001, "1969-12-30T23:59:59.999Z"),
            (-2_203_845_903_211, "1900-03-01T12:34:56.789Z"),
        ] as [(Int64, String)])
    func format(milliseconds: Int64, text: String) {
        let time = Timestamp(milliseconds: milliseconds)
        #expect(time.rfc3339 == text)
        #expect(time.description == text)
        #expect(Timestamp(rfc3339: text) == time)
    }

    @Test("Formatting and parsing round-trip, before and after the epoch")
    func roundTrip() {
        var rng = SystemRandomNumberGenerator()
        var samples: [Int64] = [0, -1, 1, 999, -999, 86_399_999, -86_399_999, 253_402_300_799_999]
        for _ in 0..<1000 { samples.append(Int64.random(in: -2_208_988_800_000...4_102_444_800_000, using: &rng)) }
        for ms in samples {
            let text = Timestamp(milliseconds: ms).rfc3339
            #expect(text.utf8.count == 24, "\(ms) → \(text)")
            #expect(Timestamp(rfc3339: text)?.milliseconds == ms, "\(ms) → \(text)")
        }
    }

    @Test("Adding seconds keeps milliseconds")
    func adding() {
        let time = Timestamp(milliseconds: 1000)
        #expect(time.adding(seconds: 0.25).milliseconds == 1250)
        #expect(time.adding(seconds: -1.5).milliseconds == -500)
        #expect(time.adding(seconds: 86_400).milliseconds == 86_401_000)
        #expect(time.adding(milliseconds: -1).milliseconds == 999)
    }
}

@Suite("Parsing RFC 3339")
struct TimestampParseTests {
    @Test(
        "Z, numeric offsets and short fractions are understood",
        arguments: [
            ("2026-11-21T19:01:00.123Z", 1_795_287_660_123),
            ("2026-11-21t19:01:00.123z", 1_795_287_660_123),
            ("2026-11-21T20:01:00.123+01:00", 1_795_287_660_123),
            ("2026-11-21T14:31:00.123-04:30", 1_795_287_660_123),
            ("2026-11-22T00:01:00.123+05:00", 1_795_287_660_123),
            ("2026-11-21T19:01:00.123+00:00", 1_795_287_660_123),
            ("2026-11-21T19:01:00.123-00:00", 1_795_287_660_123),
            ("2026-11-21T19:01:00Z", 1_795_287_660_000),
            ("2026-11-21T19:01:00.1Z", 1_795_287_660_100),
            ("2026-11-21T19:01:00.12Z", 1_795_287_660_120),
            ("2026-11-21T19:01:00.120Z", 1_795_287_660_120),
            ("1970-01-01T00:00:00Z", 0),
            ("1970-01-01T01:00:00+01:00", 0),
            ("1969-12-31T23:59:59.999Z", -1),
        ] as [(String, Int64)])
    func parse(text: String, milliseconds: Int64) {
        #expect(Timestamp(rfc3339: text)?.milliseconds == milliseconds)
    }

    @Test("Fractions longer than milliseconds are truncated to the millisecond, up to nine digits")
    func longFractions() {
        #expect(Timestamp(rfc3339: "2026-11-21T19:01:00.1239Z")?.milliseconds == 1_795_287_660_123)
        #expect(Timestamp(rfc3339: "2026-11-21T19:01:00.123456789Z")?.milliseconds == 1_795_287_660_123)
        #expect(Timestamp(rfc3339: "2026-11-21T20:01:00.999999+01:00")?.milliseconds == 1_795_287_660_999)
    }

    @Test(
        "Malformed text is rejected",
        arguments: [
            "", "2026-11-21", "2026-11-21T19:01:00", "2026-11-21T19:01:00.123", "2026-11-21 19:01:00Z",
            "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-32T00:00:00Z",
            "2026-11-21T24:00:00Z", "2026-11-21T19:60:00Z", "2026-11-21T19:01:00.Z", "2026-11-21T19:01:00.123Zx",
            "2026-11-21T19:01:00+0100", "2026-11-21T19:01:00+01", "2026-1-21T19:01:00Z", "x026-11-21T19:01:00Z",
            "2026-11-21T19:01:00.12a3Z", "+2026-11-21T19:01:00Z", "2026-11-21T19:01:00Z ",
        ])
    func malformed(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test(
        "Dates and offsets that do not exist are rejected",
        arguments: [
            "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
            "2026-11-21T19:01:00+01:60", "2026-11-21T19:01:00+24:00",
        ])
    func impossible(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test("A leap year's 29 February exists")
    func leapDay() {
        #expect(Timestamp(rfc3339: "2024-02-29T12:00:00Z")?.rfc3339 == "2024-02-29T12:00:00.000Z")
        #expect(Timestamp(rfc3339: "2000-02-29T00:00:00Z")?.milliseconds == 951_782_400_000)
    }
}
