// The tokens of the contract and end-to-end tiers' auth tests, made as an operator makes
// them: by `alertd token new`.

import Foundation

/// Runs `alertd token new` and returns the secret and the config entry it printed.
public func newToken(_ name: String, roles: String, clients: String) async throws -> (secret: String, entry: String) {
    let run = try await Program.alertd(["token", "new", name, "--roles", roles, "--clients", clients])
    guard run.status == 0 else { throw TestFailure("alertd token new: \(run.stderr)") }
    let text = run.stdout
    guard let secret = text.split(separator: "\n").first(where: { $0.hasPrefix("secret: ") })?.dropFirst("secret: ".count) else {
        throw TestFailure("alertd token new printed no secret: \(text)")
    }
    let entry = text.components(separatedBy: "# under auth.tokens in the config:\n").last ?? ""
    return (String(secret), entry)
}

/// A config with one token per role, each made by `alertd token new`, and their secrets by
/// name: `reader` (read, every client), `deployer` (post, `ops` and `team-*`), `console`
/// (answer, `ops`) and `root` (admin, every client).
public func roleTokens() async throws -> (config: String, secrets: [String: String]) {
    var secrets: [String: String] = [:]
    var config = "auth:\n  tokens:\n"
    for (name, roles, clients) in [
        ("reader", "read", "*"), ("deployer", "post", "ops,team-*"), ("console", "answer", "ops"), ("root", "admin", "*"),
    ] {
        let (secret, entry) = try await newToken(name, roles: roles, clients: clients)
        secrets[name] = secret
        config += entry
    }
    return (config, secrets)
}

/// `Authorization: Bearer <secret>`; no header for nil.
public func bearer(_ secret: String?) -> [(String, String)] { secret.map { [("Authorization", "Bearer \($0)")] } ?? [] }

/// The deciders of a quorum (SPEC §10): tokens made by `alertd token new`, each on every
/// client, `deployer` (post), `alice`, `bob` and `carol` (answer), and `lead` (post and
/// answer: a poster who may also decide). The config's `auth` section and the secrets by name.
public func deciders() async throws -> (config: String, secrets: [String: String]) {
    var secrets: [String: String] = [:]
    var config = "auth:\n  tokens:\n"
    for (name, roles) in [("deployer", "post"), ("alice", "answer"), ("bob", "answer"), ("carol", "answer"), ("lead", "post, answer")] {
        let (secret, entry) = try await newToken(name, roles: roles, clients: "*")
        secrets[name] = secret
        config += entry
    }
    return (config, secrets)
}
