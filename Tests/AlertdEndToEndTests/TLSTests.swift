import AlertdTestSupport
import Foundation
import Glibc
import Testing

/// Runs a command to completion; its exit status and output.
@discardableResult
private func run(_ executable: String, _ arguments: [String], stdin: String? = nil) async throws -> (status: Int32, output: String) {
    let run = try await Program.run(executable, arguments, stdin: stdin ?? "")
    return (run.status, run.stdout + run.stderr)
}

/// A self-signed certificate for localhost and 127.0.0.1, made by openssl in a temp directory.
private struct SelfSigned {
    let directory: URL
    var cert: String { directory.appendingPathComponent("cert.pem").path }
    var key: String { directory.appendingPathComponent("key.pem").path }

    init() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let made = try await run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", directory.appendingPathComponent("key.pem").path, "-out", directory.appendingPathComponent("cert.pem").path,
            ])
        try #require(made.status == 0, "openssl: \(made.output)")
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// An HTTPS request with Python's ssl module, trusting only `cafile`: status and body.
private func https(_ method: String, _ url: String, cafile: String, body: String? = nil) async throws -> (status: Int, body: String) {
    let script = """
        import ssl, sys, urllib.request, urllib.error
        ctx = ssl.create_default_context(cafile=sys.argv[3])
        data = sys.argv[4].encode() if len(sys.argv) > 4 else None
        req = urllib.request.Request(sys.argv[2], data=data, method=sys.argv[1], headers={"Content-Type": "application/json"})
        try:
            r = urllib.request.urlopen(req, context=ctx, timeout=10)
            print(r.status); print(r.read().decode())
        except urllib.error.HTTPError as e:
            print(e.code); print(e.read().decode())
        """
    let result = try await run("/usr/bin/env", ["python3", "-c", script, method, url, cafile] + (body.map { [$0] } ?? []))
    let lines = result.output.split(separator: "\n", maxSplits: 1).map(String.init)
    return (Int(lines.first ?? "") ?? -1, lines.count > 1 ? lines[1] : result.output)
}

@Suite("TLS: tls.cert_file and tls.key_file serve HTTPS")
struct TLSTests {
    @Test("HTTPS with a self-signed certificate: a verifying client gets answers; plain HTTP gets none")
    func servesHTTPS() async throws {
        let material = try await SelfSigned()
        defer { material.remove() }
        let daemon = try await Daemon.start(.init(config: "tls: { cert_file: \"\(material.cert)\", key_file: \"\(material.key)\" }\n"))
        defer { daemon.cleanup() }
        #expect(daemon.stderrText.contains("scheme=https"))
        let base = "https://localhost:\(daemon.port)"
        let health = try await https("GET", base + "/healthz", cafile: material.cert)
        #expect(health.status == 200 && health.body.contains("ok"), "\(health)")
        let posted = try await https("POST", base + "/v1/clients/ops/alerts", cafile: material.cert, body: #"{"title":"Over TLS"}"#)
        #expect(posted.status == 201 && posted.body.contains("Over TLS"), "\(posted)")
        let bad = try await https("GET", base + "/v1/nowhere", cafile: material.cert)
        #expect(bad.status == 404 && bad.body.contains("not-found"))
        // Plain HTTP on the TLS port is not served.
        let plain = daemon.client(timeout: .seconds(5))
        await #expect(throws: (any Error).self) { try await plain.get("/healthz") }
    }

    @Test("with TLS the watchdog probes over HTTPS and keeps pinging")
    func watchdogOverTLS() async throws {
        let material = try await SelfSigned()
        defer { material.remove() }
        let notify = try FakeNotifySocket()
        let daemon = try await Daemon.start(
            .init(
                config: "tls: { cert_file: \"\(material.cert)\", key_file: \"\(material.key)\" }\n",
                // 2 s: pings every second, each HTTPS probe given 0.5 s (a quarter of the
                // interval); at 0.4 s a probe had 0.1 s, which a loaded machine missed.
                environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000"]))
        defer { daemon.cleanup() }
        var pings = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while pings < 3, ContinuousClock.now < deadline {
            pings += await notify.receive(until: "WATCHDOG=1", timeout: .seconds(2)).filter { $0.contains("WATCHDOG=1") }.count
        }
        #expect(pings >= 3, "the HTTPS probe succeeded \(pings) times; log: \(daemon.stderrText.suffix(500))")
        #expect(!daemon.stderrText.contains("watchdog probe failed"))
    }

    @Test("README's openssl command makes a certificate alertd serves and alertctl trusts with --cacert, by name and by address")
    func readmeCertificate() async throws {
        let readme = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../README.md").standardized,
            encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## TLS\n").dropFirst().first?.components(separatedBy: "\n## ").first)
        let command = try #require(section.components(separatedBy: "```sh\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(command.contains("subjectAltName"))
        let directory = try ScratchDirectory()
        let made = try await run("/bin/sh", ["-c", "cd \"$0\" && " + command, directory.url.path])
        try #require(made.status == 0, "\(command)→ \(made.output)")
        // As README goes on: the files beside the config, named relatively.
        let daemon = try await Daemon.start(
            .init(config: "tls: { cert_file: \"\(directory.url.path)/cert.pem\", key_file: \"\(directory.url.path)/key.pem\" }\n"))
        defer { daemon.cleanup() }
        for host in ["localhost", "127.0.0.1"] {
            let ctl = Alertctl(url: "https://\(host):\(daemon.port)")
            let whoami = try await ctl.run("--cacert", directory.url.appendingPathComponent("cert.pem").path, "whoami")
            #expect(whoami.status == 0 && whoami.stdout.contains("url:     https://\(host):\(daemon.port)"), "\(host): \(whoami)")
        }
    }

    @Test("alertctl with an http:// URL for a TLS port asks: is it https? (once)")
    func plainHTTPToTLS() async throws {
        let material = try await SelfSigned()
        defer { material.remove() }
        let daemon = try await Daemon.start(.init(config: "tls: { cert_file: \"\(material.cert)\", key_file: \"\(material.key)\" }\n"))
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: "http://127.0.0.1:\(daemon.port)")
        let run = try await ctl.run("clients")
        #expect(run.status == 4, "\(run)")
        #expect(run.stderr.contains("is it https?") && run.stderr.contains("try https://127.0.0.1:\(daemon.port)"), "\(run)")
        #expect(run.stderr.components(separatedBy: "is it https?").count == 2, "said once: \(run.stderr)")
        // A daemon that is not there at all is not asked about https.
        let nobody = try await Alertctl(url: "http://127.0.0.1:1").run("clients")
        #expect(nobody.status == 4 && !nobody.stderr.contains("https"), "\(nobody)")
    }

    @Test("an encrypted private key is named as encrypted, at start and by check-config")
    func encryptedKey() async throws {
        let material = try await SelfSigned()
        defer { material.remove() }
        let encrypted = material.directory.appendingPathComponent("encrypted.pem").path
        let traditional = material.directory.appendingPathComponent("traditional.pem").path
        let pkcs8 = try await run(
            "/usr/bin/openssl", ["pkey", "-in", material.key, "-aes256", "-passout", "pass:secret", "-out", encrypted])
        try #require(pkcs8.status == 0, "\(pkcs8.output)")
        let old = try await run(
            "/usr/bin/openssl", ["rsa", "-in", material.key, "-aes256", "-traditional", "-passout", "pass:secret", "-out", traditional])
        try #require(old.status == 0, "\(old.output)")
        for key in [encrypted, traditional] {
            let config = "tls: { cert_file: \"\(material.cert)\", key_file: \"\(key)\" }\n"
            let refused = try await Daemon.refusal(.init(config: config))
            #expect(refused.exitStatus == 1, "\(refused)")
            #expect(
                refused.stderr.contains("msg=\"cannot run\"") && refused.stderr.contains("tls.key_file: \(key) is an encrypted private key")
                    && refused.stderr.contains("openssl pkey"), "\(refused.stderr)")
            let file = material.directory.appendingPathComponent("alertd.yaml")
            try Data("state_dir: \(material.directory.path)/state\n\(config)".utf8).write(to: file)
            let checked = try await Program.alertd(["check-config", file.path])
            #expect(checked.status == 1 && checked.stderr.contains("is an encrypted private key"), "\(checked.stderr)")
        }
    }

    @Test("a tls section without both files, or with a file that is not PEM, is refused at start")
    func badTLSConfig() async throws {
        // A config alertd refuses: exit 2, one `alertd:` line.
        let halfConfigured = try await Daemon.refusal(.init(config: "tls: { cert_file: /nonexistent.pem }\n"))
        #expect(halfConfigured.exitStatus == 2, "\(halfConfigured)")
        #expect(halfConfigured.stderr.contains("tls needs both cert_file and key_file"), "\(halfConfigured.stderr)")
        let material = try await SelfSigned()
        defer { material.remove() }
        let notPEM = material.directory.appendingPathComponent("junk.pem")
        try Data("junk".utf8).write(to: notPEM)
        // A start that fails: exit 1, `cannot run` naming the file.
        let junk = try await Daemon.refusal(.init(config: "tls: { cert_file: \"\(notPEM.path)\", key_file: \"\(material.key)\" }\n"))
        #expect(junk.exitStatus == 1, "\(junk)")
        #expect(junk.stderr.contains("msg=\"cannot run\"") && junk.stderr.contains("\(notPEM.path) is not a PEM file"), "\(junk.stderr)")
    }

    /// Whether `openssl s_client` completes a handshake with the daemon offering only what `arguments` allow.
    private static func handshakes(_ port: Int, _ arguments: [String]) async throws -> Bool {
        try await run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost"] + arguments, stdin: "")
            .status == 0
    }

    /// A client limited to TLS 1.0 or 1.1, or to ciphers without forward secrecy or with CBC and SHA-1;
    /// `@SECLEVEL=0` so that openssl itself offers what it would otherwise refuse to.
    static let weak: [[String]] = [
        ["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"],
        ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"],
        ["-tls1_2", "-cipher", "AES128-SHA@SECLEVEL=0"],
        ["-tls1_2", "-cipher", "AES256-GCM-SHA384"],
        ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA@SECLEVEL=0"],
        ["-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256"],
    ]

    @Test("by default only TLS 1.2 and 1.3 with forward-secret AEAD ciphers: openssl offering less is refused")
    func securePriorities() async throws {
        let material = try await SelfSigned()
        defer { material.remove() }
        let daemon = try await Daemon.start(.init(config: "tls: { cert_file: \"\(material.cert)\", key_file: \"\(material.key)\" }\n"))
        defer { daemon.cleanup() }
        #expect(try await Self.handshakes(daemon.port, ["-tls1_3"]))
        #expect(try await Self.handshakes(daemon.port, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]))
        #expect(try await Self.handshakes(daemon.port, ["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"]))
        for arguments in Self.weak {
            #expect(try await !Self.handshakes(daemon.port, arguments), "accepted: \(arguments.joined(separator: " "))")
        }
        #expect(try await Program.run("/usr/bin/curl", ["-sk", "https://127.0.0.1:\(daemon.port)/healthz"]).stdout.contains("ok"))
    }

    @Test("tls.priorities replaces the default: with NORMAL a static-RSA CBC cipher is accepted; a bad string stops the start")
    func configuredPriorities() async throws {
        let material = try await SelfSigned()
        defer { material.remove() }
        let files = "cert_file: \"\(material.cert)\", key_file: \"\(material.key)\""
        let daemon = try await Daemon.start(.init(config: "tls: { \(files), priorities: \"NORMAL\" }\n"))
        defer { daemon.cleanup() }
        #expect(try await Self.handshakes(daemon.port, ["-tls1_2", "-cipher", "AES128-SHA@SECLEVEL=0"]))
        // A segfault on a bad string once passed a looser check: the status and the line, exactly.
        let refused = try await Daemon.refusal(.init(config: "tls: { \(files), priorities: \"NO-SUCH-KEYWORD\" }\n"))
        #expect(refused.exitStatus == 1, "\(refused)")
        #expect(refused.stderr.contains("Setting priorities to `NO-SUCH-KEYWORD' failed"), "\(refused.stderr)")
        #expect(
            refused.stderr.contains("msg=\"cannot run\"") && refused.stderr.contains("is the TLS priority string valid?"),
            "\(refused.stderr)")
    }
}
