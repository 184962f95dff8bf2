public import Foundation
public import Logging
public import MCP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// MCP's stdio transport: newline-delimited JSON-RPC messages on two file descriptors
/// (stdin and stdout by default).
///
/// The SDK has one (`StdioTransport`), but it sets `O_NONBLOCK` on stdin and stdout —
/// flags that live in the open file description, shared with the parent process (on a
/// terminal, the shell is left with a non-blocking tty) — and polls the input every 10 ms
/// while nothing arrives, for as long as the agent's session lasts. This one reads with a
/// plain blocking `read(2)` on a thread of its own, so an idle server does nothing at all.
public actor LineTransport: Transport {
    public nonisolated let logger: Logger
    private let input: Int32
    private let output: Int32
    private let messages: AsyncThrowingStream<Data, any Error>
    private let sink: AsyncThrowingStream<Data, any Error>.Continuation
    private var reading = false

    /// The longest message read: a longer line is dropped (alertd's own bodies are at most 64 KiB).
    static let maxLine = 4 << 20

    public init(
        input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO,
        logger: Logger = Logger(label: "alertctl.mcp", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.input = input
        self.output = output
        self.logger = logger
        let (messages, sink) = AsyncThrowingStream<Data, any Error>.makeStream()
        self.messages = messages
        self.sink = sink
    }

    public func connect() async throws {
        guard !reading else { return }
        reading = true
        let (input, sink) = (input, sink)
        // A thread, not a task: the read blocks until the client writes or closes the pipe.
        Thread { Self.readLines(from: input, into: sink) }.start()
    }

    /// Reads until end of file, yielding each non-empty line without its newline (and a CR before it).
    static func readLines(from descriptor: Int32, into sink: AsyncThrowingStream<Data, any Error>.Continuation) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var line: [UInt8] = []
        var overlong = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            var start = 0
            while let newline = buffer[start..<count].firstIndex(of: UInt8(ascii: "\n")) {
                if !overlong {
                    line += buffer[start..<newline]
                    if line.last == UInt8(ascii: "\r") { line.removeLast() }
                    if !line.isEmpty { sink.yield(Data(line)) }
                }
                line.removeAll(keepingCapacity: true)
                overlong = false
                start = newline + 1
            }
            if !overlong {
                line += buffer[start..<count]
                if line.count > maxLine {
                    overlong = true
                    line.removeAll()
                }
            }
        }
        sink.finish()
    }

    public func disconnect() async {
        sink.finish()
    }

    /// Writes one message and its newline. Each message goes out whole: the actor runs one send at a time.
    public func send(_ data: Data) async throws {
        var bytes = [UInt8](data)
        bytes.append(UInt8(ascii: "\n"))
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(output, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw MCPError.transportError(POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO))
            }
            offset += written
        }
    }

    public func receive() -> AsyncThrowingStream<Data, any Error> {
        messages
    }
}
