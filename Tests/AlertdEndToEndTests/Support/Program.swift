import Foundation
import Glibc

/// Runs a program to completion: its exit status, stdout and stderr.
///
/// Tests run programs through this, not Foundation's `Process`: on Linux, `Process` learns
/// that a child ended from a socket the child inherits, so a child that starts a daemon
/// (`tmux new-session` starts the tmux server) never "ends" while that daemon lives, and
/// `waitUntilExit()` hangs the test run. This spawns with every inherited fd above 2
/// closed, reaps with waitpid(2), and bounds the run by `timeout`.
struct Program {
    let status: Int32
    let stdout: String
    let stderr: String

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `executable` is a path or a name looked up on `PATH`; `stdin` is written to the
    /// program's standard input (which is /dev/null without it).
    @discardableResult
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
        timeout: Double = 60
    ) throws -> Program {
        let path = try locate(executable)
        var stdinPath = "/dev/null"
        var scratch: URL?
        if let stdin {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-stdin-\(UUID().uuidString)")
            try Data(stdin.utf8).write(to: file)
            stdinPath = file.path
            scratch = file
        }
        defer { scratch.map { try? FileManager.default.removeItem(at: $0) } }
        let child = try spawn(path, arguments, environment: environment.mapValues { $0 }, stdinPath: stdinPath)
        guard let status = child.waitForExit(timeout: timeout) else {
            child.killAndReap()
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) still running after \(timeout) s; killed")
        }
        child.awaitOutputEnd()
        return Program(status: status, stdout: child.stdout.text, stderr: child.stderr.text)
    }

    /// Starts `executable` (a path) without waiting for it, with the test process's environment
    /// plus `environment`, where a nil value leaves that name out.
    static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String?], stdinPath: String = "/dev/null"
    ) throws -> DaemonProcess {
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        return try DaemonProcess.spawn(
            executable, arguments: arguments, environment: merged.map { "\($0.key)=\($0.value)" }, dieWithParent: false,
            stdinPath: stdinPath)
    }

    /// Runs the alertd binary under test (`token new`, `check-config`) to completion.
    static func alertd(_ arguments: [String]) throws -> Program {
        let binary = try Daemon.locateBinary(
            override: nil, environment: ProcessInfo.processInfo.environment, testExecutable: Daemon.selfExecutablePath())
        return try run(binary, arguments)
    }

    /// Lower-case hex SHA-256 of `text`, through the system's `sha256sum` so that tests do not
    /// share alertd's hashing code; empty if `sha256sum` could not run.
    static func sha256Hex(_ text: String) -> String {
        let run = try? run("/usr/bin/sha256sum", [], stdin: text)
        return String((run?.stdout ?? "").prefix(64))
    }

    /// The path of `name`: itself if it holds a slash, else the first executable on `PATH`.
    static func locate(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where access("\(directory)/\(name)", X_OK) == 0 {
            return "\(directory)/\(name)"
        }
        throw Failure(description: "\(name) is not on PATH (\(path))")
    }
}
