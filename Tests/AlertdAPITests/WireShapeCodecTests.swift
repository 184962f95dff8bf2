import AlertdCore
import AlertdDelivery
import AlertdHTTP
import AlertdTestSupport
import AlertdWire
import Testing

@testable import AlertdAPI
@testable import AlertdEngine
@testable import AlertdClient

/// Every resource of the API besides the alert has one writer too, in AlertdWire: the
/// daemon answers with it, the SDK decodes what it wrote. Each shape, as the daemon
/// renders it, decodes into the values rendered and writes back to the same bytes.
@Suite("The API's other resources: one writer each, shared with the SDK's reader")
struct WireShapeCodecTests {
    let at = Timestamp(milliseconds: 1_795_000_000_123)

    /// Decodes `bytes` as the SDK does and writes the value back with its own writer.
    func roundTrip<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], write: (T, inout JSONWriter) -> Void) throws -> T {
        let decoded = try Transport.decoder.decode(T.self, from: bytes)
        var json = JSONWriter()
        write(decoded, &json)
        #expect(String(decoding: json.bytes, as: UTF8.self) == String(decoding: bytes, as: UTF8.self), "written back differs")
        return decoded
    }

    @Test("deliveries: every member, attempts, a pending retry's time, a silence id, targets redacted for those who may not see them")
    func deliveries() throws {
        let records = [
            DeliveryRecord(
                id: "dl_1", eventID: "msg_1", target: "https://user:pw@hooks.example/a?token=x", webhookID: nil, state: .pending,
                attempts: [DeliveryAttempt(at: at, statusCode: nil, error: "connection \"refused\"")],
                nextAttemptAt: at.adding(seconds: 30),
                type: "alert.answered"),
            DeliveryRecord(
                id: "dl_2", eventID: "msg_1", target: "https://hooks.example/b", webhookID: "wh_1", state: .delivered,
                attempts: [DeliveryAttempt(at: at, statusCode: 204, error: nil)], nextAttemptAt: at.adding(seconds: 30),
                type: "alert.answered"),
            DeliveryRecord(
                id: "dl_3", eventID: "msg_2", target: "http://alertmanager:9093/api/v2/silences", webhookID: nil, state: .delivered,
                attempts: [], nextAttemptAt: nil, type: "alertmanager.silence", silenceID: "0c6f…"),
        ]
        let whole = try roundTrip(DeliveryList.self, Rendering.deliveries(records, wholeTargets: true)) { $0.write(into: &$1) }
        var expected = records
        expected[1].nextAttemptAt = nil  // settled: no next attempt is shown
        #expect(whole.deliveries == expected)

        let redacted = try roundTrip(DeliveryList.self, Rendering.deliveries(records, wholeTargets: false)) { $0.write(into: &$1) }
        #expect(redacted.deliveries.map(\.target) == records.map { Redaction.callbackURL($0.target) })
        #expect(redacted.deliveries[0].target != records[0].target, "the credentials in a target were shown")
    }

    @Test("webhooks: listed without secrets, with their source; the registration's answer with its secret")
    func webhooks() throws {
        let api = Webhook(id: "wh_1", client: "ops", url: "https://a.example/hook", secret: "whsec_c2VjcmV0", createdAt: at, source: .api)
        let config = Webhook(id: "wh_cfg_2", client: "ops", url: "https://b.example/", secret: "s", createdAt: at, source: .config)

        let list = try roundTrip(WebhookList.self, Rendering.webhooks([api, config])) { $0.write(into: &$1) }
        #expect(
            list.webhooks == [
                WebhookResource(id: "wh_1", url: "https://a.example/hook", source: "api"),
                WebhookResource(id: "wh_cfg_2", url: "https://b.example/", source: "config"),
            ])
        #expect(try roundTrip(WebhookResource.self, Rendering.webhook(config)) { $0.write(into: &$1) }.secret == nil)
        let created = try roundTrip(WebhookResource.self, Rendering.createdWebhook(api)) { $0.write(into: &$1) }
        #expect(created == WebhookResource(id: "wh_1", url: "https://a.example/hook", secret: "whsec_c2VjcmV0"))
    }

    @Test("clients: a page with its counts and displayed alerts, the cursor only when more follow")
    func clients() throws {
        var ids = AlertIDGenerator()
        let shown = ids.next(at: at)
        let page = [
            Engine.ClientSummary(client: "a", pending: 3, displayed: shown),
            Engine.ClientSummary(client: "b.c-d_e", pending: 0, displayed: nil),
        ]
        let more = try roundTrip(ClientList.self, Rendering.clients(page, more: true)) { $0.write(into: &$1) }
        #expect(
            more.clients == [
                ClientSummary(client: "a", pending: 3, displayed: shown.description),
                ClientSummary(client: "b.c-d_e", pending: 0, displayed: nil),
            ])
        #expect(more.nextCursor == "c.b.c-d_e")
        #expect(try roundTrip(ClientList.self, Rendering.clients(page, more: false)) { $0.write(into: &$1) }.nextCursor == nil)
    }

    @Test("problems: the code's type, title and status; field errors for invalid-alert; the alert for already-decided")
    func problems() throws {
        var invalid = Problem(.invalidAlert, "2 fields are invalid")
        invalid.errors = [FieldError(field: "title", reason: "is required"), FieldError(field: "buttons[1].title", reason: "\"dup\"")]
        let decoded = try roundTrip(ProblemDocument.self, invalid.response { _, _ in }.body) { $0.write(into: &$1) }
        #expect(decoded.type == "https://alertd.dev/problems/invalid-alert" && decoded.status == 400 && decoded.title == "Invalid alert")
        #expect(decoded.errors == invalid.errors && decoded.alert == nil)

        var ids = AlertIDGenerator()
        var alert = Alert(
            id: ids.next(at: at), client: "ops", title: "Deploy?", buttons: [Button(title: "Go")], state: .answered, createdAt: at,
            expiresAt: at.adding(seconds: 3600))
        alert.decidedAt = at.adding(seconds: 5)
        alert.result = AlertResult(outcome: .answered, button: "Go", buttonIndex: 0, decidedBy: "alice")
        var decided = Problem(.alreadyDecided, "alert \(alert.id) is already answered")
        decided.alert = alert
        let conflict = try roundTrip(ProblemDocument.self, decided.response { $1.write(position: nil, into: &$0) }.body) {
            $0.write(into: &$1)
        }
        #expect(conflict.code == "already-decided" && conflict.errors == nil)
        #expect(conflict.alert?.id == alert.id.description && conflict.alert?.result?.decidedBy == "alice")
    }

    @Test("a callback's body: its type, time and the alert as it became terminal, decoded as the SDK's AlertEvent")
    func callbackEvent() throws {
        var ids = AlertIDGenerator()
        var alert = Alert(
            id: ids.next(at: at), client: "ops", title: "Restart db-3?",
            buttons: [Button(title: "Yes"), Button(title: "No", style: .cancel)],
            state: .answered, createdAt: at, expiresAt: at.adding(seconds: 600))
        alert.decidedAt = at.adding(seconds: 9)
        alert.result = AlertResult(outcome: .answered, button: "No", buttonIndex: 1, cancelled: true, decidedBy: "bob")
        var eventIDs = CallbackEventIDGenerator()
        let event = CallbackEvent(
            id: eventIDs.next(at: at), state: .answered, timestamp: alert.decidedAt!, renderedAlert: alert.json(position: nil))
        let decoded = try roundTrip(AlertEvent.self, event.body) { $0.write(into: &$1) }
        #expect(decoded.type == "alert.answered" && decoded.timestamp == alert.decidedAt)
        #expect(decoded.data.alert.id == alert.id.description && decoded.data.alert.result?.cancelled == true)
    }
}
