import AlertdClient
import AlertdCore
import AlertdDelivery
import AlertdWire
import Foundation
import Testing

private let renderedAlert = Array(
    #"{"id":"01M7ZYW7VKEVTMN3W9PJ09R8V3","state":"answered","title":"Deploy \"1234\"?","metadata":{"n":1.50}}"#.utf8)

private func freshID() -> CallbackEventID {
    var ids = CallbackEventIDGenerator()
    return ids.next(at: eventTime)
}

@Suite("Callback events carry the alert in the §5 body")
struct CallbackEventTests {
    @Test("The body is type, timestamp and the alert bytes as rendered")
    func body() throws {
        let id = try #require(CallbackEventID("msg_01M7ZYW7VKEVTMN3W9PJ09R8V3"))
        let event = CallbackEvent(id: id, state: .answered, timestamp: eventTime, renderedAlert: renderedAlert)
        let expected =
            #"{"type":"alert.answered","timestamp":"2026-11-21T21:05:58.131Z","data":{"alert":"#
            + String(decoding: renderedAlert, as: UTF8.self) + "}}"
        #expect(String(decoding: event.body, as: UTF8.self) == expected)
        #expect(event.type == "alert.answered")
        #expect(event.timestamp == eventTime)
        #expect(event.id == id)
    }

    @Test("The body is valid JSON whose alert is the rendered alert, numbers and all")
    func parses() throws {
        let event = CallbackEvent(id: freshID(), state: .expired, timestamp: eventTime, renderedAlert: renderedAlert)
        let parsed = try JSONParser.parse(event.body)
        #expect(parsed["type"] == JSONValue.string("alert.expired"))
        #expect(parsed["timestamp"] == JSONValue.string("2026-11-21T21:05:58.131Z"))
        let alert = try #require(parsed["data"]?["alert"])
        #expect(alert.compactBytes() == renderedAlert)
    }

    @Test("The type is alert. and the terminal state", arguments: [AlertState.answered, .dismissed, .expired, .withdrawn])
    func types(state: AlertState) {
        let event = CallbackEvent(id: freshID(), state: state, timestamp: eventTime, renderedAlert: Array("{}".utf8))
        #expect(event.type == "alert.\(state.rawValue)")
        #expect(CallbackEvent.type(for: state) == event.type)
    }

    @Test("An event read back from the store keeps its body byte for byte")
    func restored() {
        let original = CallbackEvent(id: freshID(), state: .withdrawn, timestamp: eventTime, renderedAlert: renderedAlert)
        let restored = CallbackEvent(id: original.id, type: original.type, timestamp: original.timestamp, body: original.body)
        #expect(restored == original)
    }

    @Test("An event signed as alertd signs it verifies on the receiver's side")
    func signedEventVerifies() throws {
        let secret = WebhookSignature.generateSecret()
        let event = CallbackEvent(id: freshID(), state: .answered, timestamp: eventTime, renderedAlert: renderedAlert)
        let attemptTime: Int64 = eventTime.milliseconds / 1000 + 42
        let signature = WebhookSignature.sign(
            id: event.id.description, timestamp: attemptTime, body: event.body, key: try WebhookKey(secret: secret))
        let headers = ["Webhook-Id": event.id.description, "Webhook-Timestamp": String(attemptTime), "Webhook-Signature": signature]
        let verified = try WebhookVerifier(secret: secret).verify(
            headers: headers, body: Data(event.body), now: Date(timeIntervalSince1970: TimeInterval(attemptTime) + 3))
        #expect(verified.id == event.id.description)
    }
}

@Suite("Event ids are unique, sortable and URL-safe")
struct CallbackEventIDTests {
    @Test("Ids are msg_ and 26 Crockford base32 characters, and read back")
    func shape() throws {
        var ids = CallbackEventIDGenerator()
        let id = ids.next(at: eventTime)
        let text = id.description
        #expect(text.hasPrefix("msg_"))
        #expect(text.count == 30)
        let allowed = Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        #expect(text.dropFirst(4).allSatisfy { allowed.contains($0) })
        #expect(CallbackEventID(text) == id)
        #expect(id.value.timestamp == eventTime)
    }

    @Test("Ids made one after another increase, as text too, even within one millisecond or when the clock steps back")
    func increasing() {
        var ids = CallbackEventIDGenerator()
        var made: [CallbackEventID] = []
        for step in 0..<1000 {
            made.append(ids.next(at: eventTime.adding(milliseconds: step % 3 == 0 ? -5 : 0)))
        }
        #expect(made == made.sorted())
        #expect(made.map(\.description) == made.map(\.description).sorted())
        #expect(Set(made).count == made.count)
    }

    @Test("A generator resumed after a stored id continues after it")
    func resumes() {
        var first = CallbackEventIDGenerator()
        let last = first.next(at: eventTime)
        var resumed = CallbackEventIDGenerator(after: last)
        #expect(resumed.next(at: eventTime.adding(milliseconds: -1000)) > last)
    }

    @Test(
        "Text that is not an event id is refused",
        arguments: [
            "", "msg_", "01M7ZYW7VKEVTMN3W9PJ09R8V3", "msg_01M7ZYW7VKEVTMN3W9PJ09R8V", "msg_01M7ZYW7VKEVTMN3W9PJ09R8V3X",
            "evt_01M7ZYW7VKEVTMN3W9PJ09R8V3", "msg_01M7ZYW7VKEVTMN3W9PJ09R8VU",
        ]
    )
    func invalid(text: String) {
        #expect(CallbackEventID(text) == nil)
    }
}
