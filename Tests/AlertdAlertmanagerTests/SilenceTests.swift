import AlertdAlertmanager
import AlertdCore
import AlertdWire
import Testing

/// An alert the integration posted (from ``amAlert()``), answered with `button` by `decider` at `decidedAt`.
private func answered(
    _ button: String?, by decider: String? = "oncall-alice", at decidedAt: Timestamp = Timestamp(milliseconds: 1_800_000_000_000),
    settings: AlertmanagerSettings = AlertmanagerSettings(url: "http://127.0.0.1:9093")
) throws -> Alert {
    let alert = try #require(try AlertmanagerNotification.parse(payload()).get().alerts.first)
    let draft = try AlertmanagerMapping.draft(for: alert, path: "alerts[0]", settings: settings).get()
    let index = button.flatMap { title in (draft.buttons ?? []).firstIndex { $0.title == title } }
    return Alert(
        id: AlertID(high: 42, low: 7), client: "ops", title: draft.title, buttons: draft.buttons ?? [],
        metadata: draft.metadata.map(CompactJSON.init),
        state: button == nil ? .withdrawn : .answered, createdAt: Timestamp(milliseconds: 1_799_999_000_000), decidedAt: decidedAt,
        expiresAt: Timestamp(milliseconds: 1_900_000_000_000),
        result: AlertResult(
            outcome: button == nil ? .withdrawn : .answered, button: button, buttonIndex: index,
            cancelled: index.map { (draft.buttons ?? [])[$0].style == .cancel } ?? false, decidedBy: decider))
}

private func object(_ bytes: [UInt8]?) throws -> JSONObject {
    guard let bytes, case .object(let object) = try JSONParser.parse(bytes) else { throw TestFailure("not a JSON object") }
    return object
}

private struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

@Suite("A silence button writes the silence Alertmanager's API v2 takes")
struct SilenceTests {
    @Test("Silence 1h: every label an equality matcher, from the choice to an hour later, by the token, naming the alert")
    func oneHour() throws {
        let settings = AlertmanagerSettings(url: "http://127.0.0.1:9093")
        let alert = try answered("Silence 1h")
        let silence = try object(AlertmanagerSilence.body(for: alert, settings: settings))
        #expect(
            silence["matchers"]
                == [
                    ["name": "alertname", "value": "DiskFull", "isRegex": false, "isEqual": true],
                    ["name": "instance", "value": "db1:9100", "isRegex": false, "isEqual": true],
                    ["name": "severity", "value": "critical", "isRegex": false, "isEqual": true],
                ])
        #expect(silence["startsAt"] == .string(Timestamp(milliseconds: 1_800_000_000_000).rfc3339))
        #expect(silence["endsAt"] == .string(Timestamp(milliseconds: 1_800_003_600_000).rfc3339))
        #expect(silence["createdBy"] == "oncall-alice")
        let comment = try #require(silence["comment"]?.stringValue)
        #expect(comment.contains("alertd") && comment.contains(alert.id.description) && comment.contains("ops"), "\(comment)")
        #expect(
            AlertmanagerSilence.endsAt(of: try #require(AlertmanagerSilence.body(for: alert, settings: settings)))
                == Timestamp(
                    milliseconds: 1_800_003_600_000))
    }

    @Test("matcher_labels narrow the matchers to alertname and those labels; an alert lacking one is silenced on nothing, never wider")
    func matcherLabels() throws {
        let settings = AlertmanagerSettings(url: "http://127.0.0.1:9093", matcherLabels: ["instance"])
        let narrowed = try object(AlertmanagerSilence.body(for: try answered("Silence 24h", settings: settings), settings: settings))
        #expect(narrowed["matchers"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["alertname", "instance"])
        #expect(narrowed["endsAt"] == .string(Timestamp(milliseconds: 1_800_000_000_000 + 86_400_000).rfc3339))

        let labels = [AlertmanagerAlert.Label("alertname", "DiskFull"), AlertmanagerAlert.Label("severity", "critical")]
        #expect(AlertmanagerSilence.matchers(labels, only: ["instance"]).missing == ["instance"])
        #expect(AlertmanagerSilence.matchers(labels, only: ["instance"]).matchers.isEmpty)
        #expect(AlertmanagerSilence.matchers([AlertmanagerAlert.Label("severity", "critical")], only: nil).missing == ["alertname"])
        #expect(AlertmanagerSilence.matchers(labels, only: nil).matchers == labels)
    }

    @Test("a silence matches what the alert showed when it was posted, whatever the config says at the choice")
    func matchersAsShown() throws {
        let shown = try answered("Silence 1h")  // posted with every label as matchers
        let reloaded = AlertmanagerSettings(url: "http://127.0.0.1:9093", matcherLabels: ["cluster"])
        let silence = try object(AlertmanagerSilence.body(for: shown, settings: reloaded))
        #expect(silence["matchers"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["alertname", "instance", "severity"])
    }

    @Test("an alert stored without its matchers (before they were recorded) is silenced only when it has alertname")
    func storedBefore() throws {
        let settings = AlertmanagerSettings(url: "http://127.0.0.1:9093")
        var alert = try answered("Silence 1h")
        alert.metadata = CompactJSON(["alertmanager": ["labels": ["severity": "critical"], "fingerprint": "7a04f652d0a42a9b"]])
        #expect(AlertmanagerSilence.body(for: alert, settings: settings) == nil)
        alert.metadata = CompactJSON(["alertmanager": ["labels": ["alertname": "X", "severity": "critical"]]])
        let silence = try object(AlertmanagerSilence.body(for: alert, settings: settings))
        #expect(silence["matchers"]?.arrayValue?.count == 2)
    }

    @Test("without tokens the silence is created by alertd")
    func anonymous() throws {
        let silence = try object(
            AlertmanagerSilence.body(for: try answered("Silence 1h", by: nil), settings: AlertmanagerSettings(url: "http://am:9093")))
        #expect(silence["createdBy"] == "alertd")
    }

    @Test("Acknowledge, Ignore, a withdrawal, another alert or a button no longer configured send nothing")
    func nothingToSend() throws {
        let settings = AlertmanagerSettings(url: "http://am:9093")
        #expect(AlertmanagerSilence.body(for: try answered("Acknowledge"), settings: settings) == nil)
        #expect(AlertmanagerSilence.body(for: try answered("Ignore"), settings: settings) == nil)
        #expect(AlertmanagerSilence.body(for: try answered(nil), settings: settings) == nil)
        var plain = try answered("Silence 1h")
        plain.metadata = CompactJSON(["ticket": "OPS-1"])
        #expect(AlertmanagerSilence.body(for: plain, settings: settings) == nil)
        let renamed = AlertmanagerSettings(url: "http://am:9093", buttons: [AlertmanagerButton(title: "Mute", silenceSeconds: 60)])
        #expect(AlertmanagerSilence.body(for: try answered("Silence 1h"), settings: renamed) == nil)
    }

    @Test("the silence id is read from Alertmanager's answer, and nothing from anything else")
    func silenceID() {
        #expect(
            AlertmanagerSilence.silenceID(fromResponse: Array(#"{"silenceID":"7f4a9c2e-1b3d-4e5f-8a9b-0c1d2e3f4a5b"}"#.utf8))
                == "7f4a9c2e-1b3d-4e5f-8a9b-0c1d2e3f4a5b")
        #expect(AlertmanagerSilence.silenceID(fromResponse: Array(#"{"silenceID":""}"#.utf8)) == nil)
        #expect(AlertmanagerSilence.silenceID(fromResponse: Array(#"{"id":"x"}"#.utf8)) == nil)
        #expect(AlertmanagerSilence.silenceID(fromResponse: Array("not json".utf8)) == nil)
    }
}
