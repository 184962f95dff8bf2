import AlertdAlertmanager
import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdWire

/// The receivers of other programs' notifications (docs/alertmanager.md).
extension API {
    /// `POST /v1/integrations/alertmanager/{client}`: Alertmanager's webhook payload
    /// (version 4). 200 with what became of each alert, once every change is committed:
    /// `{"alerts": [{"fingerprint", "status", "outcome", "alert_id"}]}`.
    func receiveAlertmanager(_ call: Call) throws {
        let client = try call.client()
        // Off: 404 whatever the body, so a receiver pointed at an alertd without the integration learns why.
        guard engine.receivesAlertmanager else { throw Problem(Engine.alertmanagerOff) }
        _ = try call.query()
        try Self.requireJSON(call.request)
        let notification: AlertmanagerNotification
        switch AlertmanagerNotification.parse(try Self.parseJSON(call.request.body)) {
        case .success(let parsed): notification = parsed
        case .failure(let invalid):
            var problem = Problem(
                .invalidAlert,
                "not Alertmanager's webhook payload (version 4): "
                    + (invalid.errors.count == 1 ? "1 field is invalid" : "\(invalid.errors.count) fields are invalid"))
            problem.errors = invalid.errors
            throw problem
        }
        let poster = call.principal?.name
        call.answer(
            inline: false, { [engine] () async throws(EngineError) in try await engine.receive(notification, on: client, by: poster) }
        ) {
            [self] result in
            switch result {
            case .success(let receipts):
                var out = JSONWriter(capacity: 64 + receipts.count * 128)
                out.beginObject()
                out.key("alerts")
                out.beginArray()
                for receipt in receipts {
                    out.beginObject()
                    out.key("fingerprint")
                    out.string(receipt.fingerprint)
                    out.key("status")
                    out.string(receipt.status.rawValue)
                    out.key("outcome")
                    out.string(receipt.outcome.rawValue)
                    out.key("alert_id")
                    out.string(receipt.alertID?.description)
                    out.endObject()
                }
                out.endArray()
                out.endObject()
                return json(200, out.bytes)
            case .failure(let error):
                return render(Problem(error))
            }
        }
    }
}
