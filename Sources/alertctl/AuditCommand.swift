import AlertdClient
import AlertdReceipts
import AlertdWire
import ArgumentParser
import Foundation

/// `alertctl audit verify FILE [--keys FILE|URL]`: the receipts of an audit export (SPEC §14)
/// checked offline: every signature, the `seq` without gaps, the hash chain.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Exports and checks signed receipts of decisions (SPEC §14).", subcommands: [Export.self, Verify.self])

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Writes the daemon's audit log as JSON lines: its receipts in seq order.",
            discussion: """
                Writes every receipt after seq --after (default 0: from the first kept) to stdout, one \
                JSON object per line, each as the daemon signed it (canonical JSON, RFC 8785), in seq \
                order, reading GET /v1/audit a page at a time. It needs an admin token of every client \
                (clients: ["*"]). Resumable: it ends by saying, on stderr, the last seq it wrote; \
                the next export with --after that seq appends what came since, and \
                `alertctl audit verify` checks the files joined as one chain. Exit codes: 0 exported \
                (also none); 3 the daemon refused; 4 it could not be reached.
                """)

        @OptionGroup var connection: Connection

        @Option(help: "Export the receipts after this seq (the last one of an earlier export).")
        var after: Int = 0

        func run() async throws {
            try await guarded {
                guard after >= 0 else { throw Failure("--after must be a seq, 0 or more, not \(after)", code: Exit.usage) }
                let (count, first, last) = try await connection.run { alertd -> (Int, Int?, Int) in
                    var next = after
                    var (count, first): (Int, Int?) = (0, nil)
                    while true {
                        let page = try await alertd.audit(after: next, limit: 1000)
                        if page.receipts.isEmpty { break }
                        var lines: [UInt8] = []
                        for receipt in page.receipts {
                            lines += try receipt.encoded()
                            lines.append(UInt8(ascii: "\n"))
                        }
                        FileHandle.standardOutput.write(Data(lines))
                        count += page.receipts.count
                        first = first ?? page.receipts.first?.receipt.seq
                        next = page.nextAfter
                    }
                    return (count, first, next)
                }
                if let first {
                    complain("exported \(Verify.count(count)), seq \(first) to \(last); resume with --after \(last)")
                } else {
                    complain("no receipts after seq \(after)")
                }
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verifies receipts (JSON lines): every signature, the sequence and the hash chain.",
            discussion: """
                FILE holds one receipt per line, in seq order, as alertd exports them (- reads stdin). \
                Every receipt's Ed25519 signature is checked with the key its key_id names, each seq \
                must follow the one before, and each prev_sha256 must be the SHA-256 of the receipt \
                before it; a file that starts at seq 1 must start from 64 zeros. The first receipt that \
                fails is named, by line, seq and alert, with the reason; nothing after it is trusted. \
                The keys are --keys FILE (a JWKS, as GET /v1/keys answers, or a PEM public key), or \
                --keys URL (a daemon: its /v1/keys), else the daemon of --url, $ALERTD_URL or \
                alertctl.yaml. With a key file nothing is asked of any daemon: the check is offline. \
                Exit codes: 0 every receipt verified; 1 a receipt failed; 3 the daemon refused; \
                4 it could not be reached; 64 bad usage (no such file, keys that do not read).
                """)

        @OptionGroup var connection: Connection

        @Argument(help: "The receipts, one JSON object per line (- for stdin).")
        var file: String

        @Option(
            help: ArgumentHelp(
                "The public keys: a JWKS or PEM file, or a daemon's URL (its /v1/keys). Default: the daemon of --url.",
                valueName: "file|url"))
        var keys: String?

        func run() async throws {
            try await guarded {
                let text = try Self.read(file)
                let keySet = try await keySet()
                var verifier = ChainVerifier(keys: keySet)
                var failedLine: Int?
                for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    if verifier.check(line: line) != nil {
                        failedLine = index + 1
                        break
                    }
                }
                let report = verifier.report
                if connection.json { Connection.write(json: Self.json(report, line: failedLine)) }
                if let failure = report.failure, let failedLine {
                    complain("\(file): line \(failedLine): FAILED at \(failure); \(Self.count(report.count)) before it verified")
                    throw ExitCode(1)
                }
                if !connection.json { print("\(file): \(report)") }
            }
        }

        /// The file's text, or stdin's for `-`.
        static func read(_ path: String) throws(Failure) -> String {
            if path == "-" { return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) }
            guard let data = FileManager.default.contents(atPath: path) else {
                let reason = FileManager.default.fileExists(atPath: path) ? "it is not readable by this user" : "there is no such file"
                throw Failure("cannot read \(path): \(reason)", code: Exit.usage)
            }
            return String(decoding: data, as: UTF8.self)
        }

        /// The keys of `--keys`, or of the connection's daemon.
        func keySet() async throws -> ReceiptKeySet {
            guard let keys, !keys.hasPrefix("http://"), !keys.hasPrefix("https://") else {
                var settings = connection
                if let keys {
                    // A daemon's URL, or its /v1/keys.
                    settings.url = keys.hasSuffix("/v1/keys") ? String(keys.dropLast("/v1/keys".count)) : keys
                }
                return try await settings.run { alertd in try await alertd.receiptKeys() }
            }
            let text = try Self.read(keys)
            do {
                if text.contains("-----BEGIN ") { return ReceiptKeySet([try ReceiptPublicKey(pem: text)]) }
                return try ReceiptKeySet(jwks: try JSONParser.parse(text))
            } catch {
                throw Failure("--keys \(keys): not a JWKS of Ed25519 keys nor a PEM Ed25519 key: \(error)", code: Exit.usage)
            }
        }

        /// `--json`: `{"ok", "receipts", "first_seq", "last_seq", "head_sha256", "key_ids", "first_link_checked", "failure"}`.
        static func json(_ report: ChainReport, line: Int?) -> [UInt8] {
            var failure: JSONValue = .null
            if let found = report.failure {
                let (code, detail): (String, String) =
                    switch found.reason {
                    case .malformed(let detail): ("malformed", detail)
                    case .unknownKey: ("unknown-key", found.reason.description)
                    case .badSignature: ("bad-signature", found.reason.description)
                    case .sequence: ("seq", found.reason.description)
                    case .brokenLink: ("broken-link", found.reason.description)
                    }
                failure = .object([
                    "line": line.map { .number(JSONNumber($0)) } ?? .null, "receipt": .number(JSONNumber(found.position)),
                    "seq": found.seq.map { .number(JSONNumber($0)) } ?? .null, "alert_id": found.alertID.map(JSONValue.string) ?? .null,
                    "reason": .string(code), "detail": .string(detail),
                ])
            }
            let value: JSONValue = .object([
                "ok": .bool(report.isValid), "receipts": .number(JSONNumber(report.count)),
                "first_seq": report.firstSeq.map { .number(JSONNumber($0)) } ?? .null,
                "last_seq": report.head.map { .number(JSONNumber($0.seq)) } ?? .null,
                "head_sha256": report.head.map { .string($0.sha256) } ?? .null,
                "first_link_checked": .bool(report.firstLinkChecked), "key_ids": .array(report.keyIDs.map(JSONValue.string)),
                "failure": failure,
            ])
            var writer = JSONWriter()
            writer.value(value)
            return writer.bytes
        }

        static func count(_ n: Int) -> String { "\(n) receipt\(n == 1 ? "" : "s")" }
    }
}

extension Audit.Verify: ConnectedCommand {}
extension Audit.Export: ConnectedCommand {}
