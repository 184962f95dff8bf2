import AlertdTestSupport
import Foundation
import Testing

@testable import AlertdDaemon

@Suite("A config file's problems: every one, one line each, naming its key")
struct ConfigProblemTests {
    @Test("every problem in the file is reported, not only the first")
    func everyProblem() throws {
        let yaml = """
            durabilty: full
            limits:
              max_waiters: lots
            log: { level: loud }
            webhooks:
              - { client: ops, url: "ftp://x/y", secret: s }
              - { client: ops, url: "http://x/y" }
            """
        let errors = try #require(throwing(yaml))
        let keys = errors.errors.compactMap(\.key)
        #expect(keys == ["durabilty", "limits.max_waiters", "log.level", "webhooks[0].url", "webhooks[1].secret"])
        #expect(errors.errors.allSatisfy { !$0.description.contains("\n") }, "one line each")
        #expect(errors.description.split(separator: "\n").count == 5)
    }

    @Test(
        "a misspelt key names the key it most likely means; a stranger one only itself",
        arguments: [
            ("durabilty: full", "unknown key durabilty (did you mean durability?)"),
            ("listn: x", "unknown key listn (did you mean listen?)"),
            ("limits: { max_wiat_seconds: 5 }", "unknown key limits.max_wiat_seconds (did you mean max_wait_seconds?)"),
            ("log: { levle: info }", "unknown key log.levle (did you mean level?)"),
            ("colour: red", "unknown key colour"),
            ("durabilityy: full", "unknown key durabilityy (did you mean durability?)"),
            ("Durabilty: full", "unknown key Durabilty (did you mean durability?)"),
        ])
    func suggestion(yaml: String, line: String) throws {
        let errors = try #require(throwing(yaml))
        #expect(errors.errors.map(\.description) == ["config: " + line])
    }

    @Test("a key far longer than any allowed one gets no suggestion")
    func longKey() throws {
        let key = "durability" + String(repeating: "y", count: 20_000)
        let errors = try #require(throwing("\(key): full"))
        #expect(errors.errors.count == 1)
        #expect(!errors.errors[0].description.contains("did you mean"))
    }

    @Test("a YAML syntax error is one line with its line and column")
    func syntax() throws {
        let errors = try #require(throwing("listen: \"127.0.0.1:8080\"\nlimits:\n  max_waiters: [1, 2\n"))
        #expect(errors.errors.count == 1)
        let line = errors.errors[0].description
        #expect(line.hasPrefix("config:4:1: not valid YAML:") || line.hasPrefix("config:3:"), "\(line)")
        #expect(!line.contains("\n"))
    }

    func throwing(_ yaml: String) -> ConfigErrors? {
        do {
            _ = try Config.parse(yaml: yaml)
            return nil
        } catch {
            return error as? ConfigErrors
        }
    }
}

@Suite("The checks alertd runs before it serves (and check-config runs too)")
struct StartCheckTests {
    @Test("anonymous on a non-loopback address is refused; with tokens or allow_anonymous it is not")
    func anonymous() throws {
        var config = try Config.parse(yaml: "listen: \"0.0.0.0:8080\"")
        config.stateDir = NSTemporaryDirectory()
        #expect(config.startCheck().errors.map(\.key) == ["listen"])
        config.allowAnonymous = true
        #expect(config.startCheck().errors.isEmpty)
        config.allowAnonymous = false
        #expect(config.startCheck(listeningHost: "127.0.0.1").errors.isEmpty, "a loopback socket from systemd")
    }

    @Test("TLS files must be readable, a certificate and its own key")
    func tls() async throws {
        let one = try await TestCertificate(names: ["one.test"])
        let two = try await TestCertificate(names: ["two.test"])
        defer {
            one.remove()
            two.remove()
        }
        var config = Config()
        config.stateDir = NSTemporaryDirectory()
        config.tls = .init(certFile: one.directory + "/cert.pem", keyFile: one.directory + "/key.pem")
        #expect(config.startCheck().errors.isEmpty)
        config.tls = .init(certFile: one.directory + "/cert.pem", keyFile: two.directory + "/key.pem")
        #expect(config.startCheck().errors.map(\.key) == ["tls.key_file"], "another certificate's key")
        config.tls = .init(certFile: one.directory + "/missing.pem", keyFile: one.directory + "/key.pem")
        #expect(config.startCheck().errors.map(\.key) == ["tls.cert_file"])
        config.tls = .init(certFile: one.directory + "/key.pem", keyFile: one.directory + "/key.pem")
        #expect(config.startCheck().errors.map(\.key) == ["tls.cert_file"], "a key where the certificate should be")
    }

    @Test("the state directory must be a directory alertd can write, or one it can create")
    func stateDir() throws {
        let file = NSTemporaryDirectory() + "alertd-not-a-dir-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        var config = Config()
        config.stateDir = file
        #expect(config.startCheck().errors.map(\.key) == ["state_dir"])
        config.stateDir = file + "/below"
        #expect(config.startCheck().errors.map(\.key) == ["state_dir"], "a parent that is a file")
        config.stateDir = NSTemporaryDirectory() + "alertd-new-\(UUID().uuidString)/state"
        #expect(config.startCheck().errors.isEmpty, "created at start")
    }

    @Test("settings without effect are warnings, not errors")
    func warnings() throws {
        var config = try Config.parse(yaml: "limits: { rate_per_second: 5 }\nmetrics: { require_token: true }")
        config.stateDir = NSTemporaryDirectory()
        let check = config.startCheck()
        #expect(check.errors.isEmpty)
        #expect(check.warnings.count == 2)
    }

    @Test(
        "a PostgreSQL server beyond this machine, not verified, is warned of loudly; a local or verified one is not",
        arguments: [
            ("postgres://alertd@db.internal/alertd", "sslmode=prefer"),
            ("postgres://alertd@10.0.0.5/alertd?sslmode=disable", "without TLS"),
            ("postgres://alertd@db.internal/alertd?sslmode=require", "not verifying the server's certificate"),
            ("host=db.internal dbname=alertd sslmode=verify-ca", "verifying the certificate's chain but not its name"),
            ("postgres://alertd@db.internal/alertd?sslmode=verify-full", nil),
            ("postgres://alertd@127.0.0.1/alertd", nil),
            ("postgres://alertd@localhost/alertd?sslmode=disable", nil),
            ("host=/run/postgresql dbname=alertd", nil),
        ] as [(String, String?)])
    func unverifiedDatabase(url: String, warning: String?) throws {
        var config = try Config.parse(yaml: "store: { backend: postgres, postgres: { url: \"\(url)\" } }")
        config.stateDir = NSTemporaryDirectory()
        let warnings = config.startCheck().warnings
        if let warning {
            #expect(warnings.count == 1)
            #expect(warnings.first?.contains(warning) == true, "\(warnings)")
            #expect(warnings.first?.contains("sslmode=verify-full") == true)
        } else {
            #expect(warnings.isEmpty, "\(warnings)")
        }
    }
}
