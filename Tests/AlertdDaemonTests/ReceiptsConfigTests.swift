import AlertdReceipts
import AlertdTestSupport
import Crypto
import Foundation
import Testing

@testable import AlertdDaemon

/// `receipts:` (SPEC §14): its keys read and checked, the key files read by the start's check
/// (and check-config), SQLite's own key made once, and a key file never overwritten.
@Suite("The receipts section and the receipts' key files")
struct ReceiptsConfigTests {
    @Test("absent: no key file, no previous keys, receipts kept 400 days")
    func defaults() throws {
        let config = try Config.parse(yaml: "listen: \"127.0.0.1:0\"")
        #expect(config.receipts == Config.Receipts())
        #expect(config.receipts.retentionSeconds == 400 * 86_400)
        #expect(config.receipts.keyFile == nil && config.receipts.previousKeys.isEmpty)
    }

    @Test("its keys are read, relative paths from the config file's directory")
    func values() throws {
        let yaml = """
            receipts:
              key_file: keys/current.pem
              previous_keys: [old.pem, /etc/alertd/older.pem]
              retention: 30d
            """
        let config = try Config.parse(yaml: yaml, directory: "/etc/alertd")
        #expect(config.receipts.keyFile == "/etc/alertd/keys/current.pem")
        #expect(config.receipts.previousKeys == ["/etc/alertd/old.pem", "/etc/alertd/older.pem"])
        #expect(config.receipts.retentionSeconds == 30 * 86_400)
    }

    @Test(
        "what is wrong in it is named by its key",
        arguments: [
            ("receipts: { key_fle: k.pem }", "config: unknown key receipts.key_fle (did you mean key_file?)"),
            (
                "receipts: { retention: 1h }",
                "config: receipts.retention must be at least a day (1d, 86400), not 3,600 s: receipts are the audit record"
            ),
            (
                "receipts: { retention: 0 }",
                "config: receipts.retention must be a number of seconds or a duration (90s, 5m, 1h30m), greater than 0"
            ),
            ("receipts: { previous_keys: old.pem }", "config: receipts.previous_keys must be a list"),
            ("receipts: { previous_keys: [\"\"] }", "config: receipts.previous_keys must list paths of PEM files, not an empty string"),
            ("receipts: { key_file: \"\" }", "config: receipts.key_file must be a path (leave it out for SQLite's own key in state_dir)"),
            ("receipts: [k.pem]", "config: receipts must be a mapping"),
        ])
    func refusals(yaml: String, line: String) throws {
        do {
            _ = try Config.parse(yaml: yaml)
            Issue.record("\(yaml) was accepted")
        } catch let errors as ConfigErrors {
            #expect(errors.errors.map(\.description) == [line])
        }
    }

    /// A config whose receipts section names files in `directory`.
    static func config(_ directory: ScratchDirectory, keyFile: String?, previous: [String] = []) -> Config {
        var config = Config()
        config.stateDir = directory.url.appendingPathComponent("state").path
        config.receipts.keyFile = keyFile.map { directory.url.appendingPathComponent($0).path }
        config.receipts.previousKeys = previous.map { directory.url.appendingPathComponent($0).path }
        return config
    }

    static func write(_ text: String, _ name: String, in directory: ScratchDirectory) throws {
        try Data(text.utf8).write(to: directory.url.appendingPathComponent(name))
    }

    @Test("the start's check reads every key file and names the one it cannot use, and why")
    func keyFileProblems() throws {
        let directory = try ScratchDirectory()
        let current = ReceiptSigningKey.generate()
        try Self.write(current.pem, "current.pem", in: directory)
        try Self.write(ReceiptSigningKey.generate().publicKey.pem, "old.pub.pem", in: directory)
        try Self.write(P256.Signing.PrivateKey().pemRepresentation, "p256.pem", in: directory)
        try Self.write(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIGbMFcGCSqGSIb3DQEFDTBK\n-----END ENCRYPTED PRIVATE KEY-----\n", "enc.pem",
            in: directory)

        #expect(Self.config(directory, keyFile: "current.pem", previous: ["old.pub.pem", "current.pem"]).startCheck().errors.isEmpty)

        let missing = Self.config(directory, keyFile: "nope.pem").startCheck().errors
        #expect(missing.map(\.key) == ["receipts.key_file"])
        #expect(missing.first?.description.hasSuffix("nope.pem does not exist") == true, "\(missing)")

        let p256 = Self.config(directory, keyFile: "p256.pem").startCheck().errors
        #expect(p256.map(\.key) == ["receipts.key_file"])
        #expect(p256.first?.description.contains("is not Ed25519 PKCS#8") == true, "\(p256)")

        let encrypted = Self.config(directory, keyFile: "enc.pem").startCheck().errors
        #expect(encrypted.first?.description.contains("encrypted private key") == true, "\(encrypted)")

        let previous = Self.config(directory, keyFile: "current.pem", previous: ["old.pub.pem", "p256.pem", "gone.pem"]).startCheck().errors
        #expect(previous.map(\.key) == ["receipts.previous_keys[1]", "receipts.previous_keys[2]"], "\(previous)")
    }

    @Test("with PostgreSQL and no key_file the start is refused, naming receipts.key_file, and no key is made")
    func postgresWithoutKeyFile() throws {
        var config = try Config.parse(yaml: "store: { backend: postgres, postgres: { url: \"postgres://alertd@127.0.0.1/alertd\" } }")
        let directory = try ScratchDirectory()
        config.stateDir = directory.url.path
        let errors = config.startCheck().errors
        #expect(errors.map(\.key) == ["receipts.key_file"], "\(errors)")
        #expect(
            errors.first?.description.contains(
                "receipts.key_file: required with store.backend: postgres: every instance signs receipts with the same key") == true,
            "\(errors)")
        #expect(config.startCheck().warnings.isEmpty)
        let loaded = try ReceiptKeyFiles.load(config)
        #expect(loaded.signing == nil && loaded.keys.keys.isEmpty && loaded.generated == nil)
        #expect(!FileManager.default.fileExists(atPath: ReceiptKeyFiles.stateDirectoryKeyFile(config)))
    }

    @Test("SQLite without key_file makes its key in state_dir once, mode 0600, and reads it back at the next start")
    func sqliteKey() throws {
        let directory = try ScratchDirectory()
        let config = Self.config(directory, keyFile: nil)
        try FileManager.default.createDirectory(atPath: config.stateDir, withIntermediateDirectories: true)
        let first = try ReceiptKeyFiles.load(config)
        let path = ReceiptKeyFiles.stateDirectoryKeyFile(config)
        #expect(first.generated == path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let signing = try #require(first.signing)
        #expect(first.keys.keys == [signing.publicKey])
        let second = try ReceiptKeyFiles.load(config)
        #expect(second.generated == nil)
        #expect(second.signing?.publicKey == signing.publicKey)
        // Now that it exists, the start's check reads it too.
        #expect(config.startCheck().errors.isEmpty)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path))
        #expect(config.startCheck().errors.map(\.key) == ["receipts.key_file"])
    }

    @Test("the signing key is listed first, then the previous keys; a key listed twice once")
    func keySetOrder() throws {
        let directory = try ScratchDirectory()
        let current = ReceiptSigningKey.generate()
        let old = ReceiptSigningKey.generate()
        try Self.write(current.pem, "current.pem", in: directory)
        try Self.write(old.pem, "old.pem", in: directory)
        try Self.write(old.publicKey.pem, "old.pub.pem", in: directory)
        let loaded = try ReceiptKeyFiles.load(Self.config(directory, keyFile: "current.pem", previous: ["old.pem", "old.pub.pem"]))
        #expect(loaded.keys.keys == [current.publicKey, old.publicKey])
        #expect(loaded.signing?.publicKey == current.publicKey)
    }

    @Test("a key file is written 0600 even under a permissive umask, and never over an existing file")
    func writeNeverOverwrites() throws {
        let directory = try ScratchDirectory()
        let path = directory.url.appendingPathComponent("key.pem").path
        let old = umask(0)
        defer { umask(old) }
        let key = ReceiptSigningKey.generate()
        try ReceiptKeyFiles.write(key, to: path)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        #expect(try ReceiptSigningKey(pem: String(contentsOfFile: path, encoding: .utf8)).publicKey == key.publicKey)
        let error = #expect(throws: ConfigError.self) { try ReceiptKeyFiles.write(ReceiptSigningKey.generate(), to: path) }
        #expect(error?.description.contains("never replaces a signing key") == true)
        #expect(try ReceiptSigningKey(pem: String(contentsOfFile: path, encoding: .utf8)).publicKey == key.publicKey)
    }
}
