// Spawning the programs the tests run (alertd, alertctl, tmux, openssl…) and waiting for
// them without holding a thread of Swift concurrency's pool.
//
// Not swift-subprocess: its Linux spawn closes every descriptor above 2 in the child, so a
// listening socket cannot be handed over as fd 3 the way systemd's socket activation does,
// and its `run { execution in … }` scope does not fit a daemon that lives as long as a test
// object. This is posix_spawn(3) from one dedicated thread per child, which also reaps it,
// and one thread per output pipe; tasks wait on `Observed` values those threads update.
//
// Linux only (posix_spawn, Glibc), like the daemon it tests.

public import Foundation
import Glibc
import NIOConcurrencyHelpers

/// One spawned process: its pid, exit status and drained stdout and stderr.
public final class ChildProcess: Sendable {
    enum Phase: Sendable {
        case spawning
        case failed(Int32)
        case running(pid_t)
        /// The exit code; 128 + n when killed by signal n.
        case exited(Int32)
    }

    /// Only changed by the launcher thread. Signals are sent while `update` holds its lock,
    /// and the reap happens under it, so a signal never reaches a recycled pid.
    private let phase = Observed(Phase.spawning)
    /// Objects kept alive until the process has been reaped (a temporary directory).
    private let keptUntilExit = NIOLockedValueBox<[any AnyObject & Sendable]>([])

    public let stdout = ChildOutput()
    public let stderr = ChildOutput()

    public var pid: pid_t {
        if case .running(let pid) = phase.value { return pid }
        return 0
    }

    /// The exit status once it was reaped (128 + n after signal n).
    public var exitStatus: Int32? {
        if case .exited(let status) = phase.value { return status }
        return nil
    }

    private init() {}

    /// Spawns `executable` (a path) with stdin from `stdinPath`, stdout and stderr into pipes
    /// drained on their own threads, every other inherited descriptor closed.
    ///
    /// `dieWithParent`: run through `setpriv --pdeathsig KILL` where it works, so that the
    /// kernel kills the child if the test process dies in any way, even by SIGKILL. The
    /// death signal follows the spawning *thread*, so that thread lives as long as the child.
    /// `inheritedSocket`: handed over as fd 3 with `LISTEN_PID` set to the child's own pid.
    public static func spawn(
        _ executable: String, arguments: [String], environment: [String], dieWithParent: Bool,
        inheritedSocket: Int32? = nil, stdinPath: String = "/dev/null"
    ) async throws -> ChildProcess {
        var path = executable
        var argv = [executable] + arguments
        if inheritedSocket != nil {
            // LISTEN_PID must be the daemon's own pid: a shell learns it ($$) and execs into it.
            path = "/bin/sh"
            argv = ["/bin/sh", "-c", #"LISTEN_PID=$$ exec "$@""#, "sh", executable] + arguments
        }
        if dieWithParent, let setpriv = await DeathSignal.setpriv.value {
            path = setpriv
            argv = ["setpriv", "--pdeathsig", "KILL", "--"] + argv
        }
        let output = try makePipe()
        let errors: (read: Int32, write: Int32)
        do {
            errors = try makePipe()
        } catch {
            close(output.read)
            close(output.write)
            throw error
        }
        let child = ChildProcess()
        let launcher = Thread { [path, argv] in
            child.launchAndReap(
                path, argv: argv, environment: environment, stdin: stdinPath, stdout: output.write, stderr: errors.write,
                fd3: inheritedSocket)
        }
        launcher.name = "test-child-launcher"
        launcher.start()

        let failure = await child.phase.wait(timeout: .seconds(3600)) { phase -> Int32?? in
            switch phase {
            case .spawning: nil
            case .failed(let code): .some(code)
            case .running, .exited: .some(nil)
            }
        }
        close(output.write)
        close(errors.write)
        if case .some(.some(let code)) = failure {
            close(output.read)
            close(errors.read)
            throw ProcessError("posix_spawn \(path): \(String(cString: strerror(code)))")
        }
        child.stdout.drain(output.read, name: "test-child-stdout")
        child.stderr.drain(errors.read, name: "test-child-stderr")
        return child
    }

    /// Runs `executable` to its end on the calling thread, stdin and stderr on /dev/null, and
    /// returns its exit status (128 + n after signal n) and what it wrote to stdout: for the
    /// short synchronous questions a test asks a binary (`--version`).
    public static func runToEnd(_ executable: String, arguments: [String]) throws -> (status: Int32, stdout: String) {
        let output = try makePipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output.write, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let cArguments = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, cArguments, environ)
        close(output.write)
        defer { close(output.read) }
        guard spawned == 0 else { throw ProcessError("posix_spawn \(executable): \(String(cString: strerror(spawned)))") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(output.read, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, String(decoding: bytes, as: UTF8.self))
    }

    /// Sends `signal` unless the process has been reaped; false then.
    @discardableResult
    public func send(_ signal: Int32) -> Bool {
        phase.update { phase in
            guard case .running(let pid) = phase else { return false }
            return kill(pid, signal) == 0
        }
    }

    /// The exit status, or nil when it still runs after `timeout`.
    public func waitForExit(timeout: Duration) async -> Int32? {
        await phase.wait(timeout: timeout) { phase in
            if case .exited(let status) = phase { return status }
            return nil
        }
    }

    /// SIGKILL, then waits for the reap and the end of the output.
    public func killAndReap() async {
        send(SIGKILL)
        _ = await waitForExit(timeout: .seconds(60))  // SIGKILL cannot be ignored; the bound is for a stuck kernel
        await awaitOutputEnd()
    }

    /// Waits (briefly) until both pipes reached end of file, so `text` is complete.
    public func awaitOutputEnd() async {
        _ = await stderr.wait(timeout: .seconds(5)) { _, ended in ended ? true : nil }
        _ = await stdout.wait(timeout: .seconds(5)) { _, ended in ended ? true : nil }
    }

    /// Keeps `object` alive until the process has been reaped, then lets it go (on the
    /// launcher thread): how a temporary directory outlives the daemon that uses it.
    public func keepUntilExit(_ object: any AnyObject & Sendable) {
        if exitStatus != nil { return }
        keptUntilExit.withLockedValue { $0.append(object) }
        if exitStatus != nil { keptUntilExit.withLockedValue { $0 = [] } }
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
        // (other tests' pipes and sockets) out of the child, where they would hold them open.
        if let fd3 { posix_spawn_file_actions_adddup2(&actions, fd3, 3) }
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, fd3 == nil ? 3 : 4) }

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
        phase.update { $0 = result == 0 ? .running(child) : .failed(result) }
        guard result == 0 else { return }

        // Wait without reaping, so the pid stays ours until `phase` says it is gone.
        var info = siginfo_t()
        while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        phase.update { phase in
            var status: Int32 = 0
            var reaped: pid_t
            repeat {
                reaped = waitpid(child, &status, 0)
            } while reaped < 0 && errno == EINTR
            // The low 7 bits name the killing signal (0: exited normally); bits 8–15 the exit code.
            let signal = status & 0x7f
            phase = .exited(reaped < 0 ? -1 : signal == 0 ? (status >> 8) & 0xff : 128 + signal)
        }
        keptUntilExit.withLockedValue { $0 = [] }
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// glibc 2.34+ has posix_spawn_file_actions_addclosefrom_np; looked up at run time so
    /// the tests still build against an older glibc.
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32

    /// A pipe whose ends are close-on-exec from the start. Glibc's Swift module hides pipe2
    /// (a GNU extension), so it is looked up at run time; pipe + FD_CLOEXEC is the fallback.
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        let made: Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") {
            made = unsafeBitCast(symbol, to: Pipe2.self)(&fds, O_CLOEXEC)
        } else {
            made = pipe(&fds)
            if made == 0 { fds.forEach { _ = fcntl($0, F_SETFD, FD_CLOEXEC) } }
        }
        guard made == 0 else { throw ProcessError("pipe: \(String(cString: strerror(errno)))") }
        return (fds[0], fds[1])
    }
}

/// Whether `setpriv --pdeathsig` works here (util-linux 2.33+); probed once.
private enum DeathSignal {
    static let setpriv = Task<String?, Never> {
        let candidates = ["/usr/bin/setpriv", "/bin/setpriv"]
        guard let path = candidates.first(where: { access($0, X_OK) == 0 }),
            let probe = try? await ChildProcess.spawn(
                path, arguments: ["--pdeathsig", "KILL", "--", "true"],
                environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }, dieWithParent: false)
        else { return nil }
        guard let status = await probe.waitForExit(timeout: .seconds(10)) else {
            await probe.killAndReap()
            return nil
        }
        return status == 0 ? path : nil
    }
}

/// Bytes a child wrote to one pipe, appended by a drain thread until end of file.
public final class ChildOutput: Sendable {
    private let output = Observed((bytes: [UInt8](), ended: false))

    /// The bytes so far as UTF-8 (lossy).
    public var text: String { String(decoding: output.value.bytes, as: UTF8.self) }

    /// The first non-nil result of `check(bytes, ended)`, now or after a change; nil after `timeout`.
    public func wait<T: Sendable>(timeout: Duration, until check: @escaping @Sendable ([UInt8], Bool) -> T?) async -> T? {
        await output.wait(timeout: timeout) { check($0.bytes, $0.ended) }
    }

    /// Reads `fd` on a new thread until end of file, then closes it.
    fileprivate func drain(_ fd: Int32, name: String) {
        let thread = Thread { [output] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if count < 0 && errno == EINTR { continue }
                output.update { output in
                    if count > 0 {
                        output.bytes.append(contentsOf: chunk[..<count])
                    } else {
                        output.ended = true
                    }
                }
                if count <= 0 { break }
            }
            close(fd)
        }
        thread.name = name
        thread.start()
    }
}

/// A program that could not be started, stopped or run as asked; `description` says why.
public struct ProcessError: Error, CustomStringConvertible {
    public let message: String
    /// The exit status, if it had exited (128 + n: killed by signal n).
    public let exitStatus: Int32?
    /// What it wrote to stderr, for the report.
    public let stderr: String

    public init(_ message: String, exitStatus: Int32? = nil, stderr: String = "") {
        self.message = message
        self.exitStatus = exitStatus
        self.stderr = stderr
    }

    public var description: String {
        var text = message
        if let exitStatus { text += " (exit status \(exitStatus))" }
        if !stderr.isEmpty {
            let tail = stderr.count > 16_000 ? "…" + stderr.suffix(16_000) : stderr
            text += "\n--- stderr ---\n\(tail)\n--- end of stderr ---"
        }
        return text
    }
}

/// A directory from mkdtemp(3), removed with everything in it when the last reference goes.
public final class ScratchDirectory: Sendable {
    public let url: URL

    /// `<prefix>.XXXXXX` in `base`, or else in `$TMPDIR` or `/tmp`.
    public init(in base: String? = nil, prefix: String = "alertd-test") throws {
        let base = base ?? Self.base
        var template = Array("\(base)/\(prefix).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ProcessError("mkdtemp in \(base): \(String(cString: strerror(errno)))") }
        url = URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }

    /// `$TMPDIR`, or `/tmp`.
    public static var base: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
