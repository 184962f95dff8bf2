import AlertdAlertmanager
import AlertdCore
import AlertdWire
import Foundation

extension Config {
    /// `integrations`: Alertmanager.
    static func readIntegrations(_ integrations: Section, into config: inout Config, source: String, _ problems: Problems) {
        integrations.only(["alertmanager"])
        if let alertmanager = problems.check({ try integrations.section("alertmanager") }) ?? nil {
            config.alertmanager = Self.alertmanager(alertmanager, rules: config.alertRules, problems)
        }
    }

    /// `integrations.alertmanager`: every key checked, each problem named.
    private static func alertmanager(_ section: Section, rules: AlertRules, _ problems: Problems) -> AlertmanagerSettings {
        section.only([
            "url", "bearer_token", "bearer_token_file", "basic_auth", "buttons", "matcher_labels", "severity_priority",
            "default_priority", "expires_in",
        ])
        var settings = AlertmanagerSettings()
        problems.check {
            if let url = try section.string("url") {
                if let problem = AlertmanagerSettings.urlProblem(url) { throw section.error("url", problem) }
                settings.url = AlertmanagerSettings(url: url).url
            }
        }
        // Auth: one of a bearer token (inline or in a file) and basic auth.
        let auths = ["bearer_token", "bearer_token_file", "basic_auth"].filter { section.has($0) }
        if auths.count > 1 {
            problems.add(section.error(auths[1], "cannot be combined with \(auths[0]): give one way to sign in to Alertmanager"))
        }
        problems.check {
            if let token = try section.string("bearer_token") {
                guard Self.isHeaderSafe(token), !token.isEmpty else {
                    throw section.error("bearer_token", "must be a non-empty token without spaces or control characters")
                }
                settings.authorization = "Bearer " + token
            }
        }
        problems.check {
            if let path = try section.string("bearer_token_file").map(problems.path) {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw section.error("bearer_token_file", "cannot read \(path)")
                }
                let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard Self.isHeaderSafe(token), !token.isEmpty else {
                    throw section.error("bearer_token_file", "\(path) must hold one token, without spaces or control characters")
                }
                settings.authorization = "Bearer " + token
            }
        }
        if let basic = problems.check({ try section.section("basic_auth") }) ?? nil {
            basic.only(["username", "password"])
            let username = problems.check { try basic.string("username") } ?? nil
            let password = problems.check { try basic.string("password") } ?? nil
            if let username, let password {
                if username.contains(":") || !Self.isHeaderSafe(username) {
                    problems.add(basic.error("username", "must have no colon, space or control character"))
                } else {
                    settings.authorization = "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
                }
            } else if username == nil, !problems.has("integrations.alertmanager.basic_auth.username") {
                problems.add(basic.error("username", "is required with basic_auth"))
            } else if password == nil, !problems.has("integrations.alertmanager.basic_auth.password") {
                problems.add(basic.error("password", "is required with basic_auth"))
            }
        }
        if let nodes = problems.check({ try section.list("buttons") }) ?? nil {
            var buttons: [AlertmanagerButton] = []
            var cancel = false
            if nodes.isEmpty || nodes.count > NewAlert.buttonLimit {
                problems.add(section.error("buttons", "must list 1 to \(NewAlert.buttonLimit) buttons"))
            }
            for (index, node) in nodes.enumerated() {
                guard let entry = problems.section(node, path: "integrations.alertmanager.buttons[\(index)]", source: section.source)
                else { continue }
                entry.only(["title", "style", "silence"])
                guard let title = problems.check({ try entry.string("title") }) ?? nil else {
                    if !problems.has("integrations.alertmanager.buttons[\(index)].title") {
                        problems.add(entry.error("title", "is required"))
                    }
                    continue
                }
                var button = AlertmanagerButton(title: title)
                if !(1...NewAlert.buttonTitleLimit).contains(title.unicodeScalars.count) {
                    problems.add(entry.error("title", "must be 1 to \(NewAlert.buttonTitleLimit) characters"))
                } else if buttons.contains(where: { $0.title == title }) {
                    problems.add(entry.error("title", "\(title) is the title of another button", separator: ": "))
                }
                problems.check {
                    if let text = try entry.string("style") {
                        guard let style = ButtonStyle(rawValue: text) else {
                            throw entry.error("style", "must be default, cancel or destructive, not \(text)")
                        }
                        if style == .cancel {
                            if cancel { throw entry.error("style", "cancel is already another button's style: at most one") }
                            cancel = true
                        }
                        button.style = style
                    }
                }
                problems.check {
                    if let text = try entry.string("silence") {
                        guard let seconds = DurationText.seconds(text), seconds <= Section.maxSeconds else {
                            throw entry.error("silence", "must be a duration (90m, 1h, 24h, 7d) or seconds, greater than 0, not \(text)")
                        }
                        button.silenceSeconds = seconds
                    }
                }
                buttons.append(button)
            }
            settings.buttons = buttons
        }
        if settings.url == nil, !problems.has("integrations.alertmanager.url"),
            let silencing = settings.buttons.first(where: { $0.silenceSeconds != nil })
        {
            problems.add(
                section.error(
                    "url",
                    "is required: button \"\(silencing.title)\" creates silences (Alertmanager's address, http://127.0.0.1:9093); "
                        + "without url give only buttons without silence"))
        }
        problems.check {
            if let names = try section.strings("matcher_labels") {
                guard !names.isEmpty else { throw section.error("matcher_labels", "must list label names, or be left out (every label)") }
                for name in names where !AlertmanagerAlert.isLabelName(name) {
                    throw section.error("matcher_labels", "\(name) is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)", separator: ": ")
                }
                settings.matcherLabels = names
            }
        }
        if let map = problems.check({ try section.section("severity_priority") }) ?? nil {
            var priorities: [String: Int] = [:]
            for name in map.keys {
                if let value = problems.check({ try map.int(name, min: -100, max: 100) }) ?? nil { priorities[name] = value }
            }
            settings.severityPriority = priorities
        }
        problems.check { if let v = try section.int("default_priority", min: -100, max: 100) { settings.defaultPriority = v } }
        problems.check {
            if let v = try section.seconds("expires_in") {
                guard v <= rules.maxExpiresIn else {
                    throw section.error("expires_in", "must be at most alerts.max_expires_in (\(Int(rules.maxExpiresIn)) seconds)")
                }
                settings.expiresIn = v
            }
        }
        return settings
    }
}
