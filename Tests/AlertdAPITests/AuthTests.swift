import AlertdEngine
import Crypto
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdWire
import Foundation

private func digest(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Array(secret.utf8))) }

private func token(_ name: String, _ secret: String, _ roles: Set<Role>, _ clients: [String]) -> Token {
    Token(name: name, digest: digest(secret), roles: roles, clients: clients.map { ClientPattern($0)! })
}

@Suite("Client patterns bind a token to clients")
struct ClientPatternTests {
    @Test(
        "* stands for any run of characters, the rest for itself",
        arguments: [
            ("*", "ops", true), ("ops", "ops", true), ("ops", "ops2", false), ("team-*", "team-a", true),
            ("team-*", "team-", true), ("team-*", "team", false), ("*-prod", "db-prod", true), ("*-prod", "db-prod2", false),
            ("a*b*c", "abc", true), ("a*b*c", "aXbYc", true), ("a*b*c", "acb", false), ("*.ops.*", "x.ops.y", true),
            ("OPS", "ops", false),
        ])
    func matching(pattern: String, client: String, matches: Bool) {
        #expect(ClientPattern(pattern)!.matches(client) == matches)
    }

    @Test("Only client-id characters and *", arguments: ["", "ops team", "ops/", "ö", "a?b"])
    func invalid(text: String) {
        #expect(ClientPattern(text) == nil)
    }
}

@Suite("Roles grant what §7's table says")
struct RoleTests {
    @Test("read reads; post and answer add their own; admin does everything")
    func matrix() {
        let expected: [Role: [Permission]] = [
            .read: [.open, .anyone, .read], .post: [.open, .anyone, .read, .post], .answer: [.open, .anyone, .read, .answer],
            .admin: [.open, .anyone, .read, .post, .answer, .admin],
        ]
        for (role, granted) in expected {
            for permission in [Permission.open, .anyone, .read, .post, .answer, .admin] {
                #expect(role.grants(permission) == granted.contains(permission), "\(role) \(permission)")
            }
        }
    }
}

@Suite("The authenticator checks Bearer tokens against their digests")
struct AuthenticatorTests {
    let auth = Authenticator(tokens: [
        token("deployer", "s3cret-deploy", [.post], ["ops"]), token("console", "s3cret-console", [.answer, .read], ["*"]),
    ])

    @Test("No tokens: the API is open")
    func open() throws {
        #expect(try Authenticator(tokens: []).authenticate(nil).get() == nil)
    }

    @Test(
        "Missing, other schemes, empty and wrong tokens are 401 with WWW-Authenticate",
        arguments: [nil, "", "Basic czNjcmV0", "Bearer", "Bearer ", "Bearer s3cret-deplo", "Bearer s3cret-deploy ", "s3cret-deploy"]
            as [String?])
    func refused(header: String?) {
        guard case .failure(let problem) = auth.authenticate(header) else {
            Issue.record("accepted \(String(describing: header))")
            return
        }
        #expect(problem.code == .unauthorized)
        #expect(problem.headers.contains { $0.name == "WWW-Authenticate" && $0.value.hasPrefix("Bearer") })
    }

    @Test("A right token gives its name, roles and clients; the scheme is case-insensitive")
    func accepted() throws {
        let principal = try #require(try auth.authenticate("bearer s3cret-console").get())
        #expect(principal.name == "console" && principal.roles == [.answer, .read])
        #expect(principal.allows(.answer) && !principal.allows(.post) && principal.mayTouch("anything"))
        let deployer = try #require(try auth.authenticate("Bearer s3cret-deploy").get())
        #expect(deployer.name == "deployer" && deployer.mayTouch("ops") && !deployer.mayTouch("db"))
    }

    @Test("A generated secret is 256 random bits and matches its digest")
    func generated() throws {
        let (secret, hash) = Token.generateSecret()
        #expect(secret.hasPrefix("alertd_") && secret.count == 7 + 43)
        #expect(hash == digest(secret))
        #expect(Token.generateSecret().secret != secret)
        #expect(Token.hex(hash).count == 64 && Config.digest(hex: Token.hex(hash)) == hash)
    }
}

@Suite("auth.tokens in the config")
struct TokenConfigTests {
    let hex = Token.hex(digest("s"))

    @Test("Every field is read")
    func parsed() throws {
        let config = try Config.parse(
            yaml: """
                auth:
                  tokens:
                    - { name: deployer, sha256: "\(hex)", roles: [post, read], clients: [ops, "team-*"] }
                """)
        #expect(config.tokens.count == 1)
        #expect(config.tokens[0].name == "deployer" && config.tokens[0].digest == digest("s"))
        #expect(config.tokens[0].roles == [.post, .read] && config.tokens[0].clients.map(\.text) == ["ops", "team-*"])
    }

    @Test(
        "A wrong entry is an error naming it",
        arguments: [
            ("{ sha256: \"H\", roles: [read], clients: ['*'] }", "auth.tokens[0].name"),
            ("{ name: a, sha256: \"abc\", roles: [read], clients: ['*'] }", "auth.tokens[0].sha256"),
            ("{ name: a, sha256: \"H\", roles: [reader], clients: ['*'] }", "reader"),
            ("{ name: a, sha256: \"H\", roles: [], clients: ['*'] }", "auth.tokens[0].roles"),
            ("{ name: a, sha256: \"H\", roles: [read], clients: ['a b'] }", "a b"),
            ("{ name: a, sha256: \"H\", roles: [read] }", "auth.tokens[0].clients"),
            ("{ name: a, sha256: \"H\", roles: [read], clients: ['*'], secret: x }", "secret"),
        ])
    func wrong(entry: String, named: String) {
        let yaml = "auth:\n  tokens:\n    - " + entry.replacingOccurrences(of: "\"H\"", with: "\"\(hex)\"")
        #expect {
            try Config.parse(yaml: yaml)
        } throws: { error in
            "\(error)".contains(named)
        }
    }

    @Test("Two tokens may not share a name or a secret")
    func duplicates() {
        let other = Token.hex(digest("t"))
        for (second, named) in [
            ("{ name: a, sha256: \"\(other)\", roles: [read], clients: ['*'] }", "already"),
            ("{ name: b, sha256: \"\(hex)\", roles: [read], clients: ['*'] }", "same secret"),
        ] {
            let yaml = """
                auth:
                  tokens:
                    - { name: a, sha256: "\(hex)", roles: [read], clients: ['*'] }
                    - \(second)
                """
            #expect(performing: { try Config.parse(yaml: yaml) }, throws: { "\($0)".contains(named) })
        }
    }
}

@Suite("The token bucket behind limits.rate_per_second")
struct TokenBucketTests {
    let second: UInt64 = 1_000_000_000

    @Test("A full bucket allows a burst, then refuses with the seconds until the next request")
    func burstThenLimited() {
        var bucket = TokenBucket(rate: 2, burst: 3, now: 0)
        #expect((0..<3).map { _ in bucket.take(now: 0) } == [.allowed, .allowed, .allowed])
        #expect(bucket.take(now: 0) == .limited(retryAfter: 1))
        // Half a second refills one request at 2 a second.
        #expect(bucket.take(now: second / 2) == .allowed)
        #expect(bucket.take(now: second / 2) == .limited(retryAfter: 1))
    }

    @Test("A slow rate asks for a longer wait; refills never exceed the burst")
    func slowRate() {
        var bucket = TokenBucket(rate: 0.2, burst: 1, now: 0)
        #expect(bucket.take(now: 0) == .allowed)
        #expect(bucket.take(now: 0) == .limited(retryAfter: 5))
        #expect(bucket.take(now: 5 * second) == .allowed)
        var idle = TokenBucket(rate: 100, burst: 2, now: 0)
        let afterAnHour = (0..<3).map { _ in idle.take(now: 3600 * second) }
        #expect(afterAnHour == [.allowed, .allowed, .limited(retryAfter: 1)])
    }
}
