// RFC 8785 (JSON Canonicalization Scheme) against the RFC's own examples: §3.2.2's sample,
// §3.2.3's ordering of names by UTF-16 code units, and Appendix B's numbers. A verifier in
// another language hashes these bytes: only a byte-for-byte agreement with the published
// values says it will get the same hash.

import AlertdWire
import Foundation
import Testing

@testable import AlertdReceipts

private func canonical(_ text: String) throws -> String {
    String(decoding: try JCS.canonicalize(try JSONParser.parse(text)), as: UTF8.self)
}

@Suite("JCS (RFC 8785)")
struct JCSTests {
    @Test("§3.2.2's sample canonicalizes to the RFC's output")
    func rfcSample() throws {
        let input = #"""
            {
              "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
              "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
              "literals": [null, true, false]
            }
            """#
        let expected =
            #"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        #expect(try canonical(input) == expected)
    }

    @Test("§3.2.3: names are sorted by their UTF-16 code units, not by scalars or UTF-8")
    func rfcOrdering() throws {
        let input = #"""
            {
              "\u20ac": "Euro Sign",
              "\r": "Carriage Return",
              "\ufb33": "Hebrew Letter Dalet With Dagesh",
              "1": "One",
              "\ud83d\ude00": "Emoji: Grinning Face",
              "\u0080": "Control",
              "\u00f6": "Latin Small Letter O With Diaeresis"
            }
            """#
        // The RFC's order: the emoji (a surrogate pair, 0xD83D…) sorts before U+FB33 by UTF-16,
        // after it by scalar value or by UTF-8.
        let names = ["\r", "1", "\u{80}", "\u{F6}", "\u{20AC}", "\u{1F600}", "\u{FB33}"]
        let output = try canonical(input)
        let object = try #require(try JSONParser.parse(output).objectValue)
        #expect(object.keys == names)
        // The RFC's bytes (§3.2.3, shown there in hex).
        let hex = """
            7b 22 5c 72 22 3a 22 43 61 72 72 69 61 67 65 20 52 65 74 75 72 6e 22 2c 22 31 22 3a 22 4f 6e 65 22 2c 22 c2 80 22 3a
            22 43 6f 6e 74 72 6f 6c 22 2c 22 c3 b6 22 3a 22 4c 61 74 69 6e 20 53 6d 61 6c 6c 20 4c 65 74 74 65 72 20 4f 20 57 69
            74 68 20 44 69 61 65 72 65 73 69 73 22 2c 22 e2 82 ac 22 3a 22 45 75 72 6f 20 53 69 67 6e 22 2c 22 f0 9f 98 80 22 3a
            22 45 6d 6f 6a 69 3a 20 47 72 69 6e 6e 69 6e 67 20 46 61 63 65 22 2c 22 ef ac b3 22 3a 22 48 65 62 72 65 77 20 4c 65
            74 74 65 72 20 44 61 6c 65 74 20 57 69 74 68 20 44 61 67 65 73 68 22 7d
            """
        let bytes = hex.split(whereSeparator: \.isWhitespace).map { UInt8($0, radix: 16)! }
        #expect(Array(output.utf8) == bytes)
    }

    // Appendix B: IEEE 754 doubles (as hex) and ECMAScript's text for them.
    static let appendixB: [(String, String)] = [
        ("0000000000000000", "0"), ("8000000000000000", "0"), ("0000000000000001", "5e-324"), ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"), ("ffefffffffffffff", "-1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"), ("c340000000000000", "-9007199254740992"),
        ("4430000000000000", "295147905179352830000"), ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"), ("44b52d02c7e14af7", "1.0000000000000001e+23"),
        ("444b1ae4d6e2ef4e", "999999999999999700000"), ("444b1ae4d6e2ef4f", "999999999999999900000"),
        ("444b1ae4d6e2ef50", "1e+21"), ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
        ("41b3de4355555557", "333333333.33333343"), ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ]

    @Test("Appendix B: every double is written as ECMAScript writes it", arguments: appendixB)
    func appendixBNumbers(bits: String, expected: String) throws {
        let value = Double(bitPattern: try #require(UInt64(bits, radix: 16)))
        #expect(JCS.serialize(value) == expected)
        // And through a JSON literal: the literal is read as that double first.
        let literal = try #require(JSONNumber(literal: value.description == "-0.0" ? "-0" : "\(value)"))
        #expect(String(decoding: try JCS.canonicalize(.number(literal)), as: UTF8.self) == expected)
    }

    @Test("numbers are the double a literal denotes: 1.0, 1e0 and 10e-1 are one number")
    func literalsOfOneNumber() throws {
        #expect(try canonical("[1.0, 1e0, 10e-1, 1.000000000000000000001, -0.0, 100, 1E2, 0.1e3]") == "[1,1,1,1,0,100,100,100]")
        #expect(try canonical("[1e20, 1e21, 123e-9, 0.000001, 0.0000001]") == "[100000000000000000000,1e+21,1.23e-7,0.000001,1e-7]")
    }

    @Test("a number beyond the double range is refused, not written as Infinity")
    func outOfRange() throws {
        #expect(throws: JCSError.numberOutOfRange) { try JCS.canonicalize(try JSONParser.parse("[1e400]")) }
        #expect(throws: JCSError.numberOutOfRange) { try JCS.canonicalize(try JSONParser.parse("-1e999")) }
        // Underflow is a number: the nearest double is 0.
        #expect(try canonical("1e-400") == "0")
    }

    @Test("strings escape only quote, backslash and controls; controls in lowercase hex")
    func strings() throws {
        let input = #"["\u0000\u001F\u007f", "\b\f\n\r\t", "\u2028\u2029/", "é\u00e9", "<>&'"]"#
        #expect(try canonical(input) == "[\"\\u0000\\u001f\u{7F}\",\"\\b\\f\\n\\r\\t\",\"\u{2028}\u{2029}/\",\"éé\",\"<>&'\"]")
    }

    @Test("arrays keep their order; objects at every depth are sorted; no whitespace")
    func nesting() throws {
        let input = #" { "b" : [ { "z" : 1 , "a" : [ 3 , 2 ] } , "x" ] , "a" : { "d" : { } , "c" : [ ] } } "#
        #expect(try canonical(input) == #"{"a":{"c":[],"d":{}},"b":[{"a":[3,2],"z":1},"x"]}"#)
    }

    @Test("random doubles: the text reads back as the same double, and is never longer than Swift's shortest")
    func randomDoublesRoundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let value = Double(bitPattern: generator.next())
            guard value.isFinite else { continue }
            let text = JCS.serialize(value)
            #expect(Double(text) == value, "\(text) does not read back as \(value)")
            let digits = { (s: String) in
                s.split(separator: "e")[0].filter(\.isNumber).drop { $0 == "0" }.reversed().drop { $0 == "0" }.count
            }
            #expect(digits(text) == digits(value.description), "\(text) has other digits than \(value)")
        }
    }
}
