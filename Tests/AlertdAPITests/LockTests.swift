import AlertdHTTP
import Dispatch
import Testing

struct LockTests {
    @Test("increments from many threads at once are none of them lost")
    func mutualExclusion() {
        let counter = Lock(0)
        let threads = 8
        let each = 20_000
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<each {
                counter.withLock { value in
                    // A read-modify-write in two steps: a lost update shows up in the total.
                    let read = value
                    value = read + 1
                }
            }
        }
        #expect(counter.withLock { $0 } == threads * each)
    }

    struct Refused: Error, Equatable {}

    @Test("an error thrown inside leaves the value as changed so far and the lock free")
    func throwing() {
        let lock = Lock([1])
        #expect(throws: Refused.self) {
            try lock.withLock { (value: inout [Int]) throws(Refused) in
                value.append(2)
                throw Refused()
            }
        }
        // Not deadlocked, and the change before the throw stands.
        #expect(lock.withLock { $0 } == [1, 2])
    }
}
