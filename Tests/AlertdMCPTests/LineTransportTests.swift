import Foundation
import Testing

@testable import AlertdMCP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// MCP's stdio framing over real pipes: one message a line, however the bytes arrive.
@Suite struct LineTransportTests {
    func pipePair() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count)
    }

    @Test func readsEachLineAsOneMessageUntilTheEnd() async throws {
        let input = pipePair()
        let transport = LineTransport(input: input.read, output: STDERR_FILENO)
        try await transport.connect()
        var messages = await transport.receive().makeAsyncIterator()
        write(input.write, "{\"a\":1}\n\n{\"b\":")
        #expect(try await messages.next() == Data("{\"a\":1}".utf8))
        write(input.write, "2}\r\n{\"c\":3}\n")
        #expect(try await messages.next() == Data("{\"b\":2}".utf8))
        #expect(try await messages.next() == Data("{\"c\":3}".utf8))
        close(input.write)
        #expect(try await messages.next() == nil)
        close(input.read)
    }

    @Test func writesEachMessageAndANewline() async throws {
        let output = pipePair()
        let transport = LineTransport(input: STDIN_FILENO, output: output.write)
        try await transport.send(Data("{\"jsonrpc\":\"2.0\"}".utf8))
        close(output.write)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(output.read, $0.baseAddress, $0.count) }
        #expect(String(decoding: buffer[..<max(count, 0)], as: UTF8.self) == "{\"jsonrpc\":\"2.0\"}\n")
        close(output.read)
    }
}
