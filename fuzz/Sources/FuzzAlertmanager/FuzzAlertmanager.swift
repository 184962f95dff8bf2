// Alertmanager's webhook payload as POST /v1/integrations/alertmanager/{client}
// takes it: parsed, read (AlertmanagerNotification.parse), each alert mapped to an
// alertd alert (AlertmanagerMapping.draft). A refusal must give a reason; a mapped
// alert must keep §2's bounds, the ones a poster's body is held to, post to an
// empty board, and give back, from the posted alert, the labels it came with. A
// silence, when its buttons are offered, matches alertname and only labels the alert has.
// Every other input has its fingerprints set to its labels' own, so that the mapping is
// reached and not only the fingerprint check; the inputs whose number is odd keep theirs.
import AlertdAlertmanager
import AlertdCore
import AlertdWire

/// Receiving only (no url): a config then has no silence buttons (check-config refuses them).
private let receiving = AlertmanagerSettings(buttons: AlertmanagerButton.defaults.filter { $0.silenceSeconds == nil })
private let silencing = AlertmanagerSettings(url: "http://127.0.0.1:9093", matcherLabels: ["instance"])

/// `body` with each alert's fingerprint made Alertmanager's hash of its labels, where they are strings.
private func fingerprinted(_ body: JSONValue) -> JSONValue {
    guard case .object(var object) = body, case .array(let alerts)? = object["alerts"] else { return body }
    object["alerts"] = .array(
        alerts.map { item in
            guard case .object(var alert) = item, case .object(let labels)? = alert["labels"] else { return item }
            var pairs: [AlertmanagerAlert.Label] = []
            for (name, value) in labels {
                guard case .string(let text) = value else { return item }
                pairs.append(.init(name, text))
            }
            alert["fingerprint"] = .string(AlertmanagerAlert.fingerprint(of: pairs))
            return .object(alert)
        })
    return .object(object)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAlertmanager(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard var body = try? JSONParser.parse(UnsafeRawBufferPointer(start: data, count: size)) else { return 0 }
    if size % 2 == 0 { body = fingerprinted(body) }
    let settings = size % 4 < 2 ? receiving : silencing
    let notification: AlertmanagerNotification
    switch AlertmanagerNotification.parse(body) {
    case .failure(let invalid):
        precondition(!invalid.errors.isEmpty, "a refusal without a reason")
        return 0
    case .success(let read):
        notification = read
    }
    let now = Timestamp(milliseconds: 1_795_000_000_000)
    for (index, alert) in notification.alerts.enumerated() {
        precondition(!alert.labels.isEmpty && alert.labels.allSatisfy { AlertmanagerAlert.isLabelName($0.name) }, "label names")
        _ = AlertmanagerMapping.firingDigest(alert)
        switch AlertmanagerMapping.draft(for: alert, path: "alerts[\(index)]", settings: settings) {
        case .failure(let invalid):
            precondition(!invalid.errors.isEmpty, "a mapping refused without a reason")
        case .success(let draft):
            precondition((1...NewAlert.titleLimit).contains(draft.title.unicodeScalars.count), "title length")
            precondition((draft.message?.unicodeScalars.count ?? 0) <= NewAlert.messageLimit, "message length")
            precondition(draft.priority.map(NewAlert.priorityRange.contains) == true, "priority range")
            if let metadata = draft.metadata {
                precondition(JSONValue.object(metadata).compactBytes().count <= NewAlert.metadataLimit, "metadata size")
            }
            var board = AlertBoard(rules: AlertRules())
            let posted: Alert
            do {
                posted = try board.post(draft, to: "fuzz", now: now).0
            } catch {
                fatalError("a mapped alert was refused by an empty board: \(error)")
            }
            precondition(AlertmanagerMapping.labels(of: posted) == alert.labels, "the labels do not come back from the posted alert")
            if let names = AlertmanagerMapping.silenceMatcherNames(of: posted) {
                precondition(names.contains("alertname"), "a silence without alertname")
                precondition(names.allSatisfy { name in alert.labels.contains { $0.name == name } }, "a matcher the alert lacks")
            }
            let offersSilence = (draft.buttons ?? []).contains { settings.button(titled: $0.title)?.silenceSeconds != nil }
            precondition(offersSilence == (AlertmanagerMapping.silenceMatcherNames(of: posted) != nil), "silence buttons without matchers")
        }
    }
    return 0
}
