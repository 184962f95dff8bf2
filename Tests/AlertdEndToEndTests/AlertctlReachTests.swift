import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import NIOConcurrencyHelpers
import Testing

/// An `alertctl.yaml` in a directory of its own, passed to alertctl as `XDG_CONFIG_HOME`.
/// The directory goes with the last reference to it: keep one to the end of the test
/// (`defer { withExtendedLifetime(home) {} }`), as Swift may end a lifetime after its last use.
private struct ConfigHome {
    let scratch: ScratchDirectory
    var path: String { scratch.url.path }
    var file: String { path + "/alertd/alertctl.yaml" }

    init(_ yaml: String) throws {
        scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: path + "/alertd", withIntermediateDirectories: true)
        try write("alertctl.yaml", yaml)
    }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = path + "/alertd/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }
}

@Suite("alertctl: reaching the daemon (unreachable, TLS, global options, alertctl.yaml, whoami)")
struct AlertctlReachTests {
    @Test("post --wait to a daemon that is not there exits 4 at once, saying why in a sentence; nothing claims a withdrawal")
    func unreachableAtOnce() async throws {
        let closed = try ReservedPort()
        defer { closed.release() }
        let started = Date()
        let result = try await Alertctl(url: "http://127.0.0.1:\(closed.port)").run("post", "ops", "--title", "x", "--wait")
        #expect(result.status == 4, "\(result)")
        #expect(result.stderr == "alertctl: cannot reach alertd: connection refused (127.0.0.1:\(closed.port))\n")
        // At once: no retry (a retrying alertctl would not exit at all); generous for a loaded machine.
        #expect(result.stdout.isEmpty && Date().timeIntervalSince(started) < 60)
    }

    @Test("once posted, post --wait says on stderr that it retries, and after --retry-for exits 4 naming the alert")
    func givesUpAfterRetryFor() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let run = try await Alertctl(url: daemon.baseURL).start([
            "post", "ops", "--title", "Deploy?", "--button", "Go", "--wait", "--retry-for", "4",
        ])
        let id = try await SDKTests.awaitDisplayed(daemon, "ops")
        try await SDKTests.awaitWaiters(daemon, 1)
        // Killed: the parked long-poll's connection drops, then every try is refused. The bound
        // leaves room for several refused tries even on a loaded machine.
        await daemon.kill9()
        let result = try await run.finish()
        #expect(result.status == 4 && result.stdout.isEmpty, "\(result)")
        let refused = "cannot reach alertd: connection refused (127.0.0.1:\(daemon.port))"
        #expect(result.stderr.contains("alertctl: \(refused); retrying in "), "\(result.stderr)")
        #expect(result.stderr.contains("(alert \(id), giving up in "), "\(result.stderr)")
        #expect(result.stderr.contains("alertctl: gave up after 4 s of failures: \(refused)\n"), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("the alert \(id) stays pending on ops; look it up with: alertctl get ops \(id)\n"))
    }

    @Test("a daemon back within --retry-for: post --wait said it was retrying, then prints the answer")
    func recoversWithinRetryFor() async throws {
        let first = try await Daemon.start()
        defer { first.cleanup() }
        let run = try await Alertctl(url: first.baseURL).start(["post", "ops", "--title", "Deploy?", "--button", "Go", "--wait"])
        let id = try await SDKTests.awaitDisplayed(first, "ops")
        try await SDKTests.awaitWaiters(first, 1)
        await first.kill9()
        let second = try await Daemon.start(.init(stateDir: first.stateDir, listen: "127.0.0.1:\(first.port)"))
        defer { second.cleanup() }
        try await SDKTests.awaitWaiters(second, 1)
        _ = try await AlertdClient(url: second.baseURL).choose(on: "ops", id: id, button: "Go")
        let result = try await run.finish()
        #expect(result.status == 0 && result.stdout == "Go\n", "\(result)")
        #expect(result.stderr.contains("; retrying in "), "\(result.stderr)")
    }

    @Test("global options go before the command too; a URL without a scheme is bad usage (64)")
    func globalOptionsFirst() async throws {
        let (daemon, secrets) = try await AuthTests.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: nil)
        let posted = try await ctl.run(
            "--url", daemon.baseURL, "--token", secrets["deployer"]!, "--json", "post", "ops", "--title", "First options")
        #expect(posted.status == 0 && posted.stdout.hasPrefix(#"{"id":""#), "\(posted)")
        let listed = try await ctl.run("--url=\(daemon.baseURL)", "webhooks", "--token", secrets["root"]!, "list", "ops")
        #expect(listed.status == 0, "\(listed)")
        for arguments in [["--url", "localhost:\(daemon.port)", "clients"], ["clients", "--url", "localhost:\(daemon.port)"]] {
            let bad = try await ctl.start(arguments).finish()
            #expect(bad.status == 64, "\(bad)")
            #expect(bad.stderr == "alertctl: the daemon URL must be an absolute http(s) URL, not localhost:\(daemon.port)\n")
        }
    }

    @Test("alertctl.yaml gives the URL and the token file; the environment wins over it, and a flag over both")
    func configFile() async throws {
        let (daemon, secrets) = try await AuthTests.start()
        defer { daemon.cleanup() }
        let closed = try ReservedPort()
        defer { closed.release() }
        let home = try ConfigHome("")
        defer { withExtendedLifetime(home) {} }
        let tokenFile = try home.write("reader.token", secrets["reader"]! + "\n")
        try home.write("alertctl.yaml", "# alertctl\nurl: \(daemon.baseURL)\ntoken_file: \(tokenFile)\n")
        let fromFile = Alertctl(url: nil, environment: ["XDG_CONFIG_HOME": home.path])
        let whoami = try await fromFile.run("whoami")
        #expect(whoami.status == 0, "\(whoami)")
        #expect(whoami.stdout.contains("url:     \(daemon.baseURL)\nconfig:  \(home.file)\ntoken:   reader (from \(tokenFile))\n"))
        #expect(try await fromFile.run("clients").status == 0)

        // The environment over the file: $ALERTD_TOKEN names another token.
        var overridden = fromFile
        overridden.token = secrets["deployer"]
        #expect(try await overridden.run("whoami").stdout.contains("token:   deployer (from $ALERTD_TOKEN)"))
        // $ALERTD_URL over the file's url, --url over $ALERTD_URL.
        let elsewhere = try ConfigHome("url: http://127.0.0.1:\(closed.port)\ntoken: \(secrets["reader"]!)\n")
        defer { withExtendedLifetime(elsewhere) {} }
        let viaEnvironment = Alertctl(url: daemon.baseURL, environment: ["XDG_CONFIG_HOME": elsewhere.path])
        #expect(try await viaEnvironment.run("clients").status == 0)
        let down = Alertctl(url: "http://127.0.0.1:\(closed.port)", environment: ["XDG_CONFIG_HOME": elsewhere.path])
        #expect(try await down.run("clients").status == 4)
        #expect(try await down.run("clients", "--url", daemon.baseURL).status == 0)

        // A mistake in the file is bad usage, with its line, not a silent fallback.
        let typo = try ConfigHome("url: \(daemon.baseURL)\ntokne: x\n")
        defer { withExtendedLifetime(typo) {} }
        let refused = try await Alertctl(url: nil, environment: ["XDG_CONFIG_HOME": typo.path]).run("clients")
        #expect(refused.status == 64 && refused.stderr.contains("\(typo.file) line 2: unknown key `tokne`"), "\(refused)")
    }

    @Test("whoami without tokens says none is needed; --json passes the daemon's answer")
    func whoamiAnonymous() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let ctl = Alertctl(url: daemon.baseURL)
        let plain = try await ctl.run("whoami")
        #expect(plain.status == 0 && plain.stdout.contains("token:   none needed: the daemon has no tokens"), "\(plain)")
        let json = try await ctl.run("whoami", "--json")
        let answer = try await daemon.client().get("/v1/whoami").text
        #expect(json.stdout == answer + "\n")
    }
}

@Suite("alertctl and the SDK against an https daemon with a self-signed certificate")
struct AlertctlTLSTests {
    static func start() async throws -> (Daemon, TestCertificate) {
        let certificate = try await TestCertificate(names: ["localhost"])
        let daemon = try await Daemon.start(
            .init(config: "tls: { cert_file: \"\(certificate.directory)/cert.pem\", key_file: \"\(certificate.directory)/key.pem\" }\n"))
        return (daemon, certificate)
    }

    @Test(
        "without its CA the certificate is not trusted: one readable line and exit 4; --cacert, $ALERTD_CACERT, alertctl.yaml and --insecure each get through"
    )
    func trust() async throws {
        let (daemon, certificate) = try await Self.start()
        defer { daemon.cleanup() }
        defer { certificate.remove() }
        let url = "https://localhost:\(daemon.port)"
        let ctl = Alertctl(url: url)
        let untrusted = try await ctl.run("clients")
        #expect(untrusted.status == 4, "\(untrusted)")
        #expect(
            untrusted.stderr
                == "alertctl: cannot reach alertd: certificate not trusted (localhost:\(daemon.port)); trust its CA with --cacert FILE (or $ALERTD_CACERT), or skip the check with --insecure\n"
        )
        let ca = certificate.directory + "/cert.pem"
        #expect(try await ctl.run("clients", "--cacert", ca).status == 0)
        #expect(try await Alertctl(url: url, environment: ["ALERTD_CACERT": ca]).run("clients").status == 0)
        let home = try ConfigHome("cacert: \(ca)\n")
        defer { withExtendedLifetime(home) {} }
        #expect(try await Alertctl(url: url, environment: ["XDG_CONFIG_HOME": home.path]).run("clients").status == 0)
        #expect(try await ctl.run("--insecure", "clients").status == 0)
        let missing = try await ctl.run("clients", "--cacert", "/nonexistent/ca.pem")
        #expect(missing.status == 64 && missing.stderr == "alertctl: cannot read the CA file /nonexistent/ca.pem: no such file\n")
    }

    @Test("post --wait over TLS: the post and the long-poll both trust --cacert")
    func waitOverTLS() async throws {
        let (daemon, certificate) = try await Self.start()
        defer { daemon.cleanup() }
        defer { certificate.remove() }
        let ca = certificate.directory + "/cert.pem"
        let run = try await Alertctl(url: "https://localhost:\(daemon.port)").start([
            "post", "ops", "--title", "Over TLS?", "--button", "Yes", "--wait", "--cacert", ca,
        ])
        let alertd = try AlertdClient(url: "https://localhost:\(daemon.port)", trust: .pemFile(ca))
        let id = try await SDKTests.displayed(alertd, "ops")
        _ = try await alertd.choose(on: "ops", id: id, button: "Yes")
        let result = try await run.finish()
        #expect(result.status == 0 && result.stdout == "Yes\n", "\(result)")
        await #expect {
            try await AlertdClient(url: "https://localhost:\(daemon.port)").clients()
        } throws: { error in
            let error = error as? AlertdError
            return error?.kind == .connection && error?.neverSent == true && error?.message.contains("certificate not trusted") == true
        }
    }
}

@Suite("AlertdClient.present: the retry bound and progress")
struct PresentRetryTests {
    @Test("with retryFor, present gives up once the daemon is away that long; the error names the posted alert, progress told each step")
    func givesUp() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        var alerts = try AlertdClient(url: daemon.baseURL)
        alerts.retryFor = 1
        alerts.maxRetryDelay = 0.2
        let steps = NIOLockedValueBox<[PresentProgress]>([])
        let task = Task {
            try await alerts.presentUntilTerminal(NewAlert(title: "Still there?", buttons: [.default("Yes")]), on: "ops") { step in
                steps.withLockedValue { $0.append(step) }
            }
        }
        let id = try await SDKTests.awaitDisplayed(daemon, "ops")
        try await SDKTests.awaitWaiters(daemon, 1)
        await daemon.kill9()
        await #expect {
            try await task.value
        } throws: { error in
            let error = error as? AlertdError
            return error?.alertID == id && error?.kind == .connection && error?.isTransient == true
        }
        let seen = steps.withLockedValue { $0 }
        guard case .posted(let posted)? = seen.first else {
            Issue.record("the first step is not .posted: \(seen)")
            return
        }
        let retries = seen.dropFirst().compactMap { step -> RetryNotice? in
            if case .retrying(let notice) = step { return notice }
            return nil
        }
        #expect(posted.id == id && !retries.isEmpty && retries.count == seen.count - 1)
        #expect(retries.allSatisfy { $0.alertID == id && ($0.giveUpIn ?? 2) <= 1 && $0.delay <= 0.2 })
    }
}
