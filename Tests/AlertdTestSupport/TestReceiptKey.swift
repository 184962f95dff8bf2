import Foundation

/// A receipts signing key for the daemons tests start on PostgreSQL, where
/// `receipts.key_file` is required (SPEC §14): RFC 8410 §10.3's example Ed25519 key, written
/// once per test process to a file of its own (mode 0600). Every instance a test starts on
/// one database signs with it, as every instance of a deployment signs with one key.
public enum TestReceiptKey {
    /// RFC 8410 §10.3's private key (its public key is §10.1's).
    public static let pem = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
        -----END PRIVATE KEY-----

        """

    /// The key's file, written at the first use.
    public static let path: String = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-test-receipts-\(getpid())")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("receipts-key.pem")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600])
        return file.path
    }()

    /// `receipts:\n  key_file: <path>\n`: the section a PostgreSQL config needs.
    public static var configSection: String { "receipts:\n  key_file: \(path)\n" }

    /// `config` with ``configSection`` added, unless it has a `receipts:` section of its own.
    public static func adding(to config: String) -> String {
        if config.contains("\nreceipts:") || config.hasPrefix("receipts:") { return config }
        let separated = config.isEmpty || config.hasSuffix("\n") ? config : config + "\n"
        return separated + configSection
    }
}
