import AlertdDaemon
import ArgumentParser
import Dispatch
import Foundation

// Block SIGTERM, SIGINT and SIGHUP on the main thread before any other thread
// exists, so every thread inherits the mask and one sigwait thread takes them.
// main stays synchronous: top-level `await` would hand the main thread to
// dispatch_main with an empty mask, and SIGTERM would kill the process.
Signals.block()

let command: AlertdCommand
do {
    let parsed = try AlertdCommand.parseAsRoot()
    guard let serve = parsed as? AlertdCommand else {
        // A subcommand (`alertd token new …`): synchronous, and done here.
        var other = parsed
        try other.run()
        exit(0)
    }
    command = serve
} catch {
    AlertdCommand.exit(withError: error)
}
do {
    try blocking { try await command.run() }
} catch {
    AlertdCommand.exit(withError: error)
}
exit(0)
