import AlertdCore
import AlertdDelivery
import AlertdTestSupport
import AlertdWire
import Testing

private func delivery(_ id: String, to target: String = "http://a.test/hook", dueIn seconds: Double = 0) -> PendingDelivery {
    PendingDelivery(
        id: id, eventID: "msg_" + id, target: target, secret: "s", body: Array("{}".utf8), eventCreatedAt: eventTime,
        attemptsMade: 0, due: eventTime.adding(seconds: seconds))
}

@Suite("The delivery queue takes due deliveries, bounded per target host and in all")
struct DeliveryQueueTests {
    @Test("Only deliveries that are due are taken, earliest first, then in the order they came")
    func dueOnly() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 10)
        queue.add(delivery("c", dueIn: 5))
        queue.add(delivery("b", dueIn: 1))
        queue.add(delivery("a", dueIn: 1))
        #expect(queue.takeDue(now: eventTime).isEmpty)
        #expect(queue.nextDue == eventTime.adding(seconds: 1))
        #expect(queue.takeDue(now: eventTime.adding(seconds: 1)).map(\.id) == ["b", "a"])
        #expect(queue.nextDue == eventTime.adding(seconds: 5))
        #expect(queue.takeDue(now: eventTime.adding(seconds: 10)).map(\.id) == ["c"])
        #expect(queue.nextDue == nil)
        #expect(queue.inFlightCount == 3 && queue.waitingCount == 0)
    }

    @Test("A target never has more attempts in flight than the bound; finishing one frees a slot")
    func boundPerTarget() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 2)
        for id in ["a", "b", "c", "d"] { queue.add(delivery(id)) }
        let first = queue.takeDue(now: eventTime)
        #expect(first.map(\.id) == ["a", "b"])
        #expect(queue.takeDue(now: eventTime).isEmpty)
        #expect(queue.nextDue == nil, "a full target is not due")
        queue.finished(first[0])
        #expect(queue.nextDue == eventTime)
        #expect(queue.takeDue(now: eventTime).map(\.id) == ["c"])
        #expect(queue.inFlight(to: "http://a.test/other") == 2)
    }

    @Test("A full target does not hold back another target's deliveries")
    func targetsAreIndependent() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 1)
        queue.add(delivery("slow1", to: "http://slow.test/hook"))
        queue.add(delivery("slow2", to: "http://slow.test/hook"))
        queue.add(delivery("fast1", to: "http://fast.test/hook"))
        let taken = Set(queue.takeDue(now: eventTime).map(\.id))
        #expect(taken == ["slow1", "fast1"])
        queue.finished(delivery("fast1", to: "http://fast.test/hook"))
        queue.add(delivery("fast2", to: "http://fast.test/hook", dueIn: 1))
        #expect(queue.takeDue(now: eventTime.adding(seconds: 1)).map(\.id) == ["fast2"])
        #expect(queue.inFlight(to: "http://slow.test/") == 1)
    }

    @Test("URLs on one host share the bound, whatever their user info, port, scheme, case or trailing dot")
    func hosts() {
        #expect(DeliveryQueue.host(of: "http://A.test:8080/x?y#z") == "a.test")
        #expect(DeliveryQueue.host(of: "https://a.test?q") == "a.test")
        #expect(DeliveryQueue.host(of: "https://u:p@x@A.Test.:8443/h") == "a.test")
        #expect(DeliveryQueue.host(of: "http://[::1]:9000/h") == "::1")
        #expect(DeliveryQueue.host(of: "http://[::1]/h") == "::1")
        #expect(DeliveryQueue.host(of: "http://10.0.0.5:81") == "10.0.0.5")
        var queue = DeliveryQueue(maxInFlightPerTarget: 1)
        let variants = [
            "http://a.test/one", "http://a.test/two?x=1", "http://a.test:81/one", "https://a.test/one", "http://u1@a.test/one",
            "http://u2:pw@a.test:82/one", "http://A.TEST./one",
        ]
        for (index, url) in variants.enumerated() { queue.add(delivery("v\(index)", to: url)) }
        queue.add(delivery("other", to: "http://b.test/one"))
        let taken = queue.takeDue(now: eventTime)
        #expect(taken.count == 2 && taken.contains { $0.id == "other" }, "one for a.test, one for b.test: \(taken.map(\.id))")
        #expect(queue.inFlight(to: "https://someone@a.test:9999/") == 1)
        #expect(queue.nextDue == nil, "a.test is full, b.test has nothing waiting")
    }

    @Test("The global bound caps the attempts in flight over all targets; finishing one makes room")
    func globalBound() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 2, maxInFlight: 3)
        for index in 0..<4 {
            queue.add(delivery("a\(index)", to: "http://a\(index).test/hook"))
            queue.add(delivery("b\(index)", to: "http://a\(index).test/hook"))
        }
        let first = queue.takeDue(now: eventTime)
        #expect(first.count == 3 && queue.inFlightCount == 3)
        #expect(queue.takeDue(now: eventTime).isEmpty)
        #expect(queue.nextDue == nil, "nothing can be taken while the global bound is reached")
        queue.finished(first[0])
        #expect(queue.nextDue == eventTime)
        #expect(queue.takeDue(now: eventTime).count == 1)
        #expect(queue.inFlightCount == 3 && queue.waitingCount == 4)
    }

    @Test("Under the global bound every target gets its turn: the same targets are not always first")
    func globalBoundRotates() throws {
        var queue = DeliveryQueue(maxInFlightPerTarget: 10, maxInFlight: 1)
        for target in 0..<5 {
            for index in 0..<10 { queue.add(delivery("t\(target)-\(index)", to: "http://t\(target).test/hook")) }
        }
        var served: Set<String> = []
        for _ in 0..<10 {
            let taken = queue.takeDue(now: eventTime)
            #expect(taken.count == 1)
            let first = try #require(taken.first)
            served.insert(DeliveryQueue.host(of: first.target))
            queue.finished(first)
        }
        #expect(served.count == 5, "served \(served.sorted())")
    }

    @Test("A delivery handed over twice is taken once; after it finished it can come back")
    func duplicates() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 5)
        let first = queue.add(delivery("a"))
        let second = queue.add(delivery("a"))
        #expect(first && !second)
        let taken = queue.takeDue(now: eventTime)
        #expect(taken.map(\.id) == ["a"])
        let whileInFlight = queue.add(delivery("a"))
        #expect(!whileInFlight, "in flight")
        queue.finished(taken[0])
        var retry = taken[0]
        retry.due = eventTime.adding(seconds: 2)
        retry.attemptsMade = 1
        queue.retry(retry)
        #expect(queue.waitingCount == 1 && queue.inFlightCount == 0)
        #expect(queue.takeDue(now: eventTime.adding(seconds: 2)).map(\.attemptsMade) == [1])
    }

    @Test("takeDue honours its limit")
    func limit() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 100)
        for index in 0..<10 { queue.add(delivery("d\(index)")) }
        #expect(queue.takeDue(now: eventTime, limit: 3).count == 3)
        #expect(queue.waitingCount == 7 && queue.inFlightCount == 3)
    }
}

@Suite("Settling an attempt says what to record and whether to retry")
struct SettleTests {
    let policy = RetryPolicy(initial: 1, maxInterval: 300, maxAge: 60)

    @Test("2xx is delivered, with no next attempt")
    func delivered() {
        var rng = SeededGenerator(seed: 1)
        let (record, retry) = policy.settle(delivery("a"), outcome: .response(status: 204), at: eventTime, using: &rng)
        #expect(record.state == .delivered && record.number == 1 && record.attempt.statusCode == 204)
        #expect(record.nextAttemptAt == nil && retry == nil)
    }

    @Test("A 500 is retried within the jittered first backoff; the next one counts as attempt 2")
    func retried() {
        var rng = SeededGenerator(seed: 2)
        let (record, retry) = policy.settle(delivery("a"), outcome: .response(status: 500), at: eventTime, using: &rng)
        #expect(record.state == .pending && record.attempt.statusCode == 500)
        let wait = retry!.due.seconds(since: eventTime)
        #expect(wait >= 0.5 && wait <= 1)
        #expect(record.nextAttemptAt == retry!.due && retry!.attemptsMade == 1)
        let (second, _) = policy.settle(retry!, outcome: .timedOut, at: retry!.due, using: &rng)
        #expect(second.number == 2 && second.attempt.error == "timed out")
    }

    @Test("410 stops; a failure past max_age fails; a refused connection records its reason")
    func stopsAndFailures() {
        var rng = SeededGenerator(seed: 3)
        let gone = policy.settle(delivery("a"), outcome: .response(status: 410), at: eventTime, using: &rng)
        #expect(gone.record.state == .failed && gone.retry == nil)
        let late = policy.settle(delivery("a"), outcome: .response(status: 503), at: eventTime.adding(seconds: 61), using: &rng)
        #expect(late.record.state == .failed && late.retry == nil)
        let refused = policy.settle(delivery("a"), outcome: .failed(reason: "connection refused"), at: eventTime, using: &rng)
        #expect(refused.record.attempt.error == "connection refused" && refused.record.state == .pending)
    }
}

@Suite("Target URLs are taken apart to connect to a checked address")
struct TargetURLTests {
    @Test("Host, port and path; the Host header keeps the name")
    func parts() throws {
        let url = try #require(TargetURL("http://Hooks.Example.com:8080/a/b?x=1#frag"))
        #expect(url.scheme == "http" && url.host == "hooks.example.com" && url.port == 8080)
        #expect(url.pathAndQuery == "/a/b?x=1")
        #expect(url.hostHeader == "hooks.example.com:8080")
        #expect(url.connecting(to: IPAddress("10.0.0.5")!) == "http://10.0.0.5:8080/a/b?x=1")
        #expect(url.address == nil)
    }

    @Test("Default ports, empty paths, IPv6 literals and user info")
    func variants() throws {
        let plain = try #require(TargetURL("https://example.com"))
        #expect(plain.port == 443 && plain.pathAndQuery == "/" && plain.hostHeader == "example.com")
        let query = try #require(TargetURL("http://example.com?x"))
        #expect(query.pathAndQuery == "/?x" && query.port == 80)
        let v6 = try #require(TargetURL("http://[::1]:9000/h"))
        #expect(v6.host == "::1" && v6.address == IPAddress("::1") && v6.hostHeader == "[::1]:9000")
        #expect(v6.connecting(to: IPAddress("::1")!) == "http://[::1]:9000/h")
        let user = try #require(TargetURL("http://u:p@example.com/h"))
        #expect(user.host == "example.com" && user.connecting(to: IPAddress("192.0.2.1")!) == "http://u:p@192.0.2.1:80/h")
    }

    @Test(
        "Not absolute http(s) URLs with a host",
        arguments: ["ftp://x/", "http://", "http://:80/", "http://h:0/", "http://h:99999/", "http://[::1/"])
    func refused(text: String) {
        #expect(TargetURL(text) == nil)
    }
}

@Suite("The backoff after an attempt counts from its end")
struct SettleTimingTests {
    @Test("An attempt that ended late (a timeout) is retried a backoff after it ended, not after it started")
    func backoffFromEnd() {
        let policy = RetryPolicy(initial: 1, maxInterval: 300, maxAge: 600)
        var rng = SeededGenerator(seed: 4)
        let ended = eventTime.adding(seconds: 10)
        let (record, retry) = policy.settle(delivery("a"), outcome: .timedOut, at: eventTime, now: ended, using: &rng)
        #expect(record.attempt.at == eventTime, "the attempt is shown at its start")
        let wait = retry!.due.seconds(since: ended)
        #expect(wait >= 0.5 && wait <= 1)
    }
}

@Suite("A percent-encoded host is refused")
struct PercentHostTests {
    @Test(
        "Neither the validation nor the target parser takes one", arguments: ["http://169.254.169.254%2e/x", "http://[fe80::1%25eth0]/x"])
    func refused(url: String) {
        #expect(TargetURL(url) == nil)
        #expect(CallbackURL.problem(url) != nil)
    }
}

@Suite("Cancelled and refused deliveries in the queue (issue 45, items 2 and 3)")
struct DeliveryQueueCancelTests {
    @Test("cancelling takes waiting deliveries out, frees the client's backlog and leaves those in flight alone")
    func cancel() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 10)
        func client(_ d: PendingDelivery) -> PendingDelivery {
            var d = d
            d.client = "ops"
            return d
        }
        let flying = client(delivery("flying"))
        queue.add(flying)
        #expect(queue.takeDue(now: eventTime).map(\.id) == ["flying"])
        for id in ["a", "b", "c"] { queue.add(client(delivery(id, dueIn: 5))) }
        #expect(queue.backlog(of: "ops") == 4 && queue.waitingCount == 3)
        #expect(queue.cancel(["a", "c", "flying", "unknown"]) == 2)
        #expect(queue.waitingCount == 1 && queue.backlog(of: "ops") == 2)
        #expect(queue.holds("flying") && !queue.holds("a") && queue.holds("b") && !queue.holds("unknown"))
        #expect(queue.takeDue(now: eventTime.adding(seconds: 5)).map(\.id) == ["b"])
        // A cancelled id can be added again (a restart's restore would not: the store settled it).
        let added = queue.add(client(delivery("a")))
        #expect(added)
    }

    @Test("advancing makes the given waiting deliveries due now, in their order; the others keep their time")
    func advance() {
        var queue = DeliveryQueue(maxInFlightPerTarget: 10)
        queue.add(delivery("late", dueIn: 300))
        queue.add(delivery("later", dueIn: 600))
        queue.add(delivery("other", dueIn: 300))
        queue.advance(["later", "late"], to: eventTime.adding(seconds: 1))
        #expect(queue.nextDue == eventTime.adding(seconds: 1))
        #expect(queue.takeDue(now: eventTime.adding(seconds: 1)).map(\.id) == ["late", "later"])
        #expect(queue.takeDue(now: eventTime.adding(seconds: 299)).isEmpty)
        #expect(queue.takeDue(now: eventTime.adding(seconds: 300)).map(\.id) == ["other"])
    }
}
