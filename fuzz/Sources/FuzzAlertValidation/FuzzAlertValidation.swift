// A posted alert's body as POST /v1/clients/{client}/alerts takes it: parsed,
// validated (§2). Whatever validates must keep §2's bounds, post to a board, and
// render as a resource that parses and that the SDK decodes back to what was posted.
import AlertdCore
import AlertdWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAlertValidation(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let body = try? JSONParser.parse(UnsafeRawBufferPointer(start: data, count: size)) else { return 0 }
    let rules = AlertRules()
    let draft: NewAlert
    // With named deciders (tokens), so that a quorum above 1 validates too.
    switch NewAlert.validate(body, rules: rules, namedDeciders: true) {
    case .failure(let invalid):
        precondition(!invalid.errors.isEmpty, "a refusal without a reason")
        return 0
    case .success(let valid):
        draft = valid
    }
    check(draft, rules)

    var board = AlertBoard(rules: rules)
    let now = Timestamp(milliseconds: 1_795_000_000_000)
    guard let (alert, _) = try? board.post(draft, to: "fuzz", now: now) else {
        fatalError("a valid alert was refused by an empty board")
    }
    let rendered = alert.json(position: 0)
    let resource: AlertResource
    do {
        resource = try JSONValueDecoder().decode(AlertResource.self, from: rendered)
    } catch {
        fatalError("the rendered alert does not decode: \(error); \(String(decoding: rendered, as: UTF8.self))")
    }
    precondition(resource.title == draft.title, "title changed")
    precondition(resource.message == draft.message, "message changed")
    precondition(resource.buttons == draft.buttons, "buttons changed")
    precondition(resource.priority == draft.priority, "priority changed")
    precondition(resource.callbackURL == draft.callbackURL, "callback_url changed")
    precondition(resource.metadata == draft.metadata, "metadata changed")
    precondition(resource.quorum == draft.quorum && resource.votes.isEmpty, "quorum changed, or votes before any choice")
    precondition(resource.fields == (draft.fields ?? []), "fields changed")
    precondition(resource.id == alert.id.description && AlertID(resource.id) == alert.id, "id does not round-trip")
    return 0
}

/// §2's bounds, restated independently of the validator.
private func check(_ draft: NewAlert, _ rules: AlertRules) {
    // A validated alert has its defaults filled in.
    guard let buttons = draft.buttons, let priority = draft.priority, let quorum = draft.quorum, draft.style != nil else {
        preconditionFailure("a validated alert lacks a default")
    }
    precondition((1...256).contains(draft.title.unicodeScalars.count), "title length")
    precondition((draft.message?.unicodeScalars.count ?? 0) <= 4096, "message length")
    precondition(buttons.count <= 16, "too many buttons")
    precondition(Set(buttons.map(\.title)).count == buttons.count, "duplicate button titles")
    precondition(buttons.allSatisfy { (1...64).contains($0.title.unicodeScalars.count) }, "button title length")
    precondition(buttons.count(where: { $0.style == .cancel }) <= 1, "two cancel buttons")
    precondition((-100...100).contains(priority), "priority range")
    precondition((1...10).contains(quorum) && (quorum == 1 || !buttons.isEmpty), "quorum")
    if let expiresIn = draft.expiresIn { precondition(expiresIn > 0 && expiresIn <= rules.maxExpiresIn, "expires_in range") }
    if let dismissAfter = draft.dismissAfter { precondition(dismissAfter > 0 && buttons.isEmpty, "dismiss_after") }
    if let metadata = draft.metadata { precondition(JSONValue.object(metadata).compactBytes().count <= 4096, "metadata size") }
    if let url = draft.callbackURL?.lowercased() {
        precondition(url.hasPrefix("http://") || url.hasPrefix("https://"), "callback_url scheme")
    }
    // §13: at most 5 fields, names unique, each belonging to at least one of the alert's buttons.
    if let fields = draft.fields {
        precondition(fields.count <= 5 && !buttons.isEmpty, "fields count, or fields without buttons")
        precondition(Set(fields.map(\.name)).count == fields.count, "duplicate field names")
        for field in fields {
            precondition(AlertField.isValidName(field.name) && (1...1000).contains(field.maxLength), "field name or max_length")
            let titles = field.buttons ?? []
            precondition(!titles.isEmpty && titles.allSatisfy { title in buttons.contains { $0.title == title } }, "field buttons")
        }
    }
}
