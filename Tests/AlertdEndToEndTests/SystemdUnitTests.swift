// Checks of the units in systemd/ with systemd-analyze: the hardening score of
// alertd.service and a clean `verify` of both units. They read the unit files
// only; the daemon binary is not needed. systemd-analyze is required (Debian
// package `systemd`, which .ci/run installs): without it these tests fail.

import AlertdTestSupport
import Foundation
import Testing

@Suite("systemd units (§8)")
struct SystemdUnitTests {
    /// The repository root: this file is Tests/AlertdEndToEndTests/SystemdUnitTests.swift.
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let units = ["alertd.service", "alertd.socket"]
    static func unit(_ name: String) -> URL {
        repoRoot.appendingPathComponent("systemd").appendingPathComponent(name)
    }

    @Test("alertd.service rates an overall exposure of 2.0 or lower in systemd-analyze security")
    func securityExposure() async throws {
        let run = try await SystemdAnalyze.run(["security", "--offline=true", "--no-pager", Self.unit("alertd.service").path])
        #expect(run.status == 0, "systemd-analyze security exited \(run.status):\n\(run.output)")
        let level = try #require(
            SystemdAnalyze.overallExposure(in: run.stdout), "no \"Overall exposure level\" line in:\n\(run.output)")
        let exposed = run.stdout.split(separator: "\n").filter { $0.hasPrefix("✗") }.joined(separator: "\n")
        #expect(level <= 2.0, "overall exposure \(level) is above 2.0; still exposed:\n\(exposed)")
        // Loading the unit reports unknown keys and unparsable values here too.
        #expect(SystemdAnalyze.linesAboutOurUnits(in: run.stderr).isEmpty, "warnings about the unit:\n\(run.stderr)")
    }

    @Test("alertd.service denies link-local addresses, bounds its tasks and its memory (MemoryMax=)")
    func backstops() throws {
        let text = try String(contentsOf: Self.unit("alertd.service"), encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains("IPAddressDeny=link-local"))
        #expect(lines.contains { $0.hasPrefix("TasksMax=") && Int($0.dropFirst("TasksMax=".count)) != nil })
        // Set, not only suggested in a comment (issue 27 item 6; MemoryBudgetTests checks the default limits fit it).
        #expect(lines.contains { $0.hasPrefix("MemoryMax=") })
    }

    /// `verify` checks that ExecStart's binary exists, so it runs on a scratch
    /// root (`--root`) holding the units exactly as shipped in
    /// /etc/systemd/system, stub executables at the paths the units run, and a
    /// copy of this machine's own unit directory (sysinit.target and the rest
    /// the units depend on by default). The real system and binary are untouched.
    @Test("systemd-analyze verify accepts alertd.service and alertd.socket as shipped")
    func verify() async throws {
        let fileManager = FileManager.default
        let root = fileManager.temporaryDirectory.appendingPathComponent("systemd-verify-\(UUID().uuidString)")
        defer { try? fileManager.removeItem(at: root) }

        let systemUnits = try #require(
            ["/usr/lib/systemd/system", "/lib/systemd/system"].first { fileManager.fileExists(atPath: $0) },
            "no system unit directory (/usr/lib/systemd/system): is the systemd package installed?")
        let libSystemd = root.appendingPathComponent("usr/lib/systemd")
        try fileManager.createDirectory(at: libSystemd, withIntermediateDirectories: true)
        try fileManager.copyItem(atPath: systemUnits, toPath: libSystemd.appendingPathComponent("system").path)

        let etcUnits = root.appendingPathComponent("etc/systemd/system")
        try fileManager.createDirectory(at: etcUnits, withIntermediateDirectories: true)
        for name in Self.units {
            try fileManager.copyItem(at: Self.unit(name), to: etcUnits.appendingPathComponent(name))
        }

        // ExecStart=/usr/local/bin/alertd and ExecReload=/bin/kill (/bin is usr/bin on Debian).
        try fileManager.createSymbolicLink(atPath: root.appendingPathComponent("bin").path, withDestinationPath: "usr/bin")
        for path in ["usr/local/bin/alertd", "usr/bin/kill"] {
            let stub = root.appendingPathComponent(path)
            try fileManager.createDirectory(at: stub.deletingLastPathComponent(), withIntermediateDirectories: true)
            let made = fileManager.createFile(
                atPath: stub.path, contents: Data("#!/bin/sh\nexit 0\n".utf8), attributes: [.posixPermissions: 0o755])
            try #require(made, "cannot create \(stub.path)")
        }

        let run = try await SystemdAnalyze.run(["verify", "--root=\(root.path)"] + Self.units)
        #expect(run.status == 0, "systemd-analyze verify exited \(run.status):\n\(run.output)")
        #expect(SystemdAnalyze.linesAboutOurUnits(in: run.output).isEmpty, "systemd-analyze verify warned:\n\(run.output)")
    }
}

/// Runs systemd-analyze and collects what it printed.
struct SystemdAnalyze {
    let status: Int32
    let stdout: String
    let stderr: String
    var output: String { stdout + stderr }

    /// The lines that name one of our units (warnings carry the unit's name or file).
    static func linesAboutOurUnits(in text: String) -> [Substring] {
        text.split(separator: "\n").filter { line in SystemdUnitTests.units.contains { line.contains($0) } }
    }

    /// The number in "Overall exposure level for alertd.service: 1.1 OK".
    static func overallExposure(in text: String) -> Double? {
        for line in text.split(separator: "\n") {
            guard let marker = line.range(of: "Overall exposure level for ") else { continue }
            guard let colon = line[marker.upperBound...].firstIndex(of: ":") else { return nil }
            let number = line[line.index(after: colon)...].split(separator: " ").first
            return number.flatMap { Double($0) }
        }
        return nil
    }

    /// The systemd-analyze on the PATH (or in /usr/bin, /bin); fails the test without one.
    static func locate() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/systemd-analyze" } + ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        return try #require(
            candidates.first { FileManager.default.isExecutableFile(atPath: $0) },
            "systemd-analyze is not installed (not on PATH \(path)); install the Debian package `systemd` as .ci/run does")
    }

    static func run(_ arguments: [String]) async throws -> SystemdAnalyze {
        let run = try await Program.run(
            try locate(), arguments, environment: ["SYSTEMD_COLORS": "0", "SYSTEMD_PAGER": "cat", "LC_ALL": "C.UTF-8"],
            timeout: .seconds(120))
        return SystemdAnalyze(status: run.status, stdout: run.stdout, stderr: run.stderr)
    }
}
