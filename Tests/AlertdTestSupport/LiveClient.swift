import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// `TestClient` over AsyncHTTPClient, against a real alertd on `127.0.0.1:port`.
///
/// All live clients share one `HTTPClient` (one connection pool per host and port, never
/// shut down: it lives as long as the test process) that follows no redirect, decompresses
/// nothing, and keeps up to 2048 connections per daemon, so hundreds of long-polls can be
/// parked at once.
public struct LiveClient: TestClient {
    public let host: String
    public let port: Int
    /// Bounds each request from start to its last body byte.
    public let timeout: Duration

    public init(host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(30)) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }

    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 2048)
        configuration.timeout = .init(connect: .seconds(10))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) async throws -> TestResponse {
        var request = HTTPClientRequest(url: "http://\(host):\(port)\(path)")
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let (seconds, attoseconds) = timeout.components
        let deadline = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        let response = try await Self.http.execute(request, timeout: deadline)
        let received = try await response.body.collect(upTo: 64 << 20)
        return TestResponse(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: Array(buffer: received))
    }
}
