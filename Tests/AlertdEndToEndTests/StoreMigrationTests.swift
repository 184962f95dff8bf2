import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// `alertd migrate` and `alertd migrate-store` against the real binary and a
/// throwaway PostgreSQL server (issue 15 item 7).
@Suite("Store migrations: alertd migrate, alertd migrate-store")
struct StoreMigrationTests {
    @Test("alertd migrate applies the schema once and exits; again it says the schema is current")
    func migrate() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.createDatabase()
        let scratch = try ScratchDirectory()
        let config = scratch.url.appendingPathComponent("alertd.yaml")
        try Data("store:\n  backend: postgres\n  postgres:\n    url: \(url)\n".utf8).write(to: config)

        let first = try await Program.alertd(["migrate", "--config", config.path])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("applied migrations 1, 2"), "\(first.stdout)")
        let tables = try await server.psql(
            "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('alerts', 'clients', 'deliveries')",
            database: String(url.split(separator: "/").last!))
        #expect(tables.trimmingCharacters(in: .whitespacesAndNewlines) == "3")

        let again = try await Program.alertd(["migrate", "--config", config.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("schema was already current"), "\(again.stdout)")
    }

    @Test("alertd migrate against a database that cannot be reached says so at once and exits 1")
    func migrateUnreachable() async throws {
        let closed = try ReservedPort()
        defer { closed.release() }
        let scratch = try ScratchDirectory()
        let config = scratch.url.appendingPathComponent("alertd.yaml")
        let url = "postgres://postgres@127.0.0.1:\(closed.port)/alertd?sslmode=disable"
        try Data("store:\n  backend: postgres\n  postgres:\n    url: \"\(url)\"\n".utf8).write(to: config)
        let started = ContinuousClock.now
        let run = try await Program.alertd(["migrate", "--config", config.path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("cannot connect to \(url)"), "\(run.stderr)")
        // A bound for postgres-nio's minute of retries, not a benchmark: 16 s was seen on two
        // cores shared with a benchmark and two builds.
        #expect(ContinuousClock.now - started < .seconds(40), "not after postgres-nio's minute of retries")
    }

    @Test("migrate-store warns of a password on its command line, and names a password file it cannot read")
    func passwordOnTheCommandLine() async throws {
        let closed = try ReservedPort()
        defer { closed.release() }
        let scratch = try ScratchDirectory()
        let inline = try await Program.alertd([
            "migrate-store", "--from", "sqlite:\(scratch.url.path)", "--to", "postgres://alertd:hunter2@127.0.0.1:\(closed.port)/alertd",
        ])
        #expect(inline.stderr.contains("the password in --to is visible to every user"), "\(inline.stderr)")
        #expect(!inline.stderr.contains("hunter2"), "\(inline.stderr)")
        let missing = try await Program.alertd([
            "migrate-store", "--from", "sqlite:\(scratch.url.path)", "--to", "postgres://alertd@127.0.0.1:\(closed.port)/alertd",
            "--password-file", scratch.url.path + "/nowhere",
        ])
        // A bad argument: 64, as every refused argument of alertd's commands.
        #expect(missing.status == 64, "\(missing)")
        #expect(missing.stderr.contains("Error: --password-file: cannot read the password file"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("visible to every user"))
    }

    @Test("alertd migrate on the embedded store migrates the state directory, and refuses one alertd is running on")
    func migrateEmbedded() async throws {
        let scratch = try ScratchDirectory()
        let state = scratch.url.appendingPathComponent("state").path
        let config = scratch.url.appendingPathComponent("alertd.yaml")
        try Data("state_dir: \(state)\n".utf8).write(to: config)
        let run = try await Program.alertd(["migrate", "--config", config.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("alertd.sqlite: schema is current"), "\(run.stdout)")
        #expect(FileManager.default.fileExists(atPath: state + "/alertd.sqlite"))

        let daemon = try await Daemon.start(.init(config: "log:\n  level: info\n", stateDir: URL(fileURLWithPath: state)))
        defer { daemon.cleanup() }
        let refused = try await Program.alertd(["migrate", "--config", config.path])
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderr.contains("Error: state directory \(state) is in use by another alertd (pid "), "\(refused.stderr)")
    }

    @Test("migrate-store copies alerts, keys, webhooks and pending deliveries into PostgreSQL; a second copy is refused")
    func copy() async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.createDatabase()
        // The callback target answers 503 while alertd runs on SQLite: its delivery stays
        // pending. (It listens throughout: a port let go and bound again can be taken between.)
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        receiver.behave(.status(503))
        let callback = receiver.url
        let base = callbackConfig(durability: "full", retryInitial: 0.2, retryMax: 0.5) + "log:\n  level: info\n"

        let embedded = try await Daemon.start(.init(config: base))
        let api = embedded.client()
        let first = try await api.postAlert("ops", #"{"title":"first","buttons":[{"title":"OK"}]}"#)
        let second = try await api.postAlert(
            "ops", #"{"title":"second","buttons":[{"title":"OK"}]}"#, headers: [("Idempotency-Key", "deploy-42")])
        let answered = try await api.postAlert("web", #"{"title":"answered","buttons":[{"title":"Yes"}],"callback_url":"\#(callback)"}"#)
        #expect(try await api.choose("web", id(answered), #"{"button":"Yes"}"#).status == 200)
        let webhook = try await api.post("/v1/clients/ops/webhooks", json: #"{"url":"https://hooks.example.com/ops"}"#)
        #expect(webhook.status == 201)
        // At least one refused attempt recorded: the delivery is pending with history.
        _ = try await deliveries(api, "web", id(answered)) { attempts($0.first ?? [:]).count >= 1 }
        // An alert escalated to lead (SPEC §12), queued there between an alert posted before
        // its step and one posted after: its step, and its place, come along.
        let early = try await api.postAlert("lead", #"{"title":"lead early","buttons":[{"title":"OK"}]}"#)
        let escalated = try await api.postAlert(
            "ops", #"{"title":"escalated","buttons":[{"title":"OK"}],"escalation":[{"after":0.2,"to":"lead"}]}"#)
        let deadline = ContinuousClock.now + .seconds(15)
        while try await api.get("/v1/clients/lead/alerts").jsonObject()["alerts"].map({ ($0 as? [Any])?.count ?? 0 }) != 2 {
            guard ContinuousClock.now < deadline else { throw TestFailure("the step to lead was never taken") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let late = try await api.postAlert("lead", #"{"title":"lead late","buttons":[{"title":"OK"}]}"#)
        let leadBefore = try await api.get("/v1/clients/lead/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
        #expect(leadBefore.map(id) == [id(early), id(escalated), id(late)])
        let before = try await api.get("/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
        #expect(try await embedded.terminate() == 0)

        let copied = try await Program.alertd(["migrate-store", "--from", "sqlite:\(embedded.stateDir.path)", "--to", url])
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(
            // Two events: the callback, and the step's alert.escalated to ops's webhook.
            copied.stdout.contains("copied 3 clients, 6 alerts, 1 idempotency keys, 1 webhooks, 2 events, 2 deliveries"), "\(copied.stdout)"
        )
        #expect(copied.stdout.contains("1 escalations, 1 receipts"), "\(copied.stdout)")

        let refused = try await Program.alertd(["migrate-store", "--from", "sqlite:\(embedded.stateDir.path)", "--to", url])
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderr.contains("Error: ") && refused.stderr.contains("already holds alertd's data"), "\(refused.stderr)")

        // On PostgreSQL: the same queue in the same order, the key, the webhook; the delivery resumes.
        let refusedAttempts = receiver.requests.count
        receiver.behave(.status(204))
        let shared = try await Daemon.start(
            .init(
                config: base + "store:\n  backend: postgres\n  postgres:\n    url: \(url)\n"
                    // The key the embedded store made: the copy's receipts go on with it (SPEC §14).
                    + "receipts:\n  key_file: \(embedded.stateDir.path)/receipts-key.pem\n"))
        defer { shared.cleanup() }
        let moved = shared.client()
        let after = try await moved.get("/v1/clients/ops/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
        #expect(after.map(id) == before.map(id))
        #expect(after.map { $0["state"] as? String } == before.map { $0["state"] as? String })
        #expect(after.map { $0["position"] as? Int } == before.map { $0["position"] as? Int })
        let current = try await moved.get("/v1/clients/ops/alerts/current")
        #expect(current.status == 200)
        #expect(id(try current.jsonObject()) == id(first))
        // The escalated alert: on both queues, in its place on lead, its step as it was.
        let leadAfter = try await moved.get("/v1/clients/lead/alerts").jsonObject()["alerts"] as? [[String: Any]] ?? []
        #expect(leadAfter.map(id) == leadBefore.map(id))
        #expect(leadAfter.map { $0["position"] as? Int } == [0, 1, 2])
        let step = (leadAfter.first { id($0) == id(escalated) }?["escalated_to"] as? [[String: Any]])?.first
        let stepBefore = (leadBefore.first { id($0) == id(escalated) }?["escalated_to"] as? [[String: Any]])?.first
        #expect(step?["client"] as? String == "lead" && step?["at"] as? String == stepBefore?["at"] as? String)
        // One decision through lead decides it on ops too.
        #expect(try await moved.delete("/v1/clients/lead/alerts/\(id(escalated))").status == 200)
        #expect(
            (try await moved.get("/v1/clients/ops/alerts/\(id(escalated))").jsonObject())["state"] as? String == "withdrawn")
        // The receipt made on SQLite came along, and the chain goes on from it, signed with the
        // same key (SPEC §14): seq 2 links to seq 1's hash.
        guard case .array(let audit)? = try JSONParser.parse(try await moved.get("/v1/audit").body)["receipts"] else {
            throw TestFailure("GET /v1/audit answered no receipts")
        }
        let lines = try audit.map { String(decoding: try JCS.canonicalize($0), as: UTF8.self) }
        #expect(try lines.map { try SignedReceipt(text: $0).receipt.alertID } == [id(answered), id(escalated)])
        let keys = try ReceiptKeySet(jwks: try JSONParser.parse(try await moved.get("/v1/keys").body))
        let report = ChainVerifier.verify(lines: lines, keys: keys)
        #expect(report.isValid && report.firstLinkChecked && report.count == 2, "\(report)")

        let replay = try await moved.post(
            "/v1/clients/ops/alerts", json: #"{"title":"second","buttons":[{"title":"OK"}]}"#, headers: [("Idempotency-Key", "deploy-42")])
        #expect(replay.status == 200, "the key came along: \(replay.text)")
        #expect(id(try replay.jsonObject()) == id(second))

        let hooks = try await moved.get("/v1/clients/ops/webhooks").jsonObject()["webhooks"] as? [[String: Any]] ?? []
        #expect(hooks.map { $0["url"] as? String } == ["https://hooks.example.com/ops"])

        let settled = try await deliveries(moved, "web", id(answered), timeout: .seconds(30)) {
            $0.first?["state"] as? String == "delivered"
        }
        // Delivered means a 204, which the receiver gives only from now on; what it answered is its last request.
        let requests = receiver.requests
        #expect(requests.count > refusedAttempts)
        let event = try verifiedAlert(try #require(requests.last))
        #expect(id(event) == id(answered))
        #expect(attempts(settled[0]).count >= 2, "the attempts made on SQLite were copied, then one more: \(settled)")
    }
}
