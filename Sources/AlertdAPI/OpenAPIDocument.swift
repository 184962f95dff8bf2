import AlertdHTTP
import AlertdWire
import Logging
import Yams

/// The OpenAPI 3.1 document of the whole API, served as JSON at
/// `GET /v1/openapi.json`.
///
/// One source: `openapi/alertd.yaml` at the repository's root (reached through
/// the symlink `OpenAPI/alertd.yaml` in this target, since SwiftPM takes
/// resources only from inside a target). SwiftPM embeds the YAML in the
/// binary (`.embedInCode`); the first request converts it to JSON with Yams,
/// which the daemon links for its config file anyway. So there is no
/// generated file to commit and keep in step, no build plugin and no step
/// outside `swift build`; converting about 60 KB once costs milliseconds.
/// The tests hold the conversion to PyYAML's reading of the same file.
enum OpenAPIDocument {
    /// The document as a file of the dashboard's kind (`ETag`, 304), or why
    /// the embedded YAML could not be converted (a test makes sure it can).
    static let asset: Result<Dashboard.Asset, ConversionError> = {
        do throws(ConversionError) {
            let yaml = String(decoding: PackageResources.alertd_yaml, as: UTF8.self)
            return .success(Dashboard.Asset(name: "openapi.json", contentType: "application/json", body: try json(fromYAML: yaml)))
        } catch {
            return .failure(error)
        }
    }()

    struct ConversionError: Error, CustomStringConvertible {
        let description: String
    }

    /// `yaml` as compact JSON, mapping keys in the order written. Scalars take
    /// the type YAML's tag resolution gives them (`'200'` stays a string, `200`
    /// is a number); an alias is written out as the node it names (as PyYAML
    /// reads it); non-scalar keys are refused, as JSON has nothing like them.
    static func json(fromYAML yaml: String) throws(ConversionError) -> [UInt8] {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConversionError(description: "the YAML does not parse: \(error)")
        }
        guard let root else { throw ConversionError(description: "the YAML is empty") }
        var out = JSONWriter(capacity: yaml.utf8.count)
        try write(root, into: &out)
        return out.bytes
    }

    private static func write(_ node: Node, into out: inout JSONWriter) throws(ConversionError) {
        switch node {
        case .mapping(let mapping):
            out.beginObject()
            for (key, value) in mapping {
                guard case .scalar(let scalar) = key, Tag.Name(rawValue: key.tag.rawValue) != .merge else {
                    throw ConversionError(description: "a mapping key that is not a plain scalar at \(position(key))")
                }
                out.key(scalar.string)
                try write(value, into: &out)
            }
            out.endObject()
        case .sequence(let sequence):
            out.beginArray()
            for item in sequence { try write(item, into: &out) }
            out.endArray()
        case .scalar(let scalar):
            switch Tag.Name(rawValue: node.tag.rawValue) {
            case .null: out.null()
            case .bool: try out.bool(typed(node.bool, node))
            case .int: try out.int(typed(node.int, node))
            case .float: try out.double(typed(node.float, node))
            default: out.string(scalar.string)
            }
        case .alias:
            throw ConversionError(description: "an alias at \(position(node)): write it out")
        }
    }

    private static func typed<T>(_ value: T?, _ node: Node) throws(ConversionError) -> T {
        guard let value else {
            throw ConversionError(description: "\(node.string ?? "a scalar") at \(position(node)) is not a \(T.self)")
        }
        return value
    }

    private static func position(_ node: Node) -> String { node.mark.map { "line \($0.line), column \($0.column)" } ?? "?" }
}

extension API {
    /// `GET /v1/openapi.json`: the document, to anyone (it describes the API
    /// and holds no data), with an `ETag` like the dashboard's files.
    func openAPIDocument(_ call: Call) throws {
        _ = try call.query()
        switch OpenAPIDocument.asset {
        case .success(let asset):
            call.respond(Dashboard.response(asset, ifNoneMatch: call.request.header("if-none-match")))
        case .failure(let error):
            logger.error("the embedded OpenAPI document does not convert", metadata: ["error": "\(error)"])
            throw Problem.internal(requestID: call.requestID)
        }
    }
}
