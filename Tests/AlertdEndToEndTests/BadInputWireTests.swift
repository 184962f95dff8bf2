// Bad bytes that never reach alertd's handler, or that only a server sees: garbage request
// lines and headers, lying or oversized framing, raw invalid UTF-8 on the wire. For every
// case: the status the server answers (or the connection closed), alertd still answers
// `GET /healthz` on a fresh connection, and the store is exactly as before. One daemon per
// case, holding a fixture of alerts in known states. What reaches the handler (bodies,
// fields, ids, query values) is tested in AlertdAPIContractTests/BadInputTests.

import AlertdTestSupport
import Foundation
import Testing

@Suite("Bad input on the wire")
struct BadInputWireTests {
    @Test("invalid UTF-8 written on the wire as raw bytes is 400 bad-request")
    func invalidUTF8Raw() async throws {
        try await WireFixture.expectHarmless { connection in
            let body: [UInt8] = Array(#"{"title":""#.utf8) + [0xC3, 0x28, 0xA0, 0xA1] + Array(#"","buttons":[{"title":"Yes"}]}"#.utf8)
            let head =
                "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.count)\r\n\r\n"
            try await connection.send(Array(head.utf8) + body)
            WireFixture.expectProblem(try await connection.readResponse(), status: 400, code: "bad-request")
        }
    }

    // MARK: Body size

    @Test("a body of 64 KiB + 1 with Content-Length is 413 payload-too-large")
    func oversizedWithContentLength() async throws {
        try await WireFixture.expectHarmless { connection in
            let response = try await connection.request(
                "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")],
                body: WireFixture.paddedAlert(size: 65_537))
            WireFixture.expectProblem(response, status: 413, code: "payload-too-large")
        }
    }

    /// Found when nginx answered 502 to the contract tier's 413 test, through two instances
    /// on a loaded machine: alertd answered on the head and closed on the unread body, and
    /// the kernel's reset could destroy the 413 before nginx read it.
    @Test("a body over 64 KiB sent with its head (as a proxy sends it) is read, answered 413, and the connection lives on")
    func oversizedBodyIsReadThenAnswered() async throws {
        try await WireFixture.expectHarmless { connection in
            let response = try await connection.request(
                "POST", "/v1/clients/fixture/alerts", headers: [("Content-Type", "application/json")],
                body: WireFixture.paddedAlert(size: 256 * 1024))
            WireFixture.expectProblem(response, status: 413, code: "payload-too-large")
            #expect(response.header("Connection")?.lowercased() != "close", "the 413 closed the connection")
            let next = try await connection.request("GET", "/v1/clients/fixture/alerts?limit=1")
            #expect(next.status == 200, "the request after the 413 got \(next.status): the body was read as a request")
        }
    }

    @Test("a declared Content-Length over 64 KiB is 413 before any body is sent")
    func oversizedDeclaredOnly() async throws {
        try await WireFixture.expectHarmless { connection in
            let head =
                "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Expect: 100-continue\r\nContent-Length: 65537\r\n\r\n"
            try await connection.send(Array(head.utf8))
            WireFixture.expectProblem(try await connection.readResponse(), status: 413, code: "payload-too-large")
        }
    }

    @Test("a chunked body of 64 KiB + 1 is 413 payload-too-large", arguments: [4096, 65_537])
    func oversizedChunked(chunkSize: Int) async throws {
        try await WireFixture.expectHarmless { connection in
            try await connection.send(WireFixture.chunkedPost(WireFixture.paddedAlert(size: 65_537), chunkSize: chunkSize))
            WireFixture.expectProblem(try await connection.readResponse(), status: 413, code: "payload-too-large")
        }
    }

    @Test("a body of exactly 64 KiB is processed, with Content-Length or chunked", arguments: [false, true])
    func exactlyTheLimit(chunked: Bool) async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let client = chunked ? "limit-chunked" : "limit-length"
        let before = try await daemon.client().get("/v1/clients/\(client)/alerts?state=\(WireFixture.allStates)")
        let connection = try await daemon.rawConnection()
        let body = WireFixture.paddedAlert(size: 65_536, title: "at the limit")
        #expect(body.count == 65_536)
        let response: TestResponse
        if chunked {
            try await connection.send(WireFixture.chunkedPost(body, chunkSize: 4096, client: client))
            response = try await connection.readResponse()
        } else {
            response = try await connection.request(
                "POST", "/v1/clients/\(client)/alerts", headers: [("Content-Type", "application/json")], body: body)
        }
        #expect(response.status == 201, "\(response.status): \(response.text.prefix(300))")
        #expect(try response.jsonObject()["title"] as? String == "at the limit")
        let listed = try await daemon.client().get("/v1/clients/\(client)/alerts?state=\(WireFixture.allStates)").jsonObject()
        #expect((listed["alerts"] as? [[String: Any]])?.map(id) == [id(try response.jsonObject())])
        #expect(before.text.contains(#""alerts":[]"#))
    }

    // MARK: Garbage on the wire

    @Test("garbage request lines and headers are refused with their status and harm nothing", arguments: RawCase.all)
    func garbageRefused(raw: RawCase) async throws {
        try await WireFixture.expectHarmless { connection in
            if raw.layer == .closes {
                // Not HTTP: libmicrohttpd hangs up without a word, which is a refusal too.
                try? await connection.send(raw.bytes)
                #expect(await connection.awaitClose(timeout: .seconds(10)), "the connection stayed open after \(raw.name)")
                return
            }
            guard let response = await Self.answer(to: raw, on: connection) else { return }
            #expect(response.status == raw.status, "\(response.status): \(response.text.prefix(200).debugDescription)")
        }
    }

    @Test(
        "the answers to garbage request lines and headers that reach alertd are problem+json with their code",
        arguments: RawCase.all.filter { $0.layer == .alertd })
    func garbageAnsweredAsProblems(raw: RawCase) async throws {
        try await WireFixture.expectHarmless { connection in
            guard let response = await Self.answer(to: raw, on: connection) else { return }
            #expect(!response.text.hasPrefix("HTTP/1."), "the answer's body is another response head: it was sent twice")
            WireFixture.expectProblem(response, status: raw.status, code: raw.code)
        }
    }

    /// libmicrohttpd 0.9.75 parses the request line, headers and framing itself and
    /// answers errors there before alertd's handler is ever called, with no hook to
    /// change the answer (README, Known limitations). What it sends is checked exactly,
    /// so that a change of libmicrohttpd (or of how alertd drives it) shows here.
    @Test(
        "garbage that libmicrohttpd answers itself gets its status, its HTML and a closed connection, byte for byte",
        arguments: RawCase.all.filter { if case .libmicrohttpd = $0.layer { true } else { false } })
    func garbageAnsweredByLibmicrohttpd(raw: RawCase) async throws {
        guard case .libmicrohttpd(let title, let headTwice) = raw.layer else { return }
        try await WireFixture.expectHarmless { connection in
            guard let response = await Self.answer(to: raw, on: connection) else { return }
            #expect(response.status == raw.status, "\(response.status): \(response.text.prefix(200).debugDescription)")
            #expect(response.header("Connection") == "close")
            #expect(response.header("Content-Type") == nil, "libmicrohttpd's error answers have no Content-Type")
            #expect(await connection.awaitClose(timeout: .seconds(10)), "the connection stayed open after \(raw.name)")
            let html = "<html><head><title>\(title)</title></head>"
            if !headTwice {
                #expect(response.text.hasPrefix(html) && response.text.hasSuffix("</body></html>"), "\(response.text.debugDescription)")
                #expect(connection.unread.isEmpty, "more after the answer: \(String(decoding: connection.unread, as: UTF8.self))")
                return
            }
            // For a Content-Length it cannot read, 0.9.75 builds its response head twice
            // (connection.c: the HEADERS_RECEIVED step overwrites the error state that
            // parse_connection_headers set, so the reply is started a second time): one
            // head, whose Content-Length counts the HTML, then the same head again, then
            // the HTML; then it closes. A client reads the second head as the body.
            let rest = response.text + String(decoding: connection.unread, as: UTF8.self)
            let head = "HTTP/1.1 \(raw.status) "
            #expect(response.text.hasPrefix(head), "the body is not the head again: \(response.text.debugDescription)")
            let parts = rest.components(separatedBy: "\r\n\r\n")
            #expect(parts.count == 2, "not one head then the HTML: \(rest.debugDescription)")
            if parts.count == 2 {
                #expect(parts[1].hasPrefix(html) && parts[1].hasSuffix("</body></html>"), "\(parts[1].debugDescription)")
                #expect(Int(response.header("Content-Length") ?? "") == parts[1].utf8.count, "the first head's length is the HTML's")
                let repeated = parts[0].split(separator: "\r\n").map(String.init)
                let first =
                    ["HTTP/1.1 \(raw.status) \(raw.reason)"] + response.headers.filter { $0.0 != "Date" }.map { "\($0.0): \($0.1)" }
                #expect(repeated.filter { !$0.hasPrefix("Date:") } == first, "the second head is not the first one again")
            }
        }
    }

    @Test(
        "a request whose framing alertd refuses gets one answer and a closed connection: a request hidden in its body is never read",
        arguments: [
            ["Content-Length: N", "Content-Length: N"], ["Content-Length: N", "Content-Length: 0xH"], ["Transfer-Encoding: gzip"],
        ])
    func refusedFramingClosesTheConnection(headers: [String]) async throws {
        let alert = #"{"title":"smuggled","buttons":[{"title":"Yes"}]}"#
        // What a proxy that took the first Content-Length for the body would pass on as a request of its own.
        let hidden =
            "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(alert.utf8.count)\r\n\r\n" + alert
        let body = alert + hidden
        let head = headers.map {
            $0.replacingOccurrences(of: "N", with: "\(body.utf8.count)")
                .replacingOccurrences(of: "0xH", with: "0x" + String(body.utf8.count, radix: 16))
        }
        let bytes =
            "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + head.map { $0 + "\r\n" }.joined() + "\r\n" + body
        try await WireFixture.expectHarmless { connection in
            try? await connection.send(Array(bytes.utf8))
            let response = try await connection.readResponse()
            WireFixture.expectProblem(response, status: 400, code: "bad-request")
            #expect(response.header("Connection") == "close")
            #expect(await connection.awaitClose(timeout: .seconds(10)), "the connection stayed open")
            #expect(connection.unread.isEmpty, "a second answer followed: \(String(decoding: connection.unread, as: UTF8.self))")
        }
    }

    /// Writes the case's bytes and reads the answer; nil (and an issue) when there is none.
    static func answer(to raw: RawCase, on connection: RawConnection, sourceLocation: SourceLocation = #_sourceLocation) async
        -> TestResponse?
    {
        do {
            try await connection.send(raw.bytes)
        } catch {
            // The daemon may stop reading early; what it answered is still to be read.
        }
        do {
            return try await connection.readResponse()
        } catch {
            Issue.record("no answer to \(raw.name): \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }
}

/// Bytes written as they are, and the answer they must get.
struct RawCase: Sendable, CustomTestStringConvertible {
    /// Who answers: bytes that are not parseable HTTP never reach alertd's handler.
    enum Layer: Sendable, Equatable {
        /// alertd's handler: a problem+json answer.
        case alertd
        /// libmicrohttpd's parser answers on its own: status right, body its own HTML with
        /// this title, `Connection: close`; `headTwice`: its response head sent twice
        /// (0.9.75, for a Content-Length it cannot read).
        case libmicrohttpd(title: String, headTwice: Bool = false)
        /// Not HTTP at all: libmicrohttpd closes the connection without an answer.
        case closes
    }

    /// libmicrohttpd's titles.
    static let malformed = Layer.libmicrohttpd(title: "Request malformed")
    static let tooBig = Layer.libmicrohttpd(title: "Request too big")

    /// The reason phrase libmicrohttpd puts on the status line.
    var reason: String {
        [
            400: "Bad Request", 413: "Content Too Large", 414: "URI Too Long", 431: "Request Header Fields Too Large",
            505: "HTTP Version Not Supported",
        ][status] ?? ""
    }

    let name: String
    let bytes: [UInt8]
    let status: Int
    /// nil: no code is spec'd for this status; any non-empty one will do.
    let code: String?
    let layer: Layer
    var testDescription: String { name }

    init(_ name: String, _ text: String, status: Int, code: String?, layer: Layer = .alertd) {
        self.init(name, bytes: Array(text.utf8), status: status, code: code, layer: layer)
    }

    init(_ name: String, bytes: [UInt8], status: Int, code: String?, layer: Layer = .alertd) {
        self.name = name
        self.bytes = bytes
        self.status = status
        self.code = code
        self.layer = layer
    }

    static let all: [RawCase] = {
        let alert = #"{"title":"smuggled","buttons":[{"title":"Yes"}]}"#
        let post = "POST /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        return [
            RawCase("a request line of one word", "GARBAGE\r\n\r\n", status: 400, code: "bad-request", layer: .closes),
            RawCase("binary junk", bytes: Array(1...8) + Array("\r\n\r\n".utf8), status: 400, code: "bad-request", layer: .closes),
            RawCase("an HTTP/0.9 request line", "GET /healthz\r\n\r\n", status: 400, code: "bad-request", layer: malformed),
            RawCase(
                "a request line without a target", "GET  HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 400, code: "bad-request",
                layer: malformed),
            RawCase(
                "a control character in the path", "GET /v1/clients/fix\u{01}ture/alerts HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 400,
                code: "bad-request"),
            RawCase(
                "an unknown method", "BREW /v1/clients/fixture/alerts HTTP/1.1\r\nHost: localhost\r\n\r\n", status: 405,
                code: "method-not-allowed"),
            RawCase(
                "an unknown HTTP version", "GET /healthz HTTP/9.9\r\nHost: localhost\r\n\r\n", status: 505, code: nil,
                layer: .libmicrohttpd(title: "Requested HTTP version is not supported")),
            RawCase(
                "a header line without a colon", "GET /healthz HTTP/1.1\r\nHost: localhost\r\nNoColonHere\r\n\r\n", status: 400,
                code: "bad-request", layer: malformed),
            RawCase(
                "a Content-Length that is not a number", post + "Content-Length: abc\r\n\r\n" + alert, status: 400, code: "bad-request",
                layer: .libmicrohttpd(title: "Request malformed", headTwice: true)),
            RawCase(
                "a negative Content-Length", post + "Content-Length: -1\r\n\r\n" + alert, status: 400, code: "bad-request",
                layer: .libmicrohttpd(title: "Request malformed", headTwice: true)),
            RawCase(
                "two different Content-Length values",
                post + "Content-Length: \(alert.utf8.count)\r\nContent-Length: \(alert.utf8.count + 1)\r\n\r\n" + alert + " ",
                status: 400, code: "bad-request"),
            // Issue 44 item 11: where libmicrohttpd and a proxy in front could read a request's end
            // differently, alertd refuses what it sees, once, and closes.
            RawCase(
                "two equal Content-Length headers",
                post + "Content-Length: \(alert.utf8.count)\r\nContent-Length: \(alert.utf8.count)\r\n\r\n" + alert,
                status: 400, code: "bad-request"),
            RawCase(
                "a second Content-Length header in hexadecimal",
                post + "Content-Length: \(alert.utf8.count)\r\nContent-Length: 0x\(String(alert.utf8.count, radix: 16))\r\n\r\n" + alert,
                status: 400, code: "bad-request"),
            RawCase(
                "a Transfer-Encoding other than chunked", post + "Transfer-Encoding: gzip\r\n\r\n" + alert, status: 400,
                code: "bad-request"),
            RawCase(
                "chunked after another Transfer-Encoding", post + "Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n",
                status: 400, code: "bad-request"),
            RawCase(
                "a Content-Length listing its value twice",
                post + "Content-Length: \(alert.utf8.count), \(alert.utf8.count)\r\n\r\n" + alert,
                status: 400, code: "bad-request", layer: .libmicrohttpd(title: "Request malformed", headTwice: true)),
            RawCase(
                "a Content-Length with a plus sign", post + "Content-Length: +\(alert.utf8.count)\r\n\r\n" + alert, status: 400,
                code: "bad-request", layer: .libmicrohttpd(title: "Request malformed", headTwice: true)),
            RawCase(
                "a Content-Length in hexadecimal", post + "Content-Length: 0x\(String(alert.utf8.count, radix: 16))\r\n\r\n" + alert,
                status: 400, code: "bad-request", layer: .libmicrohttpd(title: "Request malformed", headTwice: true)),
            RawCase(
                "a chunk size that is not hexadecimal", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + alert + "\r\n0\r\n\r\n",
                status: 400, code: "bad-request", layer: malformed),
            RawCase(
                "a Content-Length larger than any integer", post + "Content-Length: 99999999999999999999999\r\n\r\n" + alert,
                status: 413, code: "payload-too-large", layer: .libmicrohttpd(title: "Request content too large", headTwice: true)),
            RawCase(
                "a header block larger than the daemon takes",
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: \(String(repeating: "p", count: 9000))\r\n\r\n", status: 431,
                code: nil,
                layer: tooBig),
            RawCase(
                "a request target longer than the daemon takes",
                "GET /v1/clients/fixture/alerts?state=\(String(repeating: "q", count: 9000)) HTTP/1.1\r\nHost: localhost\r\n\r\n",
                status: 414, code: nil, layer: tooBig),
        ]
    }()
}

// MARK: - Fixture

/// A daemon holding alerts in known states on client `fixture` (answered, withdrawn,
/// displayed, queued) and one on `bystander`, and the checks the wire tests repeat.
enum WireFixture {
    static let allStates = "queued,displayed,answered,dismissed,expired,withdrawn"

    /// Starts a daemon with the fixture, runs `send` on a new connection, then checks that
    /// the daemon still answers `GET /healthz` on a fresh connection and that the store is
    /// exactly as before.
    static func expectHarmless(
        sourceLocation: SourceLocation = #_sourceLocation, _ send: (RawConnection) async throws -> Void
    ) async throws {
        let daemon = try await Daemon.start(.init(config: "durability: normal\nlog:\n  level: info\n"))
        defer { daemon.cleanup() }
        let api = daemon.client(timeout: .seconds(10))
        let alert = #"{"title":"T","buttons":[{"title":"Yes"},{"title":"No"}]}"#
        let answered = try await api.postAlert("fixture", alert)
        try #require(try await api.choose("fixture", id(answered), #"{"button":"Yes"}"#).status == 200)
        let withdrawn = try await api.postAlert("fixture", alert)
        try #require(try await api.delete("/v1/clients/fixture/alerts/\(id(withdrawn))").status == 200)
        _ = try await api.postAlert("fixture", alert)
        _ = try await api.postAlert("fixture", alert)
        _ = try await api.postAlert("bystander", alert)
        let before = try await snapshot(api)
        let connection = try await daemon.rawConnection()
        do {
            try await send(connection)
        } catch {
            Issue.record(error, sourceLocation: sourceLocation)
        }
        await connection.close()

        #expect(daemon.isRunning, "alertd exited: \(daemon.stderrText.suffix(2000))", sourceLocation: sourceLocation)
        let health = try await daemon.rawConnection().request("GET", "/healthz")
        #expect(health.status == 200, "GET /healthz on a fresh connection answered \(health.status)", sourceLocation: sourceLocation)
        let after = try await snapshot(api)
        #expect(after == before, "the store changed", sourceLocation: sourceLocation)
    }

    /// `GET /v1/clients` and both clients' alerts in every state.
    static func snapshot(_ api: any TestClient) async throws -> [String] {
        var pages = [try await api.get("/v1/clients").text]
        for client in ["fixture", "bystander"] {
            pages.append(try await api.get("/v1/clients/\(client)/alerts?state=\(allStates)&limit=1000").text)
        }
        return pages
    }

    /// Checks an RFC 9457 problem: status, content type, the five members, the code
    /// (any non-empty one when `code` is nil).
    static func expectProblem(_ response: TestResponse, status: Int, code: String?, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            response.status == status, "status \(response.status), wanted \(status): \(response.text.prefix(300))",
            sourceLocation: sourceLocation)
        let contentType = response.header("Content-Type") ?? "<none>"
        #expect(contentType.hasPrefix("application/problem+json"), "Content-Type \(contentType)", sourceLocation: sourceLocation)
        guard let problem = try? response.jsonObject() else {
            Issue.record("the body is not a JSON object: \(response.text.prefix(300).debugDescription)", sourceLocation: sourceLocation)
            return
        }
        for member in ["type", "title"] {
            #expect(
                (problem[member] as? String)?.isEmpty == false, "\(member): \(problem[member] ?? "missing")", sourceLocation: sourceLocation
            )
        }
        #expect(problem["detail"] is String, "detail: \(problem["detail"] ?? "missing")", sourceLocation: sourceLocation)
        #expect(problem["status"] as? Int == response.status, sourceLocation: sourceLocation)
        if let code {
            #expect(
                problem["code"] as? String == code, "code \(problem["code"] ?? "missing"), wanted \(code)", sourceLocation: sourceLocation)
        } else {
            #expect((problem["code"] as? String)?.isEmpty == false, "code: \(problem["code"] ?? "missing")", sourceLocation: sourceLocation)
        }
    }

    /// A valid alert (with a button, so it is never dismissed) padded with spaces to `size` bytes.
    static func paddedAlert(size: Int, title: String = "padded") -> [UInt8] {
        let json = Array(#"{"title":"\#(title)","buttons":[{"title":"Yes"}]}"#.utf8)
        return json + [UInt8](repeating: 0x20, count: size - json.count)
    }

    /// A whole `POST …/alerts` with a chunked body cut into `chunkSize` pieces.
    static func chunkedPost(_ body: [UInt8], chunkSize: Int, client: String = "fixture") -> [UInt8] {
        var wire = Array(
            "POST /v1/clients/\(client)/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                .utf8)
        var offset = 0
        while offset < body.count {
            let piece = body[offset..<min(offset + chunkSize, body.count)]
            wire += Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]
            offset += piece.count
        }
        return wire + Array("0\r\n\r\n".utf8)
    }
}
