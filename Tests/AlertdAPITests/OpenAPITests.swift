import AlertdInProcess
import AlertdTestSupport
import AlertdClient
import AlertdCore
import AlertdDelivery
import AlertdReceipts
import AlertdWire
import Crypto
import Foundation
import Testing

@testable import AlertdAPI
import AlertdHTTP

/// The OpenAPI document (`openapi/alertd.yaml`), as the daemon serves it.
enum Document {
    // Read once and never written: `[String: Any]` is not Sendable, but nothing mutates it.
    nonisolated(unsafe) static let object: [String: Any] = {
        switch OpenAPIDocument.asset {
        case .success(let asset):
            return (try? JSONSerialization.jsonObject(with: Data(asset.body))) as? [String: Any] ?? [:]
        case .failure(let error):
            Issue.record("the document does not convert: \(error)")
            return [:]
        }
    }()

    static var paths: [String: [String: Any]] { object["paths"] as? [String: [String: Any]] ?? [:] }
    static var schemas: [String: [String: Any]] {
        (object["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]] ?? [:]
    }
    static var responses: [String: [String: Any]] {
        (object["components"] as? [String: Any])?["responses"] as? [String: [String: Any]] ?? [:]
    }

    /// The member names a schema allows (`properties`), and for a `oneOf` the union of its branches'.
    static func members(of schema: String) -> Set<String> {
        guard let found = schemas[schema] else {
            Issue.record("no schema \(schema) in the document")
            return []
        }
        return members(found)
    }

    static func members(_ schema: [String: Any]) -> Set<String> {
        var names = Set((schema["properties"] as? [String: Any] ?? [:]).keys)
        for branch in schema["oneOf"] as? [[String: Any]] ?? [] { names.formUnion(members(branch)) }
        return names
    }

    /// Every operation: (method, path, operation).
    static var operations: [(method: String, path: String, operation: [String: Any])] {
        paths.flatMap { path, item in
            item.compactMap { method, value in
                (value as? [String: Any]).map { (method.uppercased(), path, $0) }
            }
        }
    }
}

@Suite("The OpenAPI document is the one the daemon serves, and it says what the route table says")
struct OpenAPIDocumentTests {
    @Test("the embedded YAML converts to an OpenAPI 3.1 document in JSON, keys in the order written")
    func converts() throws {
        #expect(Document.object["openapi"] as? String == "3.1.0")
        let body = try OpenAPIDocument.asset.get().body
        let text = String(decoding: body, as: UTF8.self)
        #expect(text.hasPrefix(#"{"openapi":"3.1.0","info":{"title":"alertd""#))
        // Status codes are quoted in the YAML and stay strings; numbers stay numbers.
        #expect(text.contains(#""'200'""#) == false && text.contains(#""responses":{"200":"#))
        #expect(text.contains(#""maximum":1000"#))
    }

    @Test("the conversion keeps YAML's types and refuses what JSON cannot say")
    func conversion() throws {
        let json = try OpenAPIDocument.json(fromYAML: "a: '1'\nb: 1\nc: 1.5\nd: true\ne: ~\nf: [x, 'no']\ng: \"quote \\\" and \\\\\"\n")
        #expect(String(decoding: json, as: UTF8.self) == #"{"a":"1","b":1,"c":1.5,"d":true,"e":null,"f":["x","no"],"g":"quote \" and \\"}"#)
        // An alias is read as what it names (as PyYAML reads it), so JSON can say it.
        let aliased = try OpenAPIDocument.json(fromYAML: "a: &x 1\nb: *x\n")
        #expect(String(decoding: aliased, as: UTF8.self) == #"{"a":1,"b":1}"#)
        #expect(throws: OpenAPIDocument.ConversionError.self) { try OpenAPIDocument.json(fromYAML: "? [a]\n: 1\n") }
        #expect(throws: OpenAPIDocument.ConversionError.self) { try OpenAPIDocument.json(fromYAML: "a: [\n") }
    }

    @Test("every route is an operation with the route's name as operationId and its permission as x-alertd-role, and nothing else is")
    func routes() {
        var expected: [String: (name: String, role: String)] = [:]
        for route in API.routes {
            let path =
                "/"
                + route.segments.map { segment in
                    switch segment {
                    case .literal(let bytes): String(decoding: bytes, as: UTF8.self)
                    case .capture(let name): "{\(name)}"
                    }
                }.joined(separator: "/")
            let role: String =
                switch route.permission {
                case .open: "open"
                case .anyone: "anyone"
                case .read: "read"
                case .post: "post"
                case .answer: "answer"
                case .admin: "admin"
                case .alertmanager: "alertmanager"
                }
            expected["\(route.method) \(path)"] = (route.name, role)
        }
        var documented: [String: (name: String, role: String)] = [:]
        for (method, path, operation) in Document.operations where method != "PARAMETERS" {
            documented["\(method) \(path)"] = (operation["operationId"] as? String ?? "", operation["x-alertd-role"] as? String ?? "")
        }
        #expect(Set(documented.keys) == Set(expected.keys))
        for (key, route) in expected {
            #expect(documented[key]?.name == route.name, "\(key): operationId")
            #expect(documented[key]?.role == route.role, "\(key): x-alertd-role")
        }
    }

    @Test("the operations that need no token are the ones the daemon lets through without one")
    func security() {
        for (method, path, operation) in Document.operations where method != "PARAMETERS" {
            let role = operation["x-alertd-role"] as? String
            let security = operation["security"] as? [[String: Any]]
            if path.hasPrefix("/v1/"), role != "anyone" {
                #expect(security == nil, "\(method) \(path) takes the document's bearer security")
            } else if path == "/metrics" {
                #expect(security?.count == 2, "/metrics: open, or any token with metrics.require_token")
            } else {
                #expect(security?.isEmpty == true, "\(method) \(path) needs no token")
            }
        }
    }

    @Test("the problem codes are ProblemCode.all, and each error response names codes of its status")
    func problemCodes() throws {
        let problem = try #require(Document.schemas["Problem"])
        let code = (problem["properties"] as? [String: Any])?["code"] as? [String: Any]
        #expect(code?["enum"] as? [String] == ProblemCode.all.map(\.rawValue))
        let description = problem["description"] as? String ?? ""
        for known in ProblemCode.all {
            #expect(description.contains("| `\(known.rawValue)` | \(known.status) |"), "the Problem table lacks \(known.rawValue)")
        }
        var named: Set<String> = []
        for (name, response) in Document.responses {
            guard let content = response["content"] as? [String: Any], let problemJSON = content["application/problem+json"] else {
                continue
            }
            let parts = ((problemJSON as? [String: Any])?["schema"] as? [String: Any])?["allOf"] as? [[String: Any]] ?? []
            let narrowing = parts.compactMap { $0["properties"] as? [String: Any] }.first ?? [:]
            let status = (narrowing["status"] as? [String: Any])?["const"] as? Int
            let codeSchema = narrowing["code"] as? [String: Any] ?? [:]
            let codes = (codeSchema["enum"] as? [String]) ?? [codeSchema["const"] as? String].compactMap { $0 }
            #expect(!codes.isEmpty && status != nil, "\(name) names no code or status")
            for code in codes {
                #expect(ProblemCode.all.first { $0.rawValue == code }?.status == status, "\(name): \(code) with status \(status ?? 0)")
                named.insert(code)
            }
        }
        // 405 is the answer to a method the document does not list: no operation declares it.
        #expect(named == Set(ProblemCode.all.map(\.rawValue)).subtracting(["method-not-allowed"]))
    }
}

@Suite("GET /v1/openapi.json serves the document to anyone")
struct OpenAPIEndpointTests {
    static let config = """
        auth:
          tokens:
            - { name: reader, sha256: "\(Token.hex(Array(SHA256.hash(data: Array("reader-secret".utf8)))))", roles: [read], clients: [ops] }
        """

    @Test("with tokens configured it needs none, while every other /v1 request still does")
    func noToken() async throws {
        try await withAlertd(config: Self.config) { daemon in
            let response = try await daemon.send("GET", "/v1/openapi.json")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.body == (try OpenAPIDocument.asset.get().body))
            #expect(try response.jsonObject()["openapi"] as? String == "3.1.0")
            #expect(try await daemon.send("GET", "/v1/whoami").status == 401)
            #expect(try await daemon.send("GET", "/v1/openapi.yaml").status == 401)
            // A wrong token does not matter either: nothing is asked, so nothing is checked.
            #expect(try await daemon.send("GET", "/v1/openapi.json", headers: [("Authorization", "Bearer nope")]).status == 200)
        }
    }

    @Test("it has an ETag, answers 304 to it, takes no query and no other method")
    func caching() async throws {
        try await withAlertd { daemon in
            let first = try await daemon.send("GET", "/v1/openapi.json")
            let etag = try #require(first.header("ETag"))
            #expect(first.header("Cache-Control") == "no-cache")
            let again = try await daemon.send("GET", "/v1/openapi.json", headers: [("If-None-Match", etag)])
            #expect(again.status == 304 && again.body.isEmpty)
            #expect(try await daemon.send("GET", "/v1/openapi.json?x=1").status == 400)
            let post = try await daemon.send("POST", "/v1/openapi.json", json: "{}")
            #expect(post.status == 405 && post.header("Allow") == "GET, HEAD")
        }
    }
}

@Suite("The document's schemas and the Swift wire types have the same members")
struct OpenAPIWireTypeTests {
    /// A Swift type, the members its Codable form reads, and the schema(s) that describe it.
    static func check<T: Decodable>(_ type: T.Type, _ schemas: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let swift = MemberRecorder.members(of: type)
        let document = schemas.reduce(into: Set<String>()) { $0.formUnion(Document.members(of: $1)) }
        #expect(!swift.isEmpty, "\(type) read no member", sourceLocation: sourceLocation)
        #expect(
            swift.subtracting(document).isEmpty, "\(type) has \(swift.subtracting(document).sorted()) that \(schemas) lack",
            sourceLocation: sourceLocation)
        #expect(
            document.subtracting(swift).isEmpty, "\(schemas) have \(document.subtracting(swift).sorted()) that \(type) lacks",
            sourceLocation: sourceLocation)
    }

    @Test("the alert, its result and its buttons, as returned and as posted")
    func alert() throws {
        // `receipt` (SPEC §14) is the long-poll answer's alone: the SDK reads it apart
        // (AlertdClient's polledAlert); the resource itself is the same everywhere else.
        let alert = Document.members(of: "Alert")
        #expect(alert.contains("receipt") && !(Document.schemas["Alert"]?["required"] as? [String] ?? []).contains("receipt"))
        #expect(MemberRecorder.members(of: AlertResource.self) == alert.subtracting(["receipt"]))
        Self.check(AlertResult.self, ["AlertResult"])
        Self.check(Vote.self, ["Vote"])
        Self.check(Button.self, ["Button"])
        Self.check(Button.self, ["NewButton"])
        Self.check(NewAlert.self, ["NewAlert"])
        Self.check(AlertPage.self, ["AlertPage"])
        Self.check(ButtonChoice.self, ["Choice"])
        Self.check(EscalationStep.self, ["EscalationStep"])
        Self.check(EscalatedTo.self, ["EscalatedTo"])
        // The daemon writes every member, in this order: the document lists them all as required, in the same order.
        #expect(Document.schemas["Alert"]?["required"] as? [String] == AlertResource.memberNames)
        #expect(Document.schemas["AlertResult"]?["required"] as? [String] == AlertResult.memberNames)
        #expect(Document.schemas["Vote"]?["required"] as? [String] == Vote.memberNames)
        #expect(Document.schemas["Button"]?["required"] as? [String] == Button.memberNames)
        #expect(Document.schemas["EscalationStep"]?["required"] as? [String] == EscalationStep.memberNames)
        #expect(Document.schemas["EscalatedTo"]?["required"] as? [String] == EscalatedTo.memberNames)
    }

    @Test("a receipt (SPEC §14): the document's members are the receipt's and its signature, every one required")
    func receipt() throws {
        let receipt = try #require(Document.schemas["Receipt"])
        #expect(Set(receipt["required"] as? [String] ?? []) == Set(Receipt.memberNames + ["signature"]))
        #expect(Document.members(of: "Receipt") == Set(Receipt.memberNames + ["signature"]))
        #expect(Document.members(of: "AuditPage") == ["receipts", "next_after"])
        let outcome = (receipt["properties"] as? [String: Any])?["outcome"] as? [String: Any]
        #expect(Set(outcome?["enum"] as? [String] ?? []) == Set(Receipt.Outcome.allCases.map(\.rawValue)))
    }

    @Test("the enumerations: states, styles, delivery states")
    func enumerations() {
        func values(_ schema: String) -> [String] { Document.schemas[schema]?["enum"] as? [String] ?? [] }
        #expect(values("AlertState") == AlertState.allCases.map(\.rawValue))
        #expect(values("AlertStyle") == AlertStyle.allCases.map(\.rawValue))
        #expect(values("ButtonStyle") == ButtonStyle.allCases.map(\.rawValue))
        let delivery = (Document.schemas["Delivery"]?["properties"] as? [String: Any])?["state"] as? [String: Any]
        #expect(delivery?["enum"] as? [String] == DeliveryState.allCases.map(\.rawValue))
        let outcome = (Document.schemas["AlertResult"]?["properties"] as? [String: Any])?["outcome"] as? [String: Any]
        #expect(outcome?["enum"] as? [String] == AlertState.allCases.filter(\.isTerminal).map(\.rawValue))
    }

    @Test("problems, clients, whoami, webhooks and deliveries")
    func others() {
        Self.check(ProblemDocument.self, ["Problem"])
        Self.check(FieldError.self, ["FieldError"])
        Self.check(ClientList.self, ["ClientList"])
        Self.check(ClientSummary.self, ["ClientSummary"])
        Self.check(Identity.self, ["Identity"])
        Self.check(WebhookRegistration.self, ["WebhookRegistration"])
        // One Swift type for both: the registration's answer (with the secret) and the listed webhook (with its source).
        Self.check(WebhookResource.self, ["Webhook", "CreatedWebhook"])
        Self.check(WebhookList.self, ["WebhookList"])
        Self.check(DeliveryList.self, ["DeliveryList"])
        Self.check(DeliveryRecord.self, ["Delivery"])
        Self.check(DeliveryAttempt.self, ["DeliveryAttempt"])
    }

    @Test("the callback body alertd signs has the members of the webhooks section's AlertEvent")
    func callbackEvent() throws {
        var ids = CallbackEventIDGenerator()
        let now = Timestamp(milliseconds: 1_795_000_000_000)
        let event = CallbackEvent(id: ids.next(at: now), state: .answered, timestamp: now, renderedAlert: Array(#"{"id":"x"}"#.utf8))
        let body = try #require(try JSONSerialization.jsonObject(with: Data(event.body)) as? [String: Any])
        #expect(Set(body.keys) == Document.members(of: "AlertEvent"))
        let data = try #require(Document.schemas["AlertEvent"]?["properties"] as? [String: Any])["data"] as? [String: Any]
        // A terminal event's data is the alert and, once the store attached it, the decision's
        // receipt (SPEC §14); an escalation step's (SPEC §12) the alert and the step.
        #expect(Set((body["data"] as? [String: Any] ?? [:]).keys) == ["alert"])
        let withReceipt = try #require(AlertEvent.body(event.body, addingReceipt: Array(#"{"seq":1}"#.utf8)))
        let attached = try #require(try JSONSerialization.jsonObject(with: Data(withReceipt)) as? [String: Any])
        #expect(Set((attached["data"] as? [String: Any] ?? [:]).keys) == ["alert", "receipt"])
        #expect(Document.members(data ?? [:]) == ["alert", "escalation", "receipt"])
        let step = CallbackEvent(
            id: ids.next(at: now), escalation: EscalationEvent(index: 0, after: 300, to: "ops-lead", at: now),
            renderedAlert: Array(#"{"id":"x"}"#.utf8))
        let stepBody = try #require(try JSONSerialization.jsonObject(with: Data(step.body)) as? [String: Any])
        #expect(Set(stepBody.keys) == Document.members(of: "AlertEvent"))
        #expect(Set((stepBody["data"] as? [String: Any] ?? [:]).keys) == Document.members(data ?? [:]).subtracting(["receipt"]))
        let escalation = ((data?["properties"] as? [String: Any])?["escalation"] as? [String: Any]).map(Document.members) ?? []
        #expect(Set(((stepBody["data"] as? [String: Any])?["escalation"] as? [String: Any] ?? [:]).keys) == escalation)
        let types = ((Document.schemas["AlertEvent"]?["properties"] as? [String: Any])?["type"] as? [String: Any])?["enum"] as? [String]
        #expect(types == AlertState.allCases.filter(\.isTerminal).map { CallbackEvent.type(for: $0) } + [step.type])
        // The headers it is sent with (AlertdDeliveryWorker' worker): the webhook's parameters.
        let webhook = (Document.object["webhooks"] as? [String: Any])?["alertEvent"] as? [String: Any]
        let parameters = (webhook?["post"] as? [String: Any])?["parameters"] as? [[String: Any]] ?? []
        #expect(parameters.compactMap { $0["name"] as? String } == ["webhook-id", "webhook-timestamp", "webhook-signature", "User-Agent"])
        let signature = WebhookSignature.sign(
            id: event.id.description, timestamp: 1_795_000_000, body: event.body, key: try WebhookKey(secret: "s"))
        let pattern =
            ((parameters.first { $0["name"] as? String == "webhook-signature" })?["schema"] as? [String: Any])?["pattern"] as? String
        #expect(signature.wholeMatch(of: try Regex(try #require(pattern))) != nil, "\(signature)")
        let idPattern = ((parameters.first { $0["name"] as? String == "webhook-id" })?["schema"] as? [String: Any])?["pattern"] as? String
        #expect(event.id.description.wholeMatch(of: try Regex(try #require(idPattern))) != nil, "\(event.id)")
    }

    @Test("the recorder sees optional members, required ones and a custom init(from:)'s")
    func recorder() {
        struct Sample: Decodable {
            var a: String
            var b: Int?
            var c: [Button]
            var d: AlertState
            var e: Timestamp?
        }
        #expect(MemberRecorder.members(of: Sample.self) == ["a", "b", "c", "d", "e"])
        #expect(MemberRecorder.members(of: Button.self) == ["title", "style"])
    }
}

/// A `Decoder` that records the member names a `Decodable` type reads at its
/// top level, answering each with a placeholder: the first case of an
/// enumeration, a valid time, "x", 0, false, an empty array; other values
/// are decoded from placeholders in turn (their members are not recorded).
/// Optional members are reported absent, so a nested optional type is not
/// entered: each type is checked on its own.
struct MemberRecorder: Decoder {
    final class Log {
        var names: Set<String> = []
    }
    let log: Log
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func members<T: Decodable>(of type: T.Type) -> Set<String> {
        let log = Log()
        do {
            _ = try T(from: MemberRecorder(log: log, codingPath: []))
        } catch {
            Issue.record("decoding \(type) from placeholders: \(error)")
        }
        return log.names
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(log: log, codingPath: codingPath))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed(codingPath: codingPath) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(codingPath: codingPath) }

    /// A placeholder of `T`, decoded on a fresh log: only the top level's members count.
    static func placeholder<T: Decodable>(_ type: T.Type, codingPath: [any CodingKey]) throws -> T {
        if let cases = T.self as? any CaseIterable.Type, let first = firstCase(cases) as? T { return first }
        if T.self == Timestamp.self, let time = Timestamp(milliseconds: 0) as? T { return time }
        return try T(from: MemberRecorder(log: Log(), codingPath: codingPath))
    }

    private static func firstCase<C: CaseIterable>(_ type: C.Type) -> Any? { type.allCases.first }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let log: Log
        let codingPath: [any CodingKey]
        var allKeys: [Key] { [] }

        func record(_ key: Key) { if codingPath.isEmpty { log.names.insert(key.stringValue) } }
        func placeholder<T>(_ key: Key, _ value: T) throws -> T {
            record(key)
            return value
        }
        func contains(_ key: Key) -> Bool {
            record(key)
            return false
        }
        func decodeNil(forKey key: Key) throws -> Bool { try placeholder(key, true) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try placeholder(key, false) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try placeholder(key, "x") }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try placeholder(key, 1) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try placeholder(key, 0) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try placeholder(key, 0) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try placeholder(key, 0) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try placeholder(key, 0) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try placeholder(key, 0) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try placeholder(key, 0) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try placeholder(key, 0) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try placeholder(key, 0) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try placeholder(key, 0) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try placeholder(key, 0) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try placeholder(key, 0) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            record(key)
            return try MemberRecorder.placeholder(type, codingPath: codingPath + [key])
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<
            NestedKey
        > {
            record(key)
            return KeyedDecodingContainer(Keyed<NestedKey>(log: Log(), codingPath: codingPath + [key]))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            record(key)
            return Unkeyed(codingPath: codingPath + [key])
        }
        func superDecoder() throws -> any Decoder { MemberRecorder(log: Log(), codingPath: codingPath) }
        func superDecoder(forKey key: Key) throws -> any Decoder {
            record(key)
            return MemberRecorder(log: Log(), codingPath: codingPath + [key])
        }
    }

    /// An empty array: nothing in it is ever read.
    struct Unkeyed: UnkeyedDecodingContainer {
        let codingPath: [any CodingKey]
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }
        struct Empty: Error {}
        mutating func decodeNil() throws -> Bool { throw Empty() }
        mutating func decode(_ type: Bool.Type) throws -> Bool { throw Empty() }
        mutating func decode(_ type: String.Type) throws -> String { throw Empty() }
        mutating func decode(_ type: Double.Type) throws -> Double { throw Empty() }
        mutating func decode(_ type: Float.Type) throws -> Float { throw Empty() }
        mutating func decode(_ type: Int.Type) throws -> Int { throw Empty() }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { throw Empty() }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { throw Empty() }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { throw Empty() }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { throw Empty() }
        mutating func decode(_ type: UInt.Type) throws -> UInt { throw Empty() }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { throw Empty() }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { throw Empty() }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { throw Empty() }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { throw Empty() }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw Empty() }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            throw Empty()
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Empty() }
        mutating func superDecoder() throws -> any Decoder { throw Empty() }
    }

    /// A single value: placeholders again.
    struct Single: SingleValueDecodingContainer {
        let codingPath: [any CodingKey]
        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { false }
        func decode(_ type: String.Type) throws -> String { "x" }
        func decode(_ type: Double.Type) throws -> Double { 1 }
        func decode(_ type: Float.Type) throws -> Float { 0 }
        func decode(_ type: Int.Type) throws -> Int { 0 }
        func decode(_ type: Int8.Type) throws -> Int8 { 0 }
        func decode(_ type: Int16.Type) throws -> Int16 { 0 }
        func decode(_ type: Int32.Type) throws -> Int32 { 0 }
        func decode(_ type: Int64.Type) throws -> Int64 { 0 }
        func decode(_ type: UInt.Type) throws -> UInt { 0 }
        func decode(_ type: UInt8.Type) throws -> UInt8 { 0 }
        func decode(_ type: UInt16.Type) throws -> UInt16 { 0 }
        func decode(_ type: UInt32.Type) throws -> UInt32 { 0 }
        func decode(_ type: UInt64.Type) throws -> UInt64 { 0 }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try MemberRecorder.placeholder(type, codingPath: codingPath) }
    }
}
