// push.remind_every (SPEC §11), on the manual clock: a display writes one reminder per
// subscription, due remind_every later; a reminder is made while its alert is displayed since
// that display (and says so), each one naming the next time; it ends once the alert no longer
// waits, answered or covered by another. The worker's side (a sent reminder stays pending
// until its next time) is DeliveryWorkerTests'.

import AlertdCore
import AlertdDaemon
import AlertdEngine
import AlertdInProcess
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

@Suite("Push reminders (push.remind_every)")
struct PushReminderTests {
    /// Push on, reminders every 10 minutes; the device's push service is a closed port (its
    /// first push is retried in the background, on real time: nothing here waits for it).
    static let config = """
        callbacks: { allow: ["127.0.0.0/8"] }
        push: { subject: "mailto:ops@example.com", remind_every: 10m, allow_http: true }
        clients:
          stacked: { policy: stack }
        """

    static func reminders(_ daemon: InProcessAlertd, of id: String) async throws -> [PendingDelivery] {
        try await daemon.alertd.store.pendingDeliveries().filter {
            $0.kind == .push && String(decoding: $0.body, as: UTF8.self).contains(#""reminder":true"#)
                && String(decoding: $0.body, as: UTF8.self).contains(id)
        }
    }

    @Test("a reminder is due remind_every after the display, is made while the alert waits, names the next, and ends with the answer")
    func remindsWhileWaiting() async throws {
        try await withAlertd(config: Self.config) { daemon in
            let device = PushDevice()
            let made = try await daemon.send(
                "POST", "/v1/push/subscriptions",
                json: device.subscription(endpoint: "http://127.0.0.1:9/push", clients: ["ops"], answer: true))
            #expect(made.status == 201, "\(made.text)")
            let posted = daemon.clock.now()
            let id = try await daemon.postAlert("ops", #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#)["id"] as! String
            let reminder = try #require(try await Self.reminders(daemon, of: id).first)
            #expect(reminder.due == posted.adding(seconds: 600), "due remind_every after the display")

            daemon.clock.advance(seconds: 600)
            guard case .send(let push) = try await daemon.alertd.engine.preparePush(reminder, now: daemon.clock.now()) else {
                Issue.record("no reminder made while the alert waits")
                return
            }
            #expect(push.repeatAt == daemon.clock.now().adding(seconds: 600), "the next reminder, remind_every later")
            let payload = try device.payload(push.body)
            #expect(payload["type"] as? String == "alert.displayed" && payload["reminder"] as? Bool == true)
            #expect((payload["alert"] as? [String: Any])?["id"] as? String == id && payload["answer_url"] is String)

            _ = try await daemon.send("POST", "/v1/clients/ops/alerts/\(id)/choice", json: #"{"button":"Deploy"}"#)
            daemon.clock.advance(seconds: 600)
            guard case .end(let reason) = try await daemon.alertd.engine.preparePush(reminder, now: daemon.clock.now()) else {
                Issue.record("a reminder made for an answered alert")
                return
            }
            #expect(reason.contains("no longer waits"))
        }
    }

    @Test("a reminder ends when its alert is covered by another (stack) and the new display has reminders of its own")
    func coveredAlert() async throws {
        try await withAlertd(config: Self.config) { daemon in
            let device = PushDevice()
            _ = try await daemon.send(
                "POST", "/v1/push/subscriptions",
                json: device.subscription(endpoint: "http://127.0.0.1:9/push", clients: ["stacked"], answer: false))
            let first = try await daemon.postAlert("stacked", #"{"title":"First","buttons":[{"title":"OK"}]}"#)["id"] as! String
            let reminder = try #require(try await Self.reminders(daemon, of: first).first)
            daemon.clock.advance(seconds: 60)
            let second = try await daemon.postAlert("stacked", #"{"title":"Second","buttons":[{"title":"OK"}]}"#)["id"] as! String
            #expect(try await Self.reminders(daemon, of: second).count == 1)
            daemon.clock.advance(seconds: 540)
            guard case .end = try await daemon.alertd.engine.preparePush(reminder, now: daemon.clock.now()) else {
                Issue.record("a reminder made for an alert that is queued again")
                return
            }
        }
    }

    @Test("no remind_every, no reminder; a reminder never falls due after the alert expires")
    func noneOrExpired() async throws {
        try await withAlertd(config: Self.config.replacingOccurrences(of: ", remind_every: 10m", with: "")) { daemon in
            _ = try await daemon.send(
                "POST", "/v1/push/subscriptions",
                json: PushDevice().subscription(endpoint: "http://127.0.0.1:9/push", clients: ["ops"], answer: false))
            let id = try await daemon.postAlert("ops", #"{"title":"Q","buttons":[{"title":"OK"}]}"#)["id"] as! String
            #expect(try await Self.reminders(daemon, of: id).isEmpty)
        }
        try await withAlertd(config: Self.config) { daemon in
            _ = try await daemon.send(
                "POST", "/v1/push/subscriptions",
                json: PushDevice().subscription(endpoint: "http://127.0.0.1:9/push", clients: ["ops"], answer: false))
            // Expires in 5 minutes, before the first reminder's 10.
            let id = try await daemon.postAlert("ops", #"{"title":"Q","buttons":[{"title":"OK"}],"expires_in":300}"#)["id"] as! String
            #expect(try await Self.reminders(daemon, of: id).isEmpty)
        }
    }
}
