// Web Push's cryptography against the RFCs' own examples: RFC 8291 §5 and Appendix A
// (message encryption), RFC 8292 §2.4 (the VAPID token). A push service and a browser are
// strangers to alertd: only a byte-for-byte agreement with the published values says that
// they will read what it sends.

import AlertdCore
import AlertdTestSupport
import AlertdWire
import Crypto
import Foundation
import Testing

@testable import AlertdPush

private func bytes(_ base64url: String) -> [UInt8] { Base64URL.decode(base64url)! }

@Suite("Web Push encryption (RFC 8291)")
struct WebPushEncryptionTests {
    // RFC 8291 §5 and Appendix A.
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
    static let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let asPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    @Test("the RFC's example encrypts to the RFC's bytes")
    func rfcExample() throws {
        let keys = try PushKeys(p256dh: Self.uaPublic, auth: Self.authSecret)
        let ephemeral = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(Self.asPrivate))
        #expect(Array(ephemeral.publicKey.x963Representation) == bytes(Self.asPublic))
        let encrypted = try WebPushEncryption.encrypt(Array(Self.plaintext.utf8), for: keys, ephemeral: ephemeral, salt: bytes(Self.salt))
        #expect(Base64URL.encode(encrypted) == Self.body)
    }

    @Test("a fresh key and salt each time, and the receiver's key opens it")
    func roundTrip() throws {
        let device = PushDevice()
        let keys = try PushKeys(p256dh: device.p256dh, auth: device.authText)
        let message = Array("{\"type\":\"alert.displayed\"}".utf8)
        let one = try WebPushEncryption.encrypt(message, for: keys)
        let two = try WebPushEncryption.encrypt(message, for: keys)
        #expect(one != two)
        #expect(try device.open(one) == message)
        #expect(try device.open(two) == message)
        // The RFC's example opens with the RFC's receiver key.
        let rfc = PushDevice(privateKey: bytes(Self.uaPrivate), auth: bytes(Self.authSecret))
        #expect(try rfc.open(bytes(Self.body)) == Array(Self.plaintext.utf8))
    }

    @Test("3993 bytes fit one 4096-byte record; one more is refused")
    func recordLimit() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = try PushKeys(
            p256dh: Base64URL.encode(receiver.publicKey.x963Representation), auth: Base64URL.encode([UInt8](repeating: 1, count: 16)))
        #expect(WebPushEncryption.maxPlaintext == 3993)
        let largest = try WebPushEncryption.encrypt([UInt8](repeating: 0x41, count: 3993), for: keys)
        #expect(largest.count == 4096)
        #expect(throws: WebPushEncryption.TooLong.self) { try WebPushEncryption.encrypt([UInt8](repeating: 0x41, count: 3994), for: keys) }
    }

    @Test(
        "keys that are not a browser's are refused, naming the field",
        arguments: [
            ("AAAA", authSecret, "keys.p256dh"),  // not 65 bytes
            (Base64URL.encode([4] + [UInt8](repeating: 1, count: 64)), authSecret, "keys.p256dh"),  // not on the curve
            ("BCVxsr7N+eNgVRqv", authSecret, "keys.p256dh"),  // not base64url
            (uaPublic, "BTBZMqHH6r4Tts7J", "keys.auth"),  // 12 bytes
            (uaPublic, "BTBZMqHH6r4Tts7J_aSIggAA", "keys.auth"),  // 18 bytes
            (uaPublic, "!!", "keys.auth"),
        ])
    func badKeys(p256dh: String, auth: String, field: String) {
        #expect {
            try PushKeys(p256dh: p256dh, auth: auth)
        } throws: { ($0 as? PushKeys.Invalid)?.field == field }
    }
}

@Suite("VAPID (RFC 8292)")
struct VAPIDTests {
    // RFC 8292 §2.4.
    static let rfcToken =
        "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3B1c2guZXhhbXBsZS5uZXQiLCJleHAiOjE0NTM1MjM3NjgsInN1YiI6Im1haWx0bzpwdXNoQGV4YW1wbGUuY29tIn0.i3CYb7t4xfxCDquptFOepC9GAu_HLGkMlMuCGSK2rpiUfnK9ojFwDXb1JrErtmysazNjjvW2L9OkSSHzvoD1oA"
    static let rfcKey = "BA1Hxzyi1RUM1b5wjxsn7nGxAszw2u61m164i3MrAIxHF6YK5h4SDYic-dRuU_RCPCfA5aq9ojSwk5Y2EmClBPs"

    @Test("the RFC's token verifies with the RFC's key, its claims read back; one changed claim does not")
    func rfcExample() throws {
        let claims = try #require(VAPID.verify(Self.rfcToken, publicKey: bytes(Self.rfcKey)))
        #expect(claims["aud"] == .string("https://push.example.net"))
        #expect(claims["sub"] == .string("mailto:push@example.com"))
        #expect(claims["exp"].flatMap { if case .number(let n) = $0 { n.wholeInt } else { nil } } == 1_453_523_768)
        // The same header as alertd writes.
        #expect(Self.rfcToken.hasPrefix(VAPID.header + "."))
        let parts = Self.rfcToken.split(separator: ".")
        let forged = Base64URL.encode(Array(#"{"aud":"https://push.example.net","exp":1453523769,"sub":"mailto:push@example.com"}"#.utf8))
        #expect(VAPID.verify("\(parts[0]).\(forged).\(parts[2])", publicKey: bytes(Self.rfcKey)) == nil)
        #expect(VAPID.verify(Self.rfcToken, publicKey: bytes(WebPushEncryptionTests.uaPublic)) == nil)
    }

    @Test("alertd's Authorization: a token for the endpoint's origin, 12 hours, its subject, signed with its key")
    func authorization() throws {
        let vapid = try VAPID(privateKey: VAPID.newPrivateKey(), subject: "mailto:ops@example.com")
        let header = try vapid.authorization(endpoint: "https://push.example.net:8443/wpush/v2/abc?x=1", now: 1_795_000_000)
        let match = try #require(header.wholeMatch(of: /vapid t=([^,]+), k=(.+)/))
        #expect(String(match.2) == vapid.publicKeyBase64URL)
        #expect(vapid.publicKey.count == 65 && vapid.publicKey[0] == 4)
        let claims = try #require(VAPID.verify(String(match.1), publicKey: vapid.publicKey))
        #expect(claims["aud"] == .string("https://push.example.net:8443"))
        #expect(claims["sub"] == .string("mailto:ops@example.com"))
        #expect(claims["exp"].flatMap { if case .number(let n) = $0 { n.wholeInt } else { nil } } == 1_795_000_000 + 12 * 3600)
    }

    @Test(
        "an endpoint's origin is its scheme, host and a port other than the scheme's",
        arguments: [
            ("https://fcm.googleapis.com/fcm/send/x", "https://fcm.googleapis.com"),
            ("https://Updates.Push.Services.Mozilla.com:443/wpush/v2/y", "https://updates.push.services.mozilla.com"),
            ("http://127.0.0.1:9000/push/1", "http://127.0.0.1:9000"),
            ("https://[::1]:8443/p", "https://[::1]:8443"),
        ])
    func origin(endpoint: String, origin: String) {
        #expect(VAPID.origin(of: endpoint) == origin)
    }
}

@Suite("Push payloads (SPEC §11)")
struct PushPayloadTests {
    static func alert(message: String? = "Build 1234 to production", title: String = "Deploy?", buttons: [Button]? = nil) -> Alert {
        Alert(
            id: AlertID(high: 7, low: 42), client: "ops", title: title, message: message,
            buttons: buttons ?? [Button(title: "Deploy"), Button(title: "Cancel", style: .cancel)], priority: 60, state: .displayed,
            createdAt: Timestamp(milliseconds: 1_795_000_000_000), displayedAt: Timestamp(milliseconds: 1_795_000_000_001),
            expiresAt: Timestamp(milliseconds: 1_795_086_400_000))
    }

    @Test("a displayed alert's payload holds what a notification shows, nothing of its metadata or callback")
    func displayed() throws {
        var alert = Self.alert()
        alert.metadata = CompactJSON(["secret": .string("s3cr3t")])
        alert.callbackURL = "https://ci.example/hook?token=abc"
        let payload = PushPayload.displayed(alert)
        guard case .object(let object) = try JSONParser.parse(payload), case .object(let shown)? = object["alert"] else {
            Issue.record("not an object")
            return
        }
        #expect(object["type"] == .string("alert.displayed"))
        #expect(
            Set(shown.map(\.key)) == ["id", "client", "title", "message", "style", "buttons", "priority", "quorum", "votes", "expires_at"])
        #expect(shown["title"] == .string("Deploy?") && shown["client"] == .string("ops"))
        let text = String(decoding: payload, as: UTF8.self)
        #expect(!text.contains("s3cr3t") && !text.contains("ci.example"))
        let summary = try #require(PushPayload.summary(of: payload))
        #expect(summary == .init(type: "alert.displayed", alertID: alert.id.description, priority: 60, expiresAt: alert.expiresAt))
    }

    @Test("a long message is cut to fit, ending with …; with the answer it still fits one record")
    func longMessage() throws {
        let alert = Self.alert(message: String(repeating: "é", count: 4096))
        let payload = PushPayload.displayed(alert)
        #expect(payload.count <= PushPayload.storedLimit && payload.count > PushPayload.storedLimit - 8)
        guard case .object(let object) = try JSONParser.parse(payload), case .object(let shown)? = object["alert"],
            case .string(let message)? = shown["message"]
        else {
            Issue.record("not an object")
            return
        }
        #expect(message.hasSuffix("…") && message.hasPrefix("ééé"))
        let answered = try #require(
            PushPayload.withAnswer(payload, url: "/v1/answers/" + String(repeating: "x", count: 43), expiresAt: alert.expiresAt))
        #expect(answered.count <= WebPushEncryption.maxPlaintext)
        guard case .object(let withAnswer) = try JSONParser.parse(answered) else { return }
        #expect(withAnswer["answer_url"] == .string("/v1/answers/" + String(repeating: "x", count: 43)))
        #expect(withAnswer["answer_expires_at"] == .string("2026-11-19T11:06:40.000Z"))
    }

    @Test("a title and buttons too long for a record: the title cut, the buttons left out")
    func hugeAlert() throws {
        let wide = String(repeating: "𝔸", count: 64)
        let buttons = (0..<16).map { Button(title: String(wide.dropFirst(2)) + "\($0)") }
        let alert = Self.alert(message: "m", title: String(repeating: "𝔹", count: 256), buttons: buttons)
        let payload = PushPayload.displayed(alert)
        #expect(payload.count <= PushPayload.storedLimit)
        guard case .object(let object) = try JSONParser.parse(payload), case .object(let shown)? = object["alert"] else { return }
        #expect(shown["buttons"] == .array([]))
    }

    @Test("votes are shown without their words: nine long comments and values neither leak nor overflow the record")
    func votesWithoutWords() throws {
        var alert = Self.alert(message: "m")
        alert.quorum = 10
        alert.votes = (0..<9).map { n in
            Vote(
                decidedBy: "person-\(n)", button: "Deploy", buttonIndex: 0, at: Timestamp(milliseconds: 1_795_000_000_100 + Int64(n)),
                comment: "why \(n): " + String(repeating: "ü", count: 990),
                values: ["ticket": "OPS-\(n)" + String(repeating: "7", count: 900)])
        }
        let payload = PushPayload.displayed(alert)
        #expect(payload.count <= PushPayload.storedLimit)
        let text = String(decoding: payload, as: UTF8.self)
        #expect(!text.contains("why ") && !text.contains("OPS-"), "\(text.prefix(300))")
        guard case .object(let object) = try JSONParser.parse(payload), case .object(let shown)? = object["alert"],
            case .array(let votes)? = shown["votes"]
        else {
            Issue.record("no votes in \(text.prefix(300))")
            return
        }
        #expect(votes.count == 9 && shown["message"] == .string("m"))
    }

    @Test("a decided alert's payload names it and its state only")
    func decided() throws {
        var alert = Self.alert()
        alert.state = .withdrawn
        #expect(
            String(decoding: PushPayload.decided(alert), as: UTF8.self)
                == #"{"type":"alert.decided","alert":{"id":"\#(alert.id)","client":"ops","state":"withdrawn"}}"#)
    }
}
