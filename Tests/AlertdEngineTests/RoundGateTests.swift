@testable import AlertdEngine
import NIOConcurrencyHelpers
import Testing

/// One round of deadlines at a time: the deadline loop's, which never waits, and a caller's,
/// which waits its turn (the in-process harness's `fireDeadlines()`).
@Suite("RoundGate: one round of deadlines at a time")
struct RoundGateTests {
    @Test("the loop does not take a gate that is held, and takes it once it is left")
    func tryEnter() {
        let gate = RoundGate()
        #expect(gate.tryEnter())
        #expect(gate.isHeld)
        #expect(!gate.tryEnter(), "a second round started while one runs")
        gate.leave()
        #expect(!gate.isHeld)
        #expect(gate.tryEnter())
        gate.leave()
    }

    @Test("callers wait for the round that runs, then take their turns one at a time; the loop gets none meanwhile")
    func enterWaitsItsTurn() async {
        let gate = RoundGate()
        #expect(gate.tryEnter())
        let ran = NIOLockedValueBox<(running: Int, most: Int, done: Int)>((0, 0, 0))
        let asked = NIOLockedValueBox(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 1...3 {
                group.addTask {
                    asked.withLockedValue { $0 += 1 }
                    await gate.enter()
                    ran.withLockedValue {
                        $0.running += 1
                        $0.most = max($0.most, $0.running)
                    }
                    // Handed over, not freed: the loop cannot slip in between two callers.
                    #expect(!gate.tryEnter())
                    await Task.yield()
                    ran.withLockedValue {
                        $0.running -= 1
                        $0.done += 1
                    }
                    gate.leave()
                }
            }
            while asked.withLockedValue({ $0 }) < 3 { await Task.yield() }
            #expect(ran.withLockedValue { $0.done + $0.running } == 0, "a caller ran while the round held the gate")
            gate.leave()
        }
        #expect(ran.withLockedValue { $0.done } == 3)
        #expect(ran.withLockedValue { $0.most } == 1, "two callers' rounds ran at once")
        #expect(!gate.isHeld)
    }
}

/// When the deadline loop looks again, and whether it starts a round (``Engine/nextLook``).
@Suite("The deadline loop's next look")
struct NextLookTests {
    static let now: UInt64 = 1_000_000_000_000

    @Test("a deadline to come: the loop wakes at it and starts no round; none: at the minute or the next timeout")
    func ahead() {
        #expect(Engine.nextLook(now: Self.now, timeout: nil, deadlineIn: 1_500) == (Self.now + 1_500_000_000, false))
        #expect(Engine.nextLook(now: Self.now, timeout: Self.now + 7, deadlineIn: 1_500) == (Self.now + 7, false))
        #expect(Engine.nextLook(now: Self.now, timeout: nil, deadlineIn: nil) == (Self.now + 60_000_000_000, false))
        #expect(Engine.nextLook(now: Self.now, timeout: nil, deadlineIn: 3_600_000) == (Self.now + 60_000_000_000, false))
    }

    @Test("a deadline due (or past): a round, and the next look 250 ms on, not at once, however long past it is")
    func due() {
        for past: Int64 in [0, -1, -60_000] {
            let look = Engine.nextLook(now: Self.now, timeout: nil, deadlineIn: past)
            #expect(look.round)
            #expect(look.wake == Self.now + Engine.roundRecheckNanoseconds, "a due deadline looked at again at \(look.wake - Self.now) ns")
        }
        // A waiter's timeout sooner than that still wakes the loop at its time.
        #expect(Engine.nextLook(now: Self.now, timeout: Self.now + 5, deadlineIn: 0) == (Self.now + 5, true))
    }
}
