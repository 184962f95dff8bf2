import Foundation
import Testing

@testable import AlertdWire

private func text(_ writer: JSONWriter) -> String {
    String(decoding: writer.bytes, as: UTF8.self)
}

@Suite("The writer escapes strings and formats scalars")
struct WriterScalarTests {
    @Test(
        "Strings escape quote, backslash and control characters only",
        arguments: [
            ("plain", #""plain""#),
            ("", #""""#),
            ("say \"hi\"", #""say \"hi\"""#),
            ("back\\slash", #""back\\slash""#),
            ("a/b", #""a/b""#),
            ("\n\t\r\u{8}\u{C}", #""\n\t\r\b\f""#),
            ("\u{0}\u{1}\u{1F}", #""\u0000\u0001\u001f""#),
            ("\u{7F}", "\"\u{7F}\""),
            ("héllo 😀 中文", "\"héllo 😀 中文\""),
            ("\u{2028}\u{2029}", "\"\u{2028}\u{2029}\""),
            ("end\\", #""end\\""#),
            ("\"", #""\"""#),
        ] as [(String, String)])
    func escaping(input: String, expected: String) throws {
        var w = JSONWriter()
        w.string(input)
        #expect(text(w) == expected)
        // Non-ASCII stays raw UTF-8.
        #expect(w.bytes == Array(expected.utf8))
        #expect(try JSONParser.parse(w.bytes) == .string(input))
    }

    @Test("Keys are escaped like strings, both static and dynamic")
    func keyEscaping() throws {
        var w = JSONWriter()
        w.beginObject()
        w.key("a\"b" as StaticString)
        w.int(1)
        w.key("tab\there" as String)
        w.int(2)
        w.key("é" as StaticString)
        w.int(3)
        w.endObject()
        #expect(text(w) == #"{"a\"b":1,"tab\there":2,"é":3}"#)
        #expect(try JSONParser.parse(w.bytes)["tab\there"] == 2)
    }

    @Test("Integers are written exactly", arguments: [0, 1, -1, 42, -1000, 1_000_000_007, Int.max, Int.min])
    func integers(value: Int) {
        var w = JSONWriter()
        w.int(value)
        #expect(text(w) == String(value))
        var w64 = JSONWriter()
        w64.int64(Int64(value))
        #expect(text(w64) == String(value))
    }

    @Test("Int64 extremes are written exactly")
    func int64Extremes() {
        var w = JSONWriter()
        w.beginArray()
        w.int64(.min)
        w.int64(.max)
        w.endArray()
        #expect(text(w) == "[-9223372036854775808,9223372036854775807]")
    }

    @Test(
        "Doubles are written as the shortest text that reads back",
        arguments: [
            0.1, 1.0, -0.0, 0, 1e16, 1e-7, 123.456, -2.5e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 1 / 3,
        ] as [Double])
    func doubles(value: Double) throws {
        var w = JSONWriter()
        w.double(value)
        #expect(text(w) == value.description)
        let number = try #require(try JSONParser.parse(w.bytes).numberValue)
        #expect(number.double == value)
        #expect(number.double.sign == value.sign)
    }

    @Test("Optional overloads write null for nil")
    func optionals() {
        var w = JSONWriter()
        w.beginArray()
        w.string(nil as String?)
        w.string("x" as String?)
        w.int(nil as Int?)
        w.int(3 as Int?)
        w.int64(nil as Int64?)
        w.int64(4 as Int64?)
        w.bool(nil as Bool?)
        w.bool(true as Bool?)
        w.double(nil as Double?)
        w.double(0.5 as Double?)
        w.endArray()
        #expect(text(w) == #"[null,"x",null,3,null,4,null,true,null,0.5]"#)
    }

    @Test("Numbers keep their literal when written")
    func numberLiterals() throws {
        let value = try JSONParser.parse("[-1.50e3,1E+2,-0,123456789012345678901234567890]")
        #expect(value.compactBytes() == Array("[-1.50e3,1E+2,-0,123456789012345678901234567890]".utf8))
        var w = JSONWriter()
        w.number(try #require(JSONNumber(literal: "2.50")))
        #expect(text(w) == "2.50")
    }
}

@Suite("The writer inserts commas and colons itself")
struct WriterStructureTests {
    @Test("Nested objects and arrays get commas only between siblings")
    func nested() throws {
        var w = JSONWriter()
        w.beginObject()
        w.key("id"); w.int(7)
        w.key("tags"); w.beginArray(); w.string("disk"); w.string("io"); w.endArray()
        w.key("empty"); w.beginObject(); w.endObject()
        w.key("none"); w.beginArray(); w.endArray()
        w.key("matrix")
        w.beginArray()
        w.beginArray(); w.int(1); w.int(2); w.endArray()
        w.beginArray(); w.endArray()
        w.beginArray(); w.beginObject(); w.key("x"); w.null(); w.endObject(); w.int(3); w.endArray()
        w.endArray()
        w.key("last"); w.bool(false)
        w.endObject()
        let expected =
            #"{"id":7,"tags":["disk","io"],"empty":{},"none":[],"matrix":[[1,2],[],[{"x":null},3]],"last":false}"#
        #expect(text(w) == expected)
        #expect(try JSONParser.parse(w.bytes) == JSONParser.parse(expected))
    }

    @Test("Top-level scalars and containers need no separators")
    func topLevel() {
        var a = JSONWriter()
        a.null()
        #expect(text(a) == "null")
        var b = JSONWriter()
        b.beginArray()
        b.endArray()
        #expect(text(b) == "[]")
    }

    @Test("Raw values are inserted as is, with commas around them")
    func raw() throws {
        let inner = JSONValue.object(["k": [1, 2]]).compactBytes()
        var w = JSONWriter()
        w.beginArray()
        w.raw(inner)
        w.raw(Array("true".utf8))
        w.beginObject()
        w.key("r"); w.raw(inner)
        w.key("s"); w.string("after")
        w.endObject()
        w.endArray()
        #expect(text(w) == #"[{"k":[1,2]},true,{"r":{"k":[1,2]},"s":"after"}]"#)
        #expect(throws: Never.self) { try JSONParser.parse(w.bytes) }
    }

    @Test("Nesting deeper than 64 levels keeps the comma logic")
    func deepNesting() throws {
        var w = JSONWriter()
        for _ in 0..<100 {
            w.beginArray()
            w.int(1)
        }
        for _ in 0..<100 {
            w.int(2)
            w.endArray()
        }
        let expected = "[1" + String(repeating: ",[1", count: 99) + String(repeating: ",2]", count: 100)
        #expect(text(w) == expected)
        #expect(throws: Never.self) { try JSONParser.parse(w.bytes, maxDepth: 100) }
    }

    @Test("value(_:) and compactBytes() write whole values with members in order")
    func wholeValues() {
        let value: JSONValue = [
            "zeta": 1, "alpha": [true, false, .null], "mid": ["x": "y", "a": []], "s": "q\"\n",
        ]
        let expected = #"{"zeta":1,"alpha":[true,false,null],"mid":{"x":"y","a":[]},"s":"q\"\n"}"#
        #expect(value.compactBytes() == Array(expected.utf8))
        #expect(value.description == expected)
        var w = JSONWriter()
        w.beginArray()
        w.value(value)
        w.value(.string("tail"))
        w.endArray()
        #expect(text(w) == "[\(expected),\"tail\"]")
    }
}

@Suite("Values round-trip")
struct RoundTripTests {
    static let documents = [
        #"{"title":"Disk full","level":2,"tags":["disk","io"],"meta":{"host":"db-3","pct":93.4,"ok":false,"n":null}}"#,
        #"[1,-0,1E+2,-1.50e3,0.000001,123456789012345678901234567890,1e400]"#,
        #"{"esc":"\" \\ \/ \b \f \n \r \t \u0000 \u001F \u00e9 \ud83d\ude00","raw":"é😀"}"#,
        #"{"z":1,"a":2,"m":{"y":[],"b":{}},"c":[[[]],{}]}"#,
        #""just a string""#,
        "null",
        "[true,false,null]",
        "  {  \"spaced\" :  [ 1 , 2 ] }  ",
    ]

    @Test("parse → compactBytes → parse gives the same value", arguments: documents)
    func parseWriteParse(document: String) throws {
        let first = try JSONParser.parse(document)
        let bytes = first.compactBytes()
        let second = try JSONParser.parse(bytes)
        #expect(second == first)
        // Order and spelling survive too: writing again is byte for byte identical.
        #expect(second.compactBytes() == bytes)
    }

    @Test("Compact input without escapes is written back byte for byte")
    func exactBytes() throws {
        let document = #"{"z":1,"a":[1.50,-0,2E-3],"m":{"é":"😀"},"t":true,"n":null}"#
        #expect(try JSONParser.parse(document).compactBytes() == Array(document.utf8))
    }

    /// Foundation carries numbers as Int, UInt64 or Double, so these stay within their range and precision.
    static let codableDocuments =
        documents.filter { !$0.hasPrefix("[1,") } + [
            "[1,-0,1E+2,-1.50e3,0.000001,9007199254740993,18446744073709551615,-9223372036854775808,2.5e-300]"
        ]

    @Test("Codable round trip through Foundation's JSONEncoder and JSONDecoder", arguments: codableDocuments)
    func codable(document: String) throws {
        let value = try JSONParser.parse(document)
        let data = try JSONEncoder().encode(value)
        let decoded = try JSONDecoder().decode(JSONValue.self, from: data)
        #expect(decoded == value)
        // Foundation's output is JSON that this parser accepts and reads the same.
        #expect(try JSONParser.parse(Array(data)) == value)
    }

    @Test("Codable keeps member order where the encoder does")
    func codableOrder() throws {
        let value: JSONValue = ["zeta": 1, "alpha": 2, "mid": 3]
        let data = try JSONEncoder().encode(value)
        let reparsed = try #require(try JSONParser.parse(Array(data)).objectValue)
        #expect(Set(reparsed.keys) == ["zeta", "alpha", "mid"])
        // With sorted keys the output is deterministic.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == #"{"alpha":2,"mid":3,"zeta":1}"#)
    }

    @Test("A number beyond Double cannot be encoded through Foundation, and says so")
    func codableInfinity() throws {
        let value = try JSONParser.parse("[1e400]")
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(value) }
    }

    @Test("Numbers decode as Int, UInt64 or Double through Codable")
    func codableNumbers() throws {
        let data = Data("[5, 18446744073709551615, 1.5, -0.25, 1e300]".utf8)
        let value = try JSONDecoder().decode(JSONValue.self, from: data)
        let numbers = try #require(value.arrayValue).compactMap(\.numberValue)
        #expect(numbers.map(\.literal) == ["5", "18446744073709551615", "1.5", "-0.25", "1e+300"])
        #expect(numbers[0].int == 5)
        #expect(numbers[1].int == nil)
    }

    @Test("JSONObject and JSONNumber are Codable on their own")
    func codableParts() throws {
        let object: JSONObject = ["a": 1, "b": ["c": "d"]]
        let data = try JSONEncoder().encode(object)
        #expect(try JSONDecoder().decode(JSONObject.self, from: data) == object)
        let number = try #require(JSONNumber(literal: "-2.5e-3"))
        let decoded = try JSONDecoder().decode(JSONNumber.self, from: try JSONEncoder().encode(number))
        #expect(decoded == number)
    }
}

@Suite("The length of a string as the writer writes it, counted without writing")
struct QuotedLengthTests {
    @Test(
        "quotedLength is exactly what string(_:) writes, escapes and all, however the escapes fall among the words",
        arguments: [
            "", "a", "plain ASCII longer than eight bytes", "é🚨 UTF-8 of every width", "\"", "\\", "\n\t\r\u{8}\u{C}",
            "\u{0}\u{1}\u{1F}", String(repeating: "x", count: 7) + "\"" + String(repeating: "y", count: 9),
            String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self),
        ])
    func exact(text: String) {
        var json = JSONWriter()
        json.string(text)
        #expect(JSONWriter.quotedLength(text) == json.bytes.count)
    }

    @Test("nil counts as null")
    func null() { #expect(JSONWriter.quotedLength(nil) == 4) }
}
