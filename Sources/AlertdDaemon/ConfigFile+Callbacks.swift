import AlertdCore
import AlertdDelivery
import AlertdWire

extension Config {
    /// `callbacks`: signing, retries, the deny and allow lists.
    static func readCallbacks(_ callbacks: Section, into config: inout Config, source: String, _ problems: Problems) {
        callbacks.only([
            "signing_secret", "timeout", "max_age", "retry_initial_seconds", "retry_max_interval_seconds", "deny", "allow",
            "max_pending_per_client",
        ])
        problems.check {
            if let secret = try callbacks.string("signing_secret") {
                do {
                    _ = try WebhookKey(secret: secret)
                } catch {
                    throw callbacks.error("signing_secret", "\(error)", separator: ": ")
                }
                // The sample's placeholder is in every copy of config/alertd.yaml: anyone could sign with it.
                if secret.lowercased().hasPrefix(Self.placeholderSecretPrefix) {
                    throw callbacks.error(
                        "signing_secret",
                        "is the sample config's placeholder (\(secret)), which anyone can read: replace it with a secret of "
                            + "your own (openssl rand -base64 32 makes one)")
                }
                config.callbacks.signingSecret = secret
            }
        }
        problems.check { if let v = try callbacks.seconds("timeout") { config.callbacks.timeout = v } }
        problems.check { if let v = try callbacks.seconds("max_age") { config.callbacks.maxAge = v } }
        problems.check { if let v = try callbacks.seconds("retry_initial_seconds") { config.callbacks.retryInitialSeconds = v } }
        problems.check {
            if let v = try callbacks.seconds("retry_max_interval_seconds") { config.callbacks.retryMaxIntervalSeconds = v }
        }
        problems.check { if let v = try callbacks.int("max_pending_per_client", min: 1) { config.callbacks.maxPendingPerClient = v } }
        problems.check {
            if let v = try callbacks.strings("deny") {
                do {
                    _ = try DenyList(v)
                } catch {
                    throw callbacks.error("deny", "\(error)", separator: ": ")
                }
                config.callbacks.deny = v
            }
        }
        problems.check {
            if let v = try callbacks.strings("allow") {
                do {
                    _ = try DenyList([], allow: v)
                } catch {
                    throw callbacks.error("allow", "\(error)", separator: ": ")
                }
                config.callbacks.allow = v
            }
        }
        if config.callbacks.retryMaxIntervalSeconds < config.callbacks.retryInitialSeconds {
            problems.add(
                callbacks.error(
                    "retry_max_interval_seconds",
                    "must be at least callbacks.retry_initial_seconds (\(config.callbacks.retryInitialSeconds))"))
        }
    }

    /// How the sample config's placeholder secrets begin (`replace-with-openssl-rand-base64-32`).
    static let placeholderSecretPrefix = "replace-with"

    /// One entry of `webhooks`.
    static func webhook(_ entry: Section) throws -> ConfigWebhook {
        entry.only(["client", "url", "secret"])
        guard let client = try entry.string("client"), ClientID.isValid(client) else {
            throw entry.error("client", "must be a client id")
        }
        guard let url = try entry.string("url") else { throw entry.error("url", "is required") }
        if let problem = CallbackURL.problem(url) { throw entry.error("url", problem) }
        guard let secret = try entry.string("secret") else {
            throw entry.error("secret", "is required (the receiver verifies with it)")
        }
        do {
            _ = try WebhookKey(secret: secret)
        } catch {
            throw entry.error("secret", "\(error)", separator: ": ")
        }
        return ConfigWebhook(client: client, url: url, secret: secret)
    }
}
