import AlertdCore
import AlertdStore
import AlertdWire
import Foundation
import GRDB
import Testing

@Suite("The outbox in SQLite: pending deliveries and their attempts")
struct OutboxStoreTests {
    let created = Timestamp(milliseconds: 1_795_000_000_000)

    func event(_ alertID: AlertID, id: String, targets: [String]) -> OutboxEvent {
        OutboxEvent(
            id: id, alertID: alertID, client: "ops", type: "alert.answered", createdAt: created, body: Array(#"{"n":1}"#.utf8),
            deliveries: targets.enumerated().map { index, target in
                OutboxDelivery(id: "\(id)-dl\(index)", target: target, webhookID: index == 0 ? nil : "wh_\(index)", secret: "s\(index)")
            })
    }

    @Test("new deliveries are pending and due at once; attempts move them on, and a reopened store resumes where they stood")
    func pendingAndAttempts() throws {
        let dir = TempDir()
        var ids = AlertIDGenerator()
        let alertID = ids.next(at: created)
        var alert = makeAlert(alertID, state: .answered)
        alert.decidedAt = created
        do {
            let store = try SQLiteStore(directory: dir.path, durability: .full)
            try store.commit([.alert(alert), .event(event(alertID, id: "msg_1", targets: ["http://a/", "http://b/", "http://c/"]))])
            let pending = try store.pendingDeliveries()
            #expect(pending.map(\.id) == ["msg_1-dl0", "msg_1-dl1", "msg_1-dl2"])
            #expect(pending.allSatisfy { $0.due == created && $0.attemptsMade == 0 && $0.body == Array(#"{"n":1}"#.utf8) })
            #expect(pending.map(\.secret) == ["s0", "s1", "s2"])

            let next = created.adding(seconds: 30)
            try store.commit([
                .attempt(
                    AttemptRecord(
                        deliveryID: "msg_1-dl0", number: 1, attempt: DeliveryAttempt(at: created, statusCode: 204, error: nil),
                        state: .delivered, nextAttemptAt: nil)),
                .attempt(
                    AttemptRecord(
                        deliveryID: "msg_1-dl1", number: 1, attempt: DeliveryAttempt(at: created, statusCode: nil, error: "refused"),
                        state: .pending, nextAttemptAt: next)),
                .attempt(
                    AttemptRecord(
                        deliveryID: "msg_1-dl2", number: 1, attempt: DeliveryAttempt(at: created, statusCode: 410, error: nil),
                        state: .failed, nextAttemptAt: nil)),
            ])
        }
        let store = try SQLiteStore(directory: dir.path, durability: .full)
        let pending = try store.pendingDeliveries()
        #expect(pending.map(\.id) == ["msg_1-dl1"])
        #expect(pending.first?.attemptsMade == 1 && pending.first?.due == created.adding(seconds: 30))
        #expect(pending.first?.eventCreatedAt == created && pending.first?.eventID == "msg_1")

        let records = try store.deliveries(of: alertID)
        #expect(records.map(\.state) == [.delivered, .pending, .failed])
        #expect(records[1].attempts == [DeliveryAttempt(at: created, statusCode: nil, error: "refused")])
        #expect(records[1].nextAttemptAt == created.adding(seconds: 30))
        #expect(records[2].attempts.map(\.statusCode) == [410])
    }

    @Test("an attempt of a delivery purged meanwhile leaves nothing behind")
    func attemptAfterPurge() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        let alertID = ids.next(at: created)
        var alert = makeAlert(alertID, state: .answered)
        alert.decidedAt = created
        try store.commit([.alert(alert), .event(event(alertID, id: "msg_2", targets: ["http://a/"]))])
        try store.commit([.purge(decidedBefore: created.adding(seconds: 1), keysBefore: created)])
        #expect(try store.pendingDeliveries().isEmpty)
        try store.commit([
            .attempt(
                AttemptRecord(
                    deliveryID: "msg_2-dl0", number: 1, attempt: DeliveryAttempt(at: created, statusCode: 500, error: nil), state: .pending,
                    nextAttemptAt: created.adding(seconds: 1)))
        ])
        #expect(try store.pendingDeliveries().isEmpty)
        #expect(try store.deliveries(of: alertID).isEmpty)
        let rows = try DatabaseQueue(path: dir.path + "/" + SQLiteStore.fileName).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM delivery_attempts")
        }
        #expect(rows == 0, "no attempt row without its delivery")
    }
}
