import Glibc
import Logging
import ServiceLifecycle
import UnixSignals

/// Signals reach alertd only as ServiceLifecycle's signal sequences (libdispatch
/// reads them from a `signalfd`), never through a handler: they are blocked in
/// every thread, so call ``block()`` first thing in `main`, before
/// libmicrohttpd, GRDB or the Swift runtime start a thread. SIGTERM and SIGINT
/// shut the service group down gracefully (``Application``); SIGHUP reloads
/// the config (``ReloadService``).
public enum Signals {
    static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    public static func block() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in handled { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }
}

/// SIGHUP: reloads the config, for as long as the group runs.
struct ReloadService: Service {
    let logger: Logger
    /// Run on SIGHUP.
    let reload: @Sendable () async -> Void

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            for await _ in hangups {
                logger.info("SIGHUP: reloading the config")
                await reload()
            }
        }
    }
}
