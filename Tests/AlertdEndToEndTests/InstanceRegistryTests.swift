// Issue 44 items 12 and 7, against the real binaries on one PostgreSQL database: every
// instance holds a session-level advisory lock while it runs and says what it supports in
// a table of instances. A killed instance's delivery leases are taken over at once, where
// they were waited out; an instance alive but slow keeps its own; and while an instance
// without quorum support serves the database, alerts with a quorum above 1 are refused.

import AlertdTestSupport
import Foundation
import Glibc
import Testing

@Suite("Instances on PostgreSQL: who is alive, and what each supports", .serialized)
struct InstanceRegistryTests {
    static let question = #"{"title":"Ship build 9?","buttons":[{"title":"Ship"}],"callback_url":"URL"}"#

    @Test(
        "two instances, an alert answered (200), every instance killed with -9 at once and started again: the callback is delivered within 2 s"
    )
    func restartedDeploymentDeliversAtOnce() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        // An attempt the killed instance may have begun never ends: the delivery stays its own,
        // under a lease of callbacks.timeout + 5 s (30 s had it not begun).
        receiver.behave(.hang)
        let cluster = try await Cluster.start(2, config: callbackConfig(durability: "full", timeout: 10))
        defer { cluster.cleanup() }
        let http = cluster.clients()
        let alert = try await http[0].postAlert("ops", Self.question.replacingOccurrences(of: "URL", with: receiver.url))
        let choice = try await http[1].choose("ops", id(alert), #"{"button":"Ship"}"#)
        try #require(choice.status == 200, "\(choice.text)")
        await withTaskGroup(of: Void.self) { group in
            for instance in cluster.instances { group.addTask { await instance.kill9() } }
        }
        receiver.behave(.status(204))

        let restarting = ContinuousClock.now
        let restarted = try await withThrowingTaskGroup(of: Daemon.self) { group in
            for instance in cluster.instances { group.addTask { try await instance.restart() } }
            var started: [Daemon] = []
            for try await daemon in group { started.append(daemon) }
            return started
        }
        defer { for daemon in restarted { daemon.cleanup() } }
        let up = ContinuousClock.now
        // The first request made after the restart began: the killed instances' hung ones came before.
        var delivered: WebhookReceiver.Received?
        var count = 1
        while delivered == nil {
            let received = try await receiver.waitForRequests(count: count, timeout: 20)
            delivered = received.first { $0.receivedAt > restarting }
            count = received.count + 1
        }
        let request = try #require(delivered)
        #expect(id(try verifiedAlert(request)) == id(alert))
        #expect(
            request.receivedAt - up < .seconds(2),
            "delivered \(request.receivedAt - up) after both instances were up (\(request.receivedAt - restarting) after the restart began)"
        )
        let list = try await deliveries(restarted[0].client(), "ops", id(alert)) { $0.first?["state"] as? String == "delivered" }
        #expect(list.count == 1)
        let ids = Set(receiver.requests.compactMap { $0.header("webhook-id") })
        #expect(ids.count == 1, "one event, one webhook-id on every attempt: \(ids)")
    }

    @Test("an instance alive but slow (stopped with SIGSTOP) keeps the delivery it holds until its lease runs out")
    func aliveButSlowKeepsItsLease() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        receiver.behave(.hang)
        // Its attempt's lease: callbacks.timeout + 5 = 8 s.
        let cluster = try await Cluster.start(2, config: callbackConfig(durability: "full", timeout: 3, retryInitial: 0.2, retryMax: 0.5))
        defer { cluster.cleanup() }
        let http = cluster.clients()
        let alert = try await http[0].postAlert("ops", Self.question.replacingOccurrences(of: "URL", with: receiver.url))
        #expect(try await http[0].choose("ops", id(alert), #"{"button":"Ship"}"#).status == 200)
        let first = try #require(try await receiver.waitForRequests(count: 1, timeout: 20).first)
        // Frozen mid-attempt: its connections stay open, and so does its lock.
        #expect(cluster.instances[0].sendSignal(SIGSTOP))
        defer { cluster.instances[0].sendSignal(SIGCONT) }
        receiver.behave(.status(204))
        let second = try #require(try await receiver.waitForRequests(count: 2, timeout: 30).dropFirst().first)
        #expect(
            second.receivedAt - first.receivedAt > .seconds(7.5),
            "the other instance attempted it \(second.receivedAt - first.receivedAt) after the frozen one began: within its lease")
        #expect(second.header("webhook-id") == first.header("webhook-id"))
        let list = try await deliveries(http[1], "ops", id(alert)) { $0.first?["state"] as? String == "delivered" }
        #expect(list.count == 1)
    }

    @Test(
        "while an alertd older than the registry listens on the database, a quorum above 1 is 503 naming it; quorum 1 is taken; once it is gone, quorum is taken again"
    )
    func quorumRefusedBesideAnOlderInstance() async throws {
        let (tokens, secrets) = try await deciders()
        let cluster = try await Cluster.start(1, config: tokens)
        defer { cluster.cleanup() }
        let http = cluster.clients()[0]
        let deployer = bearer(secrets["deployer"])
        let approval = #"{"title":"Deploy?","quorum":2,"buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#
        #expect(try await http.post("/v1/clients/ops/alerts", json: approval, headers: deployer).status == 201)

        // What an instance of a version before the registry leaves in the database: its LISTEN
        // connection, of alertd's role, naming no instance.
        let older = try await cluster.postgres.listen("alertd", database: cluster.database, user: "postgres")
        let refused = try await Self.awaitStatus(503, http, "/v1/clients/ops/alerts", approval, deployer)
        let problem = try refused.jsonObject()
        #expect(problem["code"] as? String == "unavailable")
        let detail = problem["detail"] as? String ?? ""
        #expect(detail.contains("without quorum support") && detail.contains("older than 0.1.0"), "\(detail)")
        #expect(refused.header("Retry-After") == "10")
        let plain = #"{"title":"Deploy?","buttons":[{"title":"Deploy"}]}"#
        #expect(try await http.post("/v1/clients/ops/alerts", json: plain, headers: deployer).status == 201, "quorum 1 is taken")

        await older.stop()
        _ = try await Self.awaitStatus(201, http, "/v1/clients/ops/alerts", approval, deployer)
    }

    @Test("a live instance registered without quorum support refuses quorum everywhere; once its lock is free, it counts as dead")
    func quorumRefusedBesideAnInstanceWithoutIt() async throws {
        let (tokens, secrets) = try await deciders()
        let cluster = try await Cluster.start(1, config: tokens)
        defer { cluster.cleanup() }
        let http = cluster.clients()[0]
        let deployer = bearer(secrets["deployer"])
        let approval = #"{"title":"Deploy?","quorum":2,"buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#
        // A registered instance of a version without quorum, alive: its lock held by a session.
        let session = try await cluster.postgres.session(database: cluster.database)
        try await session.run("SELECT pg_advisory_lock(\(0x616C_6572), 4242)")
        try await session.run(
            "INSERT INTO instances (id, lock_key, version, capabilities, started_at) VALUES ('noquorum', 4242, '0.0.9', '', 0)")
        let refused = try await Self.awaitStatus(503, http, "/v1/clients/ops/alerts", approval, deployer)
        let detail = try refused.jsonObject()["detail"] as? String ?? ""
        #expect(detail.contains("instance noquorum (alertd 0.0.9)"), "\(detail)")

        await session.close()
        _ = try await Self.awaitStatus(201, http, "/v1/clients/ops/alerts", approval, deployer)
    }

    /// Posts `body` until the answer is `status` (instances read who serves every second); that answer.
    static func awaitStatus(
        _ status: Int, _ http: LiveClient, _ path: String, _ body: String, _ headers: [(String, String)],
        timeout: Duration = .seconds(10)
    ) async throws -> TestResponse {
        let deadline = ContinuousClock.now + timeout
        while true {
            let response = try await http.post(path, json: body, headers: headers)
            if response.status == status { return response }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("still \(response.status) after \(timeout), wanted \(status): \(response.text)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
