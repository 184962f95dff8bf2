import Testing

@testable import AlertdWire

@Suite("JSONValueDecoder decodes Codable types from the strict parser's values")
struct JSONValueDecoderTests {
    struct Sample: Decodable, Equatable {
        var name: String
        var count: Int
        var ratio: Double
        var flag: Bool?
        var tags: [String]
        var nested: [String: [Int?]]
        var extra: JSONObject?
    }

    @Test("objects keep their member order and numbers their spelling, even beyond Double")
    func keepsOrderAndLiterals() throws {
        let text = #"{"z":1,"a":1.50e3,"é":-0,"m":{"y":1e400,"b":123456789012345678901234567890},"k":[0.1,1E+2]}"#
        let object = try JSONValueDecoder().decode(JSONObject.self, from: Array(text.utf8))
        #expect(object.keys == ["z", "a", "é", "m", "k"])
        #expect(object["m"]?.objectValue?.keys == ["y", "b"])
        #expect(JSONValue.object(object).compactBytes() == Array(text.utf8))
        let value = try JSONValueDecoder().decode(JSONValue.self, from: Array(text.utf8))
        #expect(value.compactBytes() == Array(text.utf8))
        let number = try JSONValueDecoder().decode(JSONNumber.self, from: Array("1.50e3".utf8))
        #expect(number.literal == "1.50e3")
    }

    @Test("synthesized Decodable types decode as with JSONDecoder: optionals, unknown members, nested containers")
    func synthesized() throws {
        let text =
            #"{"name":"n","count":5.0,"ratio":0.25,"flag":null,"tags":["a","b"],"nested":{"x":[1,null]},"unknown":[{}],"extra":{"q":2,"p":1}}"#
        let sample = try JSONValueDecoder().decode(Sample.self, from: Array(text.utf8))
        #expect(
            sample
                == Sample(
                    name: "n", count: 5, ratio: 0.25, flag: nil, tags: ["a", "b"], nested: ["x": [1, nil]], extra: ["q": 2, "p": 1]))
        #expect(sample.extra?.keys == ["q", "p"])
    }

    @Test("what does not fit is a DecodingError with the path to it")
    func errors() throws {
        let decoder = JSONValueDecoder()
        func failure(_ text: String) -> DecodingError? {
            do {
                _ = try decoder.decode(Sample.self, from: Array(text.utf8))
                return nil
            } catch {
                return error as? DecodingError
            }
        }
        let base = #""ratio":1,"tags":[],"nested":{}"#
        guard case .keyNotFound(let key, _)? = failure(#"{"name":"n",\#(base)}"#) else {
            Issue.record("a missing member is keyNotFound")
            return
        }
        #expect(key.stringValue == "count")
        guard case .valueNotFound(_, let context)? = failure(#"{"name":null,"count":1,\#(base)}"#) else {
            Issue.record("null for a String is valueNotFound")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["name"])
        guard case .typeMismatch(_, let mismatch)? = failure(#"{"name":"n","count":1,"ratio":1,"tags":[2],"nested":{}}"#) else {
            Issue.record("a number for a String is typeMismatch")
            return
        }
        #expect(mismatch.codingPath.map(\.stringValue) == ["tags", "Index 0"])
        guard case .dataCorrupted? = failure(#"{"name":"n","count":1.5,\#(base)}"#) else {
            Issue.record("1.5 is not an Int")
            return
        }
        guard case .dataCorrupted? = failure(#"{"name":"n","count":1,"ratio":1e400,"tags":[],"nested":{}}"#) else {
            Issue.record("1e400 is not a Double")
            return
        }
        #expect(throws: JSONParseError.self) { try decoder.decode(Sample.self, from: Array("{".utf8)) }
    }

    @Test("nesting is bounded by maxDepth")
    func depth() throws {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONParseError.self) { try JSONValueDecoder(maxDepth: 64).decode(JSONValue.self, from: Array(deep.utf8)) }
        #expect(try JSONValueDecoder().decode(JSONValue.self, from: Array(deep.utf8)).compactBytes() == Array(deep.utf8))
    }
}
