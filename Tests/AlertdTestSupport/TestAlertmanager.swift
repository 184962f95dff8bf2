import Foundation
import Glibc
import NIOConcurrencyHelpers

/// Debian's Prometheus Alertmanager (`prometheus-alertmanager`, 0.25), started for a test
/// on 127.0.0.1 with one receiver: alertd's `POST /v1/integrations/alertmanager/{client}`.
/// A child of the test process (killed with it), alone (no cluster gossip), its config
/// and storage in a scratch directory of its own.
///
/// ```swift
/// let am = try await TestAlertmanager.start(receiver: "\(daemon.baseURL)/v1/integrations/alertmanager/ops", token: secret)
/// defer { am.stop() }
/// try await am.post(alerts: #"[{"labels": {"alertname": "DiskFull"}}]"#)
/// let silences = try await am.silences()
/// ```
///
/// Short `group_wait`, `group_interval` and `repeat_interval` (100 ms, 1 s, 2 s): a new alert
/// reaches alertd within a second or so, and is notified again every few seconds.
public final class TestAlertmanager: Sendable {
    /// The port it listens on (127.0.0.1); the same across ``restart()``.
    public let port: Int
    private let process: NIOLockedValueBox<ChildProcess?>
    private let directory: ScratchDirectory

    /// Debian's binary, nil when the package is not installed.
    public static var binary: String? {
        ["/usr/bin/prometheus-alertmanager", "/usr/bin/alertmanager"].first { access($0, X_OK) == 0 }
    }

    /// `http://127.0.0.1:PORT`: the `url` of `integrations.alertmanager`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Everything it logged so far (the current process's).
    public var log: String { process.withLockedValue { $0 }?.stderr.text ?? "" }

    private init(port: Int, process: ChildProcess, directory: ScratchDirectory) {
        self.port = port
        self.process = NIOLockedValueBox(process)
        self.directory = directory
    }

    deinit { stop() }

    /// Starts Alertmanager with one route, to `receiver` (a webhook with `send_resolved`,
    /// sending `Authorization: Bearer <token>` when a token is given); returns once it is ready.
    public static func start(
        receiver: String, token: String? = nil, groupBy: [String] = ["alertname"], repeatInterval: String = "2s"
    ) async throws -> TestAlertmanager {
        let auth = token.map { "\n        http_config:\n          authorization:\n            credentials: \"\($0)\"" } ?? ""
        let config = """
            global:
              resolve_timeout: 5m
            route:
              receiver: alertd
              group_by: [\(groupBy.map { "\"\($0)\"" }.joined(separator: ", "))]
              group_wait: 100ms
              group_interval: 1s
              repeat_interval: \(repeatInterval)
            receivers:
              - name: alertd
                webhook_configs:
                  - url: "\(receiver)"
                    send_resolved: true\(auth)

            """
        return try await start(config: config)
    }

    /// Starts Alertmanager with `config` as its `alertmanager.yml`; returns once it is ready.
    public static func start(config: String) async throws -> TestAlertmanager {
        guard binary != nil else {
            throw ProcessError("prometheus-alertmanager is not installed (apt-get install prometheus-alertmanager; make test-deps)")
        }
        let directory = try ScratchDirectory(prefix: "alertd-am")
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("alertmanager.yml"))
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("data"), withIntermediateDirectories: true)
        // The port is free when reserved, and released for Alertmanager to take: another test
        // may take it in between (CI saw it). Alertmanager then says so and exits; it starts
        // again on another port.
        for attempt in 1... {
            let reserved = try ReservedPort()
            let port = reserved.port
            reserved.release()
            do {
                let process = try await launch(port: port, directory: directory)
                return TestAlertmanager(port: port, process: process, directory: directory)
            } catch let error as ProcessError where error.stderr.contains("address already in use") && attempt < 5 {
                continue
            }
        }
        preconditionFailure("unreachable: the fifth attempt returns or throws")
    }

    private static func launch(port: Int, directory: ScratchDirectory) async throws -> ChildProcess {
        let path = directory.url.path
        let process = try await ChildProcess.spawn(
            binary!,
            arguments: [
                "--config.file=\(path)/alertmanager.yml", "--storage.path=\(path)/data", "--web.listen-address=127.0.0.1:\(port)",
                "--cluster.listen-address=", "--log.level=debug",
            ], environment: ["PATH=/usr/bin:/bin"], dieWithParent: true)
        let probe = LiveClient(port: port, timeout: .seconds(2))
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let status = process.exitStatus {
                throw ProcessError("alertmanager exited at start", exitStatus: status, stderr: process.stderr.text)
            }
            // Probed once it listens, not before: until then the port may be another test's
            // (see start(config:)), and a probe would land among that test's requests.
            if process.stderr.text.contains(#"msg="Listening on" address=127.0.0.1:\#(port)"#),
                (try? await probe.get("/-/ready"))?.status == 200
            {
                return process
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        await process.killAndReap()
        throw ProcessError("alertmanager was not ready on port \(port) within 30 s", stderr: process.stderr.text)
    }

    /// A client of its API.
    public var http: LiveClient { LiveClient(port: port, timeout: .seconds(10)) }

    /// `POST /api/v2/alerts` with `json` (a list of alerts); requires 200.
    public func post(alerts json: String) async throws {
        let response = try await http.post("/api/v2/alerts", json: json)
        guard response.status == 200 else { throw TestFailure("POST /api/v2/alerts answered \(response.status): \(response.text)") }
    }

    /// `GET /api/v2/silences`: every silence it holds, in any state.
    public func silences() async throws -> [[String: Any]] {
        let response = try await http.get("/api/v2/silences")
        guard response.status == 200, let list = try response.json() as? [[String: Any]] else {
            throw TestFailure("GET /api/v2/silences answered \(response.status): \(response.text)")
        }
        return list
    }

    /// Polls ``silences()`` until `done` holds; throws after `timeout` with what it last saw.
    @discardableResult
    public func awaitSilences(timeout: Duration = .seconds(30), until done: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let list = try await silences()
            if done(list) { return list }
            guard ContinuousClock.now < deadline else { throw TestFailure("Alertmanager's silences never matched: \(list)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// SIGKILLs it and waits until it was reaped: its port refuses connections until ``restart()``.
    public func kill() async {
        await process.withLockedValue { $0 }?.killAndReap()
    }

    /// Starts it again on the same port, with the same config and storage (its silences kept).
    public func restart() async throws {
        await kill()
        let process = try await Self.launch(port: port, directory: directory)
        self.process.withLockedValue { $0 = process }
    }

    /// SIGKILLs it without waiting; the scratch directory goes once it has been reaped.
    public func stop() {
        guard let process = process.withLockedValue({ $0 }) else { return }
        process.send(SIGKILL)
        process.keepUntilExit(directory)
    }
}

extension TestAlertmanager {
    /// Alertmanager's fingerprint of `labels`, written here from Prometheus's definition (not
    /// alertd's code), so test payloads carry what the real Alertmanager would send: the
    /// 64-bit FNV-1a of the labels sorted by name, each name and value followed by 0xFF,
    /// as 16 lowercase hex digits. The end-to-end tier checks it against the real one.
    public static func fingerprint(_ labels: [String: String]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for name in labels.keys.sorted() {
            for byte in Array(name.utf8) + [0xFF] + Array(labels[name]!.utf8) + [0xFF] {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        return String(format: "%016llx", hash)
    }
}
