import AlertdEngine
import Dispatch
import Testing

/// The alarm the deadline and delivery loops sleep on.
/// Bounds are loose (two minutes against a five-minute sleep): the test process's pool is
/// busy with every other test, and a task may wait seconds to run; an alarm that does not
/// wake its sleeper fails by minutes.
@Suite("Alarm: a loop sleeps until a time, or less when rung")
struct AlarmTests {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// A post that adds a sooner deadline while the loop is awake (between firing
    /// what was due and sleeping again) must not be slept past: the loop's next
    /// sleep returns at once. (The thread-based ticker this replaces once lost it.)
    @Test("a ring while the loop is between two sleeps makes the next sleep return at once")
    func ringBetweenSleeps() async {
        let alarm = Alarm()
        await alarm.sleep(until: Self.now() + 20_000_000)
        alarm.ring(ifBefore: Self.now() + 500_000_000)
        let started = Self.now()
        await alarm.sleep(until: Self.now() + 300_000_000_000)
        #expect(Self.now() - started < 120_000_000_000, "slept through a ring made while awake")
    }

    @Test("a ring for a sooner time wakes a sleeping loop")
    func ringWakes() async {
        let alarm = Alarm()
        let started = Self.now()
        async let slept: Void = alarm.sleep(until: Self.now() + 300_000_000_000)
        // Asleep or not yet: either way the sleep ends early (a ring before the
        // sleep began is remembered).
        alarm.ring(ifBefore: Self.now() + 1_000_000)
        await slept
        #expect(Self.now() - started < 120_000_000_000)
    }

    @Test("a ring for a later time does not cut a sleep short")
    func laterRingIgnored() async {
        let alarm = Alarm()
        let started = Self.now()
        async let slept: Void = alarm.sleep(until: Self.now() + 300_000_000)
        // Asleep or not yet, a ring for after its wake-up changes nothing.
        alarm.ring(ifBefore: Self.now() + 10_000_000_000)
        await slept
        #expect(Self.now() - started >= 300_000_000, "woken by a ring for a time after its own")
    }

    @Test("a cancelled sleep returns at once")
    func cancellation() async {
        let alarm = Alarm()
        let started = Self.now()
        let sleeper = Task { await alarm.sleep(until: Self.now() + 300_000_000_000) }
        sleeper.cancel()
        await sleeper.value
        #expect(Self.now() - started < 120_000_000_000)
    }
}
