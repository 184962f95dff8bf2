import AlertdAlertmanager
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

@testable import AlertdDaemon

/// The problems `yaml` has, one line each; nil when it is a valid config.
private func problems(_ yaml: String) -> [ConfigError]? {
    do {
        _ = try Config.parse(yaml: yaml)
        return nil
    } catch {
        return (error as? ConfigErrors)?.errors
    }
}

@Suite("integrations.alertmanager in the config file")
struct AlertmanagerConfigTests {
    @Test("every key is read: url, auth, buttons with silences, matcher labels, the severity map, default priority, expiry")
    func everyKey() throws {
        let config = try Config.parse(
            yaml: """
                integrations:
                  alertmanager:
                    url: "http://127.0.0.1:9093/"
                    bearer_token: "s3cret"
                    buttons:
                      - title: Acknowledge
                      - { title: "Silence 90m", silence: 90m }
                      - { title: "Silence a week", silence: 604800 }
                      - { title: Ignore, style: cancel }
                    matcher_labels: [alertname, instance]
                    severity_priority: { critical: 80, warning: 10, page: 100 }
                    default_priority: -5
                    expires_in: 3600
                """)
        let settings = try #require(config.alertmanager)
        #expect(settings.url == "http://127.0.0.1:9093")
        #expect(settings.silencesURL == "http://127.0.0.1:9093/api/v2/silences")
        #expect(settings.authorization == "Bearer s3cret")
        #expect(
            settings.buttons == [
                AlertmanagerButton(title: "Acknowledge"), AlertmanagerButton(title: "Silence 90m", silenceSeconds: 5400),
                AlertmanagerButton(title: "Silence a week", silenceSeconds: 604_800), AlertmanagerButton(title: "Ignore", style: .cancel),
            ])
        #expect(settings.matcherLabels == ["alertname", "instance"])
        #expect(settings.severityPriority == ["critical": 80, "warning": 10, "page": 100])
        #expect(settings.defaultPriority == -5)
        #expect(settings.expiresIn == 3600)
    }

    @Test("with only a url: the four default buttons and the default severity map; without the section: off")
    func defaults() throws {
        let settings = try #require(try Config.parse(yaml: "integrations:\n  alertmanager:\n    url: http://am:9093\n").alertmanager)
        #expect(settings.buttons.map(\.title) == ["Acknowledge", "Silence 1h", "Silence 24h", "Ignore"])
        #expect(settings.buttons.map(\.silenceSeconds) == [nil, 3600, 86_400, nil])
        #expect(settings.severityPriority == ["critical": 50, "warning": 0, "info": -50])
        #expect(settings.authorization == nil && settings.matcherLabels == nil && settings.expiresIn == nil)
        #expect(try Config.parse(yaml: "").alertmanager == nil)
    }

    @Test("basic_auth is sent as Basic base64(user:password); a bearer_token_file is read at load")
    func auth() throws {
        let basic = try Config.parse(
            yaml: "integrations:\n  alertmanager:\n    url: http://am:9093\n    basic_auth: { username: alertd, password: \"p@ss word\" }\n"
        )
        #expect(basic.alertmanager?.authorization == "Basic " + Data("alertd:p@ss word".utf8).base64EncodedString())
        let directory = try ScratchDirectory()
        let file = directory.url.appendingPathComponent("token")
        try Data("from-a-file\n".utf8).write(to: file)
        let fromFile = try Config.parse(
            yaml: "integrations:\n  alertmanager:\n    url: http://am:9093\n    bearer_token_file: \(file.path)\n")
        #expect(fromFile.alertmanager?.authorization == "Bearer from-a-file")
    }

    @Test("receive-only: without url, buttons without silence are fine")
    func receiveOnly() throws {
        let config = try Config.parse(
            yaml: "integrations:\n  alertmanager:\n    buttons: [{title: Seen}, {title: Ignore, style: cancel}]\n")
        #expect(config.alertmanager?.url == nil && config.alertmanager?.silencesURL == nil)
    }

    @Test(
        "each wrong value is one line naming its key and saying why",
        arguments: [
            ("integrations: { alertmanger: {} }", "integrations.alertmanger", "did you mean alertmanager?"),
            ("integrations: { alertmanager: { url: http://am, colour: red } }", "integrations.alertmanager.colour", "unknown key"),
            ("integrations: { alertmanager: {} }", "integrations.alertmanager.url", "creates silences"),
            ("integrations: { alertmanager: { url: \"am:9093\" } }", "integrations.alertmanager.url", "http:// or https://"),
            ("integrations: { alertmanager: { url: \"http://u:p@am\" } }", "integrations.alertmanager.url", "user info"),
            (
                "integrations: { alertmanager: { url: http://am, bearer_token: \"a b\" } }", "integrations.alertmanager.bearer_token",
                "spaces"
            ),
            (
                "integrations: { alertmanager: { url: http://am, bearer_token: x, basic_auth: { username: u, password: p } } }",
                "integrations.alertmanager.basic_auth", "cannot be combined"
            ),
            (
                "integrations: { alertmanager: { url: http://am, bearer_token_file: /nonexistent/t } }",
                "integrations.alertmanager.bearer_token_file", "cannot read"
            ),
            (
                "integrations: { alertmanager: { url: http://am, basic_auth: { password: p } } }",
                "integrations.alertmanager.basic_auth.username", "required"
            ),
            ("integrations: { alertmanager: { url: http://am, buttons: [] } }", "integrations.alertmanager.buttons", "1 to 16"),
            (
                "integrations: { alertmanager: { url: http://am, buttons: [{style: cancel}] } }",
                "integrations.alertmanager.buttons[0].title", "required"
            ),
            (
                "integrations: { alertmanager: { url: http://am, buttons: [{title: A}, {title: A}] } }",
                "integrations.alertmanager.buttons[1].title", "another button"
            ),
            (
                "integrations: { alertmanager: { url: http://am, buttons: [{title: A, style: cancel}, {title: B, style: cancel}] } }",
                "integrations.alertmanager.buttons[1].style", "at most one"
            ),
            (
                "integrations: { alertmanager: { url: http://am, buttons: [{title: A, style: loud}] } }",
                "integrations.alertmanager.buttons[0].style", "default, cancel or destructive"
            ),
            (
                "integrations: { alertmanager: { url: http://am, buttons: [{title: A, silence: forever}] } }",
                "integrations.alertmanager.buttons[0].silence", "duration"
            ),
            (
                "integrations: { alertmanager: { url: http://am, buttons: [{title: A, silence: 0}] } }",
                "integrations.alertmanager.buttons[0].silence", "greater than 0"
            ),
            (
                "integrations: { alertmanager: { url: http://am, buttons: [{title: A, mute: 1h}] } }",
                "integrations.alertmanager.buttons[0].mute", "unknown key"
            ),
            (
                "integrations: { alertmanager: { url: http://am, matcher_labels: [] } }", "integrations.alertmanager.matcher_labels",
                "label names"
            ),
            (
                "integrations: { alertmanager: { url: http://am, matcher_labels: [\"bad-label\"] } }",
                "integrations.alertmanager.matcher_labels", "not a label name"
            ),
            (
                "integrations: { alertmanager: { url: http://am, severity_priority: { critical: 500 } } }",
                "integrations.alertmanager.severity_priority.critical", "between -100 and 100"
            ),
            (
                "integrations: { alertmanager: { url: http://am, default_priority: high } }", "integrations.alertmanager.default_priority",
                "integer"
            ),
            (
                "integrations: { alertmanager: { url: http://am, expires_in: 700000 } }", "integrations.alertmanager.expires_in",
                "alerts.max_expires_in"
            ),
            ("integrations: [alertmanager]", "integrations", "mapping"),
        ])
    func wrongValues(yaml: String, key: String, reason: String) throws {
        let found = try #require(problems(yaml), "accepted: \(yaml)")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == key, "\(found)")
        #expect(found.first?.description.contains(reason) == true, "\(found)")
        #expect(found.allSatisfy { !$0.description.contains("\n") })
    }

    @Test("config/alertd.yaml's commented integrations section, uncommented, is valid and shows the defaults")
    func shippedExample() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: repository.appendingPathComponent("config/alertd.yaml"), encoding: .utf8)
        // The section runs to the first blank line (the file's next section follows it).
        let rest = try #require(text.components(separatedBy: "\n# integrations:\n").dropFirst().first)
        let section = try #require(rest.components(separatedBy: "\n\n").first)
        // Drop one level of comment: "# key" becomes "key", "#   # note" stays a comment.
        let yaml =
            "integrations:\n"
            + section.split(separator: "\n").map { $0.hasPrefix("# ") ? String($0.dropFirst(2)) : String($0) }
            .joined(separator: "\n")
        let settings = try #require(try Config.parse(yaml: yaml).alertmanager)
        #expect(settings == AlertmanagerSettings(url: "http://127.0.0.1:9093"))
    }

    @Test("alertd check-config prints each problem of the section and exits 1")
    func checkConfig() async throws {
        let directory = try ScratchDirectory()
        let file = directory.url.appendingPathComponent("alertd.yaml")
        try Data(
            "state_dir: \(directory.url.path)\nintegrations:\n  alertmanager:\n    url: ftp://am\n    buttons: [{title: A, silence: never}]\n"
                .utf8
        ).write(to: file)
        let run = try await Program.alertd(["check-config", file.path])
        #expect(run.status == 1)
        let text = run.stdout + run.stderr
        #expect(text.contains("integrations.alertmanager.url") && text.contains("integrations.alertmanager.buttons[0].silence"), "\(text)")
    }
}
