import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The terminal's size (`TIOCGWINSZ` on stdout), and its changes (SIGWINCH).
enum TerminalSize {
    static func current() -> (columns: Int, rows: Int)? {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return (Int(size.ws_col), Int(size.ws_row))
    }

    /// Calls `changed` with the new size after each SIGWINCH, until the source is cancelled.
    static func follow(_ changed: @escaping @Sendable ((columns: Int, rows: Int)) -> Void) -> any DispatchSourceSignal {
        signal(SIGWINCH, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        source.setEventHandler {
            if let size = current() { changed(size) }
        }
        source.resume()
        return source
    }
}

/// Keys without Enter and without echo while the console runs; the old mode comes back after.
final class RawTerminal {
    private var original = termios()
    private let active: Bool

    init() {
        active = tcgetattr(STDIN_FILENO, &original) == 0
        guard active else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        // The alternate screen and a hidden cursor, so the shell's screen comes back untouched.
        FileHandle.standardOutput.write(Data("\u{1B}[?1049h\u{1B}[?25l".utf8))
    }

    func restore() {
        FileHandle.standardOutput.write(Data("\u{1B}[?25h\u{1B}[?1049l".utf8))
        if active { tcsetattr(STDIN_FILENO, TCSANOW, &original) }
    }
}

/// Reads keys on a thread of its own (a blocking read has no place on the task pool).
enum KeyReader {
    static func start(into sink: AsyncStream<Console.Event>.Continuation) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 16)
            while true {
                let count = read(STDIN_FILENO, &buffer, buffer.count)
                if count <= 0 {
                    sink.yield(.key([UInt8(ascii: "q")]))
                    return
                }
                sink.yield(.key(Array(buffer[0..<count])))
            }
        }
        thread.start()
    }
}
