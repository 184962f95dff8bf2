import AlertdCore
import AlertdPostgres
import AlertdReceipts
import AlertdEngine
import AlertdWire
import Foundation
import Glibc
import NIOSSL

extension ConfigErrors {
    /// These problems, and those the start's checks find in what could be read of
    /// the file (after `adjust`: the command line over it) for keys not already
    /// named: everything wrong with a file, at once.
    public func withStartCheck(_ adjust: (inout Config) -> Void = { _ in }) -> ConfigErrors {
        guard var config = partial else { return self }
        adjust(&config)
        let named = Set(errors.compactMap(\.key))
        let more = config.startCheck().errors.filter { error in error.key.map { !named.contains($0) } ?? true }
        return ConfigErrors(errors: errors + more, partial: config)
    }
}

/// What alertd checks before it serves, beyond the file's own rules. `alertd
/// check-config` runs the same checks, so a file it calls ok is one alertd starts with.
extension Config {
    public struct StartCheck: Sendable {
        /// Each stops the start: one line, naming the key.
        public var errors: [ConfigError] = []
        /// Each is logged at start and printed by check-config.
        public var warnings: [String] = []
    }

    /// - Parameter listeningHost: the host alertd will listen on, when it is not
    ///   `listen`'s (a socket systemd passed).
    public func startCheck(listeningHost: String? = nil) -> StartCheck {
        var check = StartCheck()
        let file = source ?? "config"
        var host = listeningHost
        if host == nil {
            do {
                host = try listenAddress().host
            } catch let error as ConfigError {
                check.errors.append(ConfigError("\(file): \(error.description)", key: "listen"))
            } catch {
                check.errors.append(ConfigError("\(file): listen: \(error)", key: "listen"))
            }
        }
        if let host, !Config.isLoopback(host), tokens.isEmpty, !allowAnonymous {
            check.errors.append(
                ConfigError(
                    "\(file): listen: refusing to listen on \(listeningHost == nil ? listen : host) without auth.tokens: anyone who can "
                        + "reach it could post and answer alerts; add tokens, listen on a loopback address, or set auth.allow_anonymous: true",
                    key: "listen"))
        }
        if let tls {
            check.errors += tls.problems(file: file)
        }
        if let problem = Self.writableProblem(stateDir) {
            check.errors.append(ConfigError("\(file): state_dir: \(stateDir) \(problem)", key: "state_dir"))
        }
        // A client's escalation step at or past the default expiry is left out of the alerts
        // posted with that expiry (SPEC §12): said, since it looks like a policy that works.
        for (client, settings) in clients.sorted(by: { $0.key < $1.key }) {
            for (index, step) in settings.escalation.enumerated() where step.after >= alertRules.defaultExpiresIn {
                check.warnings.append(
                    "clients.\(client).escalation[\(index)].after is at or past alerts.default_expires_in "
                        + "(\(Int(alertRules.defaultExpiresIn)) seconds): alerts posted without a longer expires_in never take that step")
            }
        }
        if limits.ratePerSecond != nil, tokens.isEmpty {
            check.warnings.append("limits.rate_per_second has no effect: it limits each token, and there are no auth.tokens")
        }
        if let secret = callbacks.signingSecret, let key = try? WebhookKey(secret: secret), let weak = Engine.weakSecret(key) {
            check.warnings.append(
                "callbacks.signing_secret \(weak): anyone holding one signed callback can try guesses offline; "
                    + "openssl rand -base64 32 makes a good one")
        }
        for (index, hook) in webhooks.enumerated() {
            if let key = try? WebhookKey(secret: hook.secret), let weak = Engine.weakSecret(key) {
                check.warnings.append("webhooks[\(index)] (client \(hook.client)): secret \(weak)")
            }
        }
        if metricsRequireToken, tokens.isEmpty {
            check.warnings.append("metrics.require_token with no auth.tokens: no request can read /metrics")
        }
        if case .postgres(let url, _) = store, let warning = url.unverifiedTLSWarning {
            check.warnings.append(warning)
        }
        check.errors += receiptKeyProblems(file: file)
        return check
    }

    /// The receipts' key files (SPEC §14) are Ed25519 keys alertd can read: `receipts.key_file`
    /// (or SQLite's own key in `state_dir`, when it was made already) and each of
    /// `receipts.previous_keys`.
    func receiptKeyProblems(file: String) -> [ConfigError] {
        var problems: [ConfigError] = []
        func check(_ body: () throws -> Void) {
            do {
                try body()
            } catch let error as ConfigError {
                problems.append(ConfigError("\(file): \(error.description)", key: error.key))
            } catch {
                problems.append(ConfigError("\(file): receipts: \(error)", key: "receipts"))
            }
        }
        if let keyFile = receipts.keyFile {
            check { _ = try ReceiptKeyFiles.signingKey(at: keyFile, key: "receipts.key_file") }
        } else if store != .sqlite {
            problems.append(ReceiptKeyFiles.requiredError(self))
        } else {
            let path = ReceiptKeyFiles.stateDirectoryKeyFile(self)
            if FileManager.default.fileExists(atPath: path) {
                check { _ = try ReceiptKeyFiles.signingKey(at: path, key: "receipts.key_file") }
            }
        }
        for (index, path) in receipts.previousKeys.enumerated() {
            check { _ = try ReceiptKeyFiles.previousKey(at: path, index: index) }
        }
        return problems
    }

    /// Why alertd could not keep its store in `directory`, if it could not: it
    /// must be a writable directory, or one this user may create.
    static func writableProblem(_ directory: String) -> String? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { return "is not a directory" }
            return access(directory, W_OK | X_OK) == 0 ? nil : "is not writable by this user (uid \(getuid()))"
        }
        // Created at start: the nearest existing parent must be a directory (under a file nothing
        // can be created, whoever asks: root's access() says yes to a file with an x bit) and
        // let this user do it.
        var parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
        while !FileManager.default.fileExists(atPath: parent), parent != "/" {
            parent = URL(fileURLWithPath: parent).deletingLastPathComponent().path
        }
        var parentIsDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: parent, isDirectory: &parentIsDirectory), !parentIsDirectory.boolValue {
            return "cannot be created: \(parent) is a file, not a directory"
        }
        return access(parent, W_OK | X_OK) == 0 ? nil : "does not exist and \(parent) is not writable by this user (uid \(getuid()))"
    }
}

extension Config.TLSFiles {
    /// The files are readable PEM, and the key is the certificate's.
    func problems(file: String) -> [ConfigError] {
        let certificate: String
        let key: String
        do {
            (certificate, key) = try read()
        } catch let error as ConfigError {
            return [ConfigError("\(file): \(error.description)", key: error.key)]
        } catch {
            return [ConfigError("\(file): tls: \(error)", key: "tls")]
        }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(Array(certificate.utf8))
            guard !chain.isEmpty else { throw ConfigError("no certificate") }
        } catch {
            return [ConfigError("\(file): tls.cert_file: \(certFile) holds no certificate alertd can read", key: "tls.cert_file")]
        }
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(bytes: Array(key.utf8), format: .pem)
        } catch {
            return [ConfigError("\(file): tls.key_file: \(keyFile) holds no private key alertd can read", key: "tls.key_file")]
        }
        do {
            // Loading both into one context checks that the key belongs to the certificate.
            _ = try NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey)))
        } catch {
            return [ConfigError("\(file): tls.key_file: \(keyFile) is not the key of the certificate in \(certFile)", key: "tls.key_file")]
        }
        return []
    }
}
