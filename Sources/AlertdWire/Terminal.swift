import Foundation

// Text that anyone may have written (an alert's title, a comment, a problem's detail, an MCP
// client's name) made harmless for a terminal: alertctl prints it, `watch` draws it, the MCP
// server hands it to an agent whose host shows it on a terminal (SPEC §7; issue 44, item 10).

/// Text from the daemon made harmless for a terminal.
///
/// An alert's title, message, buttons and metadata are anyone's input: an escape sequence in
/// them could recolour, move the cursor, retitle the window or hide text on the screen of
/// whoever runs `alertctl list`. Every human-readable line alertctl prints, `watch` draws and
/// the MCP server returns goes through ``safe(_:newlines:)``; text kept for others to show
/// later (an MCP client's name in an alert's metadata) through ``stripped(_:limit:)``.
public enum Terminal {
    /// `text` with each control character (C0, DEL, C1: escape sequences among them) and each
    /// bidirectional override, which can make text read differently than it is, shown as `�`.
    /// A tab becomes a space; with `newlines`, line feeds stay.
    public static func safe(_ text: String, newlines: Bool = false) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A where newlines: scalars.append(scalar)
            case 0x09: scalars.append(" ")
            case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                scalars.append("\u{FFFD}")
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }
}

extension Terminal {
    /// JSON bytes with each C1 control and bidirectional override inside its strings written as
    /// a `\\u` escape: the same JSON value, harmless on a terminal. (The daemon escapes C0
    /// controls, ESC among them, itself; C1 and bidi characters it writes as UTF-8.) Outside
    /// strings JSON is ASCII, so replacing their UTF-8 sequences touches strings only.
    public static func safe(json bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        func escape(_ value: UInt32) { out += Array(String(format: "\\u%04x", value).utf8) }
        while index < bytes.count {
            let byte = bytes[index]
            // U+0080–U+009F: C2 80–C2 9F. U+061C: D8 9C. U+200E/F, U+202A–E: E2 80 8E/8F/AA–AE.
            // U+2066–9: E2 81 A6–A9.
            if byte == 0xC2, index + 1 < bytes.count, (0x80...0x9F).contains(bytes[index + 1]) {
                escape(UInt32(bytes[index + 1]))
                index += 2
            } else if byte == 0xD8, index + 1 < bytes.count, bytes[index + 1] == 0x9C {
                escape(0x061C)
                index += 2
            } else if byte == 0xE2, index + 2 < bytes.count,
                (bytes[index + 1] == 0x80 && [0x8E, 0x8F, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE].contains(bytes[index + 2]))
                    || (bytes[index + 1] == 0x81 && (0xA6...0xA9).contains(bytes[index + 2]))
            {
                escape(0x2000 + UInt32(bytes[index + 1] & 0x3F) << 6 + UInt32(bytes[index + 2] & 0x3F))
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }
}

extension Terminal {
    /// Whether `scalar` is a control character (C0, DEL, C1: escape sequences start with
    /// them) or a bidirectional override.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// `text` without its control characters and bidirectional overrides (a tab or a line
    /// break becomes a space), at most `limit` characters (cut with `…`): for text that is
    /// kept and shown later by others, such as an MCP client's name in an alert's metadata.
    public static func stripped(_ text: String, limit: Int = 200) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar == "\t" || scalar == "\n" || scalar == "\r" {
                scalars.append(" ")
            } else if !isUnsafe(scalar) {
                scalars.append(scalar)
            }
        }
        let clean = String(scalars)
        return clean.count <= limit ? clean : String(clean.prefix(max(0, limit - 1))) + "…"
    }
}
