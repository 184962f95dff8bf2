import Foundation
import Glibc
import Logging
import ServiceLifecycle

/// Signals are taken by one thread with `sigwait`, never by handlers: they are
/// blocked in every thread, so call ``block()`` first thing in `main`, before
/// libmicrohttpd, GRDB or the Swift runtime start a thread.
public enum Signals {
    static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    public static func block() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in handled { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }
}

/// Returns from `run` on SIGTERM or SIGINT, which shuts the group down
/// gracefully; SIGHUP reloads the config.
final class SignalService: Service, @unchecked Sendable {
    private let logger: Logger
    private let hangup: @Sendable () -> Void
    private let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation

    /// - Parameter hangup: run on SIGHUP (config reload).
    init(logger: Logger, hangup: @escaping @Sendable () -> Void) {
        self.logger = logger
        self.hangup = hangup
        (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let continuation = self.continuation
        let thread = Thread {
            var set = sigset_t()
            sigemptyset(&set)
            for signal in Signals.handled { sigaddset(&set, signal) }
            while true {
                var received: Int32 = 0
                guard sigwait(&set, &received) == 0 else { continue }
                continuation.yield(received)
            }
        }
        thread.name = "alertd-signals"
        thread.start()
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            for await signal in stream {
                switch signal {
                case SIGHUP:
                    logger.info("SIGHUP: reloading the config")
                    hangup()
                default:
                    logger.info("signal received, draining", metadata: ["signal": "\(signal == SIGTERM ? "SIGTERM" : "SIGINT")"])
                    return
                }
            }
        }
    }
}
