public import AlertdReceipts
public import AlertdWire
import NIOCore
import NIOHTTP1

// MARK: Receipts

extension AlertdClient {
    /// The public keys the daemon's receipts are signed with (SPEC §14): `GET /v1/keys`, a JWKS,
    /// the signing key first and the rotated ones after it.
    ///
    /// ```swift
    /// let keys = try await alerts.receiptKeys()
    /// try receipt.verify(with: keys)
    /// ```
    public func receiptKeys() async throws -> ReceiptKeySet {
        let answer = try await transport.send(.GET, "/v1/keys", timeout: requestTimeout)
        do {
            return try ReceiptKeySet(jwks: try JSONParser.parse(Array(answer.body.readableBytesView)))
        } catch {
            throw AlertdError(kind: .invalidResponse, status: answer.status, message: "the answer is not a JWKS of Ed25519 keys: \(error)")
        }
    }

    /// The receipt of a decided alert (SPEC §14): `GET /v1/clients/{client}/alerts/{id}/receipt`,
    /// ``ProblemCode/notFound`` while it is pending. Check it with the deployment's keys and the
    /// alert it is about: ``SignedReceipt/verify(with:for:)`` checks the signature, that
    /// `content_sha256` is the hash of what the alert asked, and that it says what the alert's
    /// result says.
    ///
    /// ```swift
    /// let receipt = try await alerts.receipt(on: "ops", id: alert.id)
    /// try receipt.verify(with: try await alerts.receiptKeys(), for: alert)
    /// ```
    public func receipt(on client: String, id: String) async throws -> SignedReceipt {
        let answer = try await transport.send(.GET, Self.alertPath(client, id) + "/receipt", timeout: requestTimeout)
        do {
            return try SignedReceipt(text: String(decoding: answer.body.readableBytesView, as: UTF8.self))
        } catch {
            throw AlertdError(kind: .invalidResponse, status: answer.status, message: "the answer is not a receipt: \(error)")
        }
    }

    /// An alert as a long-poll answers it (`GET …/alerts/{id}?wait=N`), with its receipt once
    /// it is terminal (SPEC §14): what ``presentUntilTerminal(_:on:idempotencyKey:progress:)``
    /// reads, and the way to have both at once.
    ///
    /// ```swift
    /// let (alert, receipt) = try await alerts.polledAlert(on: "ops", id: id, wait: 60)
    /// if let receipt { try receipt.verify(with: keys, for: alert) }
    /// ```
    public func polledAlert(on client: String, id: String, wait: Int) async throws -> (alert: AlertResource, receipt: SignedReceipt?) {
        let answer = try await transport.send(
            .GET, Self.alertPath(client, id), query: [("wait", String(max(0, wait)))], timeout: timeout(waiting: wait))
        let alert = try transport.decode(AlertResource.self, from: answer)
        do {
            guard case .object(let members) = try JSONParser.parse(Array(answer.body.readableBytesView)),
                case .object(let receipt)? = members["receipt"]
            else { return (alert, nil) }
            return (alert, try SignedReceipt(json: receipt))
        } catch {
            throw AlertdError(kind: .invalidResponse, status: answer.status, message: "the alert's receipt is not a receipt: \(error)")
        }
    }

    /// One page of the deployment's audit log (SPEC §14): `GET /v1/audit`, the receipts after
    /// `seq` `after` in `seq` order (an `admin` token of every client). Page on with
    /// ``AuditPage/nextAfter`` until a page comes back empty.
    ///
    /// ```swift
    /// var after = 0
    /// while true {
    ///     let page = try await alerts.audit(after: after)
    ///     if page.receipts.isEmpty { break }
    ///     for receipt in page.receipts { try archive(receipt.encoded()) }
    ///     after = page.nextAfter
    /// }
    /// ```
    public func audit(after: Int = 0, limit: Int? = nil) async throws -> AuditPage {
        var query = [("after", String(max(0, after)))]
        if let limit { query.append(("limit", String(limit))) }
        let answer = try await transport.send(.GET, "/v1/audit", query: query, timeout: requestTimeout)
        do {
            guard case .object(let members) = try JSONParser.parse(Array(answer.body.readableBytesView)),
                case .array(let items)? = members["receipts"], case .number(let next)? = members["next_after"],
                let nextAfter = next.wholeInt
            else { throw AlertdError(kind: .invalidResponse, status: answer.status, message: "the answer is not a page of the audit log") }
            var receipts: [SignedReceipt] = []
            for item in items {
                guard case .object(let receipt) = item else { throw ReceiptError.malformed }
                receipts.append(try SignedReceipt(json: receipt))
            }
            // A page that does not move on would have a reader of the whole log ask for it forever.
            if let last = receipts.last, nextAfter != last.receipt.seq || last.receipt.seq <= after {
                throw AlertdError(
                    kind: .invalidResponse, status: answer.status,
                    message: "the audit log's page after \(after) does not move on (next_after \(nextAfter))")
            }
            return AuditPage(receipts: receipts, nextAfter: nextAfter)
        } catch let error as AlertdError {
            throw error
        } catch {
            throw AlertdError(kind: .invalidResponse, status: answer.status, message: "the audit log holds what is not a receipt: \(error)")
        }
    }
}

/// A page of the audit log (``AlertdClient/audit(after:limit:)``).
public struct AuditPage: Sendable, Hashable {
    /// In `seq` order.
    public var receipts: [SignedReceipt]
    /// The `after` of the next page: the last receipt's `seq`, or the `after` asked when none came.
    public var nextAfter: Int

    public init(receipts: [SignedReceipt], nextAfter: Int) {
        self.receipts = receipts
        self.nextAfter = nextAfter
    }
}
