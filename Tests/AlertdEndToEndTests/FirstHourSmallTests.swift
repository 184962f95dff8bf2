import AlertdTestSupport
import Foundation
import Testing

/// Issue 32, item 10: the smaller traps of a first hour.
@Suite("The first hour's smaller traps")
struct FirstHourSmallTests {
    /// A directory with `alertd.yaml` holding `text`; removed by the caller.
    static func configFile(_ text: String) throws -> (directory: URL, file: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("first-hour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("alertd.yaml")
        try Data(text.utf8).write(to: file)
        return (directory, file)
    }

    @Test("a wrong listen is said once, with the file's name, by check-config and at start")
    func listenSaidOnce() async throws {
        let (directory, file) = try Self.configFile("listen: \"nonsense\"\nstate_dir: ./state\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let check = try await Program.alertd(["check-config", file.path])
        #expect(check.status == 1 && check.stderr == "\(file.path): listen must be HOST:PORT, not nonsense\n", "\(check)")
        let start = try await Program.alertd(["--config", file.path])
        #expect(start.status == 2 && start.stderr == "alertd: \(file.path): listen must be HOST:PORT, not nonsense\n", "\(start)")
    }

    @Test("a state_dir that cannot be created is said in alertd's own sentence, with the system's reason, not Foundation's error")
    func stateDirNotCreated() async throws {
        // Under /proc nothing can be created, whoever runs the test (root included, where access() says yes).
        let (directory, file) = try Self.configFile("state_dir: /proc/alertd-test-\(UUID().uuidString)/state\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let start = try await Program.alertd(["--config", file.path])
        #expect(start.status == 1, "\(start)")
        #expect(
            start.stderr.contains("msg=\"cannot run\"") && start.stderr.contains("cannot be created: ")
                && start.stderr.contains("state_dir"),
            "\(start)")
        #expect(!start.stderr.contains("NSCocoaErrorDomain"), "\(start)")
    }

    @Test(
        "a tab in the indentation is named as a tab, at the tab's line and column",
        arguments: [
            ("limits:\n\tmax_waiters: 5\n", "2:1"),
            ("auth:\n  allow_anonymous: true\n  \ttokens: []\n", "3:3"),
            ("limits:\n  max_waiters: 5\n \t max_connections: 9\nlog: { level: info }\n", "3:2"),
        ])
    func tabNamed(yaml: String, position: String) async throws {
        let (directory, file) = try Self.configFile(yaml)
        defer { try? FileManager.default.removeItem(at: directory) }
        let check = try await Program.alertd(["check-config", file.path])
        #expect(
            check.status == 1
                && check.stderr == "\(file.path):\(position): not valid YAML: a tab in the indentation; YAML indents with spaces only\n",
            "\(check)")
    }
}
