import Testing

@testable import AlertdWire

/// One input the parser must reject, with a substring of the expected reason.
struct RejectedInput: Sendable, CustomTestStringConvertible {
    let bytes: [UInt8]
    let reason: String
    let offset: Int?
    let label: String

    init(_ text: String, _ reason: String, at offset: Int? = nil) {
        self.bytes = Array(text.utf8)
        self.reason = reason
        self.offset = offset
        self.label = text.debugDescription
    }

    init(bytes: [UInt8], _ reason: String, at offset: Int? = nil) {
        self.bytes = bytes
        self.reason = reason
        self.offset = offset
        self.label = bytes.map { String($0, radix: 16, uppercase: true) }.joined(separator: " ")
    }

    var testDescription: String { "\(label) → \(reason)" }
}

private func parseError(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONParseError? {
    do {
        _ = try JSONParser.parse(bytes, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}

private func expectRejected(_ input: RejectedInput, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let error = parseError(input.bytes) else {
        Issue.record("accepted \(input.label)", sourceLocation: sourceLocation)
        return
    }
    #expect(error.reason.contains(input.reason), "got \(error)", sourceLocation: sourceLocation)
    if let offset = input.offset {
        #expect(error.offset == offset, "got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("The parser rejects what RFC 8259 does not allow")
struct ParserRejectionTests {
    @Test(
        "Empty input, a byte order mark and trailing characters are rejected",
        arguments: [
            RejectedInput("", "empty input", at: 0),
            RejectedInput(" \n\t\r ", "empty input", at: 5),
            RejectedInput("\u{FEFF}{}", "byte order mark", at: 0),
            RejectedInput("\u{FEFF}", "byte order mark", at: 0),
            RejectedInput("1 2", "trailing characters", at: 2),
            RejectedInput("{}x", "trailing characters", at: 2),
            RejectedInput("[1] // comment", "trailing characters", at: 4),
            RejectedInput("null\0", "trailing characters", at: 4),
            RejectedInput("\"a\" \"b\"", "trailing characters", at: 4),
        ])
    func documentLevel(_ input: RejectedInput) {
        expectRejected(input)
    }

    @Test(
        "Numbers outside the RFC grammar are rejected",
        arguments: [
            RejectedInput("01", "leading zero", at: 0),
            RejectedInput("-01", "leading zero", at: 1),
            RejectedInput("[00]", "leading zero", at: 1),
            RejectedInput("+1", "unexpected character '+'", at: 0),
            RejectedInput(".5", "unexpected character '.'", at: 0),
            RejectedInput("1.", "expected a digit after '.'", at: 2),
            RejectedInput("1.e5", "expected a digit after '.'", at: 2),
            RejectedInput("1e", "exponent", at: 2),
            RejectedInput("1E+", "exponent", at: 3),
            RejectedInput("1e-x", "exponent", at: 3),
            RejectedInput("-", "invalid number", at: 1),
            RejectedInput("-a", "invalid number", at: 1),
            RejectedInput("- 1", "invalid number", at: 1),
            RejectedInput("NaN", "unexpected character 'N'", at: 0),
            RejectedInput("Infinity", "unexpected character 'I'", at: 0),
            RejectedInput("-Infinity", "invalid number", at: 1),
            RejectedInput("0x10", "trailing characters", at: 1),
            RejectedInput("1_000", "trailing characters", at: 1),
            RejectedInput("[1.5.5]", "expected ',' or ']'", at: 4),
        ])
    func numbers(_ input: RejectedInput) {
        expectRejected(input)
    }

    @Test(
        "Structural mistakes, comments and single quotes are rejected",
        arguments: [
            RejectedInput("[1,]", "trailing comma", at: 3),
            RejectedInput("[1, ]", "trailing comma", at: 4),
            RejectedInput(#"{"a":1,}"#, "trailing comma", at: 7),
            RejectedInput("[,1]", "unexpected character ','", at: 1),
            RejectedInput("[1,,2]", "unexpected character ','", at: 3),
            RejectedInput("[1 2]", "expected ',' or ']'", at: 3),
            RejectedInput(#"{"a":1 "b":2}"#, "expected ',' or '}'", at: 7),
            RejectedInput(#"{"a" 1}"#, "expected ':'", at: 5),
            RejectedInput(#"{"a":}"#, "expected a value", at: 5),
            RejectedInput("{,}", "expected a string key", at: 1),
            RejectedInput("{a:1}", "expected a string key", at: 1),
            RejectedInput("{'a':1}", "expected a string key", at: 1),
            RejectedInput("{1:1}", "expected a string key", at: 1),
            RejectedInput("'a'", "unexpected character '''", at: 0),
            RejectedInput("// comment\n1", "unexpected character '/'", at: 0),
            RejectedInput("/* comment */ 1", "unexpected character '/'", at: 0),
            RejectedInput("[1 /* comment */]", "expected ',' or ']'", at: 3),
            RejectedInput("[1]]", "trailing characters", at: 3),
            RejectedInput("]", "unexpected character ']'", at: 0),
            RejectedInput("[}", "unexpected character '}'", at: 1),
            RejectedInput(#"{"a":1]"#, "expected ',' or '}'", at: 6),
            RejectedInput("[", "unexpected end of input", at: 1),
            RejectedInput("[1", "unexpected end of input", at: 2),
            RejectedInput("[1,", "unexpected end of input", at: 3),
            RejectedInput("{", "unexpected end of input", at: 1),
            RejectedInput(#"{"a""#, "unexpected end of input", at: 4),
            RejectedInput(#"{"a":"#, "unexpected end of input", at: 5),
            RejectedInput(#"{"a":1"#, "unexpected end of input", at: 6),
            RejectedInput("tru", "invalid literal", at: 0),
            RejectedInput("nul", "invalid literal", at: 0),
            RejectedInput("falsy", "invalid literal", at: 0),
            RejectedInput("True", "unexpected character 'T'", at: 0),
            RejectedInput("undefined", "unexpected character 'u'", at: 0),
            RejectedInput("\u{1}", "unexpected byte 0x1", at: 0),
            RejectedInput("[\u{A0}1]", "unexpected character", at: 1),
            RejectedInput("\u{000C}1", "unexpected byte 0xC", at: 0),
        ])
    func structure(_ input: RejectedInput) {
        expectRejected(input)
    }

    @Test(
        "Bad strings, escapes and lone surrogate escapes are rejected",
        arguments: [
            RejectedInput(#""abc"#, "unterminated string", at: 0),
            RejectedInput(#"["a\"]"#, "unterminated string", at: 1),
            RejectedInput(#""a\"#, "unterminated string", at: 2),
            RejectedInput(#""\x""#, "invalid escape", at: 1),
            RejectedInput(#""\'""#, "invalid escape", at: 1),
            RejectedInput(#""\U0041""#, "invalid escape", at: 1),
            RejectedInput(#""ok\ ""#, "invalid escape", at: 3),
            RejectedInput(#""\u12""#, "invalid \\u escape", at: 1),
            RejectedInput(#""\u12G4""#, "invalid \\u escape", at: 1),
            RejectedInput(#""\u""#, "invalid \\u escape", at: 1),
            RejectedInput(#""\ud800""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\uDBFF""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\udc00""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\ud800x""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\ud800\u0041""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\ud800\ud800""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\udc00\ud800""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\ud800\n""#, "unpaired surrogate", at: 1),
            RejectedInput(#""\ud800\u12""#, "invalid \\u escape", at: 7),
            RejectedInput("\"a\tb\"", "unescaped control character", at: 2),
            RejectedInput("\"a\nb\"", "unescaped control character", at: 2),
            RejectedInput("\"\r\"", "unescaped control character", at: 1),
            RejectedInput("\"\0\"", "unescaped control character", at: 1),
            RejectedInput("\"\u{1F}\"", "unescaped control character", at: 1),
            RejectedInput("\"\\n\u{1F}\"", "unescaped control character", at: 3),
            RejectedInput("{\"a\u{0}\":1}", "unescaped control character", at: 3),
        ])
    func strings(_ input: RejectedInput) {
        expectRejected(input)
    }

    @Test(
        "Invalid UTF-8 is rejected anywhere",
        arguments: [
            RejectedInput(bytes: [0x22, 0xFF, 0x22], "invalid UTF-8", at: 1),
            RejectedInput(bytes: [0x22, 0x80, 0x22], "invalid UTF-8", at: 1),  // lone continuation
            RejectedInput(bytes: [0x22, 0xC0, 0xAF, 0x22], "invalid UTF-8", at: 1),  // overlong "/"
            RejectedInput(bytes: [0x22, 0xC1, 0xBF, 0x22], "invalid UTF-8", at: 1),  // overlong
            RejectedInput(bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22], "invalid UTF-8", at: 1),  // overlong 3-byte
            RejectedInput(bytes: [0x22, 0xE0, 0x9F, 0xBF, 0x22], "invalid UTF-8", at: 1),  // overlong U+07FF
            RejectedInput(bytes: [0x22, 0xF0, 0x80, 0x80, 0xAF, 0x22], "invalid UTF-8", at: 1),  // overlong 4-byte
            RejectedInput(bytes: [0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22], "invalid UTF-8", at: 1),  // overlong U+FFFF
            RejectedInput(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], "invalid UTF-8", at: 1),  // U+D800 encoded
            RejectedInput(bytes: [0x22, 0xED, 0xBF, 0xBF, 0x22], "invalid UTF-8", at: 1),  // U+DFFF encoded
            RejectedInput(bytes: [0x22, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80, 0x22], "invalid UTF-8", at: 1),  // CESU-8
            RejectedInput(bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], "invalid UTF-8", at: 1),  // U+110000
            RejectedInput(bytes: [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], "invalid UTF-8", at: 1),
            RejectedInput(bytes: [0x22, 0xF8, 0x88, 0x80, 0x80, 0x80, 0x22], "invalid UTF-8", at: 1),
            RejectedInput(bytes: [0x22, 0xFE, 0x22], "invalid UTF-8", at: 1),
            RejectedInput(bytes: [0x22, 0xE2, 0x82, 0x22], "invalid UTF-8", at: 1),  // truncated €
            RejectedInput(bytes: [0x22, 0xE2, 0x82], "invalid UTF-8", at: 1),  // truncated at the end
            RejectedInput(bytes: [0x22, 0xF0, 0x9F, 0x98, 0x22], "invalid UTF-8", at: 1),  // truncated 😀
            RejectedInput(bytes: [0x22, 0xC3, 0x41, 0x22], "invalid UTF-8", at: 1),  // bad continuation
            RejectedInput(bytes: [0x22, 0x5C, 0x6E, 0xFF, 0x22], "invalid UTF-8", at: 3),  // after an escape
            RejectedInput(bytes: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], "invalid UTF-8", at: 2),  // in a key
            RejectedInput(bytes: [0xFF], "invalid UTF-8", at: 0),
            RejectedInput(bytes: [0x5B, 0x31, 0x2C, 0xC3], "invalid UTF-8", at: 3),
            RejectedInput(bytes: [0x31, 0x20, 0xED, 0xA0, 0x80], "trailing characters", at: 2),
            RejectedInput(bytes: [0xFE, 0xFF, 0x00, 0x5B, 0x00, 0x5D], "invalid UTF-8", at: 0),  // UTF-16 BOM
        ])
    func invalidUTF8(_ input: RejectedInput) {
        expectRejected(input)
    }

    @Test(
        "A repeated key in one object is rejected with its name",
        arguments: [
            RejectedInput(#"{"title":"a","title":"b"}"#, #"duplicate key "title""#, at: 13),
            RejectedInput(#"{"a":1,"b":2,"a":3}"#, #"duplicate key "a""#, at: 13),
            RejectedInput(#"{"x":{"k":1,"k":2}}"#, #"duplicate key "k""#, at: 12),
            RejectedInput(#"{"a\u0062":1,"ab":2}"#, #"duplicate key "ab""#, at: 13),
            RejectedInput(#"[{"a":1},{"b":1,"b":1}]"#, #"duplicate key "b""#, at: 16),
        ])
    func duplicateKeys(_ input: RejectedInput) {
        expectRejected(input)
    }

    @Test("The same key in sibling or nested objects is not a duplicate")
    func keysInDifferentObjects() throws {
        let value = try JSONParser.parse(#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#)
        #expect(value["a"]?["a"] == 1)
        #expect(value["b"]?.arrayValue?.count == 2)
    }

    @Test("A duplicate key is found in an object large enough to be indexed")
    func duplicateInLargeObject() {
        var text = "{"
        for i in 0..<40 { text += "\"k\(i)\":\(i)," }
        text += "\"k37\":0}"
        let error = parseError(Array(text.utf8))
        #expect(error?.reason == #"duplicate key "k37""#)
        #expect(error?.offset == text.utf8.count - 8)
    }

    @Test("A very long duplicate key is shortened in the reason")
    func longDuplicateKey() throws {
        let key = String(repeating: "k", count: 1000)
        let error = try #require(parseError(Array(#"{"\#(key)":1,"\#(key)":2}"#.utf8)))
        #expect(error.reason.hasPrefix("duplicate key \"kkkk"))
        #expect(error.reason.count < 100)
    }
}

@Suite("Nesting is bounded without recursion")
struct ParserDepthTests {
    @Test("Nesting up to maxDepth is accepted and one level more is rejected")
    func depthLimit() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        let error = parseError(Array(deep.utf8))
        #expect(error == JSONParseError(offset: 64, reason: "nesting deeper than 64"))
    }

    @Test("Objects count toward the depth like arrays")
    func objectDepth() {
        let deep = String(repeating: #"{"a":["#, count: 33) + "1" + String(repeating: "]}", count: 33)
        let error = parseError(Array(deep.utf8))
        #expect(error?.reason == "nesting deeper than 64")
        #expect(error?.offset == 32 * 6)
    }

    @Test("A 100 000-deep array returns an error instead of crashing")
    func hostileNesting() {
        let open = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(parseError(open)?.reason == "nesting deeper than 64")
        let balanced = open + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(parseError(balanced)?.offset == 64)
        let objects = Array(String(repeating: #"{"a":"#, count: 100_000).utf8)
        #expect(parseError(objects)?.reason == "nesting deeper than 64")
    }

    @Test("A deep unterminated input is parsed iteratively when maxDepth allows it")
    func iterativeParsing() {
        // Far deeper than a recursive parser's stack would allow; no value is built.
        let open = [UInt8](repeating: UInt8(ascii: "["), count: 200_000)
        #expect(parseError(open, maxDepth: 1_000_000)?.reason.contains("unexpected end of input") == true)
    }

    @Test("maxDepth is configurable, and zero allows only scalars", arguments: [0, 1, 2, 5])
    func customDepth(maxDepth: Int) {
        #expect(parseError(Array("7".utf8), maxDepth: maxDepth) == nil)
        for depth in 1...maxDepth + 1 {
            let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let error = parseError(Array(text.utf8), maxDepth: maxDepth)
            if depth <= maxDepth {
                #expect(error == nil)
            } else {
                #expect(error == JSONParseError(offset: maxDepth, reason: "nesting deeper than \(maxDepth)"))
            }
        }
    }
}

@Suite("The parser accepts every valid corner case")
struct ParserAcceptanceTests {
    @Test(
        "Escapes decode to the right scalars",
        arguments: [
            (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
            (#""\u0041\u00e9\u20AC""#, "Aé€"),
            (#""\ud83d\ude00""#, "😀"),
            (#""\uD834\uDD1E""#, "𝄞"),
            (#""\uDBFF\uDFFF""#, "\u{10FFFF}"),
            (#""\u0000""#, "\u{0}"),
            (#""\u001f\u007F""#, "\u{1F}\u{7F}"),
            (#""\uFEFF\uFFFF""#, "\u{FEFF}\u{FFFF}"),
            (#""a\nb""#, "a\nb"),
            ("\"é\\n😀 x\"", "é\n😀 x"),
            ("\"héllo wörld 😀 中文\"", "héllo wörld 😀 中文"),
            ("\"\u{7F}\"", "\u{7F}"),
            ("\"\u{10FFFF}\"", "\u{10FFFF}"),
            ("\"e\u{301}\"", "e\u{301}"),
            (#""""#, ""),
            (#"" ""#, " "),
            (#""/""#, "/"),
        ] as [(String, String)])
    func strings(json: String, expected: String) throws {
        let value = try JSONParser.parse(json)
        #expect(value == .string(expected))
        #expect(Array(value.stringValue!.unicodeScalars) == Array(expected.unicodeScalars))
    }

    @Test(
        "Numbers keep their literal and read back",
        arguments: [
            ("0", 0.0),
            ("-0", -0.0),
            ("1E+2", 100),
            ("1e-2", 0.01),
            ("-1.50e3", -1500),
            ("0.5", 0.5),
            ("-0.0e-0", -0.0),
            ("123456789012345678901234567890", 1.2345678901234568e29),
            ("1.7976931348623157e308", 1.7976931348623157e308),
            ("5e-324", .leastNonzeroMagnitude),
            ("1e400", .infinity),
            ("-1e400", -.infinity),
            ("1e-400", 0),
            ("2.5E007", 2.5e7),
        ] as [(String, Double)])
    func numbers(literal: String, expected: Double) throws {
        let value = try JSONParser.parse(literal)
        let number = try #require(value.numberValue)
        #expect(number.literal == literal)
        #expect(number.double == expected)
        #expect(number.double.sign == expected.sign)
    }

    @Test(
        "Scalars, empty containers and whitespace parse",
        arguments: [
            ("true", JSONValue.bool(true)),
            ("false", .bool(false)),
            ("null", .null),
            (" \t\r\n null \t\r\n", .null),
            ("{}", .object(JSONObject())),
            ("{ \n }", .object(JSONObject())),
            ("[]", .array([])),
            ("[ \t ]", .array([])),
            ("[[],{},[[]]]", [[], [:], [[]]]),
            (#" { "a" : [ 1 , "x" , null , true ] } "#, ["a": [1, "x", .null, true]]),
        ] as [(String, JSONValue)])
    func scalarsAndContainers(json: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(json) == expected)
    }

    @Test("Input can come from an unsafe buffer, a byte array or a string")
    func inputKinds() throws {
        let text = #"{"a":[1,2]}"#
        let bytes = Array(text.utf8)
        let fromBuffer = try bytes.withUnsafeBytes { try JSONParser.parse($0) }
        let fromArray = try JSONParser.parse(bytes)
        let fromString = try JSONParser.parse(text)
        #expect(fromBuffer == fromArray)
        #expect(fromBuffer == fromString)
        // A slice of a larger buffer is parsed on its own.
        let framed = Array("xx\(text)yy".utf8)
        let slice = try framed.withUnsafeBytes { raw in
            try JSONParser.parse(UnsafeRawBufferPointer(rebasing: raw[2..<(2 + bytes.count)]))
        }
        #expect(slice == fromBuffer)
        #expect(throws: JSONParseError(offset: 0, reason: "empty input")) {
            try JSONParser.parse(UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    @Test("Object members keep their input order")
    func memberOrder() throws {
        let value = try JSONParser.parse(#"{"zeta":1,"alpha":2,"mid":3,"beta":{"y":1,"x":2}}"#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["zeta", "alpha", "mid", "beta"])
        #expect(object.map { $0.key } == ["zeta", "alpha", "mid", "beta"])
        #expect(object["beta"]?.objectValue?.keys == ["y", "x"])
        #expect(object["mid"] == 3)
        #expect(object["missing"] == nil)
        #expect(object.count == 4)
    }

    @Test("Large objects keep order and answer lookups")
    func largeObject() throws {
        let keys = (0..<100).map { "key\(99 - $0)" }
        let text = "{" + keys.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}"
        let object = try #require(try JSONParser.parse(text).objectValue)
        #expect(object.keys == keys)
        for (i, key) in keys.enumerated() {
            #expect(object[key]?.numberValue?.int == i)
        }
    }

    @Test("Parse errors describe the reason and the offset")
    func errorDescription() {
        let error = parseError(Array("[1,]".utf8))
        #expect(error?.description == "trailing comma at byte 3")
    }
}

@Suite("JSONNumber")
struct JSONNumberTests {
    @Test(
        "int is exact: integers only, no fraction, no exponent, no overflow",
        arguments: [
            ("5", 5), ("-5", -5), ("0", 0), ("-0", 0),
            ("5.0", nil), ("1e2", nil), ("1E2", nil), ("0.5", nil),
            ("9223372036854775807", Int.max), ("-9223372036854775808", Int.min),
            ("9223372036854775808", nil), ("-9223372036854775809", nil),
            ("123456789012345678901234567890", nil),
        ] as [(String, Int?)])
    func intIsExact(literal: String, expected: Int?) throws {
        let number = try #require(JSONNumber(literal: literal))
        #expect(number.int == expected)
    }

    @Test(
        "wholeInt is any whole number that fits, however it is written",
        arguments: [
            ("5", 5), ("5.0", 5), ("5e0", 5), ("500e-2", 5), ("0.5e1", 5), ("1E2", 100), ("-1.0e2", -100), ("0.000", 0),
            ("-0.0e5", 0), ("5.5", nil), ("1e-1", nil), ("0.001", nil), ("1.5e0", nil),
            ("9223372036854775807.0", Int.max), ("-9223372036854775808e0", Int.min),
            ("9223372036854775808.0", nil), ("-9.223372036854775809e18", nil), ("1e19", nil), ("1e2000", nil),
            ("123.456e789", nil),
        ] as [(String, Int?)])
    func wholeInt(literal: String, expected: Int?) throws {
        let number = try #require(JSONNumber(literal: literal))
        #expect(number.wholeInt == expected)
    }

    @Test(
        "isWhole holds for whole numbers of any size and no others",
        arguments: [
            ("5", true), ("5.0", true), ("1e400", true), ("1e2000", true), ("123.456e789", true), ("12.5e1", true),
            ("5.5", false), ("1e-400", false), ("1.5", false), ("0.0001", false),
        ] as [(String, Bool)])
    func isWhole(literal: String, expected: Bool) throws {
        #expect(try #require(JSONNumber(literal: literal)).isWhole == expected)
    }

    @Test(
        "init(literal:) accepts only the RFC grammar",
        arguments: ["0", "-0", "1", "-1.50e3", "1E+2", "1e-2", "0.000", "10", "123.456e789"])
    func validLiterals(literal: String) {
        #expect(JSONNumber(literal: literal)?.literal == literal)
    }

    @Test(
        "init(literal:) rejects anything else",
        arguments: [
            "", "-", "01", "+1", ".5", "1.", "1e", "1e+", "NaN", "inf", "-Infinity", " 1", "1 ", "1x", "0x1", "1,5",
        ])
    func invalidLiterals(literal: String) {
        #expect(JSONNumber(literal: literal) == nil)
    }

    @Test(
        "Doubles are written as the shortest text that reads back",
        arguments: [
            (0.1, "0.1"), (1.0, "1.0"), (-0.0, "-0.0"), (1e16, "1e+16"), (1e-5, "1e-05"),
            (123.456, "123.456"), (.leastNonzeroMagnitude, "5e-324"),
            (.greatestFiniteMagnitude, "1.7976931348623157e+308"),
        ] as [(Double, String)])
    func doubles(value: Double, literal: String) throws {
        let number = JSONNumber(value)
        #expect(number.literal == literal)
        #expect(number.double == value)
        // The literal is valid JSON.
        #expect(JSONNumber(literal: number.literal) != nil)
    }

    @Test("Integers are written in decimal", arguments: [0, 7, -7, Int.max, Int.min])
    func integers(value: Int) {
        let number = JSONNumber(value)
        #expect(number.literal == String(value))
        #expect(number.int == value)
        #expect(number.description == String(value))
    }

    @Test(
        "Numbers are equal when their values are, whatever the spelling",
        arguments: [
            ("1500", "1.5e3"), ("1500", "15E2"), ("1500", "1500.000"), ("-0", "0"), ("0", "0.0e10"),
            ("0.1", "1e-1"), ("0.10", "0.1"), ("100", "1e2"), ("0.05", "5e-2"), ("-2.5", "-25e-1"),
            ("1e99999999999999999999999", "1e99999999999999999999999"),
        ])
    func equalValues(a: String, b: String) throws {
        let x = try #require(JSONNumber(literal: a))
        let y = try #require(JSONNumber(literal: b))
        #expect(x == y)
        #expect(x.hashValue == y.hashValue)
        #expect(JSONValue.number(x) == JSONValue.number(y))
    }

    @Test(
        "Numbers with different values differ",
        arguments: [
            ("1", "2"), ("1", "-1"), ("10", "1"), ("0.1", "0.01"), ("1e2", "1e3"), ("150", "1500"),
            ("9007199254740993", "9007199254740992"), ("1e99999999999999999999999", "1e99999999999999999999998"),
        ])
    func differentValues(a: String, b: String) throws {
        #expect(try #require(JSONNumber(literal: a)) != (try #require(JSONNumber(literal: b))))
    }
}

@Suite("JSONObject")
struct JSONObjectTests {
    @Test("Equality ignores member order; iteration does not")
    func orderInsensitiveEquality() {
        let a: JSONObject = ["a": 1, "b": [true, .null], "c": "x"]
        let b: JSONObject = ["c": "x", "a": 1, "b": [true, .null]]
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a.keys != b.keys)
        #expect(Set([JSONValue.object(a), .object(b)]).count == 1)
        let c: JSONObject = ["a": 1, "b": [true, .null], "c": "y"]
        #expect(a != c)
        let d: JSONObject = ["a": 1, "b": [true, .null]]
        #expect(a != d)
    }

    @Test("A repeated key in init keeps the first position and the last value")
    func initWithRepeatedKey() {
        let object = JSONObject([(key: "a", value: 1), (key: "b", value: 2), (key: "a", value: 3)])
        #expect(object.keys == ["a", "b"])
        #expect(object["a"] == 3)
        #expect(object.count == 2)
    }

    @Test("Setting members replaces in place, appends, or removes")
    func mutation() {
        var object: JSONObject = ["a": 1, "b": 2]
        object["a"] = "one"
        object["c"] = 3
        object["b"] = nil
        #expect(object.keys == ["a", "c"])
        #expect(object["a"] == "one")
        for i in 0..<30 { object["k\(i)"] = .number(JSONNumber(i)) }
        #expect(object.count == 32)
        #expect(object["k29"] == 29)
        for i in 0..<25 { object["k\(i)"] = nil }
        #expect(object.keys == ["a", "c", "k25", "k26", "k27", "k28", "k29"])
        #expect(object["k27"] == 27)
        #expect(object["k3"] == nil)
    }

    @Test("Values answer member lookups and typed views")
    func accessors() throws {
        let value = try JSONParser.parse(#"{"s":"x","n":2,"b":false,"a":[1],"o":{},"z":null}"#)
        #expect(value["s"]?.stringValue == "x")
        #expect(value["n"]?.numberValue?.int == 2)
        #expect(value["b"]?.boolValue == false)
        #expect(value["a"]?.arrayValue == [1])
        #expect(value["o"]?.objectValue?.isEmpty == true)
        #expect(value["z"]?.isNull == true)
        #expect(value["s"]?.numberValue == nil)
        #expect(value["s"]?["x"] == nil)
    }
}
