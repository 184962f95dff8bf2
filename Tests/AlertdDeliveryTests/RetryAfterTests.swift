import AlertdDelivery
import AlertdWire
import Testing

/// Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example, minus 90 seconds.
private let before1994Example = Timestamp(rfc3339: "1994-11-06T08:48:07Z")!

@Suite("Retry-After is read in both of its forms")
struct RetryAfterTests {
    @Test("Delay seconds are read as they are", arguments: [("0", 0.0), ("1", 1), ("120", 120), ("  30 ", 30), ("86400", 86400)])
    func seconds(value: String, expected: Double) {
        #expect(RetryAfter.parse(value, now: eventTime) == expected)
    }

    @Test(
        "The three HTTP date forms name the same instant",
        arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "sun, 06 nov 1994 08:49:37 GMT",
        ]
    )
    func dates(value: String) {
        #expect(RetryAfter.parse(value, now: before1994Example) == 90)
        #expect(RetryAfter.httpDate(value, now: before1994Example) == Timestamp(rfc3339: "1994-11-06T08:49:37Z"))
    }

    @Test("A date in the past means now")
    func pastDate() {
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: eventTime) == 0)
    }

    @Test(
        "A two-digit year more than 50 years ahead belongs to the century before",
        arguments: [
            ("Friday, 01-Jan-27 00:00:00 GMT", "2027-01-01T00:00:00Z"), ("Monday, 01-Jan-76 00:00:00 GMT", "2076-01-01T00:00:00Z"),
            ("Tuesday, 01-Jan-80 00:00:00 GMT", "1980-01-01T00:00:00Z"), ("Monday, 01-Jan-00 00:00:00 GMT", "2000-01-01T00:00:00Z"),
        ]
    )
    func twoDigitYears(value: String, expected: String) {
        // eventTime is in 2026.
        #expect(RetryAfter.httpDate(value, now: eventTime) == Timestamp(rfc3339: expected))
    }

    @Test(
        "Anything else is not a Retry-After",
        arguments: [
            "", "soon", "-5", "+5", "1.5", "5s", "1e3",
            "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37", "Sun 06 Nov 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov +994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov  6 08:49:37 94", "2026-11-21T21:08:00Z",
        ]
    )
    func invalid(value: String) {
        #expect(RetryAfter.parse(value, now: eventTime) == nil)
    }
}
