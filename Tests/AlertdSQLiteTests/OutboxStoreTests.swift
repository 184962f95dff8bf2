import AlertdCore
import AlertdEngine
import AlertdSQLite
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
            // Attempts alone are committed without their own fsync; the writer is back at FULL after.
            #expect(try store.synchronousLevel() == 2)
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

    @Test("purge keeps an alert while one of its deliveries is pending, and takes it with everything once settled")
    func purgeWaitsForPendingDeliveries() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        let alertID = ids.next(at: created)
        var alert = makeAlert(alertID, state: .answered)
        alert.decidedAt = created
        try store.commit([.alert(alert), .event(event(alertID, id: "msg_2", targets: ["http://a/", "http://b/"]))])
        func settle(_ id: String, _ number: Int, _ state: DeliveryState) -> StoreWrite {
            .attempt(
                AttemptRecord(
                    deliveryID: id, number: number, attempt: DeliveryAttempt(at: created, statusCode: 200, error: nil), state: state,
                    nextAttemptAt: nil))
        }
        try store.commit([settle("msg_2-dl0", 1, .delivered)])
        #expect(try store.purgeCandidates(Retention(decidedBefore: created.adding(seconds: 1)), limit: 10).isEmpty)
        // Named to the writer anyway (a delivery reopened after the candidates were read), it stays.
        try store.commit([.deleteTerminal([alertID.description])])
        #expect(try store.alert(alertID) != nil, "msg_2-dl1 is still pending")
        #expect(try store.pendingDeliveries().map(\.id) == ["msg_2-dl1"])

        try store.commit([settle("msg_2-dl1", 1, .failed)])
        try store.purge(decidedBefore: created.adding(seconds: 1), keysBefore: created)
        #expect(try store.alert(alertID) == nil)
        #expect(try store.deliveries(of: alertID).isEmpty)
        // A late record of an attempt of a purged delivery leaves nothing behind.
        try store.commit([settle("msg_2-dl1", 2, .pending)])
        let rows = try DatabaseQueue(path: dir.path + "/" + SQLiteStore.fileName).read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT (SELECT count(*) FROM delivery_attempts) + (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM events)")
        }
        #expect(rows == 0, "no attempt, delivery or event left")
    }

    @Test("a settled delivery is never reopened or its attempts rewritten by a late record")
    func oneWay() throws {
        let dir = TempDir()
        let store = try SQLiteStore(directory: dir.path, durability: .normal)
        var ids = AlertIDGenerator()
        let alertID = ids.next(at: created)
        try store.commit([.event(event(alertID, id: "msg_3", targets: ["http://a/"]))])
        let delivered = AttemptRecord(
            deliveryID: "msg_3-dl0", number: 1, attempt: DeliveryAttempt(at: created, statusCode: 204, error: nil), state: .delivered,
            nextAttemptAt: nil)
        let late = AttemptRecord(
            deliveryID: "msg_3-dl0", number: 1, attempt: DeliveryAttempt(at: created, statusCode: 500, error: nil), state: .pending,
            nextAttemptAt: created.adding(seconds: 5))
        try store.commit([.attempt(delivered)])
        try store.commit([.attempt(late)])
        let record = try #require(try store.deliveries(of: alertID).first)
        #expect(record.state == .delivered && record.nextAttemptAt == nil)
        #expect(record.attempts.map(\.statusCode) == [204])
        #expect(try store.pendingDeliveries().isEmpty)
    }
}
