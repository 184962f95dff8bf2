// Several alertd binaries on one PostgreSQL database (§9): what one instance promises
// holds across instances, an instance killed with -9 loses nothing acknowledged, the
// database stopped for a while is answered with 503s and then served again, and nginx
// balances instances as the docs deploy them. Real processes, a real PostgreSQL
// (TestPostgres), real receivers; every wait is for an event, bounded.

import AlertdTestSupport
import Foundation
import Glibc
import Testing

/// Serialized: each test runs three instances and load on a 2-core machine; run together
/// they would measure each other's load, not promptness.
@Suite("High availability: several instances on PostgreSQL", .serialized)
struct HighAvailabilityTests {
    // MARK: - One semantics across three instances

    @Test("a long-poll parked on any instance is answered as soon as a choice is made on another")
    func waitersWakeAcrossInstances() async throws {
        let cluster = try await Cluster.start(3)
        defer { cluster.cleanup() }
        let http = cluster.clients(timeout: .seconds(40))
        for chooser in 0..<3 {
            let client = "wake-\(chooser)"
            let asked = id(try await http[(chooser + 1) % 3].postAlert(client, oneButton))
            let next = id(try await http[(chooser + 2) % 3].postAlert(client, #"{"title":"Next","buttons":[{"title":"OK"}]}"#))
            // On every instance: one waiter on the alert, one on the client's display.
            var parked: [(instance: Int, onAlert: Bool, answer: Task<(TestResponse, ContinuousClock.Instant), any Error>)] = []
            for instance in 0..<3 {
                let api = http[instance]
                parked.append(
                    (instance, true, Task { (try await api.get("/v1/clients/\(client)/alerts/\(asked)?wait=30"), ContinuousClock.now) }))
                parked.append(
                    (
                        instance, false,
                        Task { (try await api.get("/v1/clients/\(client)/alerts/current?wait=30&after=\(asked)"), ContinuousClock.now) }
                    ))
            }
            for instance in 0..<3 { try await http[instance].awaitWaiters(2) }

            let chosenAt = ContinuousClock.now
            let choice = try await http[chooser].choose(client, asked, #"{"button":"Deploy"}"#)
            #expect(choice.status == 200, "the choice on instance \(chooser): \(choice.text)")
            for waiter in parked {
                let (answer, at) = try await waiter.answer.value
                let took = at - chosenAt
                let what =
                    "the \(waiter.onAlert ? "alert" : "current") waiter on instance \(waiter.instance), choice on instance \(chooser)"
                // §9: a choice on one instance answers a long-poll parked on another; the issue
                // asks 10 ms at p99 (bench/); here only "at once, not when the 30 s wait ran out":
                // 10 s is a bound for a waiter that is never woken, with room for three instances
                // and PostgreSQL on two loaded cores, not a benchmark.
                #expect(took < .seconds(10), "\(what) was answered \(took) after the choice")
                #expect(answer.status == 200, "\(what): \(answer.status) \(answer.text)")
                let body = try answer.jsonObject()
                if waiter.onAlert {
                    #expect(body["state"] as? String == "answered", "\(what) returned \(body["state"] ?? "nothing")")
                    #expect((body["result"] as? [String: Any])?["button"] as? String == "Deploy", "\(what)")
                } else {
                    #expect(id(body) == next, "\(what) returned \(id(body)), not the next alert \(next)")
                }
            }
        }
    }

    @Test(
        "every instance answers as one (§9): a choice, a post (stack), a withdrawal or a webhook made through one is what the other reads next"
    )
    func readsAreCurrentAcrossInstances() async throws {
        let cluster = try await Cluster.start(2, config: "clients:\n  stacked: { policy: stack }\n")
        defer { cluster.cleanup() }
        let http = cluster.clients()
        @Sendable func current(_ api: LiveClient, _ client: String) async throws -> String? {
            let response = try await api.get("/v1/clients/\(client)/alerts/current")
            return response.status == 204 ? nil : id(try response.jsonObject())
        }
        // Many rounds, each read issued the moment the write through the other instance was
        // answered: a cache that learns of changes by notification alone was behind on most.
        for round in 0..<25 {
            let (writer, reader) = (http[round % 2], http[(round + 1) % 2])
            let client = "rw-\(round)"
            let first = id(try await writer.postAlert(client, oneButton))
            #expect(try await current(reader, client) == first, "round \(round): a post, read through the other instance")
            let second = id(try await writer.postAlert(client, oneButton))
            #expect(try await writer.choose(client, first, #"{"button":"Deploy"}"#).status == 200)
            #expect(try await current(reader, client) == second, "round \(round): a choice, read through the other instance")
            let listed = try await reader.get("/v1/clients").jsonObject()["clients"] as? [[String: Any]] ?? []
            #expect(
                listed.first { $0["client"] as? String == client }?["displayed"] as? String == second,
                "round \(round): GET /v1/clients through the other instance")
            #expect(try await writer.delete("/v1/clients/\(client)/alerts/\(second)").status == 200)
            #expect(try await current(reader, client) == nil, "round \(round): a withdrawal, read through the other instance")
            // A long-poll through the other instance, after the alert now displayed, parks.
            let third = id(try await writer.postAlert(client, oneButton))
            if round % 5 == 0 {
                // (A stale display, none, would have answered 204 at once.)
                let parked = try await reader.get("/v1/clients/\(client)/alerts/current?wait=1&after=\(third)")
                #expect(try parked.status == 200 && id(parked.jsonObject()) == third, "round \(round): \(parked.status) \(parked.text)")
            }

            // Stack: a newer alert covers the displayed one at once.
            let below = id(try await writer.postAlert("stacked", oneButton))
            #expect(try await current(reader, "stacked") == below)
            let above = id(try await writer.postAlert("stacked", oneButton))
            #expect(try await current(reader, "stacked") == above, "round \(round): a stack post, read through the other instance")

            // A webhook registered through one is there through the other, and gone once removed.
            let created = try await writer.post(
                "/v1/clients/\(client)/webhooks", json: #"{"url":"https://hooks.example/\#(round)"}"#)
            let hook = try #require(try created.jsonObject()["id"] as? String, "\(created.text)")
            #expect(try await reader.get("/v1/clients/\(client)/webhooks/\(hook)").status == 200, "round \(round): the webhook")
            let hooks = try await reader.get("/v1/clients/\(client)/webhooks").jsonObject()["webhooks"] as? [[String: Any]]
            #expect(hooks?.map { $0["id"] as? String } == [hook])
            let again = try await reader.post("/v1/clients/\(client)/webhooks", json: #"{"url":"https://hooks.example/\#(round)"}"#)
            #expect(again.status == 409, "round \(round): the same URL through the other instance: \(again.status)")
            #expect(try await reader.delete("/v1/clients/\(client)/webhooks/\(hook)").status == 204)
            #expect(try await writer.get("/v1/clients/\(client)/webhooks/\(hook)").status == 404, "round \(round): removed")
        }
    }

    @Test("one Idempotency-Key posted to two or three instances at the same moment creates one alert")
    func idempotencyKeyAcrossInstances() async throws {
        let cluster = try await Cluster.start(3)
        defer { cluster.cleanup() }
        let http = cluster.clients()
        // Connections open before the race, so the posts leave together.
        for api in http { _ = try await api.get("/healthz") }
        var created: [String] = []
        for round in 0..<10 {
            let key = "deploy-\(round)"
            let body = #"{"title":"Deploy build \#(round)?","buttons":[{"title":"Deploy"}]}"#
            let instances = round % 2 == 0 ? [0, 1, 2] : [round % 3, (round + 1) % 3]
            let go = Observed(false)
            let answers = try await withThrowingTaskGroup(of: (Int, TestResponse).self) { group in
                for instance in instances {
                    let api = http[instance]
                    group.addTask {
                        _ = await go.wait(timeout: .seconds(10)) { $0 ? true : nil }
                        return (instance, try await api.post("/v1/clients/idem/alerts", json: body, headers: [("Idempotency-Key", key)]))
                    }
                }
                go.update { $0 = true }
                var answers: [(Int, TestResponse)] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            let described = answers.map { "instance \($0.0): \($0.1.status)" }.joined(separator: ", ")
            #expect(
                answers.map(\.1.status).sorted() == Array(repeating: 200, count: instances.count - 1) + [201],
                "key \(key) on instances \(instances): one 201, the others 200; got \(described)")
            let ids = Set(try answers.map { try id($0.1.jsonObject()) })
            #expect(ids.count == 1, "key \(key) answered with \(ids.count) different alerts: \(ids)")
            created.append(contentsOf: ids)
        }
        for (instance, api) in http.enumerated() {
            let listed = try await api.get("/v1/clients/idem/alerts?limit=1000").jsonObject()["alerts"] as? [[String: Any]] ?? []
            #expect(
                listed.map(id).sorted() == created.sorted(),
                "instance \(instance) lists \(listed.count) alerts for 10 keys; wanted exactly the 10 created")
        }
    }

    @Test("a deadline fires once with three instances running: one terminal event, one delivery")
    func deadlinesFireOnce() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        let cluster = try await Cluster.start(3, config: callbackConfig(durability: "full"))
        defer { cluster.cleanup() }
        let http = cluster.clients()
        // Two waves, due 2 s and 3 s after posting: by then every instance has read the
        // deadlines (each reads the next one every second) and races for them. The second
        // wave's deliveries arriving also means every instance has had its turn at the first.
        var expected: [String: (client: String, outcome: String)] = [:]
        for wave in 0..<2 {
            for index in 0..<6 {
                let client = "deadline-\(wave)-\(index)"
                let seconds = 2 + wave
                let body =
                    index % 2 == 0
                    ? #"{"title":"Approve?","buttons":[{"title":"OK"}],"expires_in":\#(seconds),"callback_url":"\#(receiver.url)"}"#
                    : #"{"title":"Backup done","dismiss_after":\#(seconds),"callback_url":"\#(receiver.url)"}"#
                let alert = try await http[index % 3].postAlert(client, body)
                expected[id(alert)] = (client, index % 2 == 0 ? "expired" : "dismissed")
            }
        }
        let received = try await awaitCallbacks(receiver, covering: Set(expected.keys), timeout: 30)
        var byAlert: [String: [WebhookReceiver.Received]] = [:]
        for request in received { byAlert[id(try verifiedAlert(request)), default: []].append(request) }
        for (alertID, (client, outcome)) in expected {
            let requests = byAlert[alertID] ?? []
            #expect(requests.count == 1, "alert \(alertID) (\(outcome)) was delivered \(requests.count) times: \(requests)")
            #expect(
                try requests.first.map { try $0.jsonObject()["type"] as? String } == "alert.\(outcome)",
                "alert \(alertID)'s one event")
            for (instance, api) in http.enumerated() {
                let state = try await api.get("/v1/clients/\(client)/alerts/\(alertID)").jsonObject()["state"] as? String
                #expect(state == outcome, "instance \(instance) reads alert \(alertID) as \(state ?? "nothing")")
            }
            let list = try await deliveries(http[0], client, alertID) { $0.first?["state"] as? String == "delivered" }
            #expect(list.count == 1, "alert \(alertID) has \(list.count) deliveries, wanted one")
            #expect(list.first.map(attempts)?.count == 1, "alert \(alertID): \(list)")
            #expect(list.first?["event_id"] as? String == requests.first?.header("webhook-id"), "the delivery's event is the one received")
        }
        // The database's own record: one event per alert, however many instances raced.
        let counts = try await cluster.postgres.psql(
            "SELECT alert_id || ' ' || count(*) FROM events GROUP BY alert_id", database: cluster.database)
        let events = counts.split(separator: "\n").map { $0.split(separator: " ") }
        #expect(events.count == expected.count, "events for \(events.count) alerts, wanted \(expected.count): \(counts)")
        for row in events where row.count == 2 {
            #expect(row[1] == "1", "alert \(row[0]) has \(row[1]) terminal events")
        }
    }

    @Test("a deadline committed by an instance killed with -9 fires through the other at its time, not when that one's loop next wakes")
    func deadlineOfAKilledInstance() async throws {
        let cluster = try await Cluster.start(2)
        defer { cluster.cleanup() }
        let http = cluster.clients()
        // The other instance has nothing due: its deadline loop sleeps for up to a minute. It
        // learns of the deadline only from the database (its counts, read every second).
        let posted = ContinuousClock.now
        let alert = try await http[0].postAlert("orphaned", #"{"title":"Backup done","dismiss_after":2}"#)
        await cluster.instances[0].kill9()
        let survivor = http[1]
        let path = "/v1/clients/orphaned/alerts/\(id(alert))"
        let dismissed = await waitUntil(timeout: .seconds(40), every: .milliseconds(100)) {
            (try? await survivor.get(path).jsonObject()["state"] as? String) == "dismissed"
        }
        let took = ContinuousClock.now - posted
        #expect(dismissed, "the alert was not dismissed \(took) after its post, due 2 s after it")
        #expect(took < .seconds(12), "dismissed \(took) after its post, due 2 s after it")
    }

    @Test("a decision through one instance calls the webhook registered through the other just before it (§9), once")
    func decisionCallsWebhookRegisteredElsewhere() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        let cluster = try await Cluster.start(2, config: callbackConfig())
        defer { cluster.cleanup() }
        let http = cluster.clients()
        // The decision's transaction reads its client's webhooks with its queue: what was
        // registered elsewhere before the choice counts, whether or not this instance has heard
        // of it yet. The registration's notification usually arrives first anyway, so this
        // checks the whole path through two processes; the store's part (the read itself, with
        // no notification to help) is held by the port's DecisionWebhooksTests.
        var expected = Set<String>()
        for round in 0..<6 {
            let client = "hooked-\(round)"
            let alert = id(try await http[1].postAlert(client, oneButton))
            let registered = try await http[0].post(
                "/v1/clients/\(client)/webhooks", json: #"{"url":"\#(receiver.url)","secret":"\#(callbackSecret)"}"#)
            #expect(registered.status == 201, "round \(round): \(registered.text)")
            let choice = try await http[1].choose(client, alert, #"{"button":"Deploy"}"#)
            #expect(choice.status == 200, "round \(round): \(choice.text)")
            expected.insert(alert)
        }
        let received = try await awaitCallbacks(receiver, covering: expected, timeout: 30)
        var byAlert: [String: Int] = [:]
        for request in received { byAlert[id(try verifiedAlert(request)), default: 0] += 1 }
        for alert in expected { #expect(byAlert[alert] == 1, "alert \(alert)'s event reached the webhook \(byAlert[alert] ?? 0) times") }
    }

    @Test("each delivery attempt is made by one instance: with three delivering, the receiver sees every attempt once")
    func deliveriesOncePerAttempt() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        // Some attempts fail, so that retries (held by the instance that made the first) count too.
        let failures = 8
        receiver.script(Array(repeating: .status(503), count: failures))
        let cluster = try await Cluster.start(3, config: callbackConfig(durability: "full", retryInitial: 0.2, retryMax: 0.5))
        defer { cluster.cleanup() }
        let http = cluster.clients()
        let count = 24
        // Posted on one instance, answered on the next: each instance commits a third of the events.
        let alerts = try await withThrowingTaskGroup(of: (String, String).self) { group in
            for index in 0..<count {
                group.addTask {
                    let client = "hooks-\(index)"
                    let alert = try await http[index % 3].postAlert(
                        client, #"{"title":"Go?","buttons":[{"title":"Go"}],"callback_url":"\#(receiver.url)"}"#)
                    let choice = try await http[(index + 1) % 3].choose(client, id(alert), #"{"button":"Go"}"#)
                    guard choice.status == 200 else { throw TestFailure("choice answered \(choice.status): \(choice.text)") }
                    return (client, id(alert))
                }
            }
            var alerts: [(String, String)] = []
            for try await alert in group { alerts.append(alert) }
            return alerts
        }
        var recorded: [String: Int] = [:]  // event id → attempts recorded
        for (client, alertID) in alerts {
            let list = try await deliveries(http[0], client, alertID) { $0.first?["state"] as? String == "delivered" }
            #expect(list.count == 1 && list.first?["state"] as? String == "delivered", "alert \(alertID): \(list)")
            if let event = list.first?["event_id"] as? String { recorded[event] = list.first.map(attempts)?.count }
        }
        let received = try await receiver.waitForRequests(count: count + failures, timeout: 10)
        var seen: [String: Int] = [:]
        for request in received { seen[request.header("webhook-id") ?? "none", default: 0] += 1 }
        #expect(seen.count == count, "\(seen.count) events reached the receiver, wanted \(count)")
        for (event, attempted) in recorded {
            #expect(seen[event] == attempted, "event \(event): \(attempted) attempts recorded, \(seen[event] ?? 0) requests received")
        }
        #expect(received.count == count + failures, "\(received.count) requests for \(count) events and \(failures) failures")
    }

    // MARK: - An instance killed

    @Test("kill -9 of one instance under 200 concurrent posts: nothing acknowledged is lost, its deliveries are taken over")
    func killOneInstanceUnderLoad() async throws {
        let receiver = try await WebhookReceiver.listening()
        defer { receiver.close() }
        // Attempts hang until the kill, so the victim dies holding some: a survivor takes them
        // over as soon as it sees the victim's lock gone (within a second or two).
        receiver.behave(.hang)
        let cluster = try await Cluster.start(3, config: callbackConfig(durability: "full", timeout: 3, retryInitial: 0.2, retryMax: 0.5))
        defer { cluster.cleanup() }
        let http = cluster.clients(timeout: .seconds(15))
        let (victim, survivors) = (0, [1, 2])
        // Posts racing the kill may find the port closed, and a refused connection is retried
        // until the HTTP client's connect timeout (10 s): the victim's are cut short.
        let toVictim = cluster.instances[victim].client(timeout: .seconds(3))
        let clients = (0..<12).map { "ha-\($0)" }
        var questions: [String] = []
        for (index, client) in clients.enumerated() {
            let alert = try await http[index % 3].postAlert(
                client, #"{"title":"Ship?","buttons":[{"title":"Ship"}],"callback_url":"\#(receiver.url)"}"#)
            questions.append(id(alert))
        }
        let chosen = Observed<[String: Int]>([:])  // alert id → instance that acknowledged the choice
        // The victim answers four questions and starts their deliveries (they hang at the receiver).
        for index in 0..<4 {
            let response = try await http[victim].choose(clients[index], questions[index], #"{"button":"Ship"}"#)
            try #require(response.status == 200, "choice on the victim: \(response.text)")
            chosen.update { $0[questions[index]] = victim }
        }
        let victimEvents = Set(questions[0..<4])
        _ = try await awaitCallbacks(receiver, covering: victimEvents, timeout: 20)
        let attemptsSeenAt = ContinuousClock.now

        let posts = Observed<[(instance: Int, client: String, outcome: Result<String, TestFailure>)]>([])
        let acknowledged = Observed(0)
        let next = Observed(0)
        let killed = Observed(false)
        let questionIDs = questions
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    while true {
                        let index = next.update { next in
                            defer { next += 1 }
                            return next
                        }
                        guard index < 200 else { return }
                        let instance = index % 3
                        let client = clients[index % clients.count]
                        // Once it is dead the victim gets no more posts, as a load balancer's health check
                        // would take it out (a connection refused costs the HTTP client its connect timeout).
                        if instance == victim && killed.value {
                            posts.update { $0.append((instance, client, .failure(TestFailure("not sent: the instance was killed")))) }
                            continue
                        }
                        let outcome: Result<String, TestFailure>
                        do {
                            let response = try await (instance == victim ? toVictim : http[instance]).post(
                                "/v1/clients/\(client)/alerts", json: #"{"title":"Load \#(index)","buttons":[{"title":"OK"}]}"#)
                            outcome =
                                response.status == 201
                                ? .success(id(try response.jsonObject())) : .failure(TestFailure("\(response.status) \(response.text)"))
                        } catch {
                            outcome = .failure(TestFailure("\(error)"))
                        }
                        posts.update { $0.append((instance, client, outcome)) }
                        if case .success = outcome { acknowledged.update { $0 += 1 } }
                    }
                }
            }
            // Survivors answer four questions while the load runs, four more after the kill.
            let chooseOnSurvivors = { @Sendable (range: Range<Int>) async throws in
                for index in range {
                    let instance = survivors[index % 2]
                    let response = try await http[instance].choose(clients[index], questionIDs[index], #"{"button":"Ship"}"#)
                    guard response.status == 200 else {
                        throw TestFailure("choice on surviving instance \(instance) answered \(response.status): \(response.text)")
                    }
                    chosen.update { $0[questionIDs[index]] = instance }
                }
            }
            group.addTask { try await chooseOnSurvivors(4..<8) }
            // The kill: with a third of the posts acknowledged (or a second after the victim's
            // attempts started, well inside their 3 s timeout), while posts are in flight on all three.
            _ = await acknowledged.wait(timeout: .seconds(1) - (ContinuousClock.now - attemptsSeenAt)) { $0 >= 60 ? true : nil }
            killed.update { $0 = true }
            await cluster.instances[victim].kill9()
            receiver.behave(.status(204))
            group.addTask { try await chooseOnSurvivors(8..<12) }
            try await group.waitForAll()
        }
        // From the kill until the victim's deliveries were taken over, the survivors keep
        // taking posts: one every 50 ms, alternately.
        let probing = Observed(true)
        let probes = Task {
            var answers: [(instance: Int, status: Int?)] = []
            while probing.value {
                let instance = survivors[answers.count % 2]
                let response = try? await http[instance].post("/v1/clients/probe/alerts", json: #"{"title":"Still there?"}"#)
                answers.append((instance, response?.status))
                try? await Task.sleep(for: .milliseconds(50))
            }
            return answers
        }
        defer { probing.update { $0 = false } }
        #expect(killed.value)

        let all = posts.value
        let acked = all.compactMap { post -> (client: String, id: String)? in
            guard case .success(let alertID) = post.outcome else { return nil }
            return (post.client, alertID)
        }
        let lostOnSurvivors = all.filter { survivors.contains($0.instance) && (try? $0.outcome.get()) == nil }
        #expect(
            lostOnSurvivors.isEmpty,
            "the survivors must keep serving: \(lostOnSurvivors.count) posts failed on them: \(lostOnSurvivors.prefix(5))")
        let onVictim = all.filter { $0.instance == victim }
        let ackedOnVictim = onVictim.filter { (try? $0.outcome.get()) != nil }.count
        #expect(
            ackedOnVictim < onVictim.count,
            "the kill came while posts to the victim were still coming (\(ackedOnVictim) of \(onVictim.count) acknowledged)")
        #expect(all.count == 200, "\(all.count) posts answered or failed, of 200")

        // Every acknowledged alert and choice, read from the survivors.
        for (index, alert) in acked.enumerated() {
            let response = try await http[survivors[index % 2]].get("/v1/clients/\(alert.client)/alerts/\(alert.id)")
            #expect(response.status == 200, "acknowledged alert \(alert.id) on \(alert.client) is gone: \(response.status)")
        }
        for (alertID, instance) in chosen.value {
            let client = clients[questions.firstIndex(of: alertID) ?? 0]
            let alert = try await http[survivors[0]].get("/v1/clients/\(client)/alerts/\(alertID)").jsonObject()
            #expect(alert["state"] as? String == "answered", "choice acknowledged by instance \(instance) on alert \(alertID)")
            #expect((alert["result"] as? [String: Any])?["button"] as? String == "Ship")
        }
        #expect(chosen.value.count == 12, "choices acknowledged: \(chosen.value.count) of 12")

        // Every delivery of an answered alert is made; the victim's by a survivor, after its lease.
        for (index, alertID) in questions.enumerated() {
            let list = try await deliveries(http[survivors[index % 2]], clients[index], alertID, timeout: .seconds(40)) {
                $0.first?["state"] as? String == "delivered"
            }
            #expect(list.first?["state"] as? String == "delivered", "the delivery of alert \(alertID): \(list)")
        }
        probing.update { $0 = false }
        let probed = await probes.value
        let failedProbes = probed.filter { $0.status != 201 }
        #expect(
            failedProbes.isEmpty && probed.count > 10,
            "posts to the survivors while the victim's deliveries were taken over: \(failedProbes.count) of \(probed.count) failed: \(failedProbes.prefix(5))"
        )
        var webhookIDs: [String: Set<String>] = [:]
        var requests: [String: [ContinuousClock.Instant]] = [:]
        for request in receiver.requests {
            let alertID = id(try verifiedAlert(request))
            webhookIDs[alertID, default: []].insert(request.header("webhook-id") ?? "none")
            requests[alertID, default: []].append(request.receivedAt)
        }
        for alertID in questions {
            #expect(webhookIDs[alertID]?.count == 1, "alert \(alertID)'s event came with webhook-ids \(webhookIDs[alertID] ?? [])")
        }
        // The victim claimed each for timeout + 5 = 8 s as its attempt began, and died a second
        // later: its lock gone, a survivor takes them over at once (issue 44 item 12), well
        // before that lease would have run out. (One alive but slow keeps them: InstanceRegistryTests.)
        for alertID in victimEvents {
            let times = requests[alertID] ?? []
            #expect(times.count >= 2, "alert \(alertID): the victim's attempt, then a survivor's with the same webhook-id")
            if times.count >= 2 {
                #expect(
                    times[1] - times[0] < .seconds(7.5),
                    "alert \(alertID) taken over \(times[1] - times[0]) after the victim's attempt: its lease was waited out")
            }
        }
    }

    // MARK: - The database stopped

    @Test(
        "the database stopped for 10 s under load: 503 with Retry-After, /readyz follows, every instance serves again soon after its return (10 s at most)"
    )
    func databaseOutage() async throws {
        let postgres = try await TestPostgres.start()
        // Killed, the server keeps what it acknowledged only with synchronous_commit on.
        let cluster = try await Cluster.start(3, on: postgres, durable: true)
        defer { cluster.cleanup() }
        // Bounded: a request that gets no answer in 8 s is a hang.
        let http = cluster.clients(timeout: .seconds(8))

        struct Outcome: Sendable {
            let instance: Int
            let status: Int?
            let code: String?
            let retryAfter: String?
            let error: String?
            let took: Duration
        }
        let outcomes = Observed<[Outcome]>([])
        let acked = Observed<[(client: String, id: String)]>([])
        let stop = Observed(false)
        let workers = Task {
            await withDiscardingTaskGroup { group in
                for worker in 0..<6 {
                    group.addTask {
                        var count = 0
                        while !stop.value {
                            let instance = worker % 3
                            let client = "outage-\(worker)"
                            let started = ContinuousClock.now
                            let outcome: Outcome
                            do {
                                let response = try await http[instance].post(
                                    "/v1/clients/\(client)/alerts", json: #"{"title":"n\#(count)","buttons":[{"title":"OK"}]}"#)
                                let body = try? response.jsonObject()
                                outcome = Outcome(
                                    instance: instance, status: response.status, code: body?["code"] as? String,
                                    retryAfter: response.header("Retry-After"), error: nil, took: .now - started)
                                if response.status == 201, let body { acked.update { $0.append((client, id(body))) } }
                            } catch {
                                outcome = Outcome(
                                    instance: instance, status: nil, code: nil, retryAfter: nil, error: "\(error)", took: .now - started)
                            }
                            outcomes.update { $0.append(outcome) }
                            count += 1
                            // A client that was told to come back later does not spin.
                            if outcome.status != 201 { try? await Task.sleep(for: .milliseconds(100)) }
                        }
                    }
                }
            }
        }
        defer { stop.update { $0 = true } }

        // Load flowing on every instance, then the database goes.
        let flowing = await waitUntil(timeout: .seconds(20)) {
            let list = outcomes.value
            return (0..<3).allSatisfy { instance in list.contains { $0.instance == instance && $0.status == 201 } }
        }
        try #require(flowing, "posts to every instance succeed before the outage")
        await postgres.kill()
        let stoppedAt = ContinuousClock.now
        let before = outcomes.value.count

        // Each instance: /readyz 503 and a 503 unavailable to a client, while it is down.
        for (instance, api) in http.enumerated() {
            let unready = await waitUntil(timeout: .seconds(9)) { (try? await api.get("/readyz"))?.status == 503 }
            #expect(unready, "instance \(instance)'s /readyz still 200 \(ContinuousClock.now - stoppedAt) after the database stopped")
        }
        let refused = await waitUntil(timeout: .seconds(9)) {
            let list = outcomes.value[before...]
            return (0..<3).allSatisfy { instance in list.contains { $0.instance == instance && $0.status == 503 } }
        }
        #expect(refused, "every instance answers 503 to posts while the database is down")
        // Reads of the displayed alert too: an instance cannot know it is current (SPEC §9), so it
        // does not answer from its cache what may be behind the database.
        for (instance, api) in http.enumerated() {
            let current = try await api.get("/v1/clients/outage-\(instance)/alerts/current")
            #expect(
                current.status == 503 && current.header("Retry-After") != nil,
                "instance \(instance) answered GET current \(current.status) while the database was down")
        }

        // Ten seconds of outage, then it comes back.
        try await Task.sleep(until: stoppedAt + .seconds(10), clock: .continuous)
        let duringOutage = Array(outcomes.value[before...])
        try await postgres.restart()
        let backAt = ContinuousClock.now

        // Every instance takes a post again soon (measured: 0.3–0.7 s; the bound of 10 s is for
        // an instance that never recovers by itself, with room for a loaded machine), and says
        // it is ready again.
        var recovered: [Int: Duration?] = [:]
        await withTaskGroup(of: (Int, Duration?).self) { group in
            for (instance, api) in http.enumerated() {
                group.addTask {
                    let served = await waitUntil(timeout: .seconds(20), every: .milliseconds(20)) {
                        (try? await api.post("/v1/clients/back-\(instance)/alerts", json: #"{"title":"back"}"#))?.status == 201
                    }
                    return (instance, served ? ContinuousClock.now - backAt : nil)
                }
            }
            for await (instance, took) in group { recovered[instance] = took }
        }
        for instance in 0..<3 {
            let took = recovered[instance] ?? nil
            #expect(
                took != nil && took! < .seconds(10),
                "instance \(instance) served a post again \(took.map { "\($0)" } ?? "never (20 s)") after the database was back")
            let ready = await waitUntil(timeout: .seconds(5)) { (try? await http[instance].get("/readyz"))?.status == 200 }
            #expect(ready, "instance \(instance)'s /readyz is 200 again")
        }
        stop.update { $0 = true }
        await workers.value

        let all = outcomes.value
        let hangs = all.filter { $0.error != nil }
        #expect(
            hangs.isEmpty,
            "\(hangs.count) requests got no answer (a hang or a dropped connection): \(hangs.prefix(3).map { "instance \($0.instance) after \($0.took): \($0.error ?? "")" })"
        )
        let wrong = all.filter { $0.status != nil && $0.status != 201 && $0.status != 503 }
        #expect(wrong.isEmpty, "only 201 or 503, never a 500: \(wrong.prefix(5).map { "\($0.status ?? 0) \($0.code ?? "")" })")
        let unavailable = all.filter { $0.status == 503 }
        #expect(!unavailable.isEmpty)
        for answer in unavailable {
            #expect(
                answer.code == "unavailable" && answer.retryAfter != nil,
                "a 503 is `unavailable` with Retry-After: \(answer.code ?? "no code"), Retry-After \(answer.retryAfter ?? "none")")
        }
        let slowest = duringOutage.map(\.took).max() ?? .zero
        #expect(slowest < .seconds(5), "the slowest answer while the database was down took \(slowest)")

        // Nothing acknowledged was lost on the way.
        for (index, alert) in acked.value.enumerated() {
            let response = try await http[index % 3].get("/v1/clients/\(alert.client)/alerts/\(alert.id)")
            #expect(response.status == 200, "acknowledged alert \(alert.id) after the outage: \(response.status)")
        }
        await postgres.kill()
    }

    @Test(
        "webhooks registered and removed through one instance at full speed: the other keeps serving (no 503) and never hands a long-poll an older display"
    )
    func webhookChurnKeepsDisplays() async throws {
        let cluster = try await Cluster.start(2)
        defer { cluster.cleanup() }
        let http = cluster.clients(timeout: .seconds(40))
        let (churner, chooser) = (http[0], http[1])
        // Many clients: each webhook change elsewhere used to have the other instance read
        // every display (and publish them unversioned) besides the webhooks, a read per
        // notification, which took its whole pool: its posts and choices were 503.
        for index in 0..<200 { _ = try await churner.postAlert("bystander-\(index)", oneButton) }
        let churn = Task {
            var round = 0
            while !Task.isCancelled {
                let created = try await churner.post("/v1/clients/churn/webhooks", json: #"{"url":"https://hooks.example/\#(round)"}"#)
                if let hook = try? created.jsonObject()["id"] as? String {
                    _ = try await churner.delete("/v1/clients/churn/webhooks/\(hook)")
                }
                round += 1
            }
        }
        defer { churn.cancel() }
        // Each queue: choose the displayed alert, then at once park after the next one: the
        // wait must run out on that same alert, never return the answered one.
        let stale = try await withThrowingTaskGroup(of: [String].self) { group in
            for queue in 0..<20 {
                group.addTask {
                    let client = "q-\(queue)"
                    var ids: [String] = []
                    for _ in 0..<8 { ids.append(id(try await chooser.postAlert(client, oneButton))) }
                    var seen: [String] = []
                    for (index, answered) in ids.dropLast().enumerated() {
                        let choice = try await chooser.choose(client, answered, #"{"button":"Deploy"}"#)
                        #expect(choice.status == 200, "\(client): \(choice.status) \(choice.text)")
                        let next = ids[index + 1]
                        let answer = try await chooser.get("/v1/clients/\(client)/alerts/current?wait=1&after=\(next)")
                        let shown = answer.status == 200 ? id(try answer.jsonObject()) : "none (\(answer.status))"
                        if shown != next { seen.append("\(client): after \(next), answered \(answered), got \(shown)") }
                    }
                    return seen
                }
            }
            var all: [String] = []
            for try await seen in group { all += seen }
            return all
        }
        #expect(stale.isEmpty, "long-polls answered with another display than the one current:\n\(stale.joined(separator: "\n"))")
    }

    @Test(
        "an instance on PostgreSQL starts without postgres-nio's warning of a lease before PostgresClient.run(), and says nothing worse than info"
    )
    func quietStart() async throws {
        // Issue 45: starts logged "Trying to lease connection from `PostgresClient`, but
        // `PostgresClient.run()` hasn't been called yet": the migrations could lease before the
        // pool's run() had begun. A race: the release binary before the fix logged it in 2 of 36
        // starts here, twelve at a time, so this test (four at once) catches it only sometimes;
        // the fix makes it impossible by construction (Pool.run starts run() as an immediate task).
        let cluster = try await Cluster.start(4)
        defer { cluster.cleanup() }
        for instance in cluster.instances {
            _ = try await instance.client().postAlert("quiet", oneButton)
            let text = instance.stderrText
            #expect(!text.contains("hasn't been called yet"), "\(text)")
            #expect(!text.split(separator: "\n").contains { $0.contains("level=warning") || $0.contains("level=error") }, "\(text)")
        }
    }

    // MARK: - Behind a load balancer

    @Test(
        "nginx round-robin in front of two instances: posts land on both, a choice wakes a waiter parked through it")
    func behindNginx() async throws {
        let cluster = try await Cluster.start(2)
        defer { cluster.cleanup() }
        let balancer = try await Nginx.start(roundRobin: cluster.instances.map(\.port))
        defer { balancer.stop() }
        let http = LiveClient(port: balancer.port, timeout: .seconds(40))
        let direct = cluster.clients()

        for index in 0..<10 {
            _ = try await http.postAlert("lb-\(index)", #"{"title":"Through nginx","buttons":[{"title":"OK"}]}"#)
        }
        var posted: [Int] = []
        for api in direct { posted.append(try await postsAnswered(api)) }
        #expect(posted.allSatisfy { $0 > 0 } && posted.reduce(0, +) == 10, "posts through nginx answered by each instance: \(posted)")

        let asked = id(try await http.postAlert("lb", oneButton))
        let next = id(try await http.postAlert("lb", #"{"title":"Next","buttons":[{"title":"OK"}]}"#))
        // Two waiters through nginx: round-robin parks one on each instance.
        let waiters = (0..<2).map { _ in
            Task { (try await http.get("/v1/clients/lb/alerts/current?wait=30&after=\(asked)"), ContinuousClock.now) }
        }
        _ = await waitUntil(timeout: .seconds(20)) {
            var parked = 0
            for api in direct { parked += (try? await api.waiters()) ?? 0 }
            return parked == 2
        }
        var parked: [Int] = []
        for api in direct { parked.append(try await api.waiters()) }
        #expect(parked == [1, 1], "waiters parked through nginx, per instance: \(parked)")

        let chosenAt = ContinuousClock.now
        let choice = try await http.choose("lb", asked, #"{"button":"Deploy"}"#)
        #expect(choice.status == 200, "the choice through nginx: \(choice.text)")
        for waiter in waiters {
            let (answer, at) = try await waiter.value
            // Not when its 30 s wait ran out: 10 s is a bound for a hang, not a benchmark.
            #expect(at - chosenAt < .seconds(10), "a waiter parked through nginx answered \(at - chosenAt) after the choice")
            #expect(try answer.status == 200 && id(answer.jsonObject()) == next, "the waiter sees the next alert: \(answer.text)")
        }
        #expect(balancer.accessLog.split(separator: "\n").count >= 15, "nginx logged the requests it proxied")
    }
}

// MARK: - Support

/// Instances of the real alertd on one PostgreSQL database: the same config, each with its
/// own state directory and port, started together (they migrate once, under the advisory lock).
struct Cluster {
    let instances: [Daemon]
    let postgres: TestPostgres
    /// The database's name (for psql).
    let database: String

    /// `count` instances on a new database of this test process's shared PostgreSQL.
    static func start(_ count: Int, config: String = "", publicConnect: Bool = false) async throws -> Cluster {
        try await start(count, on: try await TestPostgres.shared(), config: config, publicConnect: publicConnect)
    }

    /// `count` instances on a new database of `postgres`.
    /// `durable`: commits wait for the WAL write (`synchronous_commit = on`, as alertd expects of a
    /// production database; the throwaway server turns it off), so that a killed server keeps them.
    /// `publicConnect`: PUBLIC keeps CONNECT on the database, PostgreSQL's default; otherwise it is
    /// revoked, as docs/high-availability.md deploys it (alertd warns at start while PUBLIC may connect).
    static func start(_ count: Int, on postgres: TestPostgres, config: String = "", durable: Bool = false, publicConnect: Bool = false)
        async throws -> Cluster
    {
        let url = try await postgres.createDatabase()
        let name = String(url.split(separator: "/").last ?? "")
        if durable { try await postgres.execute("ALTER DATABASE \(name) SET synchronous_commit = on") }
        if !publicConnect { try await postgres.execute("REVOKE CONNECT ON DATABASE \(name) FROM PUBLIC") }
        let yaml = TestReceiptKey.adding(
            to: (config.isEmpty || config.hasSuffix("\n") ? config : config + "\n")
                + "store:\n  backend: postgres\n  postgres:\n    url: \(url)\n    pool_size: 4\n")
        let instances = try await withThrowingTaskGroup(of: (Int, Daemon).self) { group in
            for index in 0..<count { group.addTask { (index, try await Daemon.start(.init(config: yaml))) } }
            var started: [(Int, Daemon)] = []
            for try await instance in group { started.append(instance) }
            return started.sorted { $0.0 < $1.0 }.map(\.1)
        }
        return Cluster(instances: instances, postgres: postgres, database: name)
    }

    func clients(timeout: Duration = .seconds(30)) -> [LiveClient] {
        instances.map { $0.client(timeout: timeout) }
    }

    func cleanup() {
        for instance in instances { instance.cleanup() }
    }
}

/// Waits until the callbacks received cover an event of every alert in `alertIDs`; all requests so far.
private func awaitCallbacks(_ receiver: WebhookReceiver, covering alertIDs: Set<String>, timeout: Double) async throws
    -> [WebhookReceiver.Received]
{
    let deadline = ContinuousClock.now + .seconds(timeout)
    var count = alertIDs.count
    while true {
        let left = deadline - ContinuousClock.now
        let received = try await receiver.waitForRequests(
            count: count, timeout: max(0, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18))
        let seen = Set(try received.map { id(try verifiedAlert($0)) })
        if alertIDs.isSubset(of: seen) { return received }
        count = received.count + 1
    }
}

/// Polls `condition` every `every` until it holds (true) or `timeout` passes (false).
private func waitUntil(
    timeout: Duration, every: Duration = .milliseconds(50), _ condition: @Sendable () async -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: every)
    }
}

/// The posts an instance answered 201, from its `/metrics`.
private func postsAnswered(_ api: LiveClient) async throws -> Int {
    let text = try await api.get("/metrics").text
    var total = 0
    for line in text.split(separator: "\n")
    where line.hasPrefix("alertd_http_requests_total{") && line.contains(#"route="post_alert""#) && line.contains(#"status="201""#) {
        total += Int(Double(line.split(separator: " ").last ?? "") ?? 0)
    }
    return total
}
