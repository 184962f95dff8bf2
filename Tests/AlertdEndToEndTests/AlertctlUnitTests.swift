// alertctl's own logic, tested in process without a daemon: argument rewriting, where the
// settings come from, the config file, text made safe for a terminal, --json pages, and the
// watch console's screen and keys. (Here because this target already links the alertctl
// executable module; its tests of the real binary are in AlertctlTests and WatchConsoleTests.
// They block nothing.)

import AlertdWire
import ArgumentParser
import AlertdTestSupport
import Foundation
import Testing

@testable import AlertdClient
@testable import alertctl

@Suite("alertctl: global options before the command")
struct GlobalOptionTests {
    @Test(
        "global options before the command (or between webhooks and add) move after it; the rest stays in order",
        arguments: [
            (["--url", "http://h:1", "post", "ops", "--title", "x"], ["post", "--url", "http://h:1", "ops", "--title", "x"]),
            (
                ["--json", "--token=t", "webhooks", "add", "ops", "http://r/"],
                ["webhooks", "add", "--json", "--token=t", "ops", "http://r/"]
            ),
            (["webhooks", "--insecure", "list", "ops"], ["webhooks", "list", "--insecure", "ops"]),
            (["--cacert", "ca.pem", "clients"], ["clients", "--cacert", "ca.pem"]),
            (["post", "ops", "--url", "http://h:1", "--title", "x"], ["post", "ops", "--url", "http://h:1", "--title", "x"]),
            (["--url"], ["--url"]),
            ([], []),
        ])
    func hoisting(arguments: [String], expected: [String]) {
        #expect(alertctl.Alertctl.hoistingGlobalOptions(arguments) == expected)
    }

    @Test("`--url U --json post …` parses as post with --url and --json")
    func parsesAfterHoisting() throws {
        let arguments = ["--url", "http://127.0.0.1:9", "--json", "post", "ops", "--title", "x"]
        #expect(throws: (any Error).self) { try alertctl.Alertctl.parseAsRoot(arguments) }
        let command = try alertctl.Alertctl.parseAsRoot(alertctl.Alertctl.hoistingGlobalOptions(arguments))
        let post = try #require(command as? Post)
        #expect(post.connection.url == "http://127.0.0.1:9" && post.connection.json && post.client == "ops")
    }

    @Test("choose takes CLIENT ID BUTTON, or CLIENT --current BUTTON")
    func chooseArguments() throws {
        let byID = try #require(try alertctl.Alertctl.parseAsRoot(["choose", "ops", "01M", "Deploy"]) as? Choose)
        #expect(byID.words == ["01M", "Deploy"] && !byID.current)
        let current = try #require(try alertctl.Alertctl.parseAsRoot(["choose", "ops", "--current", "Deploy"]) as? Choose)
        #expect(current.words == ["Deploy"] && current.current)
        #expect(throws: (any Error).self) { try alertctl.Alertctl.parseAsRoot(["choose", "ops", "--current", "01M", "Deploy"]) }
        #expect(throws: (any Error).self) { try alertctl.Alertctl.parseAsRoot(["choose", "ops", "Deploy"]) }
    }
}

@Suite("alertctl: settings from flags, then the environment, then alertctl.yaml")
struct SettingsTests {
    func flags(_ arguments: String...) throws -> Connection { try Connection.parse(arguments) }

    let file = ConfigFile(url: "http://file:1", token: "file-token", tokenFile: nil, cacert: "/file/ca.pem", path: "/c/alertctl.yaml")

    @Test("a flag wins over the environment, which wins over the file, which wins over the default")
    func precedence() throws {
        let environment = ["ALERTD_URL": "http://env:1", "ALERTD_TOKEN": "env-token", "ALERTD_CACERT": "/env/ca.pem"]
        let all = try Settings.resolve(
            flags: flags("--url", "http://flag:1", "--token", "flag-token", "--cacert", "/flag/ca.pem"), environment: environment,
            file: file)
        #expect(all.url == "http://flag:1" && all.token == "flag-token" && all.tokenSource == "--token" && all.cacert == "/flag/ca.pem")
        let fromEnvironment = try Settings.resolve(flags: flags(), environment: environment, file: file)
        #expect(fromEnvironment.url == "http://env:1" && fromEnvironment.token == "env-token")
        #expect(fromEnvironment.tokenSource == "$ALERTD_TOKEN" && fromEnvironment.cacert == "/env/ca.pem")
        let fromFile = try Settings.resolve(flags: flags(), environment: ["ALERTD_TOKEN": ""], file: file)
        #expect(fromFile.url == "http://file:1" && fromFile.token == "file-token" && fromFile.cacert == "/file/ca.pem")
        #expect(fromFile.tokenSource == "/c/alertctl.yaml" && fromFile.file == "/c/alertctl.yaml")
        let defaults = try Settings.resolve(flags: flags(), environment: [:], file: nil)
        #expect(defaults == Settings(url: "http://127.0.0.1:8080", token: nil, tokenSource: nil, cacert: nil, insecure: false, file: nil))
    }

    @Test("token_file is read and trimmed; an unreadable one is bad usage")
    func tokenFile() throws {
        let directory = try ScratchDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = directory.url.appendingPathComponent("token").path
        try Data("secret-from-file\n".utf8).write(to: URL(fileURLWithPath: path))
        var withFile = file
        withFile.token = nil
        withFile.tokenFile = path
        let settings = try Settings.resolve(flags: flags(), environment: [:], file: withFile)
        #expect(settings.token == "secret-from-file" && settings.tokenSource == path)
        withFile.tokenFile = path + ".missing"
        #expect { try Settings.resolve(flags: flags(), environment: [:], file: withFile) } throws: {
            ($0 as? alertctl.Failure)?.code == Exit.usage
        }
    }

    @Test("a token on the command line, sent in clear beyond this machine, or in a file others may read is warned of")
    func warnings() throws {
        let modes: [String: mode_t] = ["/c/alertctl.yaml": 0o644, "/c/private.yaml": 0o600, "/c/group.yaml": 0o640]
        func warnings(_ settings: Settings) -> [String] { settings.warnings { modes[$0] } }
        let flag = try Settings.resolve(flags: flags("--token", "t", "--url", "https://alertd.example"), environment: [:], file: nil)
        #expect(warnings(flag).count == 1 && warnings(flag)[0].contains("--token is visible to every user"), "\(warnings(flag))")
        let clear = try Settings.resolve(
            flags: flags(), environment: ["ALERTD_TOKEN": "t", "ALERTD_URL": "http://alertd.example:8080"], file: nil)
        #expect(
            warnings(clear) == [
                "the token goes to alertd.example over plain http: anyone on the path can read it and act as you; use https"
            ])
        for local in [
            "http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080", "http://dash.localhost", "https://alertd.example",
        ] {
            let fine = try Settings.resolve(flags: flags(), environment: ["ALERTD_TOKEN": "t", "ALERTD_URL": local], file: nil)
            #expect(warnings(fine).isEmpty, "\(local): \(warnings(fine))")
        }
        let open = try Settings.resolve(flags: flags("--url", "https://a.example"), environment: [:], file: file)
        #expect(warnings(open) == ["/c/alertctl.yaml holds the token and other users may read it (mode 644): chmod 600 /c/alertctl.yaml"])
        for path in ["/c/private.yaml"] {
            var closed = file
            closed.path = path
            #expect(warnings(try Settings.resolve(flags: flags("--url", "https://a.example"), environment: [:], file: closed)).isEmpty)
        }
        var group = file
        group.path = "/c/group.yaml"
        #expect(warnings(try Settings.resolve(flags: flags("--url", "https://a.example"), environment: [:], file: group)).count == 1)
        let none = try Settings.resolve(flags: flags("--url", "http://alertd.example"), environment: [:], file: nil)
        #expect(warnings(none).isEmpty, "no token, nothing to warn of")
    }

    @Test("--insecure drops a CA from the environment or the file; with --cacert it is bad usage")
    func insecure() throws {
        let settings = try Settings.resolve(flags: flags("--insecure"), environment: ["ALERTD_CACERT": "/env/ca.pem"], file: file)
        #expect(settings.insecure && settings.cacert == nil)
        #expect { try Settings.resolve(flags: flags("--insecure", "--cacert", "/x.pem"), environment: [:], file: nil) } throws: {
            ($0 as? alertctl.Failure)?.code == Exit.usage
        }
    }

    @Test("the file lives under $XDG_CONFIG_HOME, else under $HOME/.config")
    func defaultPath() {
        #expect(ConfigFile.defaultPath(environment: ["HOME": "/home/a"]) == "/home/a/.config/alertd/alertctl.yaml")
        #expect(ConfigFile.defaultPath(environment: ["HOME": "/home/a", "XDG_CONFIG_HOME": "/x"]) == "/x/alertd/alertctl.yaml")
        #expect(ConfigFile.defaultPath(environment: [:]) == nil)
    }
}

@Suite("alertctl: alertctl.yaml")
struct ConfigFileTests {
    func parse(_ text: String) throws(alertctl.Failure) -> ConfigFile {
        try ConfigFile.parse(text, path: "/etc/me/alertctl.yaml", home: "/home/me")
    }

    func failure(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("plain and quoted values, comments, relative and ~ paths, nulls")
    func values() throws {
        let file = try parse(
            """
            ---
            # the daemon
            url: https://alertd.internal:8443   # a comment
            token_file: 'tokens/it''s'
            cacert: "~/ca \\"x\\".pem"

            """)
        #expect(file.url == "https://alertd.internal:8443")
        #expect(file.tokenFile == "/etc/me/tokens/it's" && file.cacert == "/home/me/ca \"x\".pem" && file.token == nil)
        #expect(try parse("token: ~\nurl:\n") == ConfigFile(path: "/etc/me/alertctl.yaml"))
        #expect(try parse("token: \"a#b\"\r\n").token == "a#b")
    }

    @Test(
        "what it does not read is refused with its line, never guessed at",
        arguments: [
            ("url: x\ntokn: y\n", "line 2: unknown key `tokn`"),
            ("url: x\n  nested: y\n", "line 2: indented lines"),
            ("- url\n", "line 1: expected `key: value`"),
            ("url x\n", "line 1: expected `key: value`"),
            ("url: a\nurl: b\n", "line 2: `url` is set twice"),
            ("url: [a, b]\n", "line 1: url: only plain or quoted text"),
            ("url: \"a\n", "line 1: url: the quote is not closed"),
            ("url: \"a\" b\n", "line 1: url: unexpected text after the closing quote"),
            ("token: a\ntoken_file: b\n", "set `token` or `token_file`, not both"),
        ])
    func refused(text: String, reason: String) {
        let message = failure(text)
        #expect(message?.contains(reason) == true, "\(message ?? "accepted")")
        #expect(message?.hasPrefix("/etc/me/alertctl.yaml") == true)
    }
}

@Suite("alertctl: text from the daemon is harmless in a terminal")
struct TerminalTextTests {
    @Test("control characters, escape sequences and bidi overrides become �; newlines only where asked")
    func safe() {
        #expect(Terminal.safe("a\u{1B}[31mred\u{07}") == "a\u{FFFD}[31mred\u{FFFD}")
        #expect(Terminal.safe("\u{1B}]0;title\u{1B}\\") == "\u{FFFD}]0;title\u{FFFD}\\")
        #expect(Terminal.safe("x\u{9B}2Jy\u{7F}") == "x\u{FFFD}2Jy\u{FFFD}")
        #expect(Terminal.safe("abc\u{202E}fed\u{2066}") == "abc\u{FFFD}fed\u{FFFD}")
        #expect(Terminal.safe("one\ntwo\r\tthree") == "one\u{FFFD}two\u{FFFD} three")
        #expect(Terminal.safe("one\ntwo", newlines: true) == "one\ntwo")
        #expect(Terminal.safe("Déploiement 🚀 → ok") == "Déploiement 🚀 → ok")
    }

    @Test("summary and details of a hostile alert hold no control character")
    func alertLines() throws {
        let hostile = "\u{1B}[2J\u{1B}]0;pwned\u{07}\u{9B}31m"
        let alert = AlertResource(
            id: "01M00000000000000000000000", client: "ops", state: .answered, position: nil, title: "T" + hostile,
            message: "line one\nline two" + hostile, style: .alert, buttons: [.default("B" + hostile), .cancel("C")], priority: 0,
            expiresIn: 60, dismissAfter: nil, callbackURL: nil, metadata: ["k": .string(hostile)],
            createdAt: Timestamp(milliseconds: 0), displayedAt: nil, decidedAt: nil, expiresAt: Timestamp(milliseconds: 60_000),
            result: AlertResult(outcome: .answered, button: "B" + hostile, buttonIndex: 0, cancelled: false, decidedBy: nil))
        for text in [Text.summary(alert), Text.details(alert)] {
            let controls = text.unicodeScalars.filter { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) }
            #expect(controls.isEmpty, "\(text.debugDescription)")
        }
        #expect(Text.details(alert).contains("message:   line one\n           line two"))
    }

    @Test("counts agree with their number")
    func counts() {
        #expect(Text.count(1, "alert") == "1 alert" && Text.count(2, "alert") == "2 alerts" && Text.count(0, "token") == "0 tokens")
        #expect(
            Text.seconds(0.04) == "0.1 s" && Text.seconds(3.2) == "4 s" && Text.seconds(300) == "5 min" && Text.seconds(61) == "1 min 1 s")
    }
}

@Suite("alertctl --json: the daemon's answer as it wrote it")
struct JSONPassThroughTests {
    @Test("one page is printed byte for byte; several are joined with each element as written")
    func pages() {
        let first = Array(#"{"alerts":[{"id":"b","z":1e400,"a":null}],"next_cursor":"c1"}"#.utf8)
        let second = Array(#"{"alerts":[{"id":"a","message":null,"n":1.50e3,"s":"é\"\u0001"}],"next_cursor":null}"#.utf8)
        #expect(Connection.joinPages([first], member: "alerts") == first)
        let joined = String(decoding: Connection.joinPages([first, second], member: "alerts"), as: UTF8.self)
        #expect(
            joined
                == #"{"alerts":[{"id":"b","z":1e400,"a":null},{"id":"a","message":null,"n":1.50e3,"s":"é\"\u0001"}],"next_cursor":null}"#
        )
    }

    @Test("on a terminal, C1 controls and bidi overrides in JSON strings become \\u escapes: the same JSON value")
    func terminalJSON() throws {
        let raw = Array("{\"t\":\"a\u{9B}1m\u{202E}b\u{2066}\u{061C}é→\\u001b\"}".utf8)
        let safe = Terminal.safe(json: raw)
        #expect(String(decoding: safe, as: UTF8.self) == #"{"t":"a\u009b1m\u202eb\u2066\u061cé→\u001b"}"#)
        #expect(try JSONParser.parse(safe) == JSONParser.parse(raw))
    }

    @Test("a client with --json keeps the answers it gets; only 2xx ones count")
    func recorder() {
        let answers = Answers()
        answers.keep(RawAnswer(method: "GET", path: "/v1/x", status: 200, body: Array("1".utf8)))
        answers.keep(RawAnswer(method: "GET", path: "/v1/x", status: 404, body: Array("{}".utf8)))
        #expect(answers.all.map(\.body) == [Array("1".utf8)] && answers.last?.status == 200)
    }
}

@Suite("alertctl watch: the screen and the keys, without a terminal")
struct ConsoleStateTests {
    static func alert(buttons: [Button], message: String? = nil, title: String = "Pick one") -> AlertResource {
        AlertResource(
            id: "01M00000000000000000000000", client: "ops", state: .displayed, position: 0, title: title, message: message,
            style: .alert, buttons: buttons, priority: 0, expiresIn: 60, dismissAfter: nil, callbackURL: nil, metadata: nil,
            createdAt: Timestamp(milliseconds: 0), displayedAt: Timestamp(milliseconds: 0), decidedAt: nil,
            expiresAt: Timestamp(milliseconds: 60_000), result: nil)
    }

    /// The frame as a terminal shows it: without the console's own escape sequences.
    static func visible(_ frame: [String]) -> [String] {
        frame.map { $0.replacingOccurrences(of: "\u{1B}\\[[0-9]*m", with: "", options: .regularExpression) }
    }

    @Test("sixteen buttons and a long message fit 80×24: every button with its key, the message scrolls")
    func sixteenButtons() {
        var state = ConsoleState(client: "ops")
        let buttons = (1...15).map { Button.default("Option \($0)") } + [.cancel("None")]
        let message = (1...60).map { "word\($0)" }.joined(separator: " ") + "\n" + (1...20).map { "line \($0)" }.joined(separator: "\n")
        state.show(Self.alert(buttons: buttons, message: message, title: String(repeating: "Long title ", count: 20)))
        let frame = Self.visible(state.frame(now: Date()))
        #expect(frame.count <= 24 && frame.allSatisfy { $0.count <= 80 }, "\(frame.joined(separator: "\n"))")
        let screen = frame.joined(separator: "\n")
        for (key, number) in zip("123456789abcdef", 1...15) { #expect(screen.contains("[\(key)] Option \(number)"), "\(screen)") }
        #expect(screen.contains("[g] None  (cancel, Esc)"))
        #expect(screen.contains("1-9, a-g choose · Esc cancel · Tab comment · ↑↓ PgUp PgDn scroll · q quit"))
        #expect(screen.contains("(message lines 1–"))
        #expect(state.press([27, 91, 54, 126]) == .none)
        #expect(Self.visible(state.frame(now: Date())).joined().contains("(message lines 6–"))
        if case .choose(let button, _, _) = state.press(Array("b".utf8)) {
            #expect(button.title == "Option 11")
        } else {
            Issue.record("b chose nothing")
        }
    }

    @Test("a destructive button waits for y; any other key keeps the alert")
    func confirmation() {
        var state = ConsoleState(client: "ops")
        state.show(Self.alert(buttons: [.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")]))
        #expect(state.press(Array("2".utf8)) == .none)
        #expect(state.note?.text.contains("Roll back is destructive: y chooses it") == true)
        #expect(Self.visible(state.frame(now: Date())).last == "y choose · any other key keep · q quit")
        #expect(state.press(Array("n".utf8)) == .none)
        #expect(state.note?.text == "kept: Roll back was not chosen")
        #expect(state.press(Array("2".utf8)) == .none)
        #expect(state.press(Array("y".utf8)) == .choose(.destructive("Roll back"), Self.alert(buttons: state.alert!.buttons), .init()))
    }

    @Test("a key that matches no button says so; after a choice the console says what was answered, even once the next alert shows")
    func notes() {
        var state = ConsoleState(client: "ops")
        let first = Self.alert(buttons: [.default("Yes"), .default("No")], title: "Restart db-3?")
        state.show(first)
        #expect(state.press(Array("7".utf8)) == .none)
        #expect(state.note?.text == "key 7 chooses nothing; 1-2 choose")
        #expect(state.press([27]) == .none)
        #expect(state.note?.text == "this alert has no cancel button")
        #expect(state.press(Array("1".utf8)) == .choose(.default("Yes"), first, .init()))
        var answered = first
        answered.state = .answered
        state.answered(answered, with: .default("Yes"))
        var next = Self.alert(buttons: [.default("OK")], title: "Next")
        next.id = "01M00000000000000000000001"
        state.show(next)
        #expect(Self.visible(state.frame(now: Date())).contains("answered “Restart db-3?” with Yes"))
        _ = state.press(Array("x".utf8))
        #expect(state.note?.text == "key x chooses nothing; 1 chooses")
    }

    @Test("a token that may not answer is read-only from the start: the buttons without keys; a key says why and chooses nothing")
    func readOnly() throws {
        var state = ConsoleState(client: "ops")
        let me = Identity(name: "wallboard", roles: ["read"], clients: ["ops"], auth: true)
        state.readOnly = ConsoleState.readOnly(me)
        #expect(ConsoleState.readOnly(Identity(name: "console", roles: ["read", "answer"], clients: ["ops"], auth: true)) == nil)
        #expect(ConsoleState.readOnly(Identity(name: nil, roles: ["read", "post", "answer", "admin"], clients: ["*"], auth: false)) == nil)
        let alert = Self.alert(buttons: [.default("Restart"), .destructive("Drop tables"), .cancel("Keep")], title: "Wipe staging?")
        state.show(alert)
        let frame = Self.visible(state.frame(now: Date()))
        let screen = frame.joined(separator: "\n")
        #expect(frame.first?.hasPrefix("alertd · ops · read-only") == true, "\(screen)")
        // The status line, wrapped at 80 columns.
        #expect(
            screen.contains("read-only: token wallboard (roles: read) may not answer;") && screen.contains("that needs the"), "\(screen)")
        #expect(screen.contains("· Restart") && screen.contains("· Drop tables  (destructive)") && screen.contains("· Keep  (cancel)"))
        #expect(!screen.contains("[1]") && !screen.contains("Esc") && frame.last == "q quit", "\(screen)")
        for key in ["1", "2", "\u{1B}"] {
            #expect(state.press(Array(key.utf8)) == .none)
            #expect(state.note?.text.hasSuffix("may not answer; that needs the answer role; nothing was chosen") == true)
        }
        #expect(state.confirming == nil)
    }

    @Test("an alert that leaves without this console's answer is told with who answered it; one answered here is not told twice")
    func answeredElsewhere() {
        var state = ConsoleState(client: "ops")
        let first = Self.alert(buttons: [.default("Deploy")], title: "Deploy?")
        state.show(first)
        var next = Self.alert(buttons: [.default("OK")], title: "Next")
        next.id = "01M00000000000000000000001"
        let left = state.show(next)
        #expect(left?.id == first.id)
        var decided = first
        decided.state = .answered
        decided.result = AlertResult(outcome: .answered, button: "Deploy", buttonIndex: 0, decidedBy: "alice")
        state.left(decided)
        #expect(state.note?.text == "“Deploy?” was answered “Deploy” by alice")
        state.answered(next, with: .default("OK"))
        #expect(state.show(nil) == nil, "answered here: the console already said so")
    }

    @Test("a refused token fills the screen, whole, and the keys offer only q")
    func denied() throws {
        var state = ConsoleState(client: "ops")
        let detail = "token reader may not read client ops " + String(repeating: "x", count: 100)
        let problem = try JSONValueDecoder().decode(
            ProblemDocument.self,
            from: Array(#"{"type":"about:blank","title":"Forbidden","status":403,"detail":"\#(detail)","code":"forbidden"}"#.utf8))
        let error = AlertdError(kind: .problem, status: 403, problem: problem, message: "Forbidden")
        state.denied = ConsoleState.refusal(error, "ops")
        let frame = Self.visible(state.frame(now: Date()))
        let screen = frame.joined(separator: "\n")
        #expect(screen.contains("This token cannot read client ops.") && screen.contains(String(repeating: "x", count: 60)))
        #expect(frame.last == "q quit" && frame.allSatisfy { $0.count <= 80 })
    }
}

@Suite("alertctl: the votes of an alert that needs several people (SPEC §10), in lines and on the console")
struct VoteTextTests {
    static let buttons: [Button] = [.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")]

    /// A displayed alert of `quorum` with votes `decider:button` (nil for an anonymous one).
    static func alert(quorum: Int = 2, votes: [(String?, String)]) -> AlertResource {
        var alert = ConsoleStateTests.alert(buttons: buttons, title: "Deploy build 1234?")
        alert.quorum = quorum
        alert.votes = votes.enumerated().map { number, vote in
            Vote(
                decidedBy: vote.0, button: vote.1, buttonIndex: buttons.firstIndex { $0.title == vote.1 }!,
                at: Timestamp(milliseconds: Int64(number) * 1000))
        }
        return alert
    }

    @Test("the tally: how many of the quorum each button has and who chose what; cancel votes named, not counted; none for quorum 1")
    func tally() {
        #expect(Text.tally(Self.alert(votes: [])) == "0 of 2 approvals")
        #expect(Text.tally(Self.alert(votes: [("alice", "Deploy")])) == "1 of 2 approvals — alice: Deploy")
        #expect(
            Text.tally(Self.alert(quorum: 3, votes: [("alice", "Deploy"), ("bob", "Roll back"), ("carol", "Deploy")]))
                == "Deploy 2 of 3, Roll back 1 of 3 — alice: Deploy, bob: Roll back, carol: Deploy")
        #expect(Text.tally(Self.alert(votes: [("alice", "Deploy"), ("bob", "Cancel")])) == "1 of 2 approvals — alice: Deploy, bob: Cancel")
        #expect(Text.tally(Self.alert(votes: [(nil, "Deploy")])) == "1 of 2 approvals — anonymous: Deploy")
        #expect(Text.tally(Self.alert(quorum: 1, votes: [("alice", "Deploy")])) == nil)
        let summary = Text.summary(Self.alert(votes: [("alice", "Deploy")]))
        #expect(summary.hasSuffix("(1 of 2 approvals — alice: Deploy)"), "\(summary)")
        #expect(Text.details(Self.alert(votes: [("alice", "Deploy")])).contains("votes:     1 of 2 approvals — alice: Deploy"))
        #expect(Choose.vote(Self.alert(votes: [("alice", "Deploy")]))?.hasPrefix("voted: not decided yet") == true)
    }

    @Test("a decided alert of several deciders names every one who chose its button")
    func deciders() {
        var decided = Self.alert(votes: [("alice", "Deploy"), ("bob", "Deploy")])
        decided.state = .answered
        decided.result = AlertResult(outcome: .answered, button: "Deploy", buttonIndex: 0, decidedBy: "bob", votes: decided.votes)
        #expect(Text.deciders(decided) == "alice and bob")
        #expect(ConsoleState.decision(decided) == "“Deploy build 1234?” was answered “Deploy” by alice and bob")
        #expect(Text.details(decided).contains("result:    answered: Deploy by alice and bob"))
        #expect(Choose.vote(decided) == nil)
        #expect(Text.names(["alice", "bob", "carol"]) == "alice, bob and carol" && Text.names(["alice"]) == "alice")
    }

    @Test("the console shows the votes as they come; once this decider voted its keys choose nothing, Esc included")
    func console() {
        var state = ConsoleState(client: "ops")
        state.decider = .some("alice")
        state.show(Self.alert(votes: []))
        var screen = ConsoleStateTests.visible(state.frame(now: Date())).joined(separator: "\n")
        #expect(screen.contains("0 of 2 approvals") && screen.contains("[1] Deploy"), "\(screen)")
        // Bob's vote comes through the long-poll: the same alert, one vote more.
        state.show(Self.alert(votes: [("bob", "Deploy")]))
        screen = ConsoleStateTests.visible(state.frame(now: Date())).joined(separator: "\n")
        #expect(screen.contains("1 of 2 approvals — bob: Deploy") && screen.contains("[1] Deploy"), "\(screen)")
        #expect(state.press(Array("1".utf8)) == .choose(.default("Deploy"), Self.alert(votes: [("bob", "Deploy")]), .init()))

        // Alice votes Roll back: the answer is the alert still displayed, with her vote.
        let voted = Self.alert(votes: [("bob", "Deploy"), ("alice", "Roll back")])
        state.answered(voted, with: .destructive("Roll back"))
        #expect(
            state.note?.text == "voted Roll back on “Deploy build 1234?”: Deploy 1 of 2, Roll back 1 of 2 — bob: Deploy, alice: Roll back")
        #expect(state.answeredHere == nil, "a vote is not the answer: its decision is told when it leaves")
        let frame = ConsoleStateTests.visible(state.frame(now: Date()))
        screen = frame.joined(separator: "\n")
        #expect(screen.contains("You voted Roll back; waiting for the others."), "\(screen)")
        #expect(!screen.contains("[1]") && screen.contains("· Deploy") && frame.last == "q quit", "\(screen)")
        for key in ["1", "3", "\u{1B}"] {
            #expect(state.press(Array(key.utf8)) == .none)
            #expect(state.note?.text == "you voted Roll back: a vote is not changed; nothing was chosen")
        }
        // An answer read before the vote (one vote fewer) never takes it back off the screen.
        state.show(Self.alert(votes: [("bob", "Deploy")]))
        #expect(state.alert?.votes.count == 2)
    }

    @Test("without tokens the console votes as the one anonymous decider; while who it is is unknown, no key is held back")
    func anonymousAndUnknown() {
        var anonymous = ConsoleState(client: "ops")
        anonymous.decider = .some(nil)
        anonymous.show(Self.alert(votes: [(nil, "Deploy")]))
        #expect(anonymous.myVote?.button == "Deploy")
        var unknown = ConsoleState(client: "ops")
        unknown.show(Self.alert(votes: [("alice", "Deploy")]))
        #expect(unknown.myVote == nil)
        #expect(unknown.press(Array("1".utf8)) != .none)
    }
}

@Suite("alertctl: what issue 45 asked of it, in process")
struct AlertctlIssue45Tests {
    @Test("one label per button everywhere: 1–9, then a–g; --number takes the label or its number")
    func labels() {
        #expect((0..<16).map(ButtonNumbers.label) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f", "g"])
        #expect(ButtonNumbers.position("1") == 0 && ButtonNumbers.position("9") == 8)
        #expect(ButtonNumbers.position("a") == 9 && ButtonNumbers.position("10") == 9 && ButtonNumbers.position("A") == 9)
        #expect(ButtonNumbers.position("g") == 15 && ButtonNumbers.position("16") == 15)
        #expect(ButtonNumbers.position("") == nil && ButtonNumbers.position("ab") == nil && ButtonNumbers.position("?") == nil)
        #expect(ConsoleState.keys.prefix(16).map(String.init) == (0..<16).map(ButtonNumbers.label), "watch's keys are the labels")
        let alert = ConsoleStateTests.alert(buttons: (1...10).map { Button.default("B\($0)") } + [.cancel("No")])
        #expect(Text.summary(alert).hasSuffix("[9] B9  [a] B10  [b] No (cancel)"), "\(Text.summary(alert))")
    }

    @Test(
        "alertctl.yaml: a misspelt key is matched to the one it most likely means",
        arguments: [
            ("tokenfile", "token_file"), ("token-file", "token_file"), ("TOKEN", "token"), ("uri", "url"), ("ca_cert", "cacert"),
            ("tokne", "token"),
        ])
    func suggestion(typed: String, meant: String) throws {
        #expect(ConfigFile.closest(to: typed) == meant)
        #expect(throws: Failure.self) { try ConfigFile.parse("\(typed): x\n", path: "/c/alertctl.yaml", home: nil) }
        do {
            _ = try ConfigFile.parse("\(typed): x\n", path: "/c/alertctl.yaml", home: nil)
        } catch {
            #expect(error.description.contains("unknown key `\(typed)` (did you mean `\(meant)`?)"), "\(error)")
        }
    }

    @Test("a key far from every known one gets no suggestion")
    func noSuggestion() {
        #expect(ConfigFile.closest(to: "password") == nil && ConfigFile.closest(to: "server") == nil)
    }

    @Test("a 401 names the source of the token alertctl sent, or says none was sent")
    func unauthorizedWords() {
        func settings(_ token: String?, _ source: String?, file: String? = "/h/.config/alertd/alertctl.yaml") -> Settings {
            Settings(url: "http://127.0.0.1:8080", token: token, tokenSource: source, cacert: nil, insecure: false, file: file)
        }
        #expect(
            Connection.unauthorized("the token is not valid", settings: settings(nil, nil))
                == "alertd needs a token and none was given: pass one with --token, $ALERTD_TOKEN, or token (or token_file) in /h/.config/alertd/alertctl.yaml"
        )
        #expect(
            Connection.unauthorized("the token is not valid", settings: settings("t", "$ALERTD_TOKEN")).hasPrefix(
                "alertd refused the token from $ALERTD_TOKEN (the token is not valid); give another with --token"))
        #expect(
            Connection.unauthorized(nil, settings: settings("t", "/h/.config/alertd/alertctl.yaml")).hasPrefix(
                "alertd refused the token from token in /h/.config/alertd/alertctl.yaml; "))
        #expect(
            Connection.unauthorized(nil, settings: settings("t", "/h/token")).hasPrefix(
                "alertd refused the token from the token file /h/token (token_file in /h/.config/alertd/alertctl.yaml); "))
    }

    @Test("a 401 while the console runs (a token removed by a reload) says which token, or that there was none")
    func unauthorizedInTheConsole() throws {
        let problem = try JSONValueDecoder().decode(
            ProblemDocument.self,
            from: Array(
                #"{"type":"about:blank","title":"Unauthorized","status":401,"detail":"the token is not valid","code":"unauthorized"}"#.utf8)
        )
        let error = AlertdError(kind: .problem, status: 401, problem: problem, message: "Unauthorized")
        let refused = Connection.unauthorized(
            nil, settings: Settings(url: "http://h", token: "t", tokenSource: "--token", cacert: nil, insecure: false, file: nil))
        let words = ConsoleState.refusal(error, "ops", unauthorized: refused) ?? ""
        #expect(words.hasPrefix("The daemon does not accept this token.\n\nalertd refused the token from --token;"), "\(words)")
        let none = Connection.unauthorized(
            nil, settings: Settings(url: "http://h", token: nil, tokenSource: nil, cacert: nil, insecure: false, file: nil))
        let needs = ConsoleState.refusal(error, "ops", unauthorized: none) ?? ""
        #expect(needs.hasPrefix("The daemon needs a token.\n\nalertd needs a token and none was given"), "\(needs)")
    }

    @Test("post --wait says it is still waiting after 1, 2, 5, 10, 20 and 30 minutes, then every 30")
    func stillWaiting() {
        #expect((0..<9).map(Post.stillWaitingMark) == [60, 120, 300, 600, 1200, 1800, 3600, 5400, 7200])
    }

    @Test("a repeated vote is said as one: the earlier vote stands, nothing new was recorded")
    func repeatedVote() {
        let alert = VoteTextTests.alert(quorum: 2, votes: [("alice", "Deploy")])
        #expect(Choose.vote(alert)?.hasPrefix("voted: not decided yet; it is answered when 2 deciders") == true)
        guard let earlier = alert.votes.first else {
            Issue.record("no vote")
            return
        }
        let repeated = Choose.vote(alert, earlier: earlier) ?? ""
        #expect(
            repeated.hasPrefix("already voted: your vote for Deploy of \(earlier.at) stands, and nothing new was recorded"), "\(repeated)")
    }

    @Test("the console fits the terminal it is given, down to 40×12, and a resize changes the frame")
    func fitsTheTerminal() {
        var state = ConsoleState(client: "ops")
        state.show(
            ConsoleStateTests.alert(
                buttons: [.default("Promote"), .destructive("Fail over everything"), .cancel("Wait")],
                message: "The nightly migration of the payments database finished with warnings about replication lag.",
                title: "Promote the standby replica of payments-eu to primary now?"))
        for (columns, rows) in [(60, 18), (100, 30), (40, 12), (20, 5)] {
            state.resize(columns: columns, rows: rows)
            let frame = ConsoleStateTests.visible(state.frame(now: Date()))
            let (width, height) = (max(40, columns), max(12, rows))
            #expect(
                frame.count <= height && frame.allSatisfy { $0.count <= width }, "\(columns)×\(rows):\n\(frame.joined(separator: "\n"))")
            #expect(frame.first?.hasPrefix("alertd · ops") == true && frame.contains(String(repeating: "─", count: width)))
            #expect(frame.last?.hasSuffix("q quit") == true, "\(columns)×\(rows): \(frame)")
        }
    }
}

@Suite("Help texts: an example in a command's help is printed whole at 80 columns, for copy and paste (issue 45, item 10)")
struct HelpExampleTests {
    /// Every command of alertctl, subcommands included.
    static func commands(_ root: any ParsableCommand.Type = alertctl.Alertctl.self) -> [any ParsableCommand.Type] {
        [root] + root.configuration.subcommands.flatMap { commands($0) }
    }

    @Test("each indented line of a discussion (an example) is a whole line of the help rendered at 80 columns")
    func examplesWhole() {
        for command in Self.commands() {
            let help = alertctl.Alertctl.helpMessage(for: command, columns: 80)
            let lines = Set(help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
            for example in command.configuration.discussion.split(separator: "\n").map(String.init) where example.hasPrefix("  ") {
                #expect(lines.contains(example), "alertctl \(command._commandName): the example is wrapped:\n\(example)\n\(help)")
            }
        }
    }
}
