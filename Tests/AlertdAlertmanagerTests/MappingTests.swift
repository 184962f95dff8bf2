import AlertdAlertmanager
import AlertdCore
import AlertdWire
import Testing

/// The first alert of a payload made of `alert`, parsed.
private func parsed(_ alert: JSONValue = amAlert()) throws -> AlertmanagerAlert {
    try #require(try AlertmanagerNotification.parse(payload(alerts: [alert])).get().alerts.first)
}

private func draft(_ alert: JSONValue = amAlert(), settings: AlertmanagerSettings = AlertmanagerSettings()) throws -> NewAlert {
    try AlertmanagerMapping.draft(for: try parsed(alert), path: "alerts[0]", settings: settings).get()
}

@Suite("An Alertmanager alert becomes an alertd alert")
struct MappingTests {
    @Test("title, message, priority, buttons and metadata come from the alert and the integration's settings")
    func fullMapping() throws {
        let result = try draft()
        #expect(result.title == "Disk full on db1")
        #expect(result.message == "/var is 99% full")
        #expect(result.priority == 50, "severity critical")
        #expect(result.buttons?.map(\.title) == ["Acknowledge", "Silence 1h", "Silence 24h", "Ignore"])
        #expect(result.buttons?.map(\.style) == [.default, .default, .default, .cancel])
        #expect(result.expiresIn == nil, "alerts.default_expires_in")
        let metadata = try #require(result.metadata)
        #expect(
            JSONValue.object(metadata)
                == [
                    "alertmanager": [
                        "fingerprint": .string(diskFullFingerprint), "status": "firing",
                        "labels": ["alertname": "DiskFull", "instance": "db1:9100", "severity": "critical"],
                        "starts_at": "2026-11-21T19:01:00.123456789Z", "generator_url": "http://prometheus:9090/graph?g0.expr=disk",
                    ]
                ])
        // It passes alertd's own rules for a posted alert.
        let posted = NewAlert.validate(
            .object(["title": .string(result.title), "metadata": .object(metadata)]), rules: AlertRules(), namedDeciders: false)
        #expect((try? posted.get()) != nil, "\(posted)")
    }

    @Test("without a summary the title is the alertname, without either the fingerprint")
    func titleFallbacks() throws {
        #expect(try draft(amAlert(["annotations": ["summary": "  "]])).title == "DiskFull")
        #expect(try draft(amAlert(["annotations": nil, "labels": ["job": "node"]])).title == "Alertmanager alert a3706118e550845a")
        #expect(try draft(amAlert(["annotations": [:]])).message == nil)
    }

    @Test("U+0000 in a summary, description or alertname becomes U+FFFD: the notification is not lost for it")
    func nulReplaced() throws {
        let result = try draft(amAlert(["annotations": ["summary": "disk\u{0}full", "description": "\u{0}"]]))
        #expect(result.title == "disk\u{FFFD}full")
        #expect(result.message == "\u{FFFD}")
        let named = try draft(amAlert(["annotations": nil, "labels": ["alertname": "Disk\u{0}Full"]]))
        #expect(named.title == "Disk\u{FFFD}Full")
        let posted = NewAlert.validate(
            .object(["title": .string(result.title), "message": .string(result.message ?? "")]), rules: AlertRules(), namedDeciders: false)
        #expect((try? posted.get()) != nil, "\(posted)")
    }

    @Test("a title or message over alertd's limits is cut, ending in …")
    func longTexts() throws {
        let long = String(repeating: "é", count: 300)
        let longer = String(repeating: "x", count: 5000)
        let result = try draft(amAlert(["annotations": ["summary": .string(long), "description": .string(longer)]]))
        #expect(result.title.unicodeScalars.count == 256 && result.title.hasSuffix("…"))
        #expect(result.message?.unicodeScalars.count == 4096 && result.message?.hasSuffix("…") == true)
    }

    @Test(
        "priority follows the severity label through the configured map, else the default",
        arguments: [("critical", 50), ("warning", 0), ("info", -50), ("page", 7), (nil, 7)] as [(String?, Int)])
    func priorities(severity: String?, priority: Int) throws {
        var labels: JSONObject = ["alertname": "X"]
        if let severity { labels["severity"] = .string(severity) }
        let settings = AlertmanagerSettings(defaultPriority: 7)
        #expect(try draft(amAlert(["labels": .object(labels)]), settings: settings).priority == priority)
    }

    @Test("a configured severity map replaces the default one")
    func configuredMap() throws {
        let settings = AlertmanagerSettings(severityPriority: ["critical": 100, "page": 90])
        #expect(try draft(settings: settings).priority == 100)
    }

    @Test("the integration's buttons and expiry are the alert's")
    func configuredButtons() throws {
        let settings = AlertmanagerSettings(
            buttons: [AlertmanagerButton(title: "Mute", silenceSeconds: 600), AlertmanagerButton(title: "Fine", style: .cancel)],
            expiresIn: 3600)
        let result = try draft(settings: settings)
        #expect(result.buttons == [Button(title: "Mute"), Button(title: "Fine", style: .cancel)])
        #expect(result.expiresIn == 3600)
    }

    @Test("metadata over 4096 bytes drops generator_url first; labels alone over it are refused naming them")
    func metadataLimit() throws {
        let url = "http://prometheus:9090/graph?" + String(repeating: "q", count: 4000)
        let trimmed = try draft(amAlert(["generatorURL": .string(url)]))
        #expect(trimmed.metadata?["alertmanager"]?["generator_url"] == nil)
        #expect(trimmed.metadata?["alertmanager"]?["fingerprint"] == .string(diskFullFingerprint))
        let huge = try parsed(amAlert(["labels": ["alertname": .string(String(repeating: "a", count: 4100))]]))
        switch AlertmanagerMapping.draft(for: huge, path: "alerts[3]", settings: AlertmanagerSettings()) {
        case .success: Issue.record("labels over the limit were taken")
        case .failure(let invalid):
            #expect(invalid.errors.map(\.field) == ["alerts[3].labels"])
            #expect(invalid.errors.first?.reason.contains("4096") == true, "\(invalid.errors)")
        }
    }

    @Test("one key per fingerprint; one digest per firing (fingerprint and startsAt)")
    func keysAndDigests() throws {
        let first = try parsed()
        let repeated = try parsed(amAlert(["annotations": ["summary": "changed text"]]))
        let refired = try parsed(amAlert(["startsAt": "2026-11-22T08:00:00Z"]))
        let other = try parsed(amAlert(["labels": ["alertname": "DiskFull", "instance": "db2:9100"]]))
        #expect(AlertmanagerMapping.key(fingerprint: first.fingerprint) == "alertmanager:\(diskFullFingerprint)")
        #expect(AlertmanagerMapping.firingDigest(first) == AlertmanagerMapping.firingDigest(repeated))
        #expect(AlertmanagerMapping.firingDigest(first) != AlertmanagerMapping.firingDigest(refired))
        #expect(AlertmanagerMapping.firingDigest(first) != AlertmanagerMapping.firingDigest(other))
    }

    @Test("with silence buttons the message ends with what a silence matches, and the metadata names its labels")
    func silenceShown() throws {
        let result = try draft(settings: AlertmanagerSettings(url: "http://am:9093"))
        #expect(
            result.message
                == "/var is 99% full\n\nA silence matches: alertname=\"DiskFull\", instance=\"db1:9100\", severity=\"critical\"")
        #expect(result.buttons?.map(\.title) == ["Acknowledge", "Silence 1h", "Silence 24h", "Ignore"])
        #expect(result.metadata?["alertmanager"]?["silence_matchers"] == ["alertname", "instance", "severity"])
        let narrowed = try draft(settings: AlertmanagerSettings(url: "http://am:9093", matcherLabels: ["instance"]))
        #expect(narrowed.message?.hasSuffix("A silence matches: alertname=\"DiskFull\", instance=\"db1:9100\"") == true)
        #expect(narrowed.metadata?["alertmanager"]?["silence_matchers"] == ["alertname", "instance"])
        // Quotes, backslashes and line breaks in a value cannot blur where a matcher ends.
        let odd = try draft(
            amAlert(["labels": ["alertname": "A\"b\\c\nd"], "annotations": [:]]), settings: AlertmanagerSettings(url: "http://am:9093"))
        #expect(odd.message == #"A silence matches: alertname="A\"b\\c\nd""#)
    }

    @Test(
        "an alert without alertname, or without a configured matcher label, gets no silence button; the message says which label",
        arguments: [
            (["severity": "critical"] as JSONValue, nil as [String]?, "alertname"),
            (["alertname": "DiskFull", "severity": "critical"] as JSONValue, ["instance", "cluster"], "instance, cluster"),
        ])
    func noSilence(labels: JSONValue, matcherLabels: [String]?, missing: String) throws {
        let result = try draft(
            amAlert(["labels": labels, "annotations": [:]]),
            settings: AlertmanagerSettings(url: "http://am:9093", matcherLabels: matcherLabels))
        #expect(result.buttons?.map(\.title) == ["Acknowledge", "Ignore"])
        #expect(result.message?.hasPrefix("No silence from alertd: the alert has no label \(missing) (") == true, "\(result.message ?? "")")
        #expect(result.metadata?["alertmanager"]?["silence_matchers"] == nil)
        // Only silence buttons configured: the alert keeps one to acknowledge it with.
        let silencesOnly = AlertmanagerSettings(
            url: "http://am:9093", buttons: [AlertmanagerButton(title: "Mute", silenceSeconds: 60)], matcherLabels: matcherLabels)
        let acknowledged = try draft(amAlert(["labels": labels]), settings: silencesOnly)
        #expect(acknowledged.buttons?.map(\.title) == ["Acknowledge"])
    }

    @Test("a long description is cut so that the note on silences stays whole")
    func noteKept() throws {
        let result = try draft(
            amAlert(["annotations": ["description": .string(String(repeating: "d", count: 5000))]]),
            settings: AlertmanagerSettings(url: "http://am:9093"))
        let message = try #require(result.message)
        #expect(message.unicodeScalars.count == 4096)
        #expect(message.hasSuffix("…\n\nA silence matches: alertname=\"DiskFull\", instance=\"db1:9100\", severity=\"critical\""))
    }

    @Test("the labels are read back from an alert's metadata, and from no other alert")
    func labelsReadBack() throws {
        let result = try draft()
        let alert = Alert(
            id: AlertID(high: 1, low: 1), client: "ops", title: result.title, metadata: result.metadata.map(CompactJSON.init),
            createdAt: Timestamp(milliseconds: 0), expiresAt: Timestamp(milliseconds: 1))
        #expect(AlertmanagerMapping.labels(of: alert)?.map(\.name) == ["alertname", "instance", "severity"])
        var plain = alert
        plain.metadata = CompactJSON(["ticket": "OPS-1"])
        #expect(AlertmanagerMapping.labels(of: plain) == nil)
    }
}

@Suite("Durations as Alertmanager writes them")
struct DurationTextTests {
    @Test(
        "durations and plain seconds are read",
        arguments: [
            ("1h", 3600.0), ("24h", 86_400), ("90m", 5400), ("1h30m", 5400), ("7d", 604_800), ("1w", 604_800), ("45s", 45),
            ("1500ms", 1.5), ("3600", 3600), ("0.5", 0.5),
        ] as [(String, Double)])
    func valid(text: String, seconds: Double) {
        #expect(DurationText.seconds(text) == seconds)
    }

    @Test("anything else is refused", arguments: ["", "0", "-5", "1x", "h", "30m1h", "1h1h", "1 h", "1.5h", "0s"])
    func invalid(text: String) {
        #expect(DurationText.seconds(text) == nil)
    }
}

@Suite("The integration's settings")
struct SettingsTests {
    @Test("the base URL loses trailing slashes; silences go to its API v2, a route prefix kept")
    func silencesURL() {
        #expect(AlertmanagerSettings(url: "http://127.0.0.1:9093/").silencesURL == "http://127.0.0.1:9093/api/v2/silences")
        #expect(AlertmanagerSettings(url: "https://am.example/prefix").silencesURL == "https://am.example/prefix/api/v2/silences")
        #expect(AlertmanagerSettings().silencesURL == nil)
    }

    @Test(
        "a URL that cannot be Alertmanager's base URL is refused, saying why",
        arguments: [
            "127.0.0.1:9093", "ftp://am", "http://", "http://user:pw@am:9093", "http://am:9093/?x=1", "http://am#top", "http://a m",
        ])
    func badURLs(url: String) {
        #expect(AlertmanagerSettings.urlProblem(url) != nil)
    }

    @Test("good URLs pass", arguments: ["http://127.0.0.1:9093", "https://alertmanager.internal/am/", "http://[::1]:9093"])
    func goodURLs(url: String) {
        #expect(AlertmanagerSettings.urlProblem(url) == nil)
    }
}
