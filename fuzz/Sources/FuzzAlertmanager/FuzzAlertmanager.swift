// Alertmanager's webhook payload as POST /v1/integrations/alertmanager/{client}
// takes it: parsed, read (AlertmanagerNotification.parse), each alert mapped to an
// alertd alert (AlertmanagerMapping.draft). A refusal must give a reason; a mapped
// alert must keep §2's bounds, the ones a poster's body is held to, post to an
// empty board, and give back, from the posted alert, the labels it came with.
import AlertdAlertmanager
import AlertdCore
import AlertdWire

private let settings = AlertmanagerSettings()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAlertmanager(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let body = try? JSONParser.parse(UnsafeRawBufferPointer(start: data, count: size)) else { return 0 }
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
            precondition((1...AlertDraft.titleLimit).contains(draft.title.unicodeScalars.count), "title length")
            precondition((draft.message?.unicodeScalars.count ?? 0) <= AlertDraft.messageLimit, "message length")
            precondition(AlertDraft.priorityRange.contains(draft.priority), "priority range")
            if let metadata = draft.metadata {
                precondition(JSONValue.object(metadata).compactBytes().count <= AlertDraft.metadataLimit, "metadata size")
            }
            var board = AlertBoard(rules: AlertRules())
            let posted: Alert
            do {
                posted = try board.post(draft, to: "fuzz", now: now).0
            } catch {
                fatalError("a mapped alert was refused by an empty board: \(error)")
            }
            precondition(AlertmanagerMapping.labels(of: posted) == alert.labels, "the labels do not come back from the posted alert")
        }
    }
    return 0
}
