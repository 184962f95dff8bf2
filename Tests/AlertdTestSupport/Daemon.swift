// Starts the real `alertd` binary for the live tests and keeps it on a short leash:
// `setpriv --pdeathsig KILL` where it works (see `ChildProcess`), SIGKILL on `cleanup()`
// and on `deinit`. Every wait is async and holds no thread.

public import Foundation
import Glibc
import NIOConcurrencyHelpers

/// A running `alertd` on 127.0.0.1 with its own config file and state directory.
///
/// ```swift
/// let daemon = try await Daemon.start(.init(config: "log:\n  level: debug\n"))
/// defer { daemon.cleanup() }
/// #expect(try await daemon.client().get("/healthz").status == 200)
/// #expect(try await daemon.terminate() == 0)
/// ```
///
/// Lifetime: always `defer { daemon.cleanup() }`. It SIGKILLs the process without waiting;
/// the temporary directory (config file, and the state directory unless `Options.stateDir`
/// was given) goes once every daemon started from it (`start`, `restart()`) was reaped.
public final class Daemon: Sendable {
    public struct Options: Sendable {
        /// The YAML config file's body. nil: `log.level: info`, so a test never reads the
        /// `/etc/alertd/alertd.yaml` of the machine it runs on.
        public var config: String?
        /// An existing state directory. nil: a new one in a temporary directory.
        public var stateDir: URL?
        /// Appended after `--config`, `--listen` and `--state-dir`.
        public var extraArgs: [String]
        /// Merged into the test process's environment, minus systemd's activation variables
        /// (`NOTIFY_SOCKET`, `LISTEN_FDS`, …), which must never leak in.
        public var environment: [String: String]
        /// `--listen`. Port 0 binds a free port; the daemon's log line says which.
        public var listen: String
        /// The binary. nil: `$ALERTD_BINARY`, else `alertd` beside the test executable.
        public var executable: String?
        /// How long to wait for the `msg=listening` log line.
        public var startTimeout: Duration
        /// A listening socket handed over as fd 3 the way systemd's socket activation does
        /// (`LISTEN_FDS=1`, `LISTEN_PID` = the daemon's pid). The caller keeps and closes it.
        public var inheritedSocket: Int32?

        public init(
            config: String? = nil, stateDir: URL? = nil, extraArgs: [String] = [], environment: [String: String] = [:],
            listen: String = "127.0.0.1:0", executable: String? = nil, startTimeout: Duration = .seconds(30),
            inheritedSocket: Int32? = nil
        ) {
            self.config = config
            self.stateDir = stateDir
            self.extraArgs = extraArgs
            self.environment = environment
            self.listen = listen
            self.executable = executable
            self.startTimeout = startTimeout
            self.inheritedSocket = inheritedSocket
        }
    }

    public let options: Options
    /// The state directory passed as `--state-dir`.
    public let stateDir: URL
    /// The config file passed as `--config`; `rewriteConfig` replaces its contents.
    public let configFile: URL
    /// The TCP port from the daemon's `msg=listening address=…` line.
    public let port: Int
    public let pid: pid_t

    private let process: ChildProcess
    /// This daemon's claim on the temporary directory; `cleanup()` hands it to the process,
    /// which lets it go once reaped.
    private let scratch: NIOLockedValueBox<ScratchDirectory?>

    /// `http://127.0.0.1:PORT` (the loopback address also reaches a daemon bound to 0.0.0.0).
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// Everything the daemon wrote to stderr so far (its logs), drained continuously.
    public var stderrText: String { process.stderr.text }
    public var stdoutText: String { process.stdout.text }
    public var isRunning: Bool { process.exitStatus == nil }
    /// The exit code once it exited; 128 + n when killed by signal n (so 137 after SIGKILL).
    public var exitStatus: Int32? { process.exitStatus }

    private init(options: Options, stateDir: URL, configFile: URL, port: Int, process: ChildProcess, scratch: ScratchDirectory) {
        self.options = options
        self.stateDir = stateDir
        self.configFile = configFile
        self.port = port
        self.pid = process.pid
        self.process = process
        self.scratch = NIOLockedValueBox(scratch)
    }

    deinit {
        cleanup()
    }

    /// Starts `alertd` and returns once it logged that it is listening.
    ///
    /// Throws `ProcessError` (with the captured stderr and, if it exited, its exit status)
    /// when the binary is missing, or the daemon exits or stays silent for `startTimeout`.
    public static func start(_ options: Options = .init()) async throws -> Daemon {
        let scratch = try ScratchDirectory()
        let stateDir: URL
        if let given = options.stateDir {
            stateDir = given
        } else {
            stateDir = scratch.url.appendingPathComponent("state", isDirectory: true)
            try FileManager.default.createDirectory(at: stateDir, withIntermediateDirectories: true)
        }
        let configFile = scratch.url.appendingPathComponent("alertd.yaml")
        try Data((options.config ?? "log:\n  level: info\n").utf8).write(to: configFile)
        return try await launch(options, stateDir: stateDir, configFile: configFile, scratch: scratch)
    }

    /// A client of this daemon over AsyncHTTPClient; `timeout` bounds each request.
    public func client(timeout: Duration = .seconds(30)) -> LiveClient {
        LiveClient(port: port, timeout: timeout)
    }

    /// A new TCP connection that sends bytes as given (malformed requests, slow clients).
    public func rawConnection() async throws -> RawConnection {
        try await RawConnection.connect(port: port)
    }

    /// SIGTERM, then waits for the exit and the end of its output; returns the exit status
    /// (at once when it had exited). After `timeout` it SIGKILLs and throws: a graceful stop
    /// that hangs is a bug.
    @discardableResult
    public func terminate(timeout: Duration = .seconds(20)) async throws -> Int32 {
        if let status = process.exitStatus { return status }
        process.send(SIGTERM)
        if let status = await process.waitForExit(timeout: timeout) {
            await process.awaitOutputEnd()
            return status
        }
        await process.killAndReap()
        throw ProcessError(
            "alertd (pid \(pid)) did not exit within \(timeout) of SIGTERM; sent SIGKILL", exitStatus: process.exitStatus,
            stderr: stderrText)
    }

    /// SIGKILL (a crash as far as the daemon can tell), then waits until it was reaped.
    public func kill9() async {
        await process.killAndReap()
    }

    /// Sends any signal, e.g. SIGHUP to reload. False when the daemon has already exited.
    @discardableResult
    public func sendSignal(_ signal: Int32) -> Bool {
        process.send(signal)
    }

    /// Waits for the daemon to exit by itself; throws after `timeout` (and leaves it running).
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(20)) async throws -> Int32 {
        guard let status = await process.waitForExit(timeout: timeout) else {
            throw ProcessError("alertd (pid \(pid)) still running after \(timeout)", stderr: stderrText)
        }
        await process.awaitOutputEnd()
        return status
    }

    /// Waits until stderr holds `count` lines containing `text`; throws after `timeout`.
    public func waitForStderr(containing text: String, count: Int = 1, timeout: Duration = .seconds(20)) async throws {
        let found = await process.stderr.wait(timeout: timeout) { bytes, ended -> Bool? in
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").filter { $0.contains(text) }.count
            return lines >= count ? true : (ended ? false : nil)
        }
        guard found == true else {
            throw ProcessError(
                "alertd stderr never held \(count) line(s) with \(text.debugDescription) (\(found == false ? "stderr closed" : "waited \(timeout)"))",
                exitStatus: process.exitStatus, stderr: stderrText)
        }
    }

    /// Lines of stderr containing `text`.
    public func stderrLines(containing text: String) -> [Substring] {
        stderrText.split(separator: "\n").filter { $0.contains(text) }
    }

    /// Replaces the config file's contents atomically, for SIGHUP reloads and `restart()`.
    public func rewriteConfig(_ yaml: String) throws {
        try Data(yaml.utf8).write(to: configFile, options: .atomic)
    }

    /// A new `alertd` on the same state directory and config file, with the same options
    /// (the port may differ). A daemon still running is stopped first with `terminate()`.
    public func restart() async throws -> Daemon {
        if isRunning { try await terminate() }
        guard let scratch = scratch.withLockedValue({ $0 }) else {
            throw ProcessError("restart() after cleanup(): the config file is gone")
        }
        return try await Self.launch(options, stateDir: stateDir, configFile: configFile, scratch: scratch)
    }

    /// SIGKILLs the daemon if it still runs and gives up its claim on the temporary
    /// directory, which goes once the process has been reaped. Never waits.
    public func cleanup() {
        process.send(SIGKILL)
        if let scratch = scratch.withLockedValue({ $0.take() }) { process.keepUntilExit(scratch) }
    }

    // MARK: Starting

    private static func launch(_ options: Options, stateDir: URL, configFile: URL, scratch: ScratchDirectory) async throws -> Daemon {
        try await StartGate.shared.run {
            try await spawnAndAwaitListening(options, stateDir: stateDir, configFile: configFile, scratch: scratch)
        }
    }

    private static func spawnAndAwaitListening(
        _ options: Options, stateDir: URL, configFile: URL, scratch: ScratchDirectory
    ) async throws -> Daemon {
        let binary = try locateBinary(override: options.executable)
        let arguments = ["--config", configFile.path, "--listen", options.listen, "--state-dir", stateDir.path] + options.extraArgs
        var environment = options.environment
        if options.inheritedSocket != nil { environment["LISTEN_FDS"] = "1" }
        let process = try await ChildProcess.spawn(
            binary, arguments: arguments, environment: childEnvironment(environment), dieWithParent: true,
            inheritedSocket: options.inheritedSocket)

        enum Outcome: Sendable { case listening(Int), ended }
        let outcome = await process.stderr.wait(timeout: options.startTimeout) { bytes, ended -> Outcome? in
            if let port = listeningPort(in: bytes) { return .listening(port) }
            return ended ? .ended : nil
        }
        switch outcome {
        case .listening(let port):
            return Daemon(options: options, stateDir: stateDir, configFile: configFile, port: port, process: process, scratch: scratch)
        case .ended:
            let status = await process.waitForExit(timeout: .seconds(10))
            if status == nil { await process.killAndReap() }
            throw ProcessError(
                "alertd (\(binary)) closed stderr before logging msg=listening", exitStatus: status ?? process.exitStatus,
                stderr: process.stderr.text)
        case nil:
            await process.killAndReap()
            throw ProcessError(
                "alertd (\(binary)) logged no msg=listening line within \(options.startTimeout); killed it",
                exitStatus: process.exitStatus, stderr: process.stderr.text)
        }
    }

    /// Starts alertd with `options` expecting it to refuse, and returns how it ended: its
    /// exit status and stderr, for the test to check against what the docs say (2 for a
    /// config it refuses, one `alertd: …` line a problem; 1 for a start that fails,
    /// `msg="cannot run"`). A daemon that starts after all is stopped and fails the test;
    /// one that hangs is killed (its status is then 128 + 9), so neither a trap nor a hang
    /// can pass for a refusal where the status is checked.
    public static func refusal(_ options: Options = .init()) async throws -> ProcessError {
        let started: Daemon
        do {
            started = try await start(options)
        } catch let error as ProcessError {
            return error
        }
        started.cleanup()
        throw TestFailure("alertd started on port \(started.port) where it should have refused:\n\(started.stderrText)")
    }

    /// Where a binary built by this package is: `override`, else `$<NAME>_BINARY`
    /// (`ALERTD_BINARY`), else in the directory of the test executable (SwiftPM builds
    /// both into the same directory).
    ///
    /// With `ALERTD_TEST_SHIPPED=1` (`make test`, and so CI) only the shipped binaries will
    /// do: `$<NAME>_BINARY` must name one, and a debug build is refused (`--version` says
    /// "(debug build)"), so that no test that starts a process runs what users never get.
    public static func locateBinary(_ name: String = "alertd", override: String? = nil) throws -> String {
        let variable = name.uppercased() + "_BINARY"
        let shipped = ProcessInfo.processInfo.environment["ALERTD_TEST_SHIPPED"] == "1"
        let path: String
        if let override {
            path = override
        } else if let fromEnvironment = ProcessInfo.processInfo.environment[variable], !fromEnvironment.isEmpty {
            path = fromEnvironment
        } else if shipped {
            throw ProcessError("ALERTD_TEST_SHIPPED=1: set \(variable) to the \(name) make deb builds (make test does)")
        } else {
            path = URL(fileURLWithPath: selfExecutablePath()).deletingLastPathComponent().appendingPathComponent(name).path
        }
        guard access(path, X_OK) == 0 else {
            throw ProcessError("no executable \(name) at \(path); build it with `swift build --product \(name)` or set \(variable)")
        }
        if shipped, try isDebugBuild(path) {
            throw ProcessError("ALERTD_TEST_SHIPPED=1, but \(path) is a debug build: the process tiers run the optimised binaries")
        }
        return path
    }

    /// Whether the binary at `path` says it is a debug build (`--version`), asked once a path.
    static func isDebugBuild(_ path: String) throws -> Bool {
        if let known = debugBuilds.withLockedValue({ $0[path] }) { return known }
        // posix_spawn, not Foundation's Process: Process.run leaves a weak reference's side
        // table that LeakSanitizer reports as leaked (the ASan pass of CI's fresh-clone run).
        let (status, printed) = try ChildProcess.runToEnd(path, arguments: ["--version"])
        guard status == 0 else {
            throw ProcessError("\(path) --version exited \(status)", exitStatus: status)
        }
        let debug = printed.contains("(debug build)")
        debugBuilds.withLockedValue { $0[path] = debug }
        return debug
    }

    private static let debugBuilds = NIOLockedValueBox<[String: Bool]>([:])

    static func selfExecutablePath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return CommandLine.arguments.first ?? "" }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Variables that would make the daemon talk to the test runner's service manager or
    /// adopt sockets it does not own.
    private static let systemdVariables: Set<String> = [
        "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
    ]

    private static func childEnvironment(_ overrides: [String: String]) -> [String] {
        var environment = ProcessInfo.processInfo.environment.filter { !systemdVariables.contains($0.key) }
        environment.merge(overrides) { _, new in new }
        return environment.map { "\($0.key)=\($0.value)" }.sorted()
    }

    /// The port of the first complete stderr line with `msg=listening` and `address=HOST:PORT`.
    static func listeningPort(in bytes: [UInt8]) -> Int? {
        var lineStart = 0
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            let fields = logfmtFields(String(decoding: bytes[lineStart..<index], as: UTF8.self))
            lineStart = index + 1
            guard fields["msg"] == "listening", let address = fields["address"], let colon = address.lastIndex(of: ":"),
                let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port)
            else { continue }
            return port
        }
        return nil
    }

    /// `key=value` pairs of one logfmt line; values may be double-quoted with `\` escapes.
    public static func logfmtFields(_ line: String) -> [String: String] {
        var fields: [String: String] = [:]
        var rest = Substring(line)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\r" }
            guard !rest.isEmpty else { return fields }
            let key = rest.prefix { $0 != "=" && $0 != " " }
            rest = rest.dropFirst(key.count)
            guard rest.first == "=" else {
                fields[String(key)] = ""
                continue
            }
            rest = rest.dropFirst()
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.popFirst() {
                    if escaped {
                        value.append(character == "n" ? "\n" : character == "t" ? "\t" : character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
            } else {
                let raw = rest.prefix { $0 != " " && $0 != "\t" && $0 != "\r" }
                value = String(raw)
                rest = rest.dropFirst(raw.count)
            }
            fields[String(key)] = value
        }
    }
}

/// Runs programs to completion (`openssl`, `promtool`, `tmux`, `alertd token new`).
///
/// Not Foundation's `Process`: on Linux it learns that a child ended from a socket the child
/// inherits, so a child that starts a daemon (`tmux new-session` starts the tmux server)
/// never "ends" while that daemon lives. This closes every inherited fd above 2 and reaps
/// with waitpid(2).
public struct Program: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    /// `executable` is a path or a name looked up on `PATH`; `stdin` is written to the
    /// program's standard input (/dev/null without it). Throws after `timeout`, killing it.
    @discardableResult
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> Program {
        let path = try locate(executable)
        var stdinPath = "/dev/null"
        var scratch: ScratchDirectory?
        if let stdin {
            let directory = try ScratchDirectory()
            let file = directory.url.appendingPathComponent("stdin")
            try Data(stdin.utf8).write(to: file)
            (stdinPath, scratch) = (file.path, directory)
        }
        let child = try await spawn(path, arguments, environment: environment, stdinPath: stdinPath)
        defer { withExtendedLifetime(scratch) {} }
        guard let status = await child.waitForExit(timeout: timeout) else {
            await child.killAndReap()
            throw ProcessError("\(executable) \(arguments.joined(separator: " ")) still running after \(timeout); killed")
        }
        await child.awaitOutputEnd()
        return Program(status: status, stdout: child.stdout.text, stderr: child.stderr.text)
    }

    /// Starts `executable` (a path) without waiting for it, with the test process's
    /// environment plus `environment`, where a nil value leaves that name out.
    public static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String?], stdinPath: String = "/dev/null"
    ) async throws -> ChildProcess {
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        return try await ChildProcess.spawn(
            executable, arguments: arguments, environment: merged.map { "\($0.key)=\($0.value)" }, dieWithParent: false,
            stdinPath: stdinPath)
    }

    /// Runs the alertd binary under test (`token new`, `check-config`) to completion.
    public static func alertd(_ arguments: [String]) async throws -> Program {
        try await run(try Daemon.locateBinary(), arguments)
    }

    /// Lower-case hex SHA-256 of `text`, through the system's `sha256sum` so that tests do
    /// not share alertd's hashing code; empty if `sha256sum` could not run.
    public static func sha256Hex(_ text: String) async -> String {
        let run = try? await run("/usr/bin/sha256sum", [], stdin: text)
        return String((run?.stdout ?? "").prefix(64))
    }

    /// The path of `name`: itself if it holds a slash, else the first executable on `PATH`.
    public static func locate(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where access("\(directory)/\(name)", X_OK) == 0 {
            return "\(directory)/\(name)"
        }
        throw ProcessError("\(name) is not on PATH (\(path))")
    }
}

/// How many daemons may be starting at once (spawned, not yet listening): as many as there
/// are CPUs. Starting is the costly part of a daemon's life in a test (exec, dynamic
/// linking, opening the store); a test run that started sixty at once left 2 cores so
/// loaded that a long-poll of 1 s took 5 and a watchdog probe failed. Running daemons are
/// not counted: they wait on sockets.
private enum StartGate {
    static let shared = Gate(width: max(2, ProcessInfo.processInfo.activeProcessorCount))
}
