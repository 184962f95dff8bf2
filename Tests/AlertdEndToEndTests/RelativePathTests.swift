import AlertdTestSupport
import Foundation
import Testing

/// Issue 32, item 4: relative paths in alertd.yaml are the file's (as alertctl.yaml's are), not
/// the working directory's, and the start says where the store really is.
@Suite("alertd.yaml: relative paths are taken from the file's directory")
struct RelativePathTests {
    @Test(
        "started from another directory, alertd keeps state_dir and the TLS files beside its config; the listening line names the absolute store"
    )
    func relativeToTheFile() async throws {
        let home = try ScratchDirectory()
        let elsewhere = try ScratchDirectory()
        let tls = home.url.appendingPathComponent("tls")
        try FileManager.default.createDirectory(at: tls, withIntermediateDirectories: true)
        let made = try await Program.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", tls.appendingPathComponent("key.pem").path, "-out", tls.appendingPathComponent("cert.pem").path,
            ])
        try #require(made.status == 0, "openssl: \(made.stderr)")
        let config = home.url.appendingPathComponent("alertd.yaml")
        try Data("state_dir: ./alertd-state\ntls: { cert_file: tls/cert.pem, key_file: ./tls/../tls/key.pem }\n".utf8).write(to: config)

        // check-config reads the same paths: from elsewhere, the TLS files are found.
        let checked = try await Program.run(
            "/bin/sh", ["-c", #"cd "$1" && exec "$0" check-config "$2""#, try Daemon.locateBinary(), elsewhere.url.path, config.path])
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")

        let child = try await Program.spawn(
            "/bin/sh",
            [
                "-c", #"cd "$1" && exec "$0" --config "$2" --listen 127.0.0.1:0"#, try Daemon.locateBinary(), elsewhere.url.path,
                config.path,
            ],
            environment: ["NOTIFY_SOCKET": nil, "LISTEN_FDS": nil, "LISTEN_PID": nil])
        defer { Task { await child.killAndReap() } }
        let line = await child.stderr.wait(timeout: .seconds(30)) { bytes, ended -> String? in
            let text = String(decoding: bytes, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.contains("msg=listening") }) { return String(line) }
            return ended ? "" : nil
        }
        let listening = Daemon.logfmtFields(try #require(line, "no listening line: \(child.stderr.text)"))
        let state = home.url.appendingPathComponent("alertd-state").path
        #expect(listening["store"] == "sqlite:\(state)", "\(child.stderr.text)")
        #expect(listening["scheme"] == "https")
        #expect(FileManager.default.fileExists(atPath: state + "/alertd.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: elsewhere.url.appendingPathComponent("alertd-state").path))
        _ = child.send(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(30)) == 0)
    }

    @Test(
        "--config and --state-dir on the command line are taken from the working directory; the config file and the store are logged absolute"
    )
    func flagsFromTheWorkingDirectory() async throws {
        let home = try ScratchDirectory()
        let elsewhere = try ScratchDirectory()
        try Data("state_dir: ./from-the-file\n".utf8).write(to: home.url.appendingPathComponent("alertd.yaml"))
        // The config named relatively, from elsewhere: ../<home>/alertd.yaml.
        let relative = "../\(home.url.lastPathComponent)/alertd.yaml"
        for (flags, store) in [
            ("", home.url.appendingPathComponent("from-the-file").path),
            ("--state-dir ./from-the-flag", elsewhere.url.appendingPathComponent("from-the-flag").path),
        ] {
            let child = try await Program.spawn(
                "/bin/sh",
                [
                    "-c", #"cd "$1" && exec "$0" --config "$2" --listen 127.0.0.1:0 "# + flags,
                    try Daemon.locateBinary(), elsewhere.url.path, relative,
                ],
                environment: ["NOTIFY_SOCKET": nil, "LISTEN_FDS": nil, "LISTEN_PID": nil])
            defer { Task { await child.killAndReap() } }
            let line = await child.stderr.wait(timeout: .seconds(30)) { bytes, ended -> String? in
                let text = String(decoding: bytes, as: UTF8.self)
                if let line = text.split(separator: "\n").first(where: { $0.contains("msg=listening") }) { return String(line) }
                return ended ? "" : nil
            }
            let listening = Daemon.logfmtFields(try #require(line))
            #expect(listening["store"] == "sqlite:\(store)", "\(flags): \(child.stderr.text)")
            #expect(FileManager.default.fileExists(atPath: store + "/alertd.sqlite"))
            // Issue 45: no log line names a path as it was typed, relative to a directory the reader cannot know.
            let config = child.stderr.text.split(separator: "\n").first { $0.contains("msg=config ") }.map {
                Daemon.logfmtFields(String($0))
            }
            #expect(config?["file"] == home.url.appendingPathComponent("alertd.yaml").path, "\(child.stderr.text)")
            #expect(!child.stderr.text.contains("../") && !child.stderr.text.contains("./from-the-flag"), "\(child.stderr.text)")
            _ = child.send(SIGTERM)
            #expect(await child.waitForExit(timeout: .seconds(30)) == 0)
        }
    }
}
