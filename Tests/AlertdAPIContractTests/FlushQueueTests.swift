// The take rules of the PostgreSQL flushes (FlushQueue, issue 46 step 3a), each on its own,
// then all of them under random arrivals, completions and left changes: no database needed.

import AlertdTestSupport
import Testing

@testable import AlertdPostgres

/// A change in the tests: a name ("a1"), its clients, and how often a flush left it.
private struct Change: FlushQueueable, Equatable, CustomStringConvertible {
    let name: String
    let clients: [String]
    var deferrals = 0

    /// Of `clients`, or of the client its name begins with ("a1": a).
    init(_ name: String, _ clients: String...) { self.init(name, clients: clients) }

    init(_ name: String, clients: [String]) {
        self.name = name
        self.clients = clients.isEmpty ? [String(name.prefix(1))] : clients
    }

    /// The same change, left once more by a flush.
    var left: Change {
        var copy = self
        copy.deferrals += 1
        return copy
    }

    var description: String { name }
}

private func names(_ flush: [Change]?) -> [String]? { flush?.map(\.name) }
private func names(_ flushes: [[Change]]) -> [[String]] { flushes.map { $0.map(\.name) } }

@Suite("Which PostgreSQL changes go in which flush (FlushQueue)")
struct FlushQueueTests {
    @Test("at most `flights` flushes at once; the next starts when one ends")
    func flights() {
        var queue = FlushQueue<Change>(flights: 2, batch: 1024)
        #expect(names(queue.enqueue(Change("a1"))) == ["a1"])
        #expect(names(queue.enqueue(Change("b1"))) == ["b1"])
        #expect(queue.enqueue(Change("c1")) == nil, "two in flight: c1 waits")
        #expect(queue.inFlight == 2 && queue.waiting.map(\.name) == ["c1"])
        #expect(names(queue.finished([Change("a1")], left: [])) == [["c1"]])
        #expect(queue.busy == ["b", "c"])
    }

    @Test("a client in a flush waits for the next one, while other clients' changes go")
    func busyClientWaits() {
        var queue = FlushQueue<Change>(flights: 2, batch: 1024)
        #expect(names(queue.enqueue(Change("a1"))) == ["a1"])
        #expect(queue.enqueue(Change("a2")) == nil, "a is in a flush")
        #expect(names(queue.enqueue(Change("b1"))) == ["b1"], "b is free: it goes, past a2")
        #expect(queue.enqueue(Change("a3")) == nil)
        #expect(names(queue.finished([Change("a1")], left: [])) == [["a2", "a3"]], "a's changes, in arrival order")
    }

    @Test("a flush holds at most `batch` changes, in arrival order; the rest wait for the next")
    func batch() {
        var queue = FlushQueue<Change>(flights: 1, batch: 3)
        #expect(names(queue.enqueue(Change("x1"))) == ["x1"])
        for name in ["a1", "b1", "a2", "c1", "b2"] { #expect(queue.enqueue(Change(name)) == nil) }
        #expect(names(queue.finished([Change("x1")], left: [])) == [["a1", "b1", "a2"]])
        #expect(names(queue.finished([Change("a1"), Change("b1"), Change("a2")], left: [])) == [["c1", "b2"]])
    }

    @Test("a change of several clients goes when all are free, and holds the later changes of each behind it")
    func severalClients() {
        var queue = FlushQueue<Change>(flights: 2, batch: 1024)
        #expect(names(queue.enqueue(Change("a1"))) == ["a1"])
        #expect(queue.enqueue(Change("ab", "b", "a")) == nil, "a is in a flush: the change of a and b waits")
        #expect(queue.enqueue(Change("b2")) == nil, "b2 came after ab, which holds b: it waits behind it")
        #expect(names(queue.enqueue(Change("c1"))) == ["c1"], "c is free of all that")
        #expect(names(queue.finished([Change("a1")], left: [])) == [["ab", "b2"]])
        #expect(queue.busy == ["a", "b", "c"])
    }

    @Test("a change a flush left goes first, in a flush of its own clients only, with their later changes")
    func leftChanges() {
        var queue = FlushQueue<Change>(flights: 2, batch: 1024)
        #expect(names(queue.enqueue(Change("a1"))) == ["a1"])
        #expect(names(queue.enqueue(Change("b1"))) == ["b1"])
        for name in ["c1", "a2"] { #expect(queue.enqueue(Change(name)) == nil) }
        // a was held by another instance: a1 comes back, before a2.
        let next = queue.finished([Change("a1")], left: [Change("a1").left])
        #expect(names(next) == [["a1", "a2"]], "a's changes alone: the flush waits for a's lock and holds no other client")
        #expect(next.first?.first?.deferrals == 1)
        #expect(queue.waiting.map(\.name) == ["c1"])
        #expect(names(queue.finished([Change("b1")], left: [])) == [["c1"]])
    }

    @Test("nothing waits forever: with no flush in flight, a flush starts whenever a change waits")
    func noStall() {
        var queue = FlushQueue<Change>(flights: 1, batch: 2)
        let ab = Change("ab", "a", "b")
        #expect(names(queue.enqueue(ab)) == ["ab"])
        for name in ["b1", "a1", "c1"] { #expect(queue.enqueue(Change(name)) == nil) }
        var flush = [ab]
        var left = [ab.left]
        var done: [String] = []
        while true {
            let next = queue.finished(flush, left: left)
            left = []
            guard let first = next.first else { break }
            #expect(next.count == 1, "one flight")
            done += first.map(\.name)
            flush = first
        }
        #expect(done == ["ab", "b1", "a1", "c1"], "\(done)")
        #expect(queue.waiting.isEmpty && queue.inFlight == 0, "\(queue.waiting)")
    }

    @Test("random arrivals, completions and left changes: disjoint flushes, every change done once, each client's in arrival order")
    func randomRuns() {
        for seed in UInt64(1)...200 {
            var random = SplitMix64(seed: seed)
            var queue = FlushQueue<Change>(flights: 2, batch: 3)
            var inFlight: [[Change]] = []
            var arrived: [String: [String]] = [:]
            var done: [String: [String]] = [:]
            var count = 0
            func started(_ flushes: [[Change]]) {
                for flush in flushes {
                    let clients = flush.flatMap(\.clients)
                    let others = Set(inFlight.flatMap { $0.flatMap(\.clients) })
                    #expect(others.isDisjoint(with: clients), "seed \(seed): flushes in flight share a client")
                    #expect(flush.count <= 3, "seed \(seed): a flush over the batch")
                    inFlight.append(flush)
                }
                #expect(inFlight.count <= 2, "seed \(seed): more flushes than flights")
            }
            for _ in 0..<60 {
                if inFlight.isEmpty || Bool.random(using: &random) {
                    count += 1
                    let clients = ["a", "b", "c", "d"].shuffled(using: &random).prefix(Int.random(in: 1...2, using: &random))
                    let change = Change("\(count)", clients: Array(clients))
                    for client in Set(change.clients) { arrived[client, default: []].append(change.name) }
                    started(queue.enqueue(change).map { [$0] } ?? [])
                } else {
                    let flush = inFlight.remove(at: Int.random(in: 0..<inFlight.count, using: &random))
                    // A client held elsewhere: its changes are left, with every change of the
                    // flush that shares a client with one of them (one board holds them together).
                    let held: Set<String> = Int.random(in: 0..<4, using: &random) == 0 ? [flush[0].clients[0]] : []
                    var leftClients = held
                    var grew = true
                    while grew {
                        grew = false
                        for change in flush where !leftClients.isDisjoint(with: change.clients) {
                            let before = leftClients.count
                            leftClients.formUnion(change.clients)
                            grew = grew || leftClients.count > before
                        }
                    }
                    let left = flush.filter { !leftClients.isDisjoint(with: $0.clients) }.map(\.left)
                    for change in flush where leftClients.isDisjoint(with: change.clients) {
                        for client in Set(change.clients) { done[client, default: []].append(change.name) }
                    }
                    started(queue.finished(flush, left: left))
                }
            }
            // Drain: every flush ends, none leaves anything.
            while let flush = inFlight.popLast() {
                for change in flush { for client in Set(change.clients) { done[client, default: []].append(change.name) } }
                started(queue.finished(flush, left: []))
            }
            #expect(queue.waiting.isEmpty && queue.busy.isEmpty && queue.inFlight == 0, "seed \(seed): \(queue.waiting)")
            #expect(done == arrived, "seed \(seed): each client's changes done once each, in arrival order")
        }
    }
}
