// A Swift 6.3.1 optimiser defect that crashed alertd's release build (issue 44, item 1).
//
// A task group child added with `addImmediateTask`, whose closure catches a typed throw
// (`do throws(E) { … } catch { … }`) and returns a tuple holding a `Result<String, E>`,
// hands the group a corrupt value under -O: an index out of range or a lost result, then
// a trap (SIGILL). With -Onone, with `addTask`, with the do/catch moved into a function the
// closure awaits, or with a child result of plain integers, it never happens.
//
//   swiftc -O immediate-child-typed-throws.swift -o repro && ./repro     # traps within seconds
//   swiftc -Onone immediate-child-typed-throws.swift -o repro && ./repro # "no crash in 20000 rounds"
//
// Seen on x86_64 Debian 12, swift-6.3.1-RELEASE, 2026-11-28. alertd no longer uses
// `addImmediateTask` (Sources/AlertdEngine/Alertmanager.swift says what it does instead).
import Dispatch

struct Failure: Error {
    var detail: String
    var code: Int
}

final class Engine: Sendable {
    let writer = DispatchQueue(label: "writer")

    /// Answers at once for some rounds, after a hop through another thread for the others.
    @inline(never) func take(_ index: Int, suspending: Bool) async throws(Failure) -> String {
        guard suspending else { return "r\(index)" }
        let value = await withCheckedContinuation { continuation in writer.async { continuation.resume(returning: index) } }
        if value < 0 { throw Failure(detail: "never", code: value) }
        return "r\(value)"
    }

    func receive(_ count: Int, round: Int) async -> [String?] {
        await withTaskGroup(of: (Int, Result<String, Failure>).self) { group in
            for index in 0..<count {
                group.addImmediateTask { [self] in
                    do throws(Failure) {
                        return (index, .success(try await take(index, suspending: (round + index) % 3 != 0)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results = [String?](repeating: nil, count: count)
            for await (index, result) in group { results[index] = try? result.get() }  // traps: index out of range
            return results
        }
    }
}

let engine = Engine()
let done = DispatchSemaphore(value: 0)
let rounds = 20_000
for round in 0..<rounds {
    Task {
        let results = await engine.receive(3, round: round)
        precondition(!results.contains(nil), "a result was lost in round \(round)")
        done.signal()
    }
    if round % 8 == 7 { for _ in 0..<8 { done.wait() } }
}
print("no crash in \(rounds) rounds")
