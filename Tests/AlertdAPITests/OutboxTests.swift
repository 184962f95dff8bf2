import AlertdInProcess
import AlertdTestSupport
import AlertdEngine
import AlertdClient
import AlertdCore
import AlertdWire
import Foundation
import GRDB
import NIOConcurrencyHelpers
import Synchronization
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdHTTP
import AlertdSQLite

/// Reads the outbox straight from the store file: what the delivery worker will send.
struct OutboxRow {
    let eventID: String
    let type: String
    let body: [UInt8]
    let target: String
    let webhookID: String?
    let secret: String

    static func all(in stateDir: String, alert: String) throws -> [OutboxRow] {
        let queue = try DatabaseQueue(path: stateDir + "/alertd.sqlite")
        return try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT e.id, e.type, e.body, d.target, d.webhook_id, d.secret FROM deliveries d
                    JOIN events e ON e.id = d.event_id WHERE d.alert_id = ? ORDER BY d.id
                    """, arguments: [alert]
            ).map { row in
                OutboxRow(eventID: row[0], type: row[1], body: Array(row[2] as Data), target: row[3], webhookID: row[4], secret: row[5])
            }
        }
    }
}

@Suite("The callback outbox")
struct OutboxTests {
    static let config = """
        callbacks: { signing_secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", allow: ["127.0.0.0/8"] }
        webhooks:
          - { client: ops, url: "http://127.0.0.1:9000/config-hook", secret: "config secret" }
        """

    @Test("a decided alert gets one event, with one pending delivery per target sharing its id")
    func oneEventPerDecision() async throws {
        try await withAlertd(config: Self.config) { daemon in
            let registered = try await daemon.send("POST", "/v1/clients/ops/webhooks", json: #"{"url":"http://127.0.0.1:9001/api-hook"}"#)
                .jsonObject()
            let alert = try await daemon.postAlert(
                "ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}],"callback_url":"http://127.0.0.1:9002/cb"}"#)
            let id = alert["id"] as! String
            #expect((try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)/deliveries").jsonObject()["deliveries"] as! [Any]).isEmpty)

            _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Deploy"}"#)
            let deliveries =
                try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)/deliveries").jsonObject()["deliveries"] as! [[String: Any]]
            #expect(deliveries.count == 3)
            #expect(
                Set(deliveries.compactMap { $0["target"] as? String }) == [
                    "http://127.0.0.1:9002/cb", "http://127.0.0.1:9000/config-hook", "http://127.0.0.1:9001/api-hook",
                ])
            #expect(Set(deliveries.compactMap { $0["event_id"] as? String }).count == 1, "one webhook-id per event")
            // The worker may already have tried (these ports refuse): still pending, with a next attempt.
            #expect(deliveries.allSatisfy { $0["state"] as? String == "pending" }, "\(deliveries)")
            #expect(deliveries.allSatisfy { $0["next_attempt_at"] is String })
            let callback = try #require(deliveries.first { $0["target"] as? String == "http://127.0.0.1:9002/cb" })
            #expect(callback["webhook_id"] is NSNull)
            let api = try #require(deliveries.first { $0["target"] as? String == "http://127.0.0.1:9001/api-hook" })
            #expect(api["webhook_id"] as? String == registered["id"] as? String)

            // The stored body is the §5 event and verifies with each target's secret.
            let rows = try OutboxRow.all(in: daemon.stateDir, alert: id)
            let event = try #require(try JSONSerialization.jsonObject(with: Data(rows[0].body)) as? [String: Any])
            #expect(event["type"] as? String == "alert.answered")
            let data = try #require(event["data"] as? [String: Any])
            let inner = try #require(data["alert"] as? [String: Any])
            #expect(inner["id"] as? String == id)
            #expect((inner["result"] as? [String: Any])?["button"] as? String == "Deploy")
            for row in rows {
                let verifier = try WebhookVerifier(secret: row.secret)
                let key = try WebhookKey(secret: row.secret)
                let now = Int64(Date().timeIntervalSince1970)
                let signature = WebhookSignature.sign(id: row.eventID, timestamp: now, body: row.body, key: key)
                #expect(throws: Never.self) {
                    try verifier.verify(id: row.eventID, timestamp: String(now), signature: signature, body: row.body)
                }
            }
            #expect(
                Set(rows.map(\.secret)) == [
                    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "config secret", registered["secret"] as! String,
                ])
        }
    }

    @Test("each terminal state makes an event of its own type", arguments: ["answered", "withdrawn", "dismissed", "expired"])
    func eventTypes(state: String) async throws {
        try await withAlertd(config: Self.config) { daemon in
            let body =
                state == "dismissed"
                ? #"{"title":"FYI","dismiss_after":1}"#
                : #"{"title":"Q","buttons":[{"title":"OK"}],"expires_in":5}"#
            let id = try await daemon.postAlert("ops", body)["id"] as! String
            switch state {
            case "answered": _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button_index":0}"#)
            case "withdrawn": _ = try await daemon.send("DELETE", "/v1/clients/ops/alerts/\(id)")
            default:
                daemon.clock.advance(seconds: 5)
                await daemon.fireDeadlines()
            }
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)").jsonObject()["state"] as? String == state)
            let rows = try OutboxRow.all(in: daemon.stateDir, alert: id)
            #expect(rows.map(\.type) == ["alert.\(state)"])
        }
    }

    @Test("an alert with no callback_url on a client with no webhooks makes no event")
    func noTargets() async throws {
        try await withAlertd(config: Self.config) { daemon in
            let id = try await daemon.postAlert("team", #"{"title":"Q","buttons":[{"title":"OK"}]}"#)["id"] as! String
            _ = try await daemon.send("POST", "/v1/clients/team/alerts/\(id)/choice", json: #"{"button":"OK"}"#)
            #expect(try OutboxRow.all(in: daemon.stateDir, alert: id).isEmpty)
        }
    }

    @Test("without callbacks.signing_secret an alert cannot have a callback_url")
    func signingSecretRequired() async throws {
        try await withAlertd { daemon in
            let response = try await daemon.send(
                "POST", "/v1/clients/ops/alerts", json: #"{"title":"Q","callback_url":"http://127.0.0.1:9/x"}"#)
            #expect(response.status == 400)
            let errors = try response.jsonObject()["errors"] as! [[String: Any]]
            #expect(errors.first?["field"] as? String == "callback_url")
        }
    }

    @Test("the event is committed with the terminal state or not at all")
    func atomic() async throws {
        let store = ControlledStore()
        try await withAlertd(config: Self.config, wrapStore: store.wrap) { daemon in
            let id = try await daemon.postAlert("ops", #"{"title":"Q","buttons":[{"title":"OK"}]}"#)["id"] as! String
            store.failing = true
            #expect(try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#).status == 503)
            store.failing = false
            try await daemon.restart()
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(id)").jsonObject()["state"] as? String == "displayed")
            #expect(try OutboxRow.all(in: daemon.stateDir, alert: id).isEmpty)
            #expect(try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#).status == 200)
            #expect(try OutboxRow.all(in: daemon.stateDir, alert: id).map(\.type) == ["alert.answered"])
        }
    }

    @Test("purging an alert waits for its pending deliveries, then purges its events and deliveries")
    func purge() async throws {
        try await withAlertd(config: Self.config + "\nalerts: { retention: 60 }") { daemon in
            let id = try await daemon.postAlert("ops", #"{"title":"Q","buttons":[{"title":"OK"}]}"#)["id"] as! String
            _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"OK"}"#)
            #expect(try OutboxRow.all(in: daemon.stateDir, alert: id).count == 1)
            daemon.clock.advance(seconds: 61)
            await daemon.alertd.engine.purge()
            await daemon.barrier()
            #expect(try OutboxRow.all(in: daemon.stateDir, alert: id).count == 1, "its delivery is still pending")
            // Settle the delivery (as the worker records a 2xx), then purge again.
            let queue0 = try DatabaseQueue(path: daemon.stateDir + "/alertd.sqlite")
            let deliveryID = try #require(
                try await queue0.read { try String.fetchOne($0, sql: "SELECT id FROM deliveries WHERE alert_id = ?", arguments: [id]) })
            let attempt = DeliveryAttempt(at: daemon.clock.now(), statusCode: 204, error: nil)
            // The purge reads what is committed: the settled delivery is, once this returns.
            await #expect(throws: Never.self) {
                try await daemon.alertd.sqlite!.record(
                    AttemptRecord(deliveryID: deliveryID, number: 99, attempt: attempt, state: .delivered, nextAttemptAt: nil))
            }
            await daemon.alertd.engine.purge()
            await daemon.barrier()
            #expect(try OutboxRow.all(in: daemon.stateDir, alert: id).isEmpty)
            let queue = try DatabaseQueue(path: daemon.stateDir + "/alertd.sqlite")
            #expect(try await queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM events") } == 0)
        }
    }
}
