public import AlertdWire
public import Foundation

/// Checks that a callback or webhook request really comes from alertd
/// (Standard Webhooks signatures), for the program that receives it.
///
/// Give it the request's headers and its body exactly as received — the raw
/// bytes, before any JSON decoding — and the secret: the webhook's secret, or
/// the daemon's `callbacks.signing_secret` for a `callback_url`.
///
/// ```swift
/// let verifier = try WebhookVerifier(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
///
/// // In the request handler:
/// do {
///     let webhook = try verifier.verify(headers: request.headers, body: request.body)
///     // Delivery is at least once: skip a webhook.id already handled.
/// } catch {
///     return .unauthorized  // `error` says why: a missing header, a stale timestamp, a bad signature
/// }
/// ```
///
/// It checks that `webhook-id`, `webhook-timestamp` and `webhook-signature`
/// are present, that the timestamp is within ``tolerance`` of now in either
/// direction (a captured request cannot be replayed later), and that one of
/// the `v1,<base64>` signatures in `webhook-signature` (several, separated by
/// spaces, appear while a secret is being rotated) is HMAC-SHA256 of
/// `"<id>.<timestamp>.<body>"` under the secret. Signatures of other versions
/// are ignored. Signatures are compared in constant time.
public struct WebhookVerifier: Sendable {
    /// How far the `webhook-timestamp` may be from now, in seconds, in the
    /// past or the future. Five minutes by default.
    public var tolerance: TimeInterval

    private let key: WebhookKey

    /// A verifier for `secret`: `whsec_<base64>` keys with the decoded bytes,
    /// anything else with its UTF-8 bytes.
    ///
    /// - Throws: ``WebhookSecretError`` when the secret is empty, or starts with
    ///   `whsec_` and the rest is not base64.
    public init(secret: String, tolerance: TimeInterval = 300) throws(WebhookSecretError) {
        key = try WebhookKey(secret: secret)
        self.tolerance = tolerance
    }

    /// Verifies a request given its headers (names in any case) and raw body.
    ///
    /// - Returns: the webhook's id and timestamp. The id is the same on every
    ///   retry of one event: use it to skip duplicates.
    /// - Throws: ``WebhookVerificationError``.
    @discardableResult
    public func verify(headers: [String: String], body: some Collection<UInt8>, now: Date = Date()) throws(WebhookVerificationError)
        -> VerifiedWebhook
    {
        var id: String?
        var timestamp: String?
        var signature: String?
        for (name, value) in headers {
            switch name.lowercased() {
            case "webhook-id": id = value
            case "webhook-timestamp": timestamp = value
            case "webhook-signature": signature = value
            default: break
            }
        }
        guard let id else { throw .missingHeader("webhook-id") }
        guard let timestamp else { throw .missingHeader("webhook-timestamp") }
        guard let signature else { throw .missingHeader("webhook-signature") }
        return try verify(id: id, timestamp: timestamp, signature: signature, body: body, now: now)
    }

    /// Verifies a request given the values of its three `webhook-` headers and its raw body.
    ///
    /// ```swift
    /// try verifier.verify(id: id, timestamp: "1614265330", signature: "v1,g0hM9SsE…", body: body)
    /// ```
    ///
    /// - Throws: ``WebhookVerificationError``.
    @discardableResult
    public func verify(id: String, timestamp: String, signature: String, body: some Collection<UInt8>, now: Date = Date())
        throws(WebhookVerificationError) -> VerifiedWebhook
    {
        guard !id.isEmpty else { throw .missingHeader("webhook-id") }
        guard let seconds = Self.unixSeconds(timestamp) else { throw .invalidTimestamp }
        let age = now.timeIntervalSince1970 - Double(seconds)
        if age > tolerance { throw .staleTimestamp }
        if age < -tolerance { throw .futureTimestamp }

        let expected = Array(WebhookSignature.sign(id: id, timestamp: seconds, body: body, key: key).utf8)
        var matched = false
        for entry in signature.utf8.split(separator: UInt8(ascii: " ")) {
            guard let comma = entry.firstIndex(of: UInt8(ascii: ",")),
                entry[..<comma].elementsEqual(WebhookSignature.version.utf8)
            else { continue }
            // Every entry is compared, so the time taken says nothing of which matched.
            matched = WebhookSignature.constantTimeEquals(entry, expected) || matched
        }
        guard matched else { throw .badSignature }
        return VerifiedWebhook(id: id, timestamp: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// Decimal digits only, at most 18 of them (no sign, no fraction, no spaces).
    private static func unixSeconds(_ text: String) -> Int64? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// A request that ``WebhookVerifier`` accepted.
public struct VerifiedWebhook: Sendable, Hashable {
    /// The `webhook-id`: one per event, the same on every retry.
    public let id: String
    /// The `webhook-timestamp`: when this attempt was signed.
    public let timestamp: Date
}

/// Why ``WebhookVerifier`` refused a request.
///
/// ```swift
/// catch let error where error == .staleTimestamp { … }
/// ```
public struct WebhookVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case missingHeader(String)
        case invalidTimestamp
        case staleTimestamp
        case futureTimestamp
        case badSignature
    }

    private let code: Code
    private init(_ code: Code) { self.code = code }

    /// A `webhook-` header is absent (or, for `webhook-id`, empty); `name` is its lowercase name.
    public static func missingHeader(_ name: String) -> WebhookVerificationError { WebhookVerificationError(.missingHeader(name)) }
    /// `webhook-timestamp` is not a Unix time in whole seconds.
    public static let invalidTimestamp = WebhookVerificationError(.invalidTimestamp)
    /// `webhook-timestamp` is further in the past than the tolerance: possibly a replay.
    public static let staleTimestamp = WebhookVerificationError(.staleTimestamp)
    /// `webhook-timestamp` is further in the future than the tolerance: a clock is wrong.
    public static let futureTimestamp = WebhookVerificationError(.futureTimestamp)
    /// No `v1` signature in `webhook-signature` matches the body under the secret.
    public static let badSignature = WebhookVerificationError(.badSignature)

    public var description: String {
        switch code {
        case .missingHeader(let name): "the \(name) header is missing"
        case .invalidTimestamp: "webhook-timestamp is not a Unix time in seconds"
        case .staleTimestamp: "webhook-timestamp is too old"
        case .futureTimestamp: "webhook-timestamp is too far in the future"
        case .badSignature: "no v1 signature in webhook-signature matches the body"
        }
    }
}
