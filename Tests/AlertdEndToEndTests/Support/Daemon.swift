// Starts the real `alertd` binary for end-to-end tests and keeps it on a short leash.
//
// How a child is kept from outliving the test run, strongest first:
// - when util-linux `setpriv` supports it, the daemon runs as
//   `setpriv --pdeathsig KILL -- alertd …` (setpriv execs, so the pid is alertd's), and it is
//   spawned from a thread that lives exactly as long as the child: if the test process dies
//   in any way, even by SIGKILL, the kernel kills the daemon;
// - `cleanup()` and `deinit` SIGKILL and reap it.
//
// Linux only (posix_spawn, /proc, Glibc), like the daemon it tests.

import Foundation
import Glibc
import Synchronization

/// A running `alertd` on 127.0.0.1 with its own config file and state directory.
///
/// ```swift
/// let daemon = try Daemon.start(.init(config: "log:\n  level: debug\n"))
/// defer { daemon.cleanup() }
/// let client = daemon.client()
/// #expect(try client.get("/healthz").status == 200)
/// #expect(try daemon.terminate() == 0)
/// ```
///
/// Thread safety: `Sendable` without `@unchecked`. Everything it stores is immutable or a
/// `Sendable` box: the process and its output buffers lock internally (see `DaemonProcess`).
///
/// Lifetime: always `defer { daemon.cleanup() }`. It SIGKILLs and reaps the process and gives
/// up this daemon's claim on its temporary directory; the directory (config file, and the
/// state directory unless `Options.stateDir` was given) is removed once no daemon started
/// from it, by `start` or `restart()`, is left. `deinit` does the same as a safety net, but
/// Swift may end an object's lifetime after its last use, so a `defer` that names the daemon
/// is what keeps it running to the end of the test.
///
/// All methods block the calling thread (bounded by their timeouts). They never wait on
/// work scheduled on Swift concurrency's pool, so they cannot deadlock it.
final class Daemon: Sendable {
    struct Options: Sendable {
        /// The YAML config file's body. nil: a minimal config (`log.level: info`), so a test
        /// never reads `/etc/alertd/alertd.yaml` of the machine it runs on.
        var config: String? = nil
        /// An existing state directory to use. nil: a new one under a temporary directory.
        /// To start again on the state of a stopped daemon, prefer `restart()`.
        var stateDir: URL? = nil
        /// Appended after `--config`, `--listen` and `--state-dir`.
        var extraArgs: [String] = []
        /// Merged into the test process's environment, minus systemd's activation
        /// variables (`NOTIFY_SOCKET`, `LISTEN_FDS`, …), which must never leak in.
        var environment: [String: String] = [:]
        /// `--listen`. Port 0 binds a free port; the daemon's log line says which.
        var listen: String = "127.0.0.1:0"
        /// The binary to run. nil: `$ALERTD_BINARY`, else `alertd` beside the test bundle.
        var executable: String? = nil
        /// Seconds to wait for the `msg=listening` log line.
        var startTimeout: Double = 20
        /// A listening socket handed over as fd 3 the way systemd's socket activation does
        /// (`LISTEN_FDS=1`, `LISTEN_PID` = the daemon's pid). The caller keeps and closes it.
        var inheritedSocket: Int32? = nil
    }

    let options: Options
    /// The state directory passed as `--state-dir`.
    let stateDir: URL
    /// The config file passed as `--config`; `rewriteConfig` replaces its contents.
    let configFile: URL
    /// The TCP port from the daemon's `msg=listening address=…` line.
    let port: Int
    let pid: pid_t

    private let process: DaemonProcess
    /// This daemon's claim on the temporary directory; `cleanup()` gives it up.
    private let scratch: Mutex<ScratchDirectory?>

    /// `http://127.0.0.1:PORT` (the loopback address also reaches a daemon bound to 0.0.0.0).
    var baseURL: String { "http://127.0.0.1:\(port)" }
    /// Everything the daemon wrote to stderr so far (its logs), drained continuously.
    var stderrText: String { process.stderr.text }
    /// Everything the daemon wrote to stdout so far.
    var stdoutText: String { process.stdout.text }
    var isRunning: Bool { process.exitStatus == nil }
    /// The exit code once it exited; 128 + n when killed by signal n (so 137 after SIGKILL).
    var exitStatus: Int32? { process.exitStatus }

    private init(
        options: Options, stateDir: URL, configFile: URL, port: Int, process: DaemonProcess,
        scratch: ScratchDirectory
    ) {
        self.options = options
        self.stateDir = stateDir
        self.configFile = configFile
        self.port = port
        self.pid = process.pid
        self.process = process
        self.scratch = Mutex(scratch)
    }

    deinit {
        process.killAndReap()
    }

    /// Starts `alertd` and returns once it logged that it is listening.
    ///
    /// Throws `DaemonError` (with the captured stderr and, if it exited, its exit status)
    /// when the binary is missing, or the daemon exits or stays silent for `startTimeout`;
    /// a daemon that stayed silent is killed first.
    static func start(_ options: Options = .init()) throws -> Daemon {
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
        return try launch(options, stateDir: stateDir, configFile: configFile, scratch: scratch)
    }

    /// A new keep-alive connection to this daemon. It keeps the daemon object alive.
    func client(timeout: Double = 30) -> TestHTTPClient {
        TestHTTPClient(host: "127.0.0.1", port: port, timeout: timeout, owner: self)
    }

    /// SIGTERM, then waits for the exit and for the end of its output.
    ///
    /// Returns the exit status (already exited: returns it without signalling). After
    /// `timeout` seconds it SIGKILLs the daemon and throws: a graceful stop that hangs is a bug.
    @discardableResult
    func terminate(timeout: Double = 20) throws -> Int32 {
        if let status = process.exitStatus { return status }
        process.send(SIGTERM)
        if let status = process.waitForExit(timeout: timeout) {
            process.awaitOutputEnd()
            return status
        }
        process.killAndReap()
        throw DaemonError(
            "alertd (pid \(pid)) did not exit within \(timeout) s of SIGTERM; sent SIGKILL",
            exitStatus: process.exitStatus, stderr: stderrText)
    }

    /// SIGKILL (a crash as far as the daemon can tell), then reaps it. No-op once exited.
    func kill9() {
        process.killAndReap()
    }

    /// Sends any signal, e.g. SIGHUP to reload. False when the daemon has already exited.
    @discardableResult
    func sendSignal(_ signal: Int32) -> Bool {
        process.send(signal)
    }

    /// Waits for the daemon to exit by itself and returns its exit status; throws after
    /// `timeout` seconds (and leaves it running).
    @discardableResult
    func waitForExit(timeout: Double = 20) throws -> Int32 {
        guard let status = process.waitForExit(timeout: timeout) else {
            throw DaemonError("alertd (pid \(pid)) still running after \(timeout) s", exitStatus: nil, stderr: stderrText)
        }
        process.awaitOutputEnd()
        return status
    }

    /// Waits until stderr contains `text` (a log line the test expects); throws after `timeout`.
    func waitForStderr(containing text: String, timeout: Double = 20) throws {
        let needle = Array(text.utf8)
        let found = process.stderr.wait(timeout: timeout) { bytes, ended in
            bytes.firstRange(of: needle) != nil ? true : (ended ? false : nil)
        }
        guard found == true else {
            let why = found == false ? "stderr closed" : "waited \(timeout) s"
            throw DaemonError(
                "alertd stderr never contained \(text.debugDescription) (\(why))",
                exitStatus: process.exitStatus, stderr: stderrText)
        }
    }

    /// Replaces the config file's contents atomically (write, then rename), for SIGHUP
    /// reloads and for `restart()`, which reads the file as it is then.
    func rewriteConfig(_ yaml: String) throws {
        try Data(yaml.utf8).write(to: configFile, options: .atomic)
    }

    /// A new `alertd` on the same state directory and config file, with the same options
    /// (the port may differ). A daemon still running is stopped first with `terminate()`.
    /// Both share the temporary directory; it goes when both were cleaned up.
    func restart() throws -> Daemon {
        if isRunning { try terminate() }
        guard let scratch = scratch.withLock({ $0 }) else {
            throw DaemonError("restart() after cleanup(): the config file is gone", exitStatus: exitStatus, stderr: "")
        }
        return try Self.launch(options, stateDir: stateDir, configFile: configFile, scratch: scratch)
    }

    /// SIGKILLs and reaps the daemon if it still runs and gives up its temporary directory.
    func cleanup() {
        process.killAndReap()
        scratch.withLock { $0 = nil }
    }

    // MARK: Starting

    private static func launch(
        _ options: Options, stateDir: URL, configFile: URL, scratch: ScratchDirectory
    ) throws -> Daemon {
        let binary = try locateBinary(
            override: options.executable, environment: ProcessInfo.processInfo.environment,
            testExecutable: selfExecutablePath())
        let arguments =
            ["--config", configFile.path, "--listen", options.listen, "--state-dir", stateDir.path]
            + options.extraArgs
        var environment = options.environment
        if options.inheritedSocket != nil { environment["LISTEN_FDS"] = "1" }
        let process = try DaemonProcess.spawn(
            binary, arguments: arguments, environment: childEnvironment(environment),
            dieWithParent: true, inheritedSocket: options.inheritedSocket)

        enum Outcome { case listening(Int), ended }
        let outcome = process.stderr.wait(timeout: options.startTimeout) { bytes, ended -> Outcome? in
            if let port = listeningPort(in: bytes) { return .listening(port) }
            return ended ? .ended : nil
        }
        switch outcome {
        case .listening(let port):
            return Daemon(
                options: options, stateDir: stateDir, configFile: configFile, port: port,
                process: process, scratch: scratch)
        case .ended:
            let status = process.waitForExit(timeout: 10)
            if status == nil { process.killAndReap() }
            throw DaemonError(
                "alertd (\(binary)) closed stderr before logging msg=listening",
                exitStatus: status ?? process.exitStatus, stderr: process.stderr.text)
        case nil:
            process.killAndReap()
            throw DaemonError(
                "alertd (\(binary)) logged no msg=listening line within \(options.startTimeout) s; killed it",
                exitStatus: process.exitStatus, stderr: process.stderr.text)
        }
    }

    /// Where the binary is: `override`, else `$ALERTD_BINARY`, else `alertd` in the directory
    /// of the test executable (SwiftPM builds both into the same directory).
    static func locateBinary(override: String?, environment: [String: String], testExecutable: String) throws -> String {
        let path: String
        let source: String
        if let override {
            (path, source) = (override, "Options.executable")
        } else if let fromEnvironment = environment["ALERTD_BINARY"], !fromEnvironment.isEmpty {
            (path, source) = (fromEnvironment, "$ALERTD_BINARY")
        } else {
            let directory = URL(fileURLWithPath: testExecutable).deletingLastPathComponent()
            (path, source) = (directory.appendingPathComponent("alertd").path, "beside the test executable")
        }
        guard access(path, X_OK) == 0 else {
            throw DaemonError(
                "no executable alertd at \(path) (\(source)); build it with `swift build --product alertd` "
                    + "or point ALERTD_BINARY at one", exitStatus: nil, stderr: "")
        }
        return path
    }

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
            let line = String(decoding: bytes[lineStart..<index], as: UTF8.self)
            lineStart = index + 1
            let fields = logfmtFields(line)
            guard fields["msg"] == "listening", let address = fields["address"],
                let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
                (1...65535).contains(port)
            else { continue }
            return port
        }
        return nil
    }

    /// `key=value` pairs of one logfmt line; values may be double-quoted with `\` escapes.
    static func logfmtFields(_ line: String) -> [String: String] {
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

/// Why a daemon could not be started or stopped as asked. `description` carries its stderr.
struct DaemonError: Error, CustomStringConvertible {
    let message: String
    /// The daemon's exit status, if it had exited (128 + n: killed by signal n).
    let exitStatus: Int32?
    let stderr: String

    init(_ message: String, exitStatus: Int32?, stderr: String) {
        self.message = message
        self.exitStatus = exitStatus
        self.stderr = stderr
    }

    var description: String {
        var text = message
        if let exitStatus { text += " (exit status \(exitStatus))" }
        if !stderr.isEmpty {
            let tail = stderr.count > 16_000 ? "…" + stderr.suffix(16_000) : stderr
            text += "\n--- alertd stderr ---\n\(tail)\n--- end of stderr ---"
        }
        return text
    }
}

// MARK: - Temporary directory

/// A directory from mkdtemp(3), removed with everything in it when the last reference goes.
final class ScratchDirectory: Sendable {
    let url: URL

    init() throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/alertd-e2e.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw DaemonError("mkdtemp in \(base): \(TestSocket.errnoText())", exitStatus: nil, stderr: "")
        }
        url = URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

// MARK: - Child process

/// One spawned process, its exit status and its drained stdout and stderr.
///
/// `@unchecked Sendable` guarantee: `state` is only read or written while `condition` is
/// locked. Signals are sent and the process is reaped under that same lock, so a signal can
/// never reach a recycled pid.
final class DaemonProcess: @unchecked Sendable {
    private enum State {
        case spawning
        case failed(Int32)
        case running
        case exited(Int32)
    }

    private let condition = NSCondition()
    private var state = State.spawning
    private var processID: pid_t = 0

    let stdout = DaemonOutput()
    let stderr = DaemonOutput()

    var pid: pid_t { locked { processID } }

    var exitStatus: Int32? {
        locked {
            if case .exited(let status) = state { return status }
            return nil
        }
    }

    private init() {}

    /// Spawns `executable` with stdin from /dev/null and stdout/stderr into pipes that are
    /// drained on their own threads, so the child never blocks on a full pipe.
    ///
    /// `dieWithParent`: run through `setpriv --pdeathsig KILL` when it is available. The
    /// spawning thread then stays blocked in waitid(2) until the child exits, because the
    /// kernel sends the death signal when that *thread* ends, not just the process.
    static func spawn(
        _ executable: String, arguments: [String], environment: [String], dieWithParent: Bool, inheritedSocket: Int32? = nil,
        stdinPath: String = "/dev/null"
    ) throws -> DaemonProcess {
        var path = executable
        var argv = [executable] + arguments
        if inheritedSocket != nil {
            // LISTEN_PID must be the daemon's own pid: a shell learns it ($$) and execs into it.
            path = "/bin/sh"
            argv = ["/bin/sh", "-c", #"LISTEN_PID=$$ exec "$@""#, "sh", executable] + arguments
        }
        if dieWithParent, let setpriv = DeathSignal.setpriv {
            path = setpriv
            argv = ["setpriv", "--pdeathsig", "KILL", "--"] + argv
        }
        let output = try makePipe()
        let errors: (read: Int32, write: Int32)
        do {
            errors = try makePipe()
        } catch {
            Glibc.close(output.read)
            Glibc.close(output.write)
            throw error
        }
        let child = DaemonProcess()
        let launcher = Thread { [path, argv] in
            child.launchAndReap(
                path, argv: argv, environment: environment, stdin: stdinPath, stdout: output.write, stderr: errors.write,
                fd3: inheritedSocket)
        }
        launcher.name = "alertd-e2e-launcher"
        launcher.start()

        let failure = child.awaitSpawn()
        Glibc.close(output.write)
        Glibc.close(errors.write)
        if let failure {
            Glibc.close(output.read)
            Glibc.close(errors.read)
            throw DaemonError("posix_spawn \(path): \(TestSocket.errnoText(failure))", exitStatus: nil, stderr: "")
        }
        child.stdout.drain(output.read, name: "alertd-e2e-stdout")
        child.stderr.drain(errors.read, name: "alertd-e2e-stderr")
        return child
    }

    /// Sends `signal` if the process has not been reaped yet.
    @discardableResult
    func send(_ signal: Int32) -> Bool {
        locked {
            guard case .running = state else { return false }
            return kill(processID, signal) == 0
        }
    }

    /// The exit status, or nil if it is still running after `timeout` seconds.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch state {
            case .exited(let status): return status
            case .failed: return nil
            case .spawning, .running:
                if !condition.wait(until: deadline) {
                    if case .exited(let status) = state { return status }
                    return nil
                }
            }
        }
    }

    /// SIGKILL, wait for the reaper, then for the end of the output. No-op once exited.
    func killAndReap() {
        send(SIGKILL)
        _ = waitForExit(timeout: 60)  // SIGKILL cannot be ignored; the bound is for a stuck kernel
        awaitOutputEnd()
    }

    /// Waits (briefly) until both pipes reached end of file, so `text` is complete.
    func awaitOutputEnd() {
        _ = stderr.wait(timeout: 5) { _, ended in ended ? true : nil }
        _ = stdout.wait(timeout: 5) { _, ended in ended ? true : nil }
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// The posix_spawn error, or nil once it runs.
    private func awaitSpawn() -> Int32? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch state {
            case .spawning: condition.wait()
            case .failed(let code): return code
            case .running, .exited: return nil
            }
        }
    }

    /// Runs on the launcher thread, which ends only after the child has been reaped.
    private func launchAndReap(
        _ path: String, argv: [String], environment: [String], stdin: String, stdout: Int32, stderr: Int32, fd3: Int32?
    ) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Our own fds are CLOEXEC; this also keeps fds that other code opened without it
        // (and other tests' pipes) out of the daemon, where they would hold pipes open.
        if let fd3 { posix_spawn_file_actions_adddup2(&actions, fd3, 3) }
        if let closeFrom = Self.addCloseFrom() { _ = closeFrom(&actions, fd3 == nil ? 3 : 4) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup($0) } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, &attributes, cArguments, cEnvironment)

        condition.lock()
        if result == 0 {
            processID = child
            state = .running
        } else {
            state = .failed(result)
        }
        condition.broadcast()
        condition.unlock()
        guard result == 0 else { return }

        // Wait without reaping, so the pid stays ours until `state` says it is gone.
        var info = siginfo_t()
        while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        condition.lock()
        var status: Int32 = 0
        var reaped: pid_t
        repeat {
            reaped = waitpid(child, &status, 0)
        } while reaped < 0 && errno == EINTR
        // The low 7 bits name the killing signal (0: exited normally); bits 8–15 the exit code.
        let signal = status & 0x7f
        state = .exited(reaped < 0 ? -1 : signal == 0 ? (status >> 8) & 0xff : 128 + signal)
        condition.broadcast()
        condition.unlock()
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// glibc 2.34+ has posix_spawn_file_actions_addclosefrom_np; looked up at run time so
    /// the tests still build against an older glibc.
    private static func addCloseFrom() -> AddCloseFrom? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32

    /// A pipe whose ends are close-on-exec from the start. Glibc's Swift module hides pipe2
    /// (it is a GNU extension), so it is looked up at run time; pipe + FD_CLOEXEC is the
    /// fallback, with a window in which another thread's spawn could inherit the fds.
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        let made: Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") {
            made = unsafeBitCast(symbol, to: Pipe2.self)(&fds, O_CLOEXEC)
        } else {
            made = pipe(&fds)
            if made == 0 { fds.forEach { _ = fcntl($0, F_SETFD, FD_CLOEXEC) } }
        }
        guard made == 0 else {
            throw DaemonError("pipe: \(TestSocket.errnoText())", exitStatus: nil, stderr: "")
        }
        return (fds[0], fds[1])
    }
}

/// Whether `setpriv --pdeathsig` works here (util-linux 2.33+); probed once.
private enum DeathSignal {
    static let setpriv: String? = {
        let candidates: [String] = ["/usr/bin/setpriv", "/bin/setpriv"]
        guard let path = candidates.first(where: { access($0, X_OK) == 0 }),
            let probe = try? DaemonProcess.spawn(
                path, arguments: ["--pdeathsig", "KILL", "--", "true"],
                environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" },
                dieWithParent: false)
        else { return nil }
        guard let status = probe.waitForExit(timeout: 10) else {
            probe.killAndReap()
            return nil
        }
        return status == 0 ? path : nil
    }()
}

/// Bytes a child wrote to one pipe, appended by a drain thread until end of file.
///
/// `@unchecked Sendable` guarantee: `bytes` and `ended` are only touched while `condition`
/// is locked; every append broadcasts, so waiters see output as it arrives.
final class DaemonOutput: @unchecked Sendable {
    private let condition = NSCondition()
    private var bytes: [UInt8] = []
    private var ended = false

    /// The bytes so far as UTF-8 (lossy).
    var text: String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Calls `check(bytes, ended)` now and after every change until it returns non-nil or
    /// `timeout` seconds pass (then nil). `check` runs under the lock: keep it short.
    func wait<T>(timeout: Double, until check: ([UInt8], Bool) -> T?) -> T? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result = check(bytes, ended) { return result }
            if !condition.wait(until: deadline) { return check(bytes, ended) }
        }
    }

    /// Reads `fd` on a new thread until end of file, then closes it.
    fileprivate func drain(_ fd: Int32, name: String) {
        let thread = Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if count < 0 && errno == EINTR { continue }
                condition.lock()
                if count > 0 {
                    bytes.append(contentsOf: chunk[..<count])
                } else {
                    ended = true
                }
                condition.broadcast()
                condition.unlock()
                if count <= 0 { break }
            }
            Glibc.close(fd)
        }
        thread.name = name
        thread.start()
    }
}
