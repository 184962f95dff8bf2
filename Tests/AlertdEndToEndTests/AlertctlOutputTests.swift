import AlertdClient
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

@Suite(
    "alertctl's output: harmless text, the daemon's JSON as written, help, choose --current; alertd's help and token new --json")
struct AlertctlOutputTests {
    /// Escape sequences that recolour, clear the screen, retitle the window; a C1 CSI; a bidi override.
    static let hostile = "\u{1B}[31m\u{1B}[2J\u{1B}]0;pwned\u{07}\u{9B}1m\u{202E}"

    /// Whether `text` holds a character a terminal acts on (a newline aside).
    static func hasControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}" }
    }

    @Test("list, get, current, clients, choose, withdraw and deliveries show an alert's control characters as �")
    func controlCharactersAreHarmless() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let alert = try await http.postAlert(
            "ops",
            """
            {"title": "Deploy \(Self.jsonEscaped(Self.hostile))?", "message": "two\\nlines \(Self.jsonEscaped(Self.hostile))",
             "buttons": [{"title": "Go\(Self.jsonEscaped(Self.hostile))"}, {"title": "No", "style": "cancel"}],
             "metadata": {"note": "\(Self.jsonEscaped(Self.hostile))"}}
            """)
        // Not dismissed 2 s after it is displayed (the default): withdrawn below, after the choice
        // displays it, on a loaded machine more than 2 s later.
        let queued = try await http.postAlert("ops", #"{"title": "Second \u001b[5m", "dismiss_after": 600}"#)
        let ctl = Alertctl(url: daemon.baseURL)
        var outputs: [String: String] = [:]
        for arguments in [["list", "ops"], ["get", "ops", id(alert)], ["current", "ops"], ["clients"]] {
            let result = try await ctl.start(arguments).finish()
            #expect(result.status == 0, "\(arguments): \(result)")
            outputs[arguments[0]] = result.stdout
        }
        let chosen = try await ctl.run("choose", "ops", id(alert), "Go" + Self.hostile)
        let withdrawn = try await ctl.run("withdraw", "ops", id(queued))
        outputs["choose"] = chosen.stdout
        outputs["withdraw"] = withdrawn.stdout
        for (command, output) in outputs {
            #expect(!Self.hasControl(output), "\(command) printed a control character: \(output.debugDescription)")
        }
        #expect(outputs["list"]?.contains("Deploy \u{FFFD}[31m\u{FFFD}[2J\u{FFFD}]0;pwned\u{FFFD}\u{FFFD}1m\u{FFFD}?") == true)
        #expect(outputs["get"]?.contains("message:   two\n           lines \u{FFFD}[31m") == true, "\(outputs["get"] ?? "")")
        #expect(outputs["withdraw"]?.contains("Second \u{FFFD}[5m") == true)
        #expect(chosen.status == 0 && outputs["choose"]?.contains("→ Go\u{FFFD}[31m") == true, "\(chosen)")
    }

    @Test("a problem's detail on stderr is harmless too")
    func harmlessErrors() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let alert = try await daemon.client().postAlert("ops", #"{"title": "Q", "buttons": [{"title": "Yes"}]}"#)
        let result = try await Alertctl(url: daemon.baseURL).run("choose", "ops", id(alert), "Nope" + Self.hostile)
        #expect(result.status == 3 && result.stderr.hasPrefix("alertctl: "), "\(result)")
        #expect(!Self.hasControl(result.stderr.replacingOccurrences(of: "\n", with: "")), "\(result.stderr.debugDescription)")
    }

    @Test("--json prints the daemon's answer byte for byte: its member order, its nulls, its numbers")
    func jsonAsWritten() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let body =
            #"{"title": "M", "buttons": [{"title": "A"}], "metadata": {"z": 1, "big": 123456789012345678901234567890, "a": 1.50e3, "n": null}}"#
        let posted = try await http.post("/v1/clients/ops/alerts", json: body)
        let alertID = try #require(try JSONParser.parse(posted.text)["id"]?.stringValue)
        let ctl = Alertctl(url: daemon.baseURL)
        let cases: [([String], String)] = [
            (["get", "ops", alertID], "/v1/clients/ops/alerts/\(alertID)"),
            (["current", "ops"], "/v1/clients/ops/alerts/current"),
            (["list", "ops"], "/v1/clients/ops/alerts?limit=500"),
            (["clients"], "/v1/clients?limit=1000"),
        ]
        for (arguments, path) in cases {
            let result = try await ctl.start(arguments + ["--json"]).finish()
            let answer = try await http.get(path).text
            #expect(result.status == 0 && result.stdout == answer + "\n", "\(arguments): \(result.stdout) vs \(answer)")
        }
        let got = try await ctl.run("get", "ops", alertID, "--json")
        #expect(got.stdout.hasPrefix(#"{"id":""#) && got.stdout.contains(#""message":null"#))
        #expect(got.stdout.contains(#""metadata":{"z":1,"big":123456789012345678901234567890,"a":1.50e3,"n":null}"#), "\(got.stdout)")
        #expect(try await ctl.run("current", "nobody", "--json").stdout == "null\n")
        let chosen = try await ctl.run("choose", "ops", alertID, "A", "--json")
        #expect(chosen.stdout == (try await http.get("/v1/clients/ops/alerts/\(alertID)").text) + "\n")
    }

    @Test("alertctl alone, or webhooks alone, prints the help on stderr and exits 64")
    func aloneIsUsage() async throws {
        let ctl = Alertctl(url: nil)
        let alone = try await ctl.start([]).finish()
        #expect(alone.status == 64 && alone.stdout.isEmpty && alone.stderr.contains("USAGE: alertctl <subcommand>"), "\(alone)")
        #expect(alone.stderr.contains("whoami"))
        let group = try await ctl.run("webhooks")
        #expect(group.status == 64 && group.stderr.contains("USAGE: alertctl webhooks <subcommand>"), "\(group)")
        let help = try await ctl.run("--help")
        #expect(help.status == 0 && help.stdout.contains("USAGE: alertctl <subcommand>"))
    }

    @Test("choose --current answers the displayed alert without its id; with nothing displayed it says so (3)")
    func chooseCurrent() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let http = daemon.client()
        let first = try await http.postAlert("ops", #"{"title": "First?", "buttons": [{"title": "Yes"}, {"title": "No"}]}"#)
        let second = try await http.postAlert("ops", #"{"title": "Second?", "buttons": [{"title": "Yes"}]}"#)
        let ctl = Alertctl(url: daemon.baseURL)
        let answered = try await ctl.run("choose", "ops", "--current", "No")
        #expect(answered.status == 0 && answered.stdout.hasPrefix(id(first)) && answered.stdout.contains("→ No"), "\(answered)")
        let byIndex = try await ctl.run("choose", "ops", "--current", "1", "--number")
        #expect(byIndex.status == 0 && byIndex.stdout.hasPrefix(id(second)), "\(byIndex)")
        let none = try await ctl.run("choose", "ops", "--current", "Yes")
        #expect(none.status == 3 && none.stderr == "alertctl: ops displays no alert: nothing to answer\n", "\(none)")
        let usage = try await ctl.run("choose", "ops", "--current", id(first), "Yes")
        #expect(usage.status == 64, "\(usage)")
    }

    @Test("alertd --help shows serving as the default: no subcommand required, and no serve")
    func alertdHelp() async throws {
        let help = try await Program.alertd(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: alertd [--config <file>] [--listen <host:port>] [--state-dir <dir>]\n"), "\(help.stdout)")
        #expect(help.stdout.contains("Without a command alertd serves the API"))
        #expect(!help.stdout.contains("USAGE: alertd [--config <file>] [--listen <host:port>] [--state-dir <dir>] <subcommand>"))
        // The README names the same commands, and no `serve`.
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        for command in ["alertd token new", "alertd check-config"] {
            #expect(help.stdout.contains(command) && readme.contains(command), "\(command)")
        }
        let serveCommand = readme.split(separator: "\n").filter {
            $0.hasPrefix("alertd serve ") || $0 == "alertd serve" || $0.contains("`alertd serve") || $0.contains("executable: serve")
        }
        #expect(serveCommand.isEmpty, "\(serveCommand)")
    }

    @Test("alertd token new --json prints one object: the secret and the SHA-256 of it, the roles and the clients")
    func tokenJSON() async throws {
        let made = try await Program.alertd(["token", "new", "ci", "--roles", "post, read", "--clients", "ops,team-*", "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])
        let secret = try #require(object["secret"] as? String)
        #expect(Set(object.keys) == ["name", "secret", "sha256", "roles", "clients"])
        let digest = await Program.sha256Hex(secret)
        #expect(object["name"] as? String == "ci" && object["sha256"] as? String == digest)
        #expect(object["roles"] as? [String] == ["post", "read"] && object["clients"] as? [String] == ["ops", "team-*"])
        #expect(made.stdout.hasSuffix("}\n") && made.stdout.split(separator: "\n").count == 1)
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `text` as the inside of a JSON string.
    static func jsonEscaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar == "\"" || scalar == "\\" {
                out += String(format: "\\u%04x", scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
