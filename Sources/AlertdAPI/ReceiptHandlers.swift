import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdReceipts
import AlertdWire

/// Signed receipts (SPEC §14): one alert's, the audit log, and the terminal long-poll answer
/// that carries its receipt.
extension API {
    /// `GET /v1/clients/{client}/alerts/{id}/receipt`: the receipt resource (its canonical JSON,
    /// as stored and signed); 404 while the alert is pending.
    func alertReceipt(_ call: Call) throws {
        let client = try call.client()
        _ = try call.query()
        let id = try call.alertID(on: client)
        call.answer({ [engine] () async throws(EngineError) in try await engine.receipt(of: id, on: client) }) { [self] result in
            switch result {
            case .success(let receipt): json(200, receipt.json)
            case .failure(let error): render(Problem(error))
            }
        }
    }

    /// `GET /v1/audit?after=SEQ&limit=N` (admin of every client): `{"receipts": [...], "next_after": N}`,
    /// the receipts after `seq` `after` (default 0) in `seq` order, at most `limit` (default 100,
    /// at most 1000); `next_after` is the last one's `seq` (`after` when none), the `after` of
    /// the next page. The log is the deployment's, every client's receipts in one chain: a token
    /// limited to some clients is refused (a chain with other clients' receipts left out could
    /// not be verified).
    func audit(_ call: Call) throws {
        let query = try call.query(["after", "limit"])
        let limit = try query.limit()
        var after = 0
        if let text = query["after"] {
            guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int(text),
                value <= Receipt.maxSeq
            else {
                throw Problem(.badRequest, "after must be a receipt's seq (an integer from 0 to 2^53 - 1), not \"\(text)\"")
            }
            after = value
        }
        if let principal = call.principal, !principal.clients.contains(where: { $0.text == "*" }) {
            throw Problem(
                .forbidden,
                "token \(principal.name) may touch only some clients (\(principal.clients.map(\.text).joined(separator: ", "))); "
                    + "the audit log holds every client's receipts in one chain, so it needs a token with clients: [\"*\"]")
        }
        call.answer({ [engine, after] () async throws(EngineError) in try await engine.audit(after: after, limit: limit) }) {
            [self, after] result in
            switch result {
            case .success(let receipts): json(200, Rendering.audit(receipts, after: after))
            case .failure(let error): render(Problem(error))
            }
        }
    }

    /// `GET /v1/clients/{client}/alerts/{id}?wait=N` (SPEC §4, §14): as ``getAlert(_:)`` without
    /// `wait`, and the answer carries `receipt`: the decision's receipt once the alert is
    /// terminal (`null` while it is pending, or for an alert decided before receipts). The
    /// receipt comes with the publication that wakes the waiter when this process committed the
    /// decision; otherwise (an alert already terminal, one another instance decided, a wait that
    /// ran out) it is read from the store.
    func pollAlert(_ call: Call, client: String, id: AlertID, wait: Int) {
        let owner = call.principal?.name
        let whole = call.seesCallbackURLs
        let render: @Sendable (Result<Engine.PolledAlert, EngineError>) -> HTTPResponse = { [self] result in
            switch result {
            case .success(let polled):
                var alert = polled.alert
                if !whole { alert.alert = Redaction.alert(alert.alert) }
                return json(200, Rendering.alert(alert.alert.json(position: alert.position), receipt: polled.receipt?.json))
            case .failure:
                return alertResponse(result.map(\.alert), whole: whole)
            }
        }
        call.answer(
            parking: { [engine] (later) async throws(EngineError) in
                let found = try await engine.alertOrPark(id, on: client, wait: wait, owner: owner) { decided, receipt in
                    if let decided, let receipt {
                        return later(Engine.PolledAlert(alert: PositionedAlert(decided, position: nil), receipt: receipt))
                    }
                    // Woken undecided (its wait is over, or alertd is stopping), or decided elsewhere:
                    // read as committed now, with its receipt.
                    call.answer(
                        { () async throws(EngineError) in try await engine.polled(try await engine.settledAlert(id, on: client)) }, render)
                }
                guard let found else { return nil }
                return try await engine.polled(found)
            }, render)
    }
}

extension Rendering {
    /// The alert resource `alert` (compact JSON of an object) with `"receipt"` as its last
    /// member: the receipt resource, or `null`.
    static func alert(_ alert: [UInt8], receipt: [UInt8]?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(alert.count + (receipt?.count ?? 4) + 12)
        out.append(contentsOf: alert.dropLast())
        out.append(contentsOf: #","receipt":"#.utf8)
        out.append(contentsOf: receipt ?? Array("null".utf8))
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `{"receipts": [...], "next_after": N}`.
    static func audit(_ receipts: [ReceiptRecord], after: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + receipts.reduce(0) { $0 + $1.json.count + 1 })
        out.append(contentsOf: #"{"receipts":["#.utf8)
        for (index, receipt) in receipts.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: receipt.json)
        }
        out.append(contentsOf: #"],"next_after":"#.utf8)
        out.append(contentsOf: String(receipts.last?.seq ?? after).utf8)
        out.append(UInt8(ascii: "}"))
        return out
    }
}
