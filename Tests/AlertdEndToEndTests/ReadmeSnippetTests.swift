import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// The README's shell snippets, run as a reader pastes them.
@Suite("README: the curl walk-through and the openssl verification run as written")
struct ReadmeSnippetTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The bodies of the ```sh blocks between `heading` and the next heading of its level.
    static func shellBlocks(under heading: String) throws -> [String] { try blocks("sh", under: heading) }

    /// The bodies of the ```language blocks between `heading` and the next heading of its level.
    static func blocks(_ language: String, under heading: String) throws -> [String] {
        let readme = try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)
        let level = heading.prefix { $0 == "#" } + " "
        let start = try #require(readme.range(of: "\n" + heading + "\n"), "no \(heading) in README.md")
        var section = readme[start.upperBound...]
        if let end = section.range(of: "\n" + level) { section = section[..<end.lowerBound] }
        return section.components(separatedBy: "```\(language)\n").dropFirst().map { $0.components(separatedBy: "\n```").first ?? "" }
    }

    @Test("the quick start's first alert: alertctl posts and waits, says so, and prints Deploy once it is chosen")
    func quickStart() async throws {
        let blocks = try Self.shellBlocks(under: "## Quick start")
        #expect(blocks.first == "make run")
        let line = try #require(
            blocks.flatMap { $0.split(separator: "\n") }.first { $0.hasPrefix(".build/release/alertctl ") }, "no alertctl line: \(blocks)")
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        // As pasted (the release build's alertctl: the one beside the tests here), against this daemon.
        let script = "exec " + line.replacingOccurrences(of: ".build/release/alertctl", with: "\"$ALERTCTL\"")
        let run = try await Alertctl.Run.spawn(
            "/bin/sh", ["-c", script],
            environment: [
                "ALERTCTL": try Alertctl.binary(), "ALERTD_URL": daemon.baseURL, "ALERTD_TOKEN": nil,
                "XDG_CONFIG_HOME": "/nonexistent/alertd-tests-config",
            ])
        let id = try await SDKTests.awaitDisplayed(daemon, "ops")
        #expect(try await daemon.client().choose("ops", id, #"{"button":"Deploy"}"#).status == 200)
        let result = try await run.finish()
        #expect(result.status == 0 && result.stdout == "Deploy\n", "\(result)")
        #expect(result.stderr.contains("waiting for an answer on ops (Ctrl-C withdraws it)"), "\(result.stderr)")
    }

    @Test("the completions block, run with alertctl on PATH and a fresh HOME, writes bash, zsh and fish completions")
    func completionsFromSource() async throws {
        // The section's first block (the search for the next "### " runs past the "## " that ends it).
        let block = try #require(try Self.shellBlocks(under: "### Shell completions when built from source").first)
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("completions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let bin = URL(fileURLWithPath: try Alertctl.binary()).deletingLastPathComponent().path
        let script = "export HOME='\(home.path)' PATH='\(bin):'\"$PATH\"\n" + block
        let run = try await Program.run("/bin/sh", ["-e", "-c", script], timeout: .seconds(30))
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run)")
        for (path, marker) in [
            (".local/share/bash-completion/completions/alertctl", "complete -"), (".zfunc/_alertctl", "#compdef alertctl"),
            (".config/fish/completions/alertctl.fish", "__alertctl"),
        ] {
            let text = (try? String(contentsOf: home.appendingPathComponent(path), encoding: .utf8)) ?? ""
            #expect(text.contains(marker), "\(path): \(text.prefix(200))")
        }
    }

    @Test(
        "the walk-through pasted into one shell: the id is kept in $id, every body ends with a newline, the choice answers both long-polls")
    func walkThrough() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let blocks = try Self.shellBlocks(under: "## A walk-through with curl")
        #expect(blocks.count == 4)
        let script = (blocks + ["wait"]).joined(separator: "\n").replacingOccurrences(
            of: "localhost:8080", with: "127.0.0.1:\(daemon.port)")
        let run = try await Program.run("/bin/sh", ["-e", "-c", script], timeout: .seconds(30))
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        // The post, the current alert, the choice and the alert's long-poll: each body ends with a
        // newline. The choice and the background long-poll answer at the same moment, and curl
        // writes a body and its newline separately, so their lines may interleave ("}{" then "\n\n"):
        // counted as bodies, not as lines.
        #expect(run.stdout.hasSuffix("\n"), "\(run.stdout)")
        let bodies = run.stdout.replacingOccurrences(of: "}{", with: "}\n{").split(separator: "\n").filter { !$0.isEmpty }
        #expect(bodies.allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") }, "\(run.stdout)")
        #expect(bodies.count(where: { $0.contains(#""state":"answered""#) }) == 2, "\(run.stdout)")
        let alert = try await daemon.client().get("/v1/clients/ops/alerts?state=answered").jsonObject()
        #expect((alert["alerts"] as? [[String: Any]])?.first?["result"] as? [String: Any] != nil)
    }

    @Test(
        "the Python example posts, chooses and long-polls the answer, with the standard library only, with and without a token",
        arguments: [false, true])
    func pythonExample(withToken: Bool) async throws {
        let script = try #require(try Self.blocks("python", under: "## Calling alertd from other languages").first)
        let secret = "alertd_python-example-secret"
        let digest = await Program.sha256Hex(secret)
        let config =
            withToken
            ? "auth:\n  tokens:\n    - { name: deployer, sha256: \"\(digest)\", roles: [post, answer], clients: [ops] }\n" : nil
        let daemon = try await Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        var environment = ["ALERTD_URL": daemon.baseURL]
        if withToken { environment["ALERTD_TOKEN"] = secret }
        // Debian's python3: the example needs nothing the standard library does not have.
        let run = try await Program.run("/usr/bin/python3", ["-I", "-c", script], environment: environment, timeout: .seconds(60))
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        #expect(run.stdout == "answered Deploy\n")
        let headers = withToken ? [("Authorization", "Bearer \(secret)")] : []
        let page = try await daemon.client().get("/v1/clients/ops/alerts?state=answered", headers: headers).jsonObject()
        let answered = try #require((page["alerts"] as? [[String: Any]])?.first)
        #expect((answered["result"] as? [String: Any])?["decided_by"] as? String == (withToken ? "deployer" : nil))
    }

    @Test("the two-person deploy approval pasted into one shell: alice's vote leaves it displayed, bob's answers it")
    func twoPersonApproval() async throws {
        var config = "auth:\n  tokens:\n"
        var environment: [String: String] = [:]
        for (name, roles, variable) in [("deployer", "post", "DEPLOYER"), ("alice", "answer", "ALICE"), ("bob", "answer", "BOB")] {
            let (secret, entry) = try await newToken(name, roles: roles, clients: "ops")
            config += entry
            environment[variable] = secret
        }
        let daemon = try await Daemon.start(.init(config: config))
        defer { daemon.cleanup() }
        let blocks = try Self.shellBlocks(under: "## Two people approve a deploy (quorum)")
        #expect(blocks.count == 3)
        let script = blocks.joined(separator: "\n").replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(daemon.port)")
        let run = try await Program.run("/bin/sh", ["-e", "-c", script], environment: environment, timeout: .seconds(30))
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        // The two votes' answers, one body a line.
        let bodies = try run.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(bodies.count == 2, "\(run.stdout)")
        let voters = { (body: [String: Any]?) in (body?["votes"] as? [[String: Any]] ?? []).compactMap { $0["decided_by"] as? String } }
        #expect(bodies.first??["state"] as? String == "displayed" && voters(bodies.first ?? nil) == ["alice"])
        let answered = bodies.last ?? nil
        #expect(answered?["state"] as? String == "answered" && voters(answered) == ["alice", "bob"])
        #expect((answered?["result"] as? [String: Any])?["decided_by"] as? String == "bob")
    }

    @Test("answers with words: the block posts an alert asking for a ticket and answers it with the ticket and a comment")
    func answersWithWords() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let blocks = try Self.shellBlocks(under: "## Answers with words: a reason, a ticket number")
        #expect(blocks.count == 1)
        let script = blocks.joined(separator: "\n").replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(daemon.port)")
        let run = try await Program.run("/bin/sh", ["-e", "-c", script], timeout: .seconds(30))
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let answered = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let result = answered?["result"] as? [String: Any]
        #expect(result?["comment"] as? String == "window agreed with payments", "\(run.stdout)")
        #expect(result?["values"] as? [String: String] == ["ticket": "OPS-77"], "\(run.stdout)")
        #expect((answered?["fields"] as? [[String: Any]])?.first?["buttons"] as? [String] == ["Deploy"])
    }

    @Test("escalation: the block posts an alert with its own policy, which the resource carries, with no step taken yet")
    func escalation() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let blocks = try Self.shellBlocks(under: "## When nobody answers, ask someone else (escalation)")
        #expect(blocks.count == 1)
        let script = blocks.joined(separator: "\n").replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(daemon.port)")
        let run = try await Program.run("/bin/sh", ["-e", "-c", script], timeout: .seconds(30))
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let posted = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let steps = (posted?["escalation"] as? [[String: Any]])?.map { "\($0["after"] ?? "?") \($0["to"] ?? "?")" }
        #expect(steps == ["120 sre-lead", "600 eng-head"], "\(run.stdout)")
        #expect((posted?["escalated_to"] as? [Any])?.isEmpty == true)
    }

    @Test("the openssl verification computes the signature for a whsec_ secret and for a plain one", arguments: [true, false])
    func opensslVerification(whsec: Bool) async throws {
        let block = try #require(try Self.shellBlocks(under: "### Verifying callbacks").first)
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let body = Array(#"{"type":"alert.answered","timestamp":"2026-11-21T21:06:10.000Z","data":{"alert":{"id":"x"}}}"#.utf8)
        try Data(body).write(to: scratch.url.appendingPathComponent("body.json"))
        // A plain secret of one repeated byte: od without -v would print "*" for its repeated rows.
        let secret = whsec ? "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" : String(repeating: "a", count: 40)
        let expected = WebhookSignature.sign(id: "msg_2Kq", timestamp: 1_795_000_000, body: body, key: try WebhookKey(secret: secret))
        let script = "cd \"$1\"\n" + block
        let run = try await Program.run(
            "/bin/sh", ["-e", "-c", script, "sh", scratch.url.path],
            environment: ["secret": secret, "webhook_id": "msg_2Kq", "webhook_timestamp": "1795000000"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == expected + "\n", "\(run.stdout) vs \(expected)")
    }

    @Test("config/alertd.yaml tells how to check a file: alertd check-config")
    func configMentionsCheckConfig() async throws {
        let config = try String(contentsOf: Self.repository.appendingPathComponent("config/alertd.yaml"), encoding: .utf8)
        #expect(config.contains("alertd check-config "))
    }
}
