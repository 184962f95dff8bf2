import AlertdClient
import AlertdWire
import ArgumentParser
import Foundation
import NIOConcurrencyHelpers

/// `--url`, `--token`, `--cacert`, `--insecure`, `--json`: on every command, before its name or after.
struct Connection: ParsableArguments {
    @Option(
        name: .long,
        help: "The daemon's URL (default: $ALERTD_URL, else url in alertctl.yaml, else http://127.0.0.1:8080).")
    var url: String?

    @Option(name: .long, help: "The Bearer token (default: $ALERTD_TOKEN, else token or token_file in alertctl.yaml).")
    var token: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A PEM file of the CA (or the self-signed certificate) to trust for an https daemon "
                + "(default: $ALERTD_CACERT, else cacert in alertctl.yaml).",
            valueName: "file"))
    var cacert: String?

    @Flag(name: .long, help: "Do not check an https daemon's certificate at all (a test daemon only).")
    var insecure = false

    @Flag(
        name: .long,
        help: "Print the daemon's answer as it wrote it (JSON) on stdout; a refusal (exit 3) prints its problem+json object there too.")
    var json = false

    /// The options that every command takes, by name: how many values each takes.
    static let globalOptions: [String: Int] = ["--url": 1, "--token": 1, "--cacert": 1, "--insecure": 0, "--json": 0]

    /// The settings in force: these flags, then the environment, then the config file.
    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws(Failure) -> Settings {
        let file = try ConfigFile.defaultPath(environment: environment).flatMap { path throws(Failure) in
            try ConfigFile.load(path: path, environment: environment)
        }
        return try Settings.resolve(flags: self, environment: environment, file: file)
    }

    /// A client for the settings in force. With `--json` it keeps the daemon's answers, for ``printAnswer(_:)``.
    func client() throws(Failure) -> AlertdClient {
        let settings = try settings()
        for warning in settings.warnings() {
            FileHandle.standardError.write(Data("alertctl: warning: \(Terminal.safe(warning))\n".utf8))
        }
        let trust = try settings.trust()
        var client: AlertdClient
        do {
            client = try AlertdClient(url: settings.url, token: settings.token, trust: trust)
        } catch {
            throw Failure(error)
        }
        if json {
            let answers = answers
            client.answerObserver = { answer in answers.keep(answer) }
        }
        return client
    }

    /// Runs `body`, turning an ``AlertdError`` into its message on stderr and exit code.
    func run<T>(_ body: (AlertdClient) async throws -> T) async throws -> T {
        let client = try client()
        do {
            return try await body(client)
        } catch let error as AlertdError {
            throw failure(error)
        }
    }

    /// The ``Failure`` of an error; a refused token (401) says which of `--token`,
    /// `$ALERTD_TOKEN` and the config file gave it, or that none did, instead of the
    /// daemon's HTTP advice.
    func failure(_ error: AlertdError) -> Failure {
        var failure = Failure(error)
        if error.code == .unauthorized {
            failure.description = Self.unauthorized(error.problem?.detail, settings: try? settings())
        }
        return failure
    }

    /// What to say when the daemon refuses the token (401): where the token came from, or
    /// that there was none, and how to give one.
    static func unauthorized(_ detail: String?, settings: Settings?) -> String {
        let file = settings?.file ?? ConfigFile.defaultPath(environment: ProcessInfo.processInfo.environment) ?? "alertctl.yaml"
        let ways = "--token, $ALERTD_TOKEN, or token (or token_file) in \(file)"
        guard let settings, settings.token != nil, let source = settings.tokenSource else {
            return "alertd needs a token and none was given: pass one with \(ways)"
        }
        let from =
            source == settings.file
            ? "token in \(source)" : source.hasPrefix("/") ? "the token file \(source) (token_file in \(file))" : source
        let why = detail.map { " (\($0))" } ?? ""
        return "alertd refused the token from \(from)\(why); give another with \(ways). "
            + "alertctl whoami shows which token is used"
    }

    /// The daemon's answers to this command, as they arrived. Not an option: left out of `CodingKeys`.
    let answers = Answers()

    enum CodingKeys: String, CodingKey {
        case url, token, cacert, insecure, json
    }

    /// Prints the body of the daemon's last successful answer as it wrote it (`null` for a 204).
    func printAnswer() {
        let body = answers.last?.body ?? []
        Self.write(json: body.isEmpty ? Array("null".utf8) : body)
    }

    /// Prints the pages of a paged list as one answer: `{"alerts": [...], "next_cursor": null}`.
    /// One page is printed as the daemon wrote it; several are joined with each element as the
    /// daemon wrote it (its member order, nulls and number spellings).
    func printPages(member: String) {
        Self.write(json: Self.joinPages(answers.all.map(\.body), member: member))
    }

    /// JSON and a newline on stdout: the bytes as they are for a pipe or a file; on a terminal
    /// with C1 controls and bidi overrides escaped (``Terminal/safe(json:)``), the same JSON.
    static func write(json bytes: [UInt8]) {
        let shown = isatty(STDOUT_FILENO) == 1 ? Terminal.safe(json: bytes) : bytes
        FileHandle.standardOutput.write(Data(shown + [UInt8(ascii: "\n")]))
    }

    static func joinPages(_ pages: [[UInt8]], member: String) -> [UInt8] {
        if pages.count == 1 { return pages[0] }
        var elements: [JSONValue] = []
        var cursor: JSONValue = .null
        for page in pages {
            guard let object = try? JSONParser.parse(page).objectValue else { continue }
            elements += object[member]?.arrayValue ?? []
            cursor = object["next_cursor"] ?? .null
        }
        var writer = JSONWriter()
        writer.value(.object(JSONObject([(key: member, value: .array(elements)), (key: "next_cursor", value: cursor)])))
        return writer.bytes
    }
}

/// The 2xx answers a command received, in order (``AlertdClient/answerObserver``).
final class Answers: Sendable {
    private let list = NIOLockedValueBox<[RawAnswer]>([])

    private let refused = NIOLockedValueBox<RawAnswer?>(nil)

    func keep(_ answer: RawAnswer) {
        guard (200..<300).contains(answer.status) else {
            if answer.status >= 400, !answer.body.isEmpty { refused.withLockedValue { $0 = answer } }
            return
        }
        list.withLockedValue { $0.append(answer) }
    }

    /// The daemon's last refusal (its problem+json), for `--json` to print as it was written.
    var lastRefusal: RawAnswer? { refused.withLockedValue { $0 } }

    var all: [RawAnswer] { list.withLockedValue { $0 } }
    var last: RawAnswer? { list.withLockedValue { $0.last } }
}

/// Where alertctl finds its daemon, token and trust: a flag, else the environment, else the config file.
struct Settings: Equatable {
    var url: String
    var token: String?
    /// Where the token came from: `--token`, `$ALERTD_TOKEN`, the config file's path; nil without one.
    var tokenSource: String?
    var cacert: String?
    var insecure: Bool
    /// The config file read, if any.
    var file: String?

    static let defaultURL = "http://127.0.0.1:8080"

    static func resolve(flags: Connection, environment: [String: String], file: ConfigFile?) throws(Failure) -> Settings {
        // An empty variable counts as unset: `ALERTD_TOKEN= alertctl …` falls through to the file.
        func variable(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        var settings = Settings(
            url: flags.url ?? variable("ALERTD_URL") ?? file?.url ?? defaultURL, token: nil, tokenSource: nil,
            cacert: flags.cacert ?? variable("ALERTD_CACERT") ?? file?.cacert, insecure: flags.insecure, file: file?.path)
        if let token = flags.token {
            (settings.token, settings.tokenSource) = (token, "--token")
        } else if let token = variable("ALERTD_TOKEN") {
            (settings.token, settings.tokenSource) = (token, "$ALERTD_TOKEN")
        } else if let file, let token = file.token {
            (settings.token, settings.tokenSource) = (token, file.path)
        } else if let file, let path = file.tokenFile {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw Failure("cannot read the token file \(path) (token_file in \(file.path))", code: Exit.usage)
            }
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw Failure("the token file \(path) is empty", code: Exit.usage) }
            (settings.token, settings.tokenSource) = (token, path)
        }
        if flags.insecure, flags.cacert != nil {
            throw Failure("--cacert and --insecure contradict each other: give one", code: Exit.usage)
        }
        // --insecure for one command wins over a CA from the environment or the file.
        if settings.insecure { settings.cacert = nil }
        return settings
    }

    /// What puts the token at risk in these settings, one line each (alertctl prints them
    /// on stderr and goes on): a token on the command line, a token sent in clear to
    /// another machine, a file holding the token that other users may read. `mode` reads a
    /// file's permission bits (stands for `stat` in tests).
    func warnings(mode: (String) -> mode_t? = Settings.mode(of:)) -> [String] {
        guard token != nil, let source = tokenSource else { return [] }
        var warnings: [String] = []
        if source == "--token" {
            warnings.append(
                "a token given with --token is visible to every user of this machine (ps, /proc) and stays in the shell's "
                    + "history; give it in $ALERTD_TOKEN or token_file in alertctl.yaml")
        }
        if let components = URLComponents(string: url), components.scheme?.lowercased() == "http", let host = components.host,
            !Hosts.isLoopback(host)
        {
            warnings.append(
                "the token goes to \(host) over plain http: anyone on the path can read it and act as you; use https")
        }
        if source.hasPrefix("/"), let bits = mode(source), bits & 0o044 != 0 {
            warnings.append(
                "\(source) holds the token and other users may read it (mode \(String(bits & 0o777, radix: 8))): chmod 600 \(source)")
        }
        return warnings
    }

    /// A file's permission bits; nil when it cannot be read.
    static func mode(of path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    func trust() throws(Failure) -> CertificateTrust {
        if insecure { return .insecure }
        guard let cacert else { return .system }
        do {
            return try .pemFile(cacert)
        } catch {
            throw Failure(error)
        }
    }
}
