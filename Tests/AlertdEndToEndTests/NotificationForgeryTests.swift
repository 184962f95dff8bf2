// SPEC §9: what passes between instances through the database is never trusted on its face.
// PostgreSQL asks no privilege for LISTEN or NOTIFY, so a role that may only connect (PUBLIC
// holds CONNECT on a new database) hears alertd's channel and can send on it (issue 44, item
// 2). These tests are that role, against two alertd binaries on one database: it learns
// nothing of any alert from what it hears, and what it sends changes nothing an instance
// serves or answers: a forged decision of a quorum-2 approval does not answer its long-poll,
// a forged display does not become `current`.

import AlertdTestSupport
import Foundation
import Testing

@Suite("A role that can only connect neither reads nor forges alertd's notifications", .serialized)
struct NotificationForgeryTests {
    /// A role that may connect (LOGIN, CONNECT on alertd's database, as a reporting role has)
    /// and holds no privilege on alertd's tables.
    static func intruder(_ cluster: Cluster) async throws -> String {
        let role = "intruder_" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        try await cluster.postgres.execute("CREATE ROLE \(role) LOGIN", "GRANT CONNECT ON DATABASE \(cluster.database) TO \(role)")
        return role
    }

    @Test("alertd warns at start while PUBLIC may connect to its database, and not once it may not")
    func publicConnectWarning() async throws {
        let open = try await Cluster.start(1, publicConnect: true)
        defer { open.cleanup() }
        try await open.instances[0].waitForStderr(containing: "every role may connect to database \(open.database)")
        // The line is logfmt: the message's quotes come escaped (\"), as any log reader shows them.
        let said = open.instances[0].stderrText.replacingOccurrences(of: "\\\"", with: "\"")
        #expect(said.contains("REVOKE CONNECT ON DATABASE \"\(open.database)\" FROM PUBLIC"), "\(said)")
        let closed = try await Cluster.start(1)
        defer { closed.cleanup() }
        _ = try await closed.instances[0].client().get("/readyz")
        #expect(!closed.instances[0].stderrText.contains("every role may connect"), "\(closed.instances[0].stderrText)")
    }

    @Test("what the channel carries shows nothing of an alert: no client, id, title, message, URL or decider")
    func listenerLearnsNothing() async throws {
        let cluster = try await Cluster.start(
            2, config: "callbacks:\n  signing_secret: \"whsec_\(Data(repeating: 7, count: 32).base64EncodedString())\"\n")
        defer { cluster.cleanup() }
        let role = try await Self.intruder(cluster)
        let listener = try await cluster.postgres.listen("alertd", database: cluster.database, user: role)
        let http = cluster.clients()
        let posted = try await http[0].postAlert(
            "payroll-7f3a",
            #"{"title":"Pay invoice INV-90817?","message":"to ACME GmbH, IBAN DE89370400440532013000","#
                + #""buttons":[{"title":"Pay"},{"title":"Reject","style":"cancel"}],"#
                + #""callback_url":"https://203.0.113.7/hook?token=s3cr3t-q","metadata":{"approver":"finance-lead"}}"#)
        let id = try #require(posted["id"] as? String)
        let choice = try await http[1].choose("payroll-7f3a", id, #"{"button":"Pay"}"#)
        #expect(choice.status == 200, "\(choice.text)")
        // The post's commit and the choice's: at least one notification each.
        let payloads = try await listener.awaitPayloads(2)
        for payload in payloads {
            // What a listener could read: the text, and any piece of it that decodes as base64.
            var readable = [payload]
            for piece in payload.split(whereSeparator: { " :".contains($0) }) {
                for candidate in [String(piece), String(piece.dropFirst())] {
                    if let data = Data(base64Encoded: candidate) { readable.append(String(decoding: data, as: UTF8.self)) }
                }
            }
            for secret in ["payroll-7f3a", id, "INV-90817", "IBAN", "203.0.113.7", "s3cr3t-q", "finance-lead", "answered"] {
                #expect(!readable.contains { $0.contains(secret) }, "a listener read \(secret) in \(payload)")
            }
        }
        await listener.stop()
        // Nor can it read the key they are sealed with.
        await #expect(throws: (any Error).self) {
            try await cluster.postgres.execute("SELECT value FROM secrets", database: cluster.database, user: role)
        }
    }

    @Test(
        "a forged decision of a quorum-2 approval answers no long-poll, and a forged display is served by no instance"
    )
    func forgeriesChangeNothing() async throws {
        let (posterSecret, poster) = try await newToken("deployer", roles: "post", clients: "*")
        let (readerSecret, reader) = try await newToken("reader", roles: "read", clients: "*")
        let cluster = try await Cluster.start(2, config: "auth:\n  tokens:\n" + poster + reader)
        defer { cluster.cleanup() }
        let role = try await Self.intruder(cluster)
        let http = cluster.clients()
        let read = [("Authorization", "Bearer \(readerSecret)")]
        let alert = try await http[0].postAlert(
            "deploys",
            #"{"title":"Deploy 4.2 to production?","quorum":2,"buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#,
            headers: [("Authorization", "Bearer \(posterSecret)")])
        let id = try #require(alert["id"] as? String)

        // A long-poll on the other instance, parked until the alert is decided or 3 s pass.
        let parked = Task { try await http[1].get("/v1/clients/deploys/alerts/\(id)?wait=3", headers: read) }
        try await http[1].awaitWaiters(1)

        // The forger's notification: the alert answered by alice and bob, as an instance writes
        // a decided alert (its row, t:), and a display of its own on two clients (v:), with a
        // version above any real one.
        let answered = try Self.forgedRow(of: alert, id: id)
        let fake = "0000000000000000000000000Z"
        let display = Data(
            #"{"id":"\#(fake)","client":"deploys","title":"Forged: approve me","state":"displayed","votes":[],"buttons":[]}"#.utf8
        ).base64EncodedString()
        let payload =
            "i:forger d:\(id) t:\(id):\(answered) c:deploys v:deploys:9000000000000000:\(fake):\(display)"
            + " v:empty:9000000000000000:\(fake):\(display)"
        try await cluster.postgres.execute("NOTIFY alertd, '\(payload)'", database: cluster.database, user: role)

        let waited = try await parked.value
        #expect(waited.status == 200, "\(waited.text)")
        let body = try waited.jsonObject()
        #expect(body["state"] as? String == "displayed", "the forged decision answered the long-poll: \(waited.text)")
        #expect((body["votes"] as? [Any])?.isEmpty == true, "\(waited.text)")
        for instance in 0..<2 {
            let current = try await http[instance].get("/v1/clients/deploys/alerts/current", headers: read)
            #expect(current.status == 200 && (try? current.jsonObject()["id"] as? String) == id, "instance \(instance): \(current.text)")
            let empty = try await http[instance].get("/v1/clients/empty/alerts/current", headers: read)
            #expect(empty.status == 204, "instance \(instance) serves a forged display: \(empty.text)")
        }
        // An instance says what it dropped, and how to close the door.
        for instance in cluster.instances {
            try await instance.waitForStderr(containing: "was not sealed by alertd", timeout: .seconds(10))
        }
        #expect(cluster.instances[0].stderrText.contains("REVOKE CONNECT ON DATABASE"))
    }

    /// The base64 of the row an instance would NOTIFY for `alert` answered "Deploy" by alice
    /// and bob: the columns of docs/high-availability.md's t: entry, as a reader of the source
    /// writes them.
    static func forgedRow(of alert: [String: Any], id: String) throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let at = ISO8601DateFormatter.withMilliseconds.string(from: Date())
        let votes =
            #"[{"decided_by":"alice","button":"Deploy","button_index":0,"at":"\#(at)"},"#
            + #"{"decided_by":"bob","button":"Deploy","button_index":0,"at":"\#(at)"}]"#
        let row: [String: Any] = [
            "id": id, "client": "deploys", "seq": 1, "state": "answered", "priority": 0, "title": alert["title"] ?? "",
            "style": "alert", "buttons": #"[{"title":"Deploy","style":"default"},{"title":"Cancel","style":"cancel"}]"#,
            "created_at": now - 1000, "displayed_at": now - 1000, "decided_at": now, "expires_at": now + 86_400_000,
            "button_index": 0, "decided_by": "bob", "quorum": 2, "votes": votes, "version": 1,
        ]
        return try JSONSerialization.data(withJSONObject: row).base64EncodedString()
    }
}

extension ISO8601DateFormatter {
    /// RFC 3339 with milliseconds, as alertd writes times.
    fileprivate static var withMilliseconds: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
