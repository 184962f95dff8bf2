public import AlertdReceipts
import Foundation
import Glibc

/// The files of receipts' keys (SPEC §14): `receipts.key_file`, the key SQLite keeps in
/// `state_dir` when there is none, `receipts.previous_keys`, and the new key file
/// `alertd receipts keygen` writes. Each error names the key of the config it concerns.
public enum ReceiptKeyFiles {
    /// The signing key and the key set `GET /v1/keys` lists (the signing key first, then the
    /// previous keys), as a start reads them.
    ///
    /// - `receipts.key_file` set: that file.
    /// - unset, with SQLite: `state_dir/receipts-key.pem`, written (mode 0600) if absent.
    /// - unset, with PostgreSQL: no signing key (every instance must sign with one key, so a
    ///   start refuses it: ``requiredError(_:)``, and `alertd check-config` says so too).
    public static func load(_ config: Config) throws -> (signing: ReceiptSigningKey?, keys: ReceiptKeySet, generated: String?) {
        var signing: ReceiptSigningKey?
        var generated: String?
        if let file = config.receipts.keyFile {
            signing = try signingKey(at: file, key: "receipts.key_file")
        } else if config.store == .sqlite {
            let path = stateDirectoryKeyFile(config)
            if FileManager.default.fileExists(atPath: path) {
                signing = try signingKey(at: path, key: "receipts.key_file")
            } else {
                let key = ReceiptSigningKey.generate()
                do {
                    try write(key, to: path)
                    signing = key
                    generated = path
                } catch let error as ConfigError where error.key == "exists" {
                    // Another process wrote it between the look and the write: take that one.
                    signing = try signingKey(at: path, key: "receipts.key_file")
                }
            }
        }
        let previous = try previousKeys(config)
        return (signing, ReceiptKeySet((signing.map { [$0.publicKey] } ?? []) + previous), generated)
    }

    /// Why a config without a signing key cannot serve: with PostgreSQL, `receipts.key_file`
    /// is required (SPEC §14).
    public static func requiredError(_ config: Config) -> ConfigError {
        ConfigError(
            "\(config.source ?? "config"): receipts.key_file: required with store.backend: postgres: every instance signs "
                + "receipts with the same key; make one with `alertd receipts keygen PATH`, copy it to each instance and name it here",
            key: "receipts.key_file")
    }

    /// Where SQLite keeps its key when `receipts.key_file` is not set.
    public static func stateDirectoryKeyFile(_ config: Config) -> String {
        URL(fileURLWithPath: config.stateDir).appendingPathComponent(Config.Receipts.defaultKeyFile).path
    }

    /// The public keys of `receipts.previous_keys`, in order.
    public static func previousKeys(_ config: Config) throws -> [ReceiptPublicKey] {
        try config.receipts.previousKeys.enumerated().map { index, path in try previousKey(at: path, index: index) }
    }

    /// The public key of `receipts.previous_keys[index]`, at `path`.
    public static func previousKey(at path: String, index: Int) throws -> ReceiptPublicKey {
        let key = "receipts.previous_keys[\(index)]"
        do {
            return try ReceiptPublicKey(pem: try text(at: path, key: key))
        } catch let error as ReceiptKeyError {
            throw ConfigError("\(key): \(path): \(error)", key: key)
        }
    }

    /// The private key in `path`; errors name `key`.
    public static func signingKey(at path: String, key: String) throws -> ReceiptSigningKey {
        do {
            return try ReceiptSigningKey(pem: try text(at: path, key: key))
        } catch let error as ReceiptKeyError {
            throw ConfigError("\(key): \(path): \(error)", key: key)
        }
    }

    /// Writes `key` as PEM PKCS#8 to a new file at `path`, readable by its owner alone (0600).
    /// An existing file is never replaced: a signing key overwritten is every receipt made
    /// with it unverifiable (error key `exists`).
    public static func write(_ key: ReceiptSigningKey, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST {
                throw ConfigError(
                    "\(path) exists: alertd never replaces a signing key (receipts signed with it could not be verified)", key: "exists")
            }
            throw ConfigError("cannot create \(path): \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        // The mode asked for may have been narrowed by the umask, never widened; make it exactly 0600.
        _ = fchmod(fd, 0o600)
        let bytes = Array(key.pem.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if result < 0 {
                if errno == EINTR { continue }
                let code = errno
                unlink(path)
                throw ConfigError("cannot write \(path): \(String(cString: strerror(code)))")
            }
            written += result
        }
        guard fsync(fd) == 0 else {
            let code = errno
            unlink(path)
            throw ConfigError("cannot write \(path): \(String(cString: strerror(code)))")
        }
    }

    private static func text(at path: String, key: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "is not readable by this user (uid \(getuid()))" : "does not exist"
            throw ConfigError("\(key): \(path) \(reason)", key: key)
        }
        return String(decoding: data, as: UTF8.self)
    }
}
