import AlertdTestSupport
import Foundation
import Glibc
import Testing

// Found in a review of the core daemon and fixed since; kept as regression tests. A
// refusal to start is an exit status and the line that names why, never "any error": a
// trap or a hang is not a refusal.

/// alertd refuses to start, saying why, rather than start into a state it cannot keep:
/// a second instance on one state directory, a config whose values do not fit a timestamp.
@Suite("alertd refuses to start rather than run wrong")
struct StartRefusalTests {
    /// HTTPServer.bindListener sets SO_REUSEPORT on every listening socket, so a
    /// second alertd (a duplicate unit, a restart script that does not wait) binds
    /// the same address without an error, and nothing locks the state directory:
    /// the kernel then spreads connections over two processes with two boards
    /// writing one SQLite file. An alert posted through one is 404 through the other.
    @Test("a second alertd on the same address and state directory refuses to start")
    func secondInstanceRefusesToStart() async throws {
        let first = try await Daemon.start()
        defer { first.cleanup() }
        var options = Daemon.Options()
        options.listen = "127.0.0.1:\(first.port)"
        options.stateDir = first.stateDir
        let second: Daemon
        do {
            second = try await Daemon.start(options)
        } catch let error as ProcessError {
            // Refused: exit status 1 and the line that names the lock and who holds it.
            #expect(error.exitStatus == 1, "\(error)")
            let line = "state directory \(first.stateDir.path) is in use by another alertd (pid \(first.pid))"
            #expect(
                error.stderr.split(separator: "\n").contains { $0.contains("level=critical") && $0.contains(line) },
                "no critical line naming the lock: \(error.stderr.suffix(1000))")
            return
        }
        defer { second.cleanup() }
        // Show the split: each process has its own board, so `current` depends on
        // which process the kernel hands a new connection to.
        _ = try await first.client().postAlert("ops", #"{"title":"split","buttons":[{"title":"OK"}]}"#)
        var empty = 0
        for _ in 0..<16 {
            let connection = try await first.rawConnection()
            if try await connection.request("GET", "/v1/clients/ops/alerts/current").status == 204 { empty += 1 }
            await connection.close()
        }
        Issue.record(
            "a second alertd started on port \(first.port) with the same state dir; \(empty) of 16 new connections see no displayed alert right after one was posted"
        )
    }

    /// Issue 45: a port another program holds stopped alertd with the right line, and then a
    /// warning about its callback client (`HTTPClientError.alreadyShutdown`): the failed start
    /// shut the delivery worker down a second time after its service had.
    @Test("a busy port is refused in one critical line naming the address, with no warning after it")
    func busyPort() async throws {
        let taken = try ReservedPort()
        defer { taken.release() }
        var options = Daemon.Options()
        options.listen = "127.0.0.1:\(taken.port)"
        do {
            let daemon = try await Daemon.start(options)
            defer { daemon.cleanup() }
            Issue.record("alertd listens on a port another socket holds")
        } catch let error as ProcessError {
            #expect(error.exitStatus == 1, "\(error)")
            let lines = error.stderr.split(separator: "\n")
            #expect(
                lines.contains { $0.contains("level=critical") && $0.contains("cannot listen on 127.0.0.1:\(taken.port)") },
                "\(error.stderr)")
            #expect(!lines.contains { $0.contains("level=warning") || $0.contains("level=error") }, "\(error.stderr)")
            #expect(!error.stderr.contains("alreadyShutdown"), "\(error.stderr)")
        }
    }

    /// Config.seconds accepts any finite positive number, but timestamps are Int64
    /// milliseconds and Timestamp.adding(seconds:) traps when the product does not
    /// fit. With `alerts.retention: 1e20` (meant as "keep forever") the daemon
    /// logs `listening`, then PurgeService's first purge computes
    /// `now - retention` and the process dies. README: "values out of range stop
    /// the daemon at start with one line naming the key".
    @Test("an alerts.retention too large for a timestamp is refused at start, not a crash after it")
    func hugeRetentionIsRefusedAtStart() async throws {
        try await Self.expectRefusal(
            config: "alerts:\n  retention: 100000000000000000000.0\n",
            line: "alerts.retention must be at most 3155760000 seconds (100 years)")
    }

    /// SPEC §14: every instance of one database signs receipts with one key, so PostgreSQL
    /// without `receipts.key_file` is refused as the other start checks refuse (a listen
    /// address without tokens): exit 1 and one critical line naming the key, before anything
    /// connects (the URL names a closed port). `alertd check-config` says the same.
    @Test("PostgreSQL without receipts.key_file is refused at start: exit 1, a critical line naming the key; check-config says it")
    func postgresWithoutReceiptsKey() async throws {
        let config = "store:\n  backend: postgres\n  postgres:\n    url: \"postgres://alertd@127.0.0.1:1/alertd\"\n"
        let error = try await Daemon.refusal(.init(config: config))
        #expect(error.exitStatus == 1, "\(error)")
        let line = "receipts.key_file: required with store.backend: postgres: every instance signs receipts with the same key"
        #expect(
            error.stderr.split(separator: "\n").contains { $0.contains("level=critical") && $0.contains(line) },
            "no critical line naming receipts.key_file: \(error.stderr.suffix(1000))")
        #expect(!error.stderr.contains("cannot connect"), "it tried the database: \(error.stderr.suffix(1000))")

        let scratch = try ScratchDirectory()
        let file = scratch.url.appendingPathComponent("alertd.yaml")
        try Data(config.utf8).write(to: file)
        let checked = try await Program.alertd(["check-config", file.path])
        #expect(checked.status != 0, "\(checked)")
        #expect((checked.stdout + checked.stderr).contains("\(file.path): \(line)"), "\(checked)")
    }

    /// Starts alertd with `config` and expects it to refuse at start: exit status 2, and
    /// `alertd: <config file>: <line>` on stderr. Anything else (listening, a trap, a hang
    /// past the start timeout) fails.
    static func expectRefusal(config: String, line: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let error = try await Daemon.refusal(.init(config: config))
        #expect(error.exitStatus == 2, "\(error)", sourceLocation: sourceLocation)
        let lines = error.stderr.split(separator: "\n")
        #expect(
            lines.contains { $0.hasPrefix("alertd: ") && $0.hasSuffix(".yaml: \(line)") },
            "no line naming the key: \(error.stderr.suffix(1000))", sourceLocation: sourceLocation)
    }

    /// Same trap from the network: with `alerts.max_expires_in` configured very
    /// large, a post with a large `expires_in` passed validation and
    /// `now.adding(seconds: expiresIn)` trapped on the MHD thread: one request
    /// killed the daemon. Now such a config is refused at start, and at the largest
    /// value it takes a post at that bound is created, and one past it refused.
    @Test("a post with a huge expires_in never crashes the daemon")
    func hugeExpiresInDoesNotCrash() async throws {
        try await Self.expectRefusal(
            config: "alerts:\n  max_expires_in: 100000000000000000000.0\n",
            line: "alerts.max_expires_in must be at most 3155760000 seconds (100 years)")

        let daemon = try await Daemon.start(.init(config: "alerts:\n  max_expires_in: 3155760000\n"))
        defer { daemon.cleanup() }
        let api = daemon.client()
        let atBound = try await api.post(
            "/v1/clients/ops/alerts", json: #"{"title":"a century","buttons":[{"title":"OK"}],"expires_in":3155760000}"#)
        #expect(atBound.status == 201, "\(atBound.status) \(atBound.text)")
        let past = try await api.post(
            "/v1/clients/ops/alerts", json: #"{"title":"forever","buttons":[{"title":"OK"}],"expires_in":1e19}"#)
        #expect(past.status == 400 && past.text.contains(#""code":"invalid-alert""#), "\(past.status) \(past.text)")
        #expect(try await api.get("/healthz").status == 200, "alertd died on one request")
        #expect(daemon.isRunning)
    }
}
