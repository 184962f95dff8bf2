import AlertdCore
import AlertdWire
import Foundation
public import Logging
import NIOConcurrencyHelpers
public import Synchronization

/// One logfmt line per event on stderr:
/// `ts=2026-11-21T19:01:00.123Z level=info msg="listening" address=127.0.0.1:8080`.
public struct LogfmtHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    /// The process-wide level, `log.level`: a reload changes it for every logger at once.
    public static let level = Atomic<UInt8>(levelCode(.info))
    public var logLevel: Logger.Level {
        get { Self.levels[Int(Self.level.load(ordering: .relaxed))] }
        set { Self.level.store(Self.levelCode(newValue), ordering: .relaxed) }
    }
    private let label: String
    private let clock = SystemClock()

    public init(label: String, level: Logger.Level) {
        self.label = label
        Self.level.store(Self.levelCode(level), ordering: .relaxed)
    }

    private static let levels = Logger.Level.allCases
    static func levelCode(_ level: Logger.Level) -> UInt8 { UInt8(Logger.Level.allCases.firstIndex(of: level)!) }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var line = "ts=\(clock.now().rfc3339) level=\(event.level) msg=\(Self.quote(event.message.description))"
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for key in merged.keys.sorted() {
            line += " \(key)=\(Self.quote("\(merged[key]!)"))"
        }
        line += "\n"
        StandardError.write(line)
    }

    /// Quotes a value when it holds spaces, quotes, `=` or control characters.
    static func quote(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty
            || value.unicodeScalars.contains {
                $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F
            }
        guard needsQuotes else { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// Whole-line writes to stderr, so concurrent lines never interleave.
enum StandardError {
    private static let lock = NIOLock()

    static func write(_ text: String) {
        lock.withLock {
            var bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { buffer in
                    Foundation.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                }
                if written <= 0 { break }
                offset += written
            }
        }
    }
}

extension Logger.Level {
    /// The §8 `log.level` names.
    init?(configName: String) {
        switch configName {
        case "debug": self = .debug
        case "info": self = .info
        case "warning": self = .warning
        case "error": self = .error
        default: return nil
        }
    }
}
