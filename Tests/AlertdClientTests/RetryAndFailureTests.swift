import AlertdWire
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import AlertdClient

@Suite("present's retry bound, the daemon's address in errors, CA files")
struct RetryAndFailureTests {
    static let refused = AlertdError(kind: .connection, message: "cannot reach alertd: connection refused (h:1)", neverSent: true)

    @Test("without a bound every failure is retried and reported, with the pause it was given")
    func unbounded() throws {
        let notices = NIOLockedValueBox<[RetryNotice]>([])
        var run = RetryRun(bound: nil)
        for _ in 0..<3 {
            #expect(
                try run.next(after: Self.refused, 0.5, { if case .retrying(let n) = $0 { notices.withLockedValue { $0.append(n) } } })
                    == 0.5)
        }
        let seen = notices.withLockedValue { $0 }
        #expect(seen.count == 3 && seen.allSatisfy { $0.giveUpIn == nil && $0.delay == 0.5 && $0.error.neverSent })
        #expect(run.failures == 3)
    }

    @Test("a bound of 0 gives up at the first failure, throwing the error itself")
    func zeroBound() {
        var run = RetryRun(bound: 0)
        #expect { try run.next(after: Self.refused, 0.5, nil) } throws: { ($0 as? AlertdError)?.message == Self.refused.message }
    }

    @Test("the pause never runs past the bound, so the last try falls on it; then it gives up")
    func pauseCappedByBound() throws {
        var run = RetryRun(bound: 0.3)
        let first = ContinuousClock.now
        #expect(try run.next(after: Self.refused, 10, nil, now: first) == 0.3)
        let pause = try run.next(after: Self.refused, 10, nil, now: first + .milliseconds(100))
        #expect(abs(pause - 0.2) < 1e-9, "100 ms after the first failure, 200 ms of the bound are left: \(pause)")
        #expect(throws: AlertdError.self) { try run.next(after: Self.refused, 10, nil, now: first + .milliseconds(300)) }
    }

    @Test("an error thrown by the progress handler stops the run")
    func handlerStops() {
        var run = RetryRun(bound: nil)
        #expect(throws: CancellationError.self) { try run.next(after: Self.refused, 1, { _ in throw CancellationError() }) }
    }

    @Test("the daemon's address is the URL's host and port, the scheme's port by default")
    func endpoint() {
        #expect(ConnectionFailure.endpoint(of: "https://alertd.internal") == "alertd.internal:443")
        #expect(ConnectionFailure.endpoint(of: "http://alertd.internal/prefix") == "alertd.internal:80")
        #expect(ConnectionFailure.endpoint(of: "http://[::1]:8080") == "[::1]:8080")
    }

    @Test("a CA file that is missing or holds no certificate is refused when the client is made")
    func badCAFile() throws {
        #expect { try CertificateTrust.pemFile("/nonexistent/ca.pem") } throws: {
            ($0 as? AlertdError)?.kind == .invalidCertificates && ($0 as? AlertdError)?.message.contains("no such file") == true
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("alertd-ca-\(UUID().uuidString).pem").path
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect { try CertificateTrust.pemFile(path) } throws: {
            ($0 as? AlertdError)?.message == "the CA file \(path) holds no PEM certificate"
        }
    }
}
