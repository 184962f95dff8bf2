import AlertdInProcess
import AlertdTestSupport
import AlertdDeliveryWorker
import AlertdEngine
import AlertdHTTP
import Crypto
import Foundation
import GRDB
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
import AlertdCore

@Suite("Every resource a caller can grow has a bound")
struct BoundsTests {
    private static func code(_ response: TestResponse) throws -> String? { try response.jsonObject()["code"] as? String }

    @Test("limits.max_clients: a post to a new client beyond it is 429 queue-full; known clients still take posts")
    func maxClients() async throws {
        try await withAlertd(config: "limits: { max_clients: 2 }") { daemon in
            _ = try await daemon.postAlert("a", #"{"title":"x"}"#)
            _ = try await daemon.postAlert("b", #"{"title":"x"}"#)
            let refused = try await daemon.send("POST", "/v1/clients/c/alerts", json: #"{"title":"x"}"#)
            #expect(refused.status == 429)
            #expect(try Self.code(refused) == "queue-full")
            #expect(
                try refused.jsonObject()["detail"] as? String ?? ""
                    == "alertd holds its maximum of 2 clients (limits.max_clients); client c is new"
            )
            #expect(try await daemon.send("POST", "/v1/clients/a/alerts", json: #"{"title":"y"}"#).status == 201)
            let listed = try await daemon.send("GET", "/v1/clients").jsonObject()["clients"] as! [[String: Any]]
            #expect(listed.map { $0["client"] as? String } == ["a", "b"], "the refused post created no client")
        }
    }

    @Test("limits.max_pending_total: beyond it any post is 429 queue-full; deciding one makes room")
    func maxPendingTotal() async throws {
        try await withAlertd(config: "limits: { max_pending_total: 3 }") { daemon in
            let first = try await daemon.postAlert("a", #"{"title":"1","buttons":[{"title":"OK"}]}"#)
            _ = try await daemon.postAlert("b", #"{"title":"2","buttons":[{"title":"OK"}]}"#)
            _ = try await daemon.postAlert("a", #"{"title":"3","buttons":[{"title":"OK"}]}"#)
            let refused = try await daemon.send("POST", "/v1/clients/c/alerts", json: #"{"title":"4"}"#)
            #expect(refused.status == 429)
            #expect(try Self.code(refused) == "queue-full")
            #expect(try await daemon.send("DELETE", "/v1/clients/a/alerts/\(first["id"] as! String)").status == 200)
            #expect(try await daemon.send("POST", "/v1/clients/c/alerts", json: #"{"title":"4"}"#).status == 201)
        }
    }

    /// The largest alert §2 allows, in 4-byte characters: about 27 KB of JSON, a footprint of about 23 KB,
    /// and about as much again for its rendered copy.
    static let largest: String = {
        let buttons = (0..<16).map { #"{"title":"\#($0)\#(String(repeating: "🔘", count: 60))"}"# }.joined(separator: ",")
        return
            #"{"title":"\#(String(repeating: "🚨", count: 256))","message":"\#(String(repeating: "📟", count: 4096))","buttons":[\#(buttons)]}"#
    }()

    @Test("limits.max_pending_bytes: a post beyond the bytes pending alerts may take is 429 queue-full and stores nothing")
    func maxPendingBytes() async throws {
        // The largest alert is budgeted at ~45 KB (its text, and its rendered copy): two fit, a third does not.
        try await withAlertd(config: "limits: { max_pending_bytes: 100000 }") { daemon in
            let first = try await daemon.postAlert("a", Self.largest)
            _ = try await daemon.postAlert("b", Self.largest)
            let refused = try await daemon.send("POST", "/v1/clients/c/alerts", json: Self.largest)
            #expect(refused.status == 429)
            #expect(try Self.code(refused) == "queue-full")
            #expect((try refused.jsonObject()["detail"] as? String ?? "").contains("limits.max_pending_bytes"))
            let listed = try await daemon.send("GET", "/v1/clients").jsonObject()["clients"] as! [[String: Any]]
            #expect(listed.map { $0["client"] as? String } == ["a", "b"], "the refused post created nothing")
            // Small ones still fit; withdrawing a large one makes room for another.
            #expect(try await daemon.send("POST", "/v1/clients/c/alerts", json: #"{"title":"small"}"#).status == 201)
            #expect(try await daemon.send("DELETE", "/v1/clients/a/alerts/\(first["id"] as! String)").status == 200)
            #expect(try await daemon.send("POST", "/v1/clients/c/alerts", json: Self.largest).status == 201)
        }
    }

    @Test("callbacks.max_pending_per_client: while a client's callbacks wait undelivered, its posts are 429; others' are not")
    func deliveriesPerClient() async throws {
        // Port 9 on loopback refuses the connection: each delivery fails and waits for a
        // retry the manual clock never reaches.
        try await withAlertd(
            config: """
                callbacks: { signing_secret: s3cret-signing, allow: ["127.0.0.1/32"], max_pending_per_client: 2 }
                """
        ) { daemon in
            for _ in 0..<2 {
                let alert = try await daemon.postAlert("noisy", #"{"title":"x","callback_url":"http://127.0.0.1:9/h"}"#)
                #expect(try await daemon.send("DELETE", "/v1/clients/noisy/alerts/\(alert["id"] as! String)").status == 200)
            }
            #expect(daemon.alertd.deliveries.backlog(of: "noisy") == 2)
            let refused = try await daemon.send("POST", "/v1/clients/noisy/alerts", json: #"{"title":"more"}"#)
            #expect(refused.status == 429)
            #expect(try Self.code(refused) == "queue-full")
            #expect((try refused.jsonObject()["detail"] as? String ?? "").contains("callbacks.max_pending_per_client"))
            #expect(try await daemon.send("POST", "/v1/clients/quiet/alerts", json: #"{"title":"fine"}"#).status == 201)
        }
    }

    @Test("a client with nothing pending and nothing retained is forgotten at the purge, also in the store")
    func idleClientsForgotten() async throws {
        try await withAlertd(config: "limits: { max_clients: 2 }\nalerts: { retention: 60 }") { daemon in
            let once = try await daemon.postAlert("once", #"{"title":"x","buttons":[{"title":"OK"}]}"#)
            _ = try await daemon.postAlert("busy", #"{"title":"still pending","buttons":[{"title":"OK"}]}"#)
            #expect(try await daemon.send("DELETE", "/v1/clients/once/alerts/\(once["id"] as! String)").status == 200)
            let hook = try await daemon.send("POST", "/v1/clients/once/webhooks", json: #"{"url":"https://hooks.example.com/hook"}"#)
            #expect(hook.status == 201)
            // Retained: the client stays (and holds its slot) while its alert is readable.
            await daemon.alertd.engine.purge()
            func listed(_ daemon: InProcessAlertd) async throws -> [String] {
                try (await daemon.send("GET", "/v1/clients").jsonObject()["clients"] as! [[String: Any]]).map { $0["client"] as! String }
            }
            #expect(try await listed(daemon) == ["busy", "once"])
            #expect(try await daemon.send("POST", "/v1/clients/third/alerts", json: #"{"title":"x"}"#).status == 429)

            daemon.clock.advance(seconds: 61)
            await daemon.alertd.engine.purge()
            await daemon.barrier()
            #expect(try await listed(daemon) == ["busy"])
            // A forgotten client is as one never used (§4): no current alert, empty lists.
            #expect(try await daemon.send("GET", "/v1/clients/once/alerts/current").status == 204)
            let all = "/v1/clients/once/alerts?state=queued,displayed,answered,dismissed,expired,withdrawn"
            #expect((try await daemon.send("GET", all).jsonObject()["alerts"] as? [Any])?.isEmpty == true)
            // Its webhooks are configuration, not queue state: they stay.
            let hooks = try await daemon.send("GET", "/v1/clients/once/webhooks").jsonObject()["webhooks"] as? [[String: Any]]
            #expect(hooks?.count == 1)
            // The store forgot it too: read here, as the purge service's first round after the
            // restart below would forget it anyway.
            let stored = try await DatabaseQueue(path: daemon.stateDir + "/alertd.sqlite").read {
                try String.fetchAll($0, sql: "SELECT id FROM clients ORDER BY id")
            }
            #expect(stored == ["busy"])
            // Its slot is free again.
            try await daemon.restart()
            #expect(try await listed(daemon) == ["busy"])
            #expect(try await daemon.send("POST", "/v1/clients/third/alerts", json: #"{"title":"x"}"#).status == 201)
            #expect(try await daemon.send("POST", "/v1/clients/once/alerts", json: #"{"title":"back"}"#).status == 429)
        }
    }

    @Test("GET /v1/clients pages by id like the alert list: limit, next_cursor, bad values are 400")
    func clientPaging() async throws {
        try await withAlertd { daemon in
            for client in ["e", "a", "d", "b", "c"] { _ = try await daemon.postAlert(client, #"{"title":"x","buttons":[{"title":"OK"}]}"#) }
            var seen: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let target = "/v1/clients?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await daemon.send("GET", target).jsonObject()
                let clients = page["clients"] as! [[String: Any]]
                #expect(clients.count <= 2)
                #expect(clients.allSatisfy { $0["pending"] as? Int == 1 && $0["displayed"] is String })
                seen += clients.map { $0["client"] as! String }
                cursor = page["next_cursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(seen == ["a", "b", "c", "d", "e"])
            #expect(pages == 3)
            let whole = try await daemon.send("GET", "/v1/clients").jsonObject()
            #expect((whole["clients"] as! [Any]).count == 5)
            #expect(whole["next_cursor"] is NSNull)
            for bad in ["limit=0", "limit=1001", "limit=x", "cursor=zzz", "cursor=c.%20bad", "page=2"] {
                let response = try await daemon.send("GET", "/v1/clients?\(bad)")
                #expect(response.status == 400, "\(bad)")
                #expect(try Self.code(response) == "bad-request")
            }
        }
    }

    @Test("limits.max_waiters_per_token: one token's long-polls cannot take every waiter slot")
    func waitersPerToken() async throws {
        let secrets = ["wall-a": "s3cret-wall-a", "wall-b": "s3cret-wall-b"]
        var config = "limits: { max_waiters_per_token: 2 }\nauth:\n  tokens:\n"
        for (name, secret) in secrets.sorted(by: { $0.key < $1.key }) {
            let hex = Token.hex(Array(SHA256.hash(data: Array(secret.utf8))))
            config += "    - { name: \(name), sha256: \"\(hex)\", roles: [read], clients: ['*'] }\n"
        }
        try await withAlertd(config: config) { daemon in
            let bearer = { (name: String) in [("Authorization", "Bearer \(secrets[name]!)")] }
            let parked = (0..<2).map { _ in daemon.begin("GET", "/v1/clients/ops/alerts/current?wait=30", headers: bearer("wall-a")) }
            #expect(parked.allSatisfy { !$0.isAnswered })
            let refused = try await daemon.send("GET", "/v1/clients/ops/alerts/current?wait=30", headers: bearer("wall-a"))
            #expect(refused.status == 503)
            #expect(try Self.code(refused) == "too-many-waiters")
            #expect(refused.header("Retry-After") != nil)
            let other = daemon.begin("GET", "/v1/clients/ops/alerts/current?wait=30", headers: bearer("wall-b"))
            #expect(!other.isAnswered, "another token still parks")
            #expect(try await daemon.send("GET", "/readyz").jsonObject()["waiters"] as? Int == 3)
        }
    }
}
