import Foundation
import Glibc

/// The sanitizer this test process is built with (`swift test --sanitize=…`, as
/// `scripts/test-sanitizers.sh` runs it), nil in a plain run. It is read from the
/// process itself, by the sanitizer runtime's entry point linked into it, so no
/// setting can make a plain run lenient; the daemons the tests start come from the
/// same build directory, built the same way.
public enum Sanitizer: Sendable {
    case address, thread

    public static let current: Sanitizer? = {
        let process = dlopen(nil, RTLD_NOW)
        if dlsym(process, "__asan_init") != nil { return .address }
        if dlsym(process, "__tsan_init") != nil { return .thread }
        return nil
    }()

    /// The environment for a daemon whose memory a test measures. Under AddressSanitizer
    /// freed blocks wait in a quarantine before they are reused (256 MB by default, to
    /// catch a use after free), and RSS would show that instead of what the daemon holds:
    /// that daemon runs without it. Elsewhere, nothing.
    public static var measuredMemoryEnvironment: [String: String] {
        guard current == .address else { return [:] }
        let inherited = ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { $0 + ":" } ?? ""
        return ["ASAN_OPTIONS": inherited + "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"]
    }

    /// A bound on a daemon's memory, set for a plain build, as it holds under this
    /// sanitizer, whose own bookkeeping RSS counts too. Under AddressSanitizer (the
    /// quarantine off: ``measuredMemoryEnvironment``) twice the plain bound: its shadow
    /// takes an eighth of the memory in use, and redzones and chunk headers at most
    /// double the smallest blocks. Under ThreadSanitizer three times: its shadow is
    /// twice the memory in use. Measured, 9 980 of the largest alerts took 347 MiB plain,
    /// 506 MiB under AddressSanitizer (1.46×), 667 MiB under ThreadSanitizer (1.92×). The
    /// failures these bounds are for stay beyond them: a budget not enforced reaches
    /// gigabytes, and 30 unbounded pages (170 MB plain) take their share of shadow too.
    public static func memoryBound(_ plain: Int) -> Int {
        switch current {
        case nil: plain
        case .address: plain * 2
        case .thread: plain * 3
        }
    }
}
