import AlertdInProcess
import AlertdTestSupport
import Foundation
import Testing

/// Two alertd instances built in this process on one PostgreSQL database: each
/// keeps a copy of the queues it committed, and must see what the other
/// changed (SPEC §9). The end-to-end tier does the same with processes, a
/// balancer and failures; here the queue rules themselves, fast.
@Suite("Two instances on one PostgreSQL database")
struct SharedStoreTests {
    /// Runs `body` with two in-process instances sharing a new database.
    private func withTwo(
        _ policy: String = "fifo", more: String = "", _ body: (InProcessAlertd, InProcessAlertd) async throws -> Void
    ) async throws {
        let server = try await TestPostgres.shared()
        let url = try await server.borrowDatabase()
        let config =
            Contract.baseConfig + """
                clients:
                  stacked: {policy: stack}
                store:
                  backend: postgres
                  postgres: {url: "\(url)", pool_size: 4}
                receipts: {key_file: \(TestReceiptKey.path)}

                """ + more
        let outcome: Result<Void, any Error>
        do {
            try await withInProcessAlertd(config: config) { a in
                try await withInProcessAlertd(config: config) { b in try await body(a, b) }
            }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await server.giveBack(url)
        try outcome.get()
    }

    @Test("posts alternating between instances form one fifo queue; choices on either display the next on both")
    func fifoAcrossInstances() async throws {
        try await withTwo { a, b in
            let client = Contract.uniqueClient("shared-fifo")
            var ids: [String] = []
            for index in 0..<6 {
                let instance: any TestClient = index.isMultiple(of: 2) ? a : b
                ids.append(Contract.id(try await instance.create(client, Contract.alert("q\(index)"))))
            }
            #expect(try await a.pendingIDs(client) == ids)
            #expect(try await b.pendingIDs(client) == ids)
            #expect(try await b.alert(client, ids[3])["position"] as? Int == 3)

            // Each instance chooses in turn. The one that chose shows the next alert at once; the
            // other learns of it through NOTIFY: its long-poll `after` the chosen one returns with it.
            for (index, id) in ids.enumerated() {
                let (chooser, other): (any TestClient, any TestClient) = index.isMultiple(of: 2) ? (b, a) : (a, b)
                #expect(try await chooser.choose(client, id, ["button": "Yes"]).status == 200, "choice \(index)")
                let next = index + 1 < ids.count ? ids[index + 1] : nil
                for (instance, query) in [(chooser, ""), (other, "?wait=10&after=\(id)")] {
                    let current = try await instance.get("/v1/clients/\(client)/alerts/current\(query)")
                    if let next {
                        #expect(current.status == 200, "after choice \(index)\(query)")
                        #expect(Contract.id(try current.jsonObject()) == next, "after choice \(index)\(query)")
                    } else {
                        #expect(current.status == 204, "after the last choice\(query)")
                    }
                }
            }
            #expect(try await a.allAlerts(client).allSatisfy { $0["state"] as? String == "answered" })
        }
    }

    @Test("a stack client shows the newest of the highest priority, whichever instance posted or withdrew")
    func stackAcrossInstances() async throws {
        try await withTwo { a, b in
            let low = Contract.id(try await a.create("stacked", Contract.alert("low")))
            let high = Contract.id(try await b.create("stacked", Contract.alert("high", priority: 5)))
            let newer = Contract.id(try await a.create("stacked", Contract.alert("newer")))
            #expect(try await a.pendingIDs("stacked") == [high, newer, low])
            #expect(try await b.withdraw("stacked", high).status == 200)
            // a's copy of the queue was made before b's withdrawal: its next change must start from b's.
            let newest = Contract.id(try await a.create("stacked", Contract.alert("newest")))
            #expect(try await b.pendingIDs("stacked") == [newest, newer, low])
            #expect(try await a.pendingIDs("stacked") == [newest, newer, low])
            #expect(try await b.choose("stacked", newest, ["button": "No"]).status == 200)
            #expect(try await a.choose("stacked", newer, ["button": "No"]).status == 200)
            // b learns of a's choice through NOTIFY: its long-poll after `newer` returns `low`.
            let current = try await b.get("/v1/clients/stacked/alerts/current?wait=10&after=\(newer)")
            #expect(current.status == 200)
            #expect(Contract.id(try current.jsonObject()) == low)
        }
    }

    @Test("two instances posting to one client at full speed keep one order, positions 0…n-1 on both, one alert per Idempotency-Key")
    func fullSpeedOneClient() async throws {
        try await withTwo { a, b in
            let client = Contract.uniqueClient("shared-burst")
            // 90 posts without a key and 30 keys posted three times each (twice through one
            // instance, once through the other), all at once: flushes of both instances meet
            // on the client's lock, each bringing its copy of the queue up to date.
            let answers = try await withThrowingTaskGroup(of: (key: String?, status: Int, id: String).self) { group in
                for index in 0..<90 {
                    group.addTask {
                        let response = try await (index.isMultiple(of: 2) ? a : b).post(client, Contract.alert("n\(index)"))
                        return (nil, response.status, Contract.id(try response.jsonObject()))
                    }
                }
                for key in 0..<30 {
                    for copy in 0..<3 {
                        group.addTask {
                            let instance: any TestClient = (key + copy).isMultiple(of: 2) ? a : b
                            let response = try await instance.post(
                                client, Contract.alert("k\(key)"), headers: [("Idempotency-Key", "k\(key)")])
                            return ("k\(key)", response.status, Contract.id(try response.jsonObject()))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.filter { $0.key == nil }.allSatisfy { $0.status == 201 })
            let byKey = Dictionary(grouping: answers.filter { $0.key != nil }, by: { $0.key! })
            for (key, posts) in byKey {
                #expect(Set(posts.map(\.id)).count == 1, "\(key): one alert, got \(posts.map(\.id))")
                #expect(posts.map(\.status).sorted() == [200, 200, 201], "\(key): one creation, two replays")
            }
            let created = Set(answers.map(\.id))
            #expect(created.count == 120)

            // One order, the same through either instance, holding each alert once.
            let order = try await a.list(client, "limit=1000").alerts.map(Contract.id)
            #expect(order.count == 120)
            #expect(Set(order) == created)
            #expect(try await b.list(client, "limit=1000").alerts.map(Contract.id) == order)
            // Each alert's position is its place in that order, read through either instance.
            for (index, id) in order.enumerated() {
                let instance: any TestClient = index.isMultiple(of: 2) ? b : a
                #expect(try await instance.alert(client, id)["position"] as? Int == index, "\(id) at \(index)")
            }
            // A post acknowledged before another is sent comes before it, whichever instance took them.
            let late = [
                Contract.id(try await b.create(client, Contract.alert("late-b"))),
                Contract.id(try await a.create(client, Contract.alert("late-a"))),
            ]
            #expect(Array(try await a.list(client, "limit=1000").alerts.map(Contract.id).suffix(2)) == late)

            // What the flushes cost, as /metrics counts it: four round trips each (BEGIN, the
            // locks, the read, COMMIT), two more when it wrote (the write, the notification after
            // the commit), one more to wait for locks all held elsewhere, one in the rare case of
            // a cached copy newer than the database; never one per change.
            for instance in [a, b] {
                let text = try await instance.get("/metrics").text
                func sample(_ name: String) -> Double? {
                    text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
                }
                let flushes = try #require(sample("alertd_store_commit_duration_seconds_count"))
                let changes = try #require(sample("alertd_store_changes_total"))
                let trips = try #require(sample("alertd_store_round_trips_total"))
                #expect(flushes >= 1 && changes >= flushes, "\(changes) changes in \(flushes) flushes")
                #expect(trips >= 4 * flushes && trips <= 8 * flushes, "\(trips) round trips in \(flushes) flushes")
            }
        }
    }

    @Test("posts to 40 clients at once through both instances: each client's queue holds its posts once, in one order on both")
    func manyClientsAtOnce() async throws {
        try await withTwo { a, b in
            let clients = (0..<40).map { Contract.uniqueClient("shared-many-\($0)") }
            // Each instance's flushes hold posts of many clients; both take every client.
            let answers = try await withThrowingTaskGroup(of: (client: String, id: String).self) { group in
                for (index, client) in clients.enumerated() {
                    for round in 0..<4 {
                        group.addTask {
                            let instance: any TestClient = (index + round).isMultiple(of: 2) ? a : b
                            return (client, Contract.id(try await instance.create(client, Contract.alert("r\(round)"))))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let posted = Dictionary(grouping: answers, by: \.client).mapValues { Set($0.map(\.id)) }
            for client in clients {
                let throughA = try await a.pendingIDs(client)
                #expect(Set(throughA) == posted[client], "\(client)")
                #expect(throughA.count == 4, "\(client)")
                #expect(try await b.pendingIDs(client) == throughA, "\(client)")
                // The first of the order is displayed, on both.
                for instance in [a, b] as [any TestClient] {
                    let current = try await instance.get("/v1/clients/\(client)/alerts/current")
                    #expect(current.status == 200)
                    #expect(Contract.id(try current.jsonObject()) == throughA.first, "\(client)")
                }
            }
        }
    }

    @Test("an Idempotency-Key posted to both instances creates one alert; the repeat on either answers it")
    func oneKeyTwoInstances() async throws {
        try await withTwo { a, b in
            let client = Contract.uniqueClient("shared-key")
            let key = [("Idempotency-Key", "deploy-7")]
            async let first = a.post(client, Contract.alert("deploy"), headers: key)
            async let second = b.post(client, Contract.alert("deploy"), headers: key)
            let answers = try await [first, second]
            #expect(answers.map(\.status).sorted() == [200, 201])
            #expect(Set(try answers.map { Contract.id(try $0.jsonObject()) }).count == 1)
            #expect(try await a.allAlerts(client).count == 1)
            #expect(try await b.post(client, Contract.alert("deploy"), headers: key).status == 200)
        }
    }

    @Test("votes made at the same moment on both instances all count; the one that completes the quorum answers it, once")
    func votesOnTwoInstances() async throws {
        let (tokens, secrets) = try await deciders()
        let client = Contract.uniqueClient("shared-quorum")
        // A webhook on loopback, which the default deny list refuses: its deliveries are
        // recorded all the same, one per event.
        let hook = "webhooks:\n  - {client: \(client), url: \"http://127.0.0.1:9/quorum\", secret: \"s\"}\n"
        try await withTwo(more: tokens + hook) { a, b in
            let voters = [(As(a, secrets["alice"]), "alice"), (As(b, secrets["bob"]), "bob"), (As(a, secrets["carol"]), "carol")]
            for round in 0..<8 {
                let quorum = round.isMultiple(of: 2) ? 2 : 3
                let poster = As(round.isMultiple(of: 2) ? b : a, secrets["deployer"])
                let id = Contract.id(try await poster.create(client, approval(quorum)))
                let answers = try await withThrowingTaskGroup(of: (String, TestResponse).self) { group in
                    for (voter, name) in voters.prefix(quorum) {
                        group.addTask { (name, try await voter.vote(client, id, "Deploy")) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(answers.allSatisfy { $0.1.status == 200 }, "round \(round): \(answers.map { $0.1.text })")
                let states = try answers.map { try $0.1.jsonObject()["state"] as? String ?? "?" }
                #expect(states.sorted() == ["answered"] + Array(repeating: "displayed", count: quorum - 1), "round \(round)")
                let completer = try #require(answers.first { (try? $0.1.jsonObject()["state"] as? String) == "answered" }?.0)
                for instance in [a, b] {
                    let alert = try await As(instance, secrets["alice"]).alert(client, id)
                    let result = try #require(alert["result"] as? [String: Any], "round \(round)")
                    #expect(result["decided_by"] as? String == completer, "round \(round)")
                    let votes = ballot(result["votes"])
                    #expect(
                        votes.count == quorum && Set(votes).count == quorum && votes.last == "\(completer):Deploy",
                        "round \(round): \(votes)")
                    let list = try await instance.get("/v1/clients/\(client)/alerts/\(id)/deliveries", headers: bearer(secrets["alice"]))
                    #expect((try list.jsonObject()["deliveries"] as? [Any])?.count == 1, "round \(round): one event: \(list.text)")
                }
            }
        }
    }

    @Test("one Alertmanager notification taken by both instances at once posts one alert; a resolution on either withdraws it")
    func alertmanagerTwoInstances() async throws {
        try await withTwo(more: "integrations:\n  alertmanager:\n    url: \"http://127.0.0.1:9\"\n") { a, b in
            let client = Contract.uniqueClient("shared-am")
            @Sendable func firing() -> [[String: Any]] { [AM.alert("5555555555555555"), AM.alert("5555555555555556", alertname: "Other")] }
            async let first = a.receipts(client, firing())
            async let second = b.receipts(client, firing())
            let answers = try await [first, second]
            let outcomes = answers.flatMap { $0.map { $0["outcome"] as? String ?? "?" } }
            #expect(outcomes.sorted() == ["created", "created", "repeated", "repeated"], "\(answers)")
            let pending = try await b.pendingIDs(client)
            #expect(pending.count == 2)
            #expect(Set(answers.flatMap { $0.compactMap { $0["alert_id"] as? String } }) == Set(pending))
            let resolved = try await b.receipts(client, [AM.alert("5555555555555555", status: "resolved")])
            #expect(resolved.first?["outcome"] as? String == "withdrawn")
            #expect(try await a.pendingIDs(client).count == 1)
        }
    }
}
