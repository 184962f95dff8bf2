import AlertdAlertmanager
import AlertdCore
import AlertdWire
import Testing

/// One alert of a payload as Alertmanager 0.25 writes it, with `changes` applied to its members.
func amAlert(_ changes: [String: JSONValue?] = [:]) -> JSONValue {
    var object: JSONObject = [
        "status": "firing",
        "labels": ["alertname": "DiskFull", "instance": "db1:9100", "severity": "critical"],
        "annotations": ["summary": "Disk full on db1", "description": "/var is 99% full"],
        "startsAt": "2026-11-21T19:01:00.123456789Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph?g0.expr=disk",
    ]
    for (key, value) in changes { object[key] = value }
    // Alertmanager's fingerprint of the labels, unless the test sets one (or none).
    if !changes.keys.contains("fingerprint") {
        var labels: [AlertmanagerAlert.Label] = []
        if case .object(let members)? = object["labels"] {
            for (name, value) in members { labels.append(.init(name, value.stringValue ?? "")) }
        }
        object["fingerprint"] = .string(AlertmanagerAlert.fingerprint(of: labels))
    }
    return .object(object)
}

/// The fingerprint the real Alertmanager (0.25, Debian's) gave ``amAlert()``'s labels.
let diskFullFingerprint = "efb0c6c488e007da"

/// A version 4 payload around `alerts`, with `changes` applied to its top-level members.
func payload(_ changes: [String: JSONValue?] = [:], alerts: [JSONValue] = [amAlert()]) -> JSONValue {
    var object: JSONObject = [
        "receiver": "alertd", "status": "firing", "alerts": .array(alerts), "groupLabels": ["alertname": "DiskFull"],
        "commonLabels": ["alertname": "DiskFull"], "commonAnnotations": [:], "externalURL": "http://alertmanager:9093", "version": "4",
        "groupKey": "{}:{alertname=\"DiskFull\"}", "truncatedAlerts": 0,
    ]
    for (key, value) in changes { object[key] = value }
    return .object(object)
}

/// The field paths `AlertmanagerNotification.parse` refuses in `body`; empty when it accepts it.
func refusedFields(_ body: JSONValue) -> [String] {
    switch AlertmanagerNotification.parse(body) {
    case .success: []
    case .failure(let invalid): invalid.errors.map(\.field)
    }
}

@Suite("Alertmanager's webhook payload is read as it is sent")
struct NotificationParsingTests {
    @Test("a payload as Alertmanager 0.25 sends it is read whole")
    func realPayload() throws {
        let text = """
            {"receiver":"alertd","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"DiskFull","instance":"db1:9100",\
            "severity":"warning"},"annotations":{"summary":"Disk full"},"startsAt":"2026-11-21T19:01:00.123+01:00",\
            "endsAt":"0001-01-01T00:00:00Z","generatorURL":"","fingerprint":"1aad4c3f49134929"}],"groupLabels":{},"commonLabels":\
            {"alertname":"DiskFull"},"commonAnnotations":{},"externalURL":"http://am:9093","version":"4",\
            "groupKey":"{}:{}","truncatedAlerts":0}
            """
        let notification = try AlertmanagerNotification.parse(try JSONParser.parse(text)).get()
        #expect(notification.receiver == "alertd" && notification.externalURL == "http://am:9093")
        let alert = try #require(notification.alerts.first)
        #expect(alert.status == .firing)
        #expect(alert.labels.map(\.name) == ["alertname", "instance", "severity"], "sorted by name")
        #expect(alert.label("instance") == "db1:9100")
        #expect(alert.annotations == ["summary": "Disk full"])
        #expect(alert.startsAt == "2026-11-21T19:01:00.123+01:00", "kept as sent")
        #expect(alert.generatorURL == nil, "an empty generatorURL is none")
        #expect(alert.fingerprint == "1aad4c3f49134929")
    }

    @Test(
        "fingerprints are Alertmanager's hash of the labels: the values the real Alertmanager 0.25 computed",
        arguments: [
            (["alertname": "DiskFull", "instance": "db1:9100", "severity": "critical"], "efb0c6c488e007da"),
            (["alertname": "DiskFull", "instance": "db1:9100", "severity": "warning"], "1aad4c3f49134929"),
            (["severity": "critical"], "7a04f652d0a42a9b"),
            (["alertname": "Ünïcode", "path": "/var/lib \"quoted\""], "7c2b379552072c2d"),
        ])
    func fingerprints(labels: [String: String], expected: String) {
        #expect(AlertmanagerAlert.fingerprint(of: labels.map { AlertmanagerAlert.Label($0.key, $0.value) }) == expected)
        #expect(
            refusedFields(
                payload(alerts: [amAlert(["labels": .object(JSONObject(labels.map { (key: $0.key, value: JSONValue.string($0.value)) }))])])
            ) == [])
    }

    @Test("a fingerprint that is not the labels' own is refused, naming what they hash to; upper case is read as lower")
    func foreignFingerprint() throws {
        // The review's forgery: severity="critical" under a fingerprint of the poster's choosing.
        let forged = amAlert(["labels": ["severity": "critical"], "fingerprint": .string(diskFullFingerprint)])
        guard case .failure(let invalid) = AlertmanagerNotification.parse(payload(alerts: [forged])) else {
            Issue.record("a foreign fingerprint was taken")
            return
        }
        #expect(invalid.errors.map(\.field) == ["alerts[0].fingerprint"])
        #expect(invalid.errors.first?.reason.contains("7a04f652d0a42a9b") == true, "\(invalid.errors)")
        let upper = try AlertmanagerNotification.parse(payload(alerts: [amAlert(["fingerprint": "EFB0C6C488E007DA"])])).get()
        #expect(upper.alerts.first?.fingerprint == diskFullFingerprint)
    }

    @Test("members alertd does not know are let through: they are Alertmanager's to add")
    func unknownMembersPass() {
        #expect(refusedFields(payload(["anotherNewField": ["x": 1]], alerts: [amAlert(["newField": 1])])) == [])
    }

    @Test("resolved alerts and an empty list are read")
    func resolvedAndEmpty() throws {
        let resolved = try AlertmanagerNotification.parse(
            payload(["status": "resolved"], alerts: [amAlert(["status": "resolved", "endsAt": "2026-11-21T20:00:00Z"])])
        ).get()
        #expect(resolved.alerts.first?.status == .resolved)
        #expect(try AlertmanagerNotification.parse(payload(alerts: [])).get().alerts.isEmpty)
    }

    @Test(
        "each way a payload is not Alertmanager's names its field",
        arguments: [
            (payload(["version": nil]), ["version"]),
            (payload(["version": "3"]), ["version"]),
            (payload(["version": 4]), ["version"]),
            (payload(["alerts": nil]), ["alerts"]),
            (payload(["alerts": ["not": "a list"]]), ["alerts"]),
            (payload(alerts: [.string("an alert?")]), ["alerts[0]"]),
            (payload(["receiver": 7]), ["receiver"]),
            (payload(["commonLabels": ["a": 1]]), ["commonLabels.a"]),
            (payload(alerts: [amAlert(["status": nil])]), ["alerts[0].status"]),
            (payload(alerts: [amAlert(["status": "pending"])]), ["alerts[0].status"]),
            (payload(alerts: [amAlert(["status": true])]), ["alerts[0].status"]),
            (payload(alerts: [amAlert(["labels": nil])]), ["alerts[0].labels"]),
            (payload(alerts: [amAlert(["labels": [:]])]), ["alerts[0].labels"]),
            (payload(alerts: [amAlert(["labels": ["alertname": 5]])]), ["alerts[0].labels.alertname"]),
            (payload(alerts: [amAlert(["labels": ["bad-name": "x"]])]), ["alerts[0].labels"]),
            (payload(alerts: [amAlert(["labels": .array(["x"])])]), ["alerts[0].labels"]),
            (payload(alerts: [amAlert(["annotations": "text"])]), ["alerts[0].annotations"]),
            (payload(alerts: [amAlert(["annotations": ["summary": .null]])]), ["alerts[0].annotations.summary"]),
            (payload(alerts: [amAlert(["fingerprint": nil])]), ["alerts[0].fingerprint"]),
            (payload(alerts: [amAlert(["fingerprint": ""])]), ["alerts[0].fingerprint"]),
            (payload(alerts: [amAlert(["fingerprint": "not hex!"])]), ["alerts[0].fingerprint"]),
            (payload(alerts: [amAlert(["fingerprint": 12])]), ["alerts[0].fingerprint"]),
            (payload(alerts: [amAlert(["fingerprint": "0"])]), ["alerts[0].fingerprint"]),
            (payload(alerts: [amAlert(["fingerprint": "0efb0c6c488e007da"])]), ["alerts[0].fingerprint"]),
            (payload(alerts: [amAlert(["fingerprint": "efb0c6c488e007db"])]), ["alerts[0].fingerprint"]),
            (payload(alerts: [amAlert(["startsAt": nil])]), ["alerts[0].startsAt"]),
            (payload(alerts: [amAlert(["startsAt": "yesterday"])]), ["alerts[0].startsAt"]),
            (payload(alerts: [amAlert(["endsAt": 5])]), ["alerts[0].endsAt"]),
            (payload(alerts: [amAlert(["generatorURL": 1])]), ["alerts[0].generatorURL"]),
            (payload(alerts: [amAlert(), amAlert(["fingerprint": nil, "status": "x"])]), ["alerts[1].status", "alerts[1].fingerprint"]),
        ] as [(JSONValue, [String])])
    func refusals(body: JSONValue, fields: [String]) {
        #expect(refusedFields(body) == fields)
    }

    @Test("a body that is not an object is refused as a whole")
    func notAnObject() {
        #expect(refusedFields(.array([])) == [""])
        #expect(refusedFields(.string("4")) == [""])
    }

    @Test("every reason says what was expected")
    func reasonsAreClear() throws {
        guard case .failure(let invalid) = AlertmanagerNotification.parse(payload(["version": nil])) else {
            Issue.record("accepted a payload without version")
            return
        }
        #expect(invalid.errors.first?.reason.contains("Alertmanager") == true, "\(invalid.errors)")
    }
}
