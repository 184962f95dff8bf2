// AlertdWire's JSON parser on any bytes, and what is built on it. The parser must
// never crash, and what it accepts must survive the trip through the writer:
// written compactly, parsed again, equal (numbers compared as decimal values),
// written again to the same bytes. The SDK's decoder then reads the value as an
// alert, a page and a problem, the answers it decodes from a daemon.
import AlertdWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // The daemon parses with the default depth (64); one byte of the input picks
    // another bound now and then, so the depth check runs at its edges too.
    let maxDepth = size > 0 && data[0] == UInt8(ascii: "\t") ? 3 : 64
    guard let value = try? JSONParser.parse(bytes, maxDepth: maxDepth) else { return 0 }

    let written = value.compactBytes()
    let reparsed: JSONValue
    do {
        reparsed = try JSONParser.parse(written, maxDepth: maxDepth)
    } catch {
        fatalError("the writer's bytes do not parse: \(error); \(String(decoding: written, as: UTF8.self))")
    }
    precondition(reparsed == value, "parse(write(v)) != v for \(String(decoding: written, as: UTF8.self))")
    precondition(reparsed.compactBytes() == written, "write(parse(write(v))) != write(v)")
    precondition(Set([value, reparsed]).count == 1, "equal values hash differently")

    // Numbers: the accessors the validator and the SDK use.
    walk(value)

    let decoder = JSONValueDecoder()
    _ = try? decoder.decode(AlertResource.self, from: value)
    _ = try? decoder.decode(AlertPage.self, from: value)
    _ = try? decoder.decode(ProblemDocument.self, from: value)
    _ = try? decoder.decode(NewAlert.self, from: value)
    return 0
}

private func walk(_ value: JSONValue) {
    switch value {
    case .number(let number):
        _ = number.int
        _ = number.double
        precondition(JSONNumber(literal: number.literal) == number, "a parsed number's literal is not a number")
    case .array(let items):
        for item in items { walk(item) }
    case .object(let object):
        for member in object {
            precondition(object[member.key] == member.value, "a member is not found by its own key")
            walk(member.value)
        }
    case .string, .bool, .null:
        break
    }
}
