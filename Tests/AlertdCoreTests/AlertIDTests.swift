import AlertdCore
import AlertdWire
import Testing

@Suite("Alert ids are 26 Crockford base32 characters")
struct AlertIDTextTests {
    static let crockford = Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    @Test(
        "Known ids have known spellings",
        arguments: [
            (AlertID(high: 0, low: 0), "00000000000000000000000000"),
            (AlertID(high: 0, low: 1), "00000000000000000000000001"),
            (AlertID(high: 0, low: 31), "0000000000000000000000000Z"),
            (AlertID(high: 0, low: 32), "00000000000000000000000010"),
            (AlertID(high: 0, low: 1 << 63), "00000000000008000000000000"),
            (AlertID(high: 1, low: 0), "0000000000000G000000000000"),
            (AlertID(high: 1, low: 1 << 63), "0000000000000R000000000000"),
            (AlertID(high: 1 << 63, low: 0), "40000000000000000000000000"),
            (AlertID(high: .max, low: .max), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"),
        ] as [(AlertID, String)])
    func spelling(id: AlertID, text: String) {
        #expect(id.description == text)
        #expect(AlertID(text) == id)
    }

    @Test("Generated ids are 26 Crockford characters and parse back to themselves")
    func roundTrip() {
        var generator = AlertIDGenerator()
        for n in 0..<500 {
            let id = generator.next(at: at(Int64(n) * 7919))
            let text = id.description
            #expect(text.count == 26)
            #expect(text.allSatisfy { Self.crockford.contains($0) })
            #expect(AlertID(text) == id)
        }
    }

    @Test("Parsing ignores case")
    func caseInsensitive() {
        let id = AlertID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
        let text = id.description
        #expect(text != text.lowercased())
        #expect(AlertID(text.lowercased()) == id)
        #expect(AlertID(Substring(text)) == id)
    }

    @Test(
        "Parsing rejects wrong lengths, characters outside the alphabet and a first character above 7",
        arguments: [
            "", "0", "0000000000000000000000000", "000000000000000000000000000",
            "80000000000000000000000000", "Z0000000000000000000000000",
            "0000000000000000000000000U", "0000000000000000000000000-", "000000000000 0000000000000",
            "0000000000000000000000000*", "000000000000000000000000é", "0000000000000000000000000\u{0}",
        ])
    func rejects(text: String) {
        #expect(AlertID(text) == nil)
    }
}

@Suite("The id generator")
struct AlertIDGeneratorTests {
    @Test("An id carries the millisecond it was made at")
    func timestamp() {
        for time in [at(0), at(1), at(86_400_000), Timestamp(milliseconds: 0), Timestamp(milliseconds: 1)] {
            #expect(freshID(at: time).timestamp == time)
        }
        // One generator, moving forward.
        var generator = AlertIDGenerator()
        for time in [at(0), at(1), at(2), at(86_400_000)] {
            #expect(generator.next(at: time).timestamp == time)
        }
    }

    @Test("Ids made in the same millisecond increase strictly")
    func sameMillisecond() {
        var generator = AlertIDGenerator()
        var previous = generator.next(at: start)
        for _ in 0..<2000 {
            let id = generator.next(at: start)
            #expect(id > previous)
            previous = id
        }
    }

    @Test("Within a millisecond ids count up by one; a new millisecond draws new random bits")
    func countsUpWithinAMillisecond() {
        var generator = AlertIDGenerator()
        let first = generator.next(at: start)
        let second = generator.next(at: start)
        #expect(second.high == first.high && second.low == first.low &+ 1 || second == AlertID(high: first.high + 1, low: 0))
        // Across many new milliseconds the random parts differ (equal 80-bit draws are vanishingly rare).
        var randomParts = Set<UInt64>()
        for offset in 1...50 {
            randomParts.insert(generator.next(at: at(Int64(offset))).low)
        }
        #expect(randomParts.count == 50)
    }

    @Test("Ids keep increasing when the clock steps back")
    func clockStepsBack() {
        var generator = AlertIDGenerator()
        let late = generator.next(at: at(60_000))
        let early = generator.next(at: at(0))
        let earlier = generator.next(at: at(-3_600_000))
        #expect(late < early)
        #expect(early < earlier)
        #expect(late.description < early.description && early.description < earlier.description)
        // Back to a later time, ids follow the clock again.
        let later = generator.next(at: at(120_000))
        #expect(earlier < later)
        #expect(later.timestamp == at(120_000))
    }

    @Test("Counting up from the last id carries into the high word")
    func carry() {
        let last = AlertID(high: UInt64(1_795_000_000_000) << 16 | 0x1234, low: .max)
        var generator = AlertIDGenerator(after: last)
        let next = generator.next(at: Timestamp(milliseconds: 1_000))
        #expect(next == AlertID(high: last.high + 1, low: 0))
        #expect(next > last)
    }

    @Test("A generator started after an id continues above it")
    func after() {
        let last = freshID(at: at(10_000))
        var generator = AlertIDGenerator(after: last)
        #expect(generator.next(at: at(10_000)) > last)
        #expect(generator.next(at: at(0)) > last)
    }

    @Test("String order is creation order")
    func stringOrder() {
        var generator = AlertIDGenerator()
        var ids: [AlertID] = []
        for n in 0..<600 {
            // Bursts within a millisecond, steps forward, and one step back.
            let ms: Int64 = n == 300 ? -5 : Int64(n / 4) * 37
            ids.append(generator.next(at: at(ms)))
        }
        let texts = ids.map(\.description)
        #expect(texts == texts.sorted())
        #expect(ids == ids.sorted())
        #expect(Set(texts).count == texts.count)
    }
}
