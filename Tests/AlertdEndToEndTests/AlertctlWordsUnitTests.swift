// alertctl's part of issue 43 (answers with words, the coding-agent gate) and of issue 44
// (items 8 and 10), tested in process without a daemon: `post --field`, what get shows, the
// watch console's form, the hook's reading of a PreToolUse event and its answers, URLs
// without their secrets, names without escape sequences. The real binary: AlertctlWordsTests.

import AlertdMCP
import AlertdWire
import Foundation
import Testing

@testable import AlertdClient
@testable import alertctl

@Suite("alertctl post --field: name[:label][:required]")
struct PostFieldTests {
    @Test(
        "each form reads as said",
        arguments: [
            ("ticket", AlertField(name: "ticket")),
            ("ticket:Change ticket", AlertField(name: "ticket", label: "Change ticket")),
            ("ticket:Change ticket:required", AlertField(name: "ticket", label: "Change ticket", required: true)),
            ("ticket:required", AlertField(name: "ticket", required: true)),
            ("ticket::required", AlertField(name: "ticket", required: true)),
            ("window:From 10:00 to 12:00:required", AlertField(name: "window", label: "From 10:00 to 12:00", required: true)),
        ])
    func forms(text: String, field: AlertField) throws {
        #expect(try Post.field(text) == field)
    }

    @Test("an empty name is bad usage")
    func emptyName() {
        #expect(throws: Failure.self) { try Post.field(":label") }
    }

    @Test("post --wait prints each value in the fields' order, then the comment on one line")
    func waitLines() {
        var alert = ConsoleStateTests.alert(buttons: [.default("Deploy")])
        alert.fields = [AlertField(name: "window", buttons: ["Deploy"]), AlertField(name: "ticket", buttons: ["Deploy"])]
        alert.state = .answered
        alert.result = AlertResult(
            outcome: .answered, button: "Deploy", buttonIndex: 0, comment: "agreed\nwith payments",
            values: ["ticket": "OPS-1", "window": "10-12"])
        #expect(Post.words(alert) == ["window=10-12", "ticket=OPS-1", "comment: agreed with payments"])
    }
}

@Suite("alertctl get: an alert's fields, and an answer's words")
struct DetailsWordsTests {
    @Test("get lists the fields and the result's values and comment, each line safe for a terminal")
    func details() {
        var alert = ConsoleStateTests.alert(buttons: [.default("Deploy"), .cancel("Cancel")])
        alert.fields = [
            AlertField(name: "ticket", label: "Change ticket", placeholder: "OPS-123", required: true, maxLength: 12, buttons: ["Deploy"]),
            AlertField(name: "reason", buttons: ["Cancel"]),
        ]
        alert.state = .answered
        alert.result = AlertResult(
            outcome: .answered, button: "Cancel", buttonIndex: 1, cancelled: true, comment: "freeze\u{1B}[2J until Monday",
            values: ["reason": "freeze"])
        let text = Text.details(alert)
        #expect(text.contains("fields:    ticket (Change ticket) required, at most 12, e.g. OPS-123"), "\(text)")
        #expect(text.contains("           reason for Cancel"), "\(text)")
        #expect(text.contains("value:     reason=freeze"))
        #expect(text.contains("comment:   freeze\u{FFFD}[2J until Monday"))
        #expect(Text.summary(alert).contains("→ Cancel  \"freeze\u{FFFD}[2J until Monday\""))
    }

    @Test("callback and webhook URLs are shown without their user info, path or query values (issue 44, item 8)")
    func redactedURLs() {
        var alert = ConsoleStateTests.alert(buttons: [.default("Deploy")])
        alert.callbackURL = "https://bot:hunter2@hooks.example.com/alerts?token=abc&v=2#frag"
        // The path too: a Slack or Discord webhook's token is its path.
        #expect(Text.details(alert).contains("callback:  https://***@hooks.example.com/***?token=***&v=***"), "\(Text.details(alert))")
        #expect(!Text.details(alert).contains("hunter2"))
    }
}

@Suite("URLs without their secrets, names without escape sequences (issue 44, items 8 and 10)")
struct RedactionAndStrippingTests {
    @Test(
        "user info and query values go, the rest stays",
        arguments: [
            ("https://ops:s3cret@alertd.internal:8443/api?token=abc&v=2#top", "https://***@alertd.internal:8443/api?token=***&v=***"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://a@b@host/x", "http://***@host/x"),
            ("https://host/?flag&k=", "https://host/?***&k=***"),
            ("not a url?secret=1", "not a url?secret=***"),
        ])
    func redacted(url: String, shown: String) {
        #expect(URLRedaction.redacted(url, keepingPath: true) == shown)
    }

    @Test("a message quoting the URL, or its user info alone, is scrubbed")
    func scrubbed() {
        let url = "http://ops:s3cret@127.0.0.1:9/?token=q"
        let text = URLRedaction.scrubbing(url, from: "cannot reach \(url); ops:s3cret@127.0.0.1 refused")
        #expect(!text.contains("s3cret") && !text.contains("token=q"), "\(text)")
    }

    @Test("stripped drops control characters and bidi overrides, turns line breaks into spaces, and cuts")
    func stripped() {
        #expect(Terminal.stripped("evil\u{1B}]52;c;aGVsbG8=\u{07}agent 1\u{9B}31m") == "evil]52;c;aGVsbG8=agent 131m")
        #expect(Terminal.stripped("a\nb\tc\u{202E}d") == "a b cd")
        #expect(Terminal.stripped(String(repeating: "x", count: 300), limit: 10) == "xxxxxxxxx…")
    }
}

@Suite("alertctl watch: the answer's form (SPEC §13)")
struct ConsoleFormTests {
    static func asking() -> AlertResource {
        var alert = ConsoleStateTests.alert(buttons: [.default("Deploy"), .destructive("Roll back"), .cancel("Cancel")])
        alert.fields = [
            AlertField(
                name: "ticket", label: "Change ticket", placeholder: "OPS-123", required: true, maxLength: 8,
                buttons: ["Deploy", "Roll back"])
        ]
        return alert
    }

    static func type(_ text: String, into state: inout ConsoleState) {
        for scalar in text.unicodeScalars { _ = state.press(Array(String(scalar).utf8)) }
    }

    @Test("a button with fields opens the form: each field, then the comment; Enter on the comment chooses with them")
    func form() {
        var state = ConsoleState(client: "ops")
        let alert = Self.asking()
        state.show(alert)
        #expect(state.press(Array("1".utf8)) == .none)
        var screen = ConsoleStateTests.visible(state.frame(now: Date())).joined(separator: "\n")
        #expect(screen.contains("Answer Deploy:") && screen.contains("Change ticket (required): ▌"), "\(screen)")
        // Empty, a required field is refused; q is text here, not quit.
        #expect(state.press([13]) == .none)
        #expect(state.form?.problem == "Change ticket is required for Deploy")
        Self.type("OPS-9q", into: &state)
        _ = state.press([127])
        #expect(state.press([13]) == .none)
        Self.type("window agreed", into: &state)
        screen = ConsoleStateTests.visible(state.frame(now: Date())).joined(separator: "\n")
        #expect(screen.contains("Change ticket (required): OPS-9") && screen.contains("Comment (optional): window agreed▌"), "\(screen)")
        #expect(state.press([13]) == .choose(.default("Deploy"), alert, .init(comment: "window agreed", values: ["ticket": "OPS-9"])))
    }

    @Test("a value longer than the field's max_length is not typed; Esc leaves the form and chooses nothing")
    func limitsAndEsc() {
        var state = ConsoleState(client: "ops")
        state.show(Self.asking())
        _ = state.press(Array("1".utf8))
        Self.type("OPS-12345", into: &state)
        #expect(state.form?.line == "OPS-1234" && state.form?.problem == "at most 8 characters")
        #expect(state.press([27]) == .none)
        #expect(state.form == nil && state.note?.text == "nothing was chosen: Deploy was not sent")
    }

    @Test("a destructive button still waits for y, with the form's words")
    func destructive() {
        var state = ConsoleState(client: "ops")
        let alert = Self.asking()
        state.show(alert)
        _ = state.press(Array("2".utf8))
        Self.type("OPS-1", into: &state)
        _ = state.press([13])
        #expect(state.press([13]) == .none)
        #expect(state.note?.text.contains("Roll back is destructive: y chooses it") == true)
        #expect(state.press(Array("y".utf8)) == .choose(.destructive("Roll back"), alert, .init(values: ["ticket": "OPS-1"])))
    }

    @Test("Tab writes a comment that goes with the next button; the cancel button asks for no ticket")
    func tabComment() {
        var state = ConsoleState(client: "ops")
        let alert = Self.asking()
        state.show(alert)
        #expect(ConsoleStateTests.visible(state.frame(now: Date())).last?.contains("Tab comment") == true)
        _ = state.press([9])
        Self.type("not today", into: &state)
        _ = state.press([13])
        #expect(state.comment == "not today")
        #expect(ConsoleStateTests.visible(state.frame(now: Date())).joined().contains("Comment: not today"))
        #expect(state.press([27]) == .choose(.cancel("Cancel"), alert, .init(comment: "not today")))
    }

    @Test("the alert changing under the form drops it and says nothing was chosen")
    func alertChanged() {
        var state = ConsoleState(client: "ops")
        state.show(Self.asking())
        _ = state.press(Array("1".utf8))
        var next = ConsoleStateTests.alert(buttons: [.default("OK")], title: "Next")
        next.id = "01M00000000000000000000009"
        state.show(next)
        #expect(state.form == nil && state.note?.text == "the alert changed before you answered; nothing was chosen")
    }
}

@Suite("alertctl hook claude-code: the event read, the decision written")
struct HookUnitTests {
    typealias Hook = alertctl.Hook.ClaudeCode

    @Test("Claude Code's PreToolUse event: the tool, its input, its ids")
    func reads() throws {
        let event = #"""
            {"session_id":"abc123","transcript_path":"/tmp/t.jsonl","cwd":"/home/me/repo","permission_mode":"default",
             "hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"npm test","description":"Run tests"},
             "tool_use_id":"toolu_01"}
            """#
        let read = try Hook.read(Data(event.utf8)).get()
        #expect(read.request.toolName == "Bash" && read.request.toolUseID == "toolu_01")
        #expect(read.request.input["command"] == .string("npm test"))
        #expect(read.metadata.map(\.key) == ["session_id", "cwd"] && read.key == "claude-code/abc123/toolu_01")
        #expect(read.request.title == "Allow Bash: npm test?")
    }

    @Test(
        "what is not a PreToolUse event is refused with a reason",
        arguments: [
            ("", "no event on stdin"),
            ("{not json", "not JSON"),
            ("[1]", "not a JSON object"),
            (#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}"#, "not a PreToolUse event"),
            (#"{"tool_input":{}}"#, "no tool_name"),
            (#"{"tool_name":"Bash","tool_input":"ls"}"#, "no tool_input"),
        ])
    func refused(text: String, reason: String) {
        switch Hook.read(Data(text.utf8)) {
        case .success: Issue.record("\(text) was read")
        case .failure(let problem): #expect(problem.description.contains(reason), "\(problem)")
        }
    }

    @Test("the output is Claude Code's hookSpecificOutput; a reason is safe for a terminal")
    func output() throws {
        let text = Hook.output(.deny, "no\u{1B}[2J")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: [String: String]])
        #expect(
            object["hookSpecificOutput"] == [
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no\u{FFFD}[2J",
            ])
    }

    @Test("--print-config's fragment runs the hook with the flags given, under a matcher, with room past its timeout")
    func config() throws {
        let text = Hook.config(client: "agents", timeout: 300, quorum: 2, only: ["Bash", "Edit"], onTimeout: "deny")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let entry = try #require(((object["hooks"] as? [String: Any])?["PreToolUse"] as? [[String: Any]])?.first)
        #expect(entry["matcher"] as? String == "Bash|Edit")
        let hook = try #require((entry["hooks"] as? [[String: Any]])?.first)
        #expect(hook["type"] as? String == "command" && hook["timeout"] as? Int == 330)
        #expect(
            hook["command"] as? String
                == "alertctl hook claude-code --client agents --timeout 300 --quorum 2 --only Bash,Edit --on-timeout deny")
        let plain = Hook.config(client: "agents", timeout: 600, quorum: 1, only: nil, onTimeout: "ask")
        #expect(plain.contains(#""matcher": "*""#), "\(plain)")
    }
}

@Suite("A permission request as a person reads it")
struct PermissionRequestTests {
    @Test("the title names the tool and what it acts on; the message shows the input; Allow and Deny (cancel)")
    func alert() {
        let request = PermissionRequest(
            toolName: "Edit", input: ["file_path": "/srv/app/main.swift", "old_string": "a\nb", "replace_all": false], toolUseID: "t1")
        let alert = request.alert(askedVia: "alertctl mcp", metadata: [(key: "agent", value: "claude-code 2.0")], quorum: 1)
        #expect(alert.title == "Allow Edit: /srv/app/main.swift?")
        #expect(alert.message?.contains("old_string:\n    a\n    b") == true)
        #expect(alert.message?.contains("replace_all: false") == true)
        #expect(alert.buttons == [.default("Allow"), .cancel("Deny")] && alert.quorum == nil)
        #expect(alert.metadata?.keys == ["asked_via", "agent", "tool", "tool_use_id"])
        let huge = PermissionRequest(toolName: "Write", input: ["content": .string(String(repeating: "x", count: 10_000))])
        #expect((huge.message.unicodeScalars.count) <= 4096 && huge.message.hasSuffix("more characters)"))
        #expect(PermissionRequest(toolName: "mcp__github__create_issue", input: [:]).title == "Allow mcp__github__create_issue?")
    }

    @Test("only Allow chosen by a person allows")
    func decisions() {
        var alert = ConsoleStateTests.alert(buttons: [.default("Allow"), .cancel("Deny")])
        #expect(PermissionRequest.decision(alert) == nil)
        alert.state = .answered
        alert.result = AlertResult(outcome: .answered, button: "Allow", buttonIndex: 0, decidedBy: "alice", comment: "fine")
        #expect(PermissionRequest.decision(alert) == .allow(by: "alice", comment: "fine"))
        alert.result = AlertResult(outcome: .answered, button: "Deny", buttonIndex: 1, cancelled: true, decidedBy: "alice")
        if case .deny(let message)? = PermissionRequest.decision(alert) {
            #expect(message.contains("Denied by alice"))
        } else {
            Issue.record("Deny did not deny")
        }
        for state in [AlertState.expired, .withdrawn] {
            alert.state = state
            alert.result = AlertResult(outcome: state)
            if case .noAnswer? = PermissionRequest.decision(alert) {} else { Issue.record("\(state) was not a no-answer") }
        }
    }
}
