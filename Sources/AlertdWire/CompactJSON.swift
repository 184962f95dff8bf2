/// A JSON object kept as its compact UTF-8 encoding.
///
/// Metadata is only ever echoed back, so alertd keeps it encoded: written to
/// responses and to the store as is, read back from the store without parsing.
public struct CompactJSON: Sendable, Hashable, CustomStringConvertible {
    /// The compact encoding of a JSON object.
    public let bytes: [UInt8]

    public init(_ object: JSONObject) {
        bytes = JSONValue.object(object).compactBytes()
    }

    /// Wraps bytes this process wrote itself from a ``JSONObject`` (read back from the store).
    public init(trusting bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The object, parsed on demand; nil if the bytes are not a JSON object.
    public var object: JSONObject? {
        guard case .object(let object)? = try? JSONParser.parse(bytes) else { return nil }
        return object
    }

    public var description: String { String(decoding: bytes, as: UTF8.self) }
}
