import AlertdClient
import AlertdWire
import Foundation
import Testing

private let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
private let signedAt: Int64 = 1_614_265_330
private let signedAtDate = Date(timeIntervalSince1970: TimeInterval(signedAt))
private let body = Array(#"{"test": 2432232314}"#.utf8)

/// Headers as alertd sends them, signed with `key` at `timestamp`.
private func headers(
    id: String = "msg_p5jXN8AQM9LWM0D4loKWxJek",
    timestamp: Int64 = signedAt,
    body: [UInt8] = body,
    secret: String = secret
) throws -> [String: String] {
    let key = try WebhookKey(secret: secret)
    return [
        "webhook-id": id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": WebhookSignature.sign(id: id, timestamp: timestamp, body: body, key: key),
        "content-type": "application/json",
    ]
}

@Suite("The verifier accepts what alertd signs")
struct VerifierAcceptsTests {
    @Test("The specification's example verifies")
    func referenceVector() throws {
        let verifier = try WebhookVerifier(secret: secret)
        let webhook = try verifier.verify(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: "1614265330",
            signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", body: body, now: signedAtDate)
        #expect(webhook.id == "msg_p5jXN8AQM9LWM0D4loKWxJek")
        #expect(webhook.timestamp == signedAtDate)
    }

    @Test("A signed request verifies from its headers, as bytes or as Data")
    func roundTrip() throws {
        let verifier = try WebhookVerifier(secret: secret)
        let signed = try headers()
        #expect(try verifier.verify(headers: signed, body: body, now: signedAtDate).id == "msg_p5jXN8AQM9LWM0D4loKWxJek")
        #expect(try verifier.verify(headers: signed, body: Data(body), now: signedAtDate).id == "msg_p5jXN8AQM9LWM0D4loKWxJek")
    }

    @Test("A freshly generated secret signs and verifies")
    func generatedSecret() throws {
        let fresh = WebhookSignature.generateSecret()
        let verifier = try WebhookVerifier(secret: fresh)
        try verifier.verify(headers: try headers(secret: fresh), body: body, now: signedAtDate)
    }

    @Test("A secret without whsec_ is used as its UTF-8 bytes on both sides")
    func plainSecret() throws {
        let verifier = try WebhookVerifier(secret: "change-me")
        try verifier.verify(headers: try headers(secret: "change-me"), body: body, now: signedAtDate)
        #expect(throws: WebhookVerificationError.badSignature) {
            try verifier.verify(headers: try headers(secret: secret), body: body, now: signedAtDate)
        }
    }

    @Test("Header names match in any case", arguments: ["webhook-", "Webhook-", "WEBHOOK-"])
    func headerCase(prefix: String) throws {
        let verifier = try WebhookVerifier(secret: secret)
        var renamed: [String: String] = [:]
        for (name, value) in try headers() { renamed[name.replacingOccurrences(of: "webhook-", with: prefix)] = value }
        try verifier.verify(headers: renamed, body: body, now: signedAtDate)
    }

    @Test(
        "One matching v1 signature among several is enough, other versions are ignored",
        arguments: [
            "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            "v2,xyz  v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=  garbage",
        ]
    )
    func severalSignatures(header: String) throws {
        let verifier = try WebhookVerifier(secret: secret)
        try verifier.verify(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: "1614265330", signature: header, body: body, now: signedAtDate)
    }

    @Test("Timestamps within the tolerance pass, in the past and in the future", arguments: [-300.0, -1, 0, 1, 300])
    func withinTolerance(offset: Double) throws {
        let verifier = try WebhookVerifier(secret: secret)
        try verifier.verify(headers: try headers(), body: body, now: signedAtDate.addingTimeInterval(offset))
    }
}

@Suite("The verifier refuses what alertd did not sign")
struct VerifierRefusesTests {
    @Test("A tampered body is a bad signature")
    func tamperedBody() throws {
        let verifier = try WebhookVerifier(secret: secret)
        let tampered = Array(#"{"test": 2432232315}"#.utf8)
        #expect(throws: WebhookVerificationError.badSignature) {
            try verifier.verify(headers: try headers(), body: tampered, now: signedAtDate)
        }
    }

    @Test("A signature made with another secret is a bad signature")
    func wrongSecret() throws {
        let verifier = try WebhookVerifier(secret: secret)
        let other = WebhookSignature.generateSecret()
        #expect(throws: WebhookVerificationError.badSignature) {
            try verifier.verify(headers: try headers(secret: other), body: body, now: signedAtDate)
        }
    }

    @Test("A changed id or timestamp breaks the signature")
    func changedIdOrTimestamp() throws {
        let verifier = try WebhookVerifier(secret: secret)
        var changedID = try headers()
        changedID["webhook-id"] = "msg_other"
        #expect(throws: WebhookVerificationError.badSignature) { try verifier.verify(headers: changedID, body: body, now: signedAtDate) }
        var changedTime = try headers()
        changedTime["webhook-timestamp"] = String(signedAt + 1)
        #expect(throws: WebhookVerificationError.badSignature) { try verifier.verify(headers: changedTime, body: body, now: signedAtDate) }
    }

    @Test(
        "A signature header with no matching v1 entry is a bad signature",
        arguments: [
            "", " ", "v1,", "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE", "v1, g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        ]
    )
    func noMatchingEntry(header: String) throws {
        let verifier = try WebhookVerifier(secret: secret)
        #expect(throws: WebhookVerificationError.badSignature) {
            try verifier.verify(
                id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: "1614265330", signature: header, body: body, now: signedAtDate)
        }
    }

    @Test("A timestamp older than the tolerance is stale")
    func stale() throws {
        let verifier = try WebhookVerifier(secret: secret)
        #expect(throws: WebhookVerificationError.staleTimestamp) {
            try verifier.verify(headers: try headers(), body: body, now: signedAtDate.addingTimeInterval(301))
        }
    }

    @Test("A timestamp further ahead than the tolerance is refused")
    func future() throws {
        let verifier = try WebhookVerifier(secret: secret)
        #expect(throws: WebhookVerificationError.futureTimestamp) {
            try verifier.verify(headers: try headers(), body: body, now: signedAtDate.addingTimeInterval(-301))
        }
    }

    @Test("The tolerance is configurable")
    func configurableTolerance() throws {
        var verifier = try WebhookVerifier(secret: secret, tolerance: 10)
        #expect(throws: WebhookVerificationError.staleTimestamp) {
            try verifier.verify(headers: try headers(), body: body, now: signedAtDate.addingTimeInterval(11))
        }
        verifier.tolerance = 3600
        try verifier.verify(headers: try headers(), body: body, now: signedAtDate.addingTimeInterval(3000))
    }

    @Test("A stale request is refused even when its signature is good")
    func staleBeforeSignature() throws {
        let verifier = try WebhookVerifier(secret: secret)
        #expect(throws: WebhookVerificationError.staleTimestamp) {
            try verifier.verify(headers: try headers(), body: body)  // now: the real clock, years later
        }
    }

    @Test("Each missing header is named", arguments: ["webhook-id", "webhook-timestamp", "webhook-signature"])
    func missingHeader(name: String) throws {
        let verifier = try WebhookVerifier(secret: secret)
        var incomplete = try headers()
        incomplete[name] = nil
        #expect(throws: WebhookVerificationError.missingHeader(name)) {
            try verifier.verify(headers: incomplete, body: body, now: signedAtDate)
        }
    }

    @Test("An empty id counts as missing")
    func emptyID() throws {
        let verifier = try WebhookVerifier(secret: secret)
        #expect(throws: WebhookVerificationError.missingHeader("webhook-id")) {
            try verifier.verify(id: "", timestamp: "1614265330", signature: "v1,x", body: body, now: signedAtDate)
        }
    }

    @Test(
        "A timestamp that is not whole Unix seconds is invalid",
        arguments: ["", "abc", "1614265330.5", "-1614265330", " 1614265330", "+1614265330", "1e9", "9999999999999999999"])
    func invalidTimestamp(value: String) throws {
        let verifier = try WebhookVerifier(secret: secret)
        #expect(throws: WebhookVerificationError.invalidTimestamp) {
            try verifier.verify(id: "msg_1", timestamp: value, signature: "v1,x", body: body, now: signedAtDate)
        }
    }

    @Test("An unusable secret is refused when the verifier is made")
    func invalidSecret() {
        #expect(throws: WebhookSecretError.invalidBase64) { try WebhookVerifier(secret: "whsec_%%%") }
        #expect(throws: WebhookSecretError.empty) { try WebhookVerifier(secret: "") }
    }

    @Test("Errors say what is wrong")
    func descriptions() {
        #expect(WebhookVerificationError.missingHeader("webhook-id").description == "the webhook-id header is missing")
        #expect(WebhookVerificationError.staleTimestamp.description.contains("too old"))
        #expect(WebhookVerificationError.badSignature != .staleTimestamp)
    }
}
