import AlertdWire
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// The HTTP plumbing under ``AlertdClient``: building requests, reading answers,
/// turning problem+json into ``AlertdError``.
struct Transport: Sendable {
    let base: String
    let token: String?
    let http: HTTPClient
    /// Set on every request: nil is the HTTP client's own (the system's trust roots).
    let tls: TLSConfiguration?
    /// Sees every answer before it is checked or decoded (``AlertdClient/answerObserver``).
    var observer: (@Sendable (RawAnswer) -> Void)?
    /// Answers larger than this are refused (a page of 1000 alerts fits).
    static let maxResponseBytes = 32 << 20
    /// Reads answers with AlertdWire's own parser, not Foundation's `JSONDecoder`: an
    /// alert's metadata keeps its member order and number literals, as the daemon wrote it.
    static let decoder = JSONValueDecoder()

    init(url: String, token: String?, http: HTTPClient, tls: TLSConfiguration? = nil) throws(AlertdError) {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        let lower = base.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), base.count > 8,
            URL(string: base)?.host != nil
        else {
            // Said without the credentials or query secrets the URL may hold (issue 44, item 8).
            throw AlertdError(
                kind: .invalidURL,
                message: "the daemon URL must be an absolute http(s) URL, not \(URLRedaction.redacted(url, keepingPath: true))")
        }
        self.base = base
        self.token = token.flatMap { $0.isEmpty ? nil : $0 }
        self.http = http
        self.tls = tls
    }

    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: ByteBuffer
    }

    /// Sends one request and reads the whole answer; a 4xx/5xx becomes an ``AlertdError``.
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: (some Encodable & Sendable)? = nil as Empty?,
        headers extra: [(String, String)] = [], timeout: Double
    ) async throws -> Answer {
        let request = try makeRequest(method, path, query: query, body: body, headers: extra)
        let answer: Answer
        do {
            let response = try await http.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            let bytes = try await response.body.collect(upTo: Self.maxResponseBytes)
            answer = Answer(status: Int(response.status.code), headers: response.headers, body: bytes)
        } catch let error as CancellationError {
            throw error
        } catch let error as NIOTooManyBytesError {
            throw AlertdError(kind: .invalidResponse, message: "the answer is larger than \(Self.maxResponseBytes) bytes: \(error)")
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ConnectionFailure.error(error, base: base, timeout: timeout)
        }
        observe(method, path, answer)
        try check(answer)
        return answer
    }

    /// The same request through the EventLoopFuture API, which a cancelled task does not cut short:
    /// withdrawing an alert after its presenting task was cancelled must still reach the daemon.
    func sendIgnoringCancellation(
        _ method: HTTPMethod, _ path: String, body: (some Encodable & Sendable)? = nil as Empty?,
        headers extra: [(String, String)] = [], timeout: Double
    ) async throws -> Answer {
        var request = try HTTPClient.Request(url: base + path, method: method, tlsConfiguration: tls)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(try Self.encode(body))
        }
        let deadline = NIODeadline.now() + .milliseconds(Int64(timeout * 1000))
        let answer: Answer
        do {
            let response = try await http.execute(request: request, deadline: deadline).get()
            answer = Answer(status: Int(response.status.code), headers: response.headers, body: response.body ?? ByteBuffer())
        } catch {
            throw ConnectionFailure.error(error, base: base, timeout: timeout)
        }
        observe(method, path, answer)
        try check(answer)
        return answer
    }

    private func observe(_ method: HTTPMethod, _ path: String, _ answer: Answer) {
        guard let observer else { return }
        observer(RawAnswer(method: method.rawValue, path: path, status: answer.status, body: Array(answer.body.readableBytesView)))
    }

    func decode<T: Decodable>(_ type: T.Type, from answer: Answer) throws(AlertdError) -> T {
        do {
            return try Self.decoder.decode(T.self, from: Array(answer.body.readableBytesView))
        } catch {
            throw AlertdError(
                kind: .invalidResponse, status: answer.status, message: "the answer is not a valid \(T.self): \(error)")
        }
    }

    private func check(_ answer: Answer) throws(AlertdError) {
        guard answer.status >= 400 else { return }
        let retryAfter = answer.headers.first(name: "Retry-After").flatMap(Double.init)
        let problem = try? Self.decoder.decode(ProblemDocument.self, from: Array(answer.body.readableBytesView))
        guard let problem else {
            throw AlertdError(
                kind: .invalidResponse, status: answer.status, retryAfter: retryAfter,
                message: "alertd answered \(answer.status) without a problem document")
        }
        throw AlertdError(
            kind: .problem, status: answer.status, problem: problem, retryAfter: retryAfter,
            message: "\(problem.title): \(problem.detail)")
    }

    private func makeRequest(
        _ method: HTTPMethod, _ path: String, query: [(String, String)], body: (some Encodable & Sendable)?,
        headers extra: [(String, String)]
    ) throws -> HTTPClientRequest {
        var url = base + path
        if !query.isEmpty {
            url += "?" + query.map { "\($0.0)=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
        }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.tlsConfiguration = tls
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try Self.encode(body)))
        }
        return request
    }

    static func encode(_ body: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(body)
    }

    /// A path segment or query value with everything but unreserved characters escaped.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(UnicodeScalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

/// One answer of the daemon, as it wrote it: see ``AlertdClient/answerObserver``.
public struct RawAnswer: Sendable {
    /// The request's method (`GET`, `POST`, …).
    public var method: String
    /// The request's path under the daemon's URL, without the query (`/v1/clients/ops/alerts`).
    public var path: String
    /// The HTTP status.
    public var status: Int
    /// The body's bytes as they arrived: the daemon's member order, nulls and number spellings.
    public var body: [UInt8]
}

/// No body.
struct Empty: Encodable, Sendable {}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
