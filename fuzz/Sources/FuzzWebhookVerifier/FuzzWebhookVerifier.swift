// AlertdClient's WebhookVerifier, as a receiver runs it on a request from anyone.
// The input is lines: SECRET\nWEBHOOK-ID\nWEBHOOK-TIMESTAMP\nWEBHOOK-SIGNATURE\nBODY.
// Whatever comes, verify must answer (accept or throw), never crash; and for the
// same secret, id and body, a signature made by the daemon's signer must be
// accepted (alone or among other entries), and any change to it refused.
import AlertdClient
import AlertdWire
import Foundation

private let now = Date(timeIntervalSince1970: 1_795_000_000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebhookVerifier(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let parts = UnsafeBufferPointer(start: data, count: size).split(separator: 10, maxSplits: 4, omittingEmptySubsequences: false)
    guard parts.count == 5 else { return 0 }
    let secret = String(decoding: parts[0], as: UTF8.self)
    let id = String(decoding: parts[1], as: UTF8.self)
    let timestamp = String(decoding: parts[2], as: UTF8.self)
    let signature = String(decoding: parts[3], as: UTF8.self)
    let body = Array(parts[4])

    guard let verifier = try? WebhookVerifier(secret: secret) else {
        precondition((try? WebhookKey(secret: secret)) == nil, "the verifier refused a secret the signer takes")
        return 0
    }
    _ = try? verifier.verify(id: id, timestamp: timestamp, signature: signature, body: body, now: now)
    let headers = ["Webhook-Id": id, "webhook-timestamp": timestamp, "WEBHOOK-SIGNATURE": signature]
    _ = try? verifier.verify(headers: headers, body: body, now: now)

    guard !id.isEmpty, let key = try? WebhookKey(secret: secret) else { return 0 }
    let seconds = Int64(now.timeIntervalSince1970)
    let good = WebhookSignature.sign(id: id, timestamp: seconds, body: body, key: key)
    do {
        try verifier.verify(id: id, timestamp: String(seconds), signature: good, body: body, now: now)
        try verifier.verify(id: id, timestamp: String(seconds), signature: signature + " " + good, body: body, now: now)
    } catch {
        fatalError("a signature the daemon made was refused: \(error)")
    }
    // Flip one bit of the MAC's base64 (after "v1,"), chosen by the body's length.
    var bad = Array(good.utf8)
    let index = 3 + body.count % (bad.count - 4)
    bad[index] = bad[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
    let forged = String(decoding: bad, as: UTF8.self)
    precondition(
        (try? verifier.verify(id: id, timestamp: String(seconds), signature: forged, body: body, now: now)) == nil,
        "a changed signature was accepted")
    precondition(
        (try? verifier.verify(id: id, timestamp: String(seconds), signature: good, body: body + [0], now: now)) == nil,
        "a signature was accepted for another body")
    return 0
}
