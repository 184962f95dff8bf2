// The contract tier through two instances (SPEC §9: "every instance answers as one alertd
// would", any balancer, no sticky sessions): two real `alertd` processes on one PostgreSQL
// database, Debian's nginx in front of them round-robin, and the test body's requests sent
// over real sockets to nginx. nginx runs as one process (`Nginx`: `master_process off`), so
// round-robin is strict alternation over every request of the body, whichever connection
// it came on: a write answered by one instance is read next through the other.
//
// Real processes rather than two in-process instances: the daemon's own wiring (its HTTP
// server, its services, its PostgreSQL listener) is what serves a deployment, and the
// balancer is a real one, as docs/high-availability.md deploys it.

import AlertdTestSupport
import Foundation
import Testing

/// Two alertd instances started from one config (which names the shared database) and
/// nginx balancing them round-robin.
final class BalancedAlertd: Sendable {
    let instances: [Daemon]
    let balancer: Nginx

    private init(instances: [Daemon], balancer: Nginx) {
        self.instances = instances
        self.balancer = balancer
    }

    /// Starts both instances (they apply the schema once, under its advisory lock), then
    /// nginx in front of them.
    static func start(config: String) async throws -> BalancedAlertd {
        guard Nginx.isInstalled else {
            throw TestFailure("the balanced pass needs nginx in front of the instances: apt-get install nginx-light")
        }
        let instances = try await withThrowingTaskGroup(of: (Int, Daemon).self) { group in
            for index in 0..<2 { group.addTask { (index, try await Daemon.start(.init(config: config))) } }
            var started: [(Int, Daemon)] = []
            do {
                for try await instance in group { started.append(instance) }
            } catch {
                for (_, daemon) in started { daemon.cleanup() }
                throw error
            }
            return started.sorted { $0.0 < $1.0 }.map(\.1)
        }
        do {
            return BalancedAlertd(instances: instances, balancer: try await Nginx.start(roundRobin: instances.map(\.port)))
        } catch {
            for daemon in instances { daemon.cleanup() }
            throw error
        }
    }

    /// The client the body uses: every request through nginx.
    func client(timeout: Duration) -> BalancedClient {
        BalancedClient(
            balancer: LiveClient(port: balancer.port, timeout: timeout), instances: instances.map { $0.client(timeout: timeout) })
    }

    /// Why an instance is no longer running, or nil while both are.
    var exited: String? {
        let gone = instances.enumerated().filter { !$0.element.isRunning }
        guard !gone.isEmpty else { return nil }
        return gone.map { index, daemon in
            "instance \(index) exited during the test (status \(daemon.exitStatus.map(String.init) ?? "?"))\n\(daemon.stderrText.suffix(4000))"
        }.joined(separator: "\n")
    }

    /// What went wrong with the balancing itself (nginx's access log), or nil: each
    /// instance answered some of the body's requests (when it sent two or more), and none
    /// was passed on to the other instance after an error (which would hide the error).
    var unbalanced: String? {
        let (requests, byPort, retried) = balancer.answered()
        var problems: [String] = []
        if requests >= 2, let idle = instances.firstIndex(where: { byPort[$0.port, default: 0] == 0 }) {
            problems.append("instance \(idle) answered none of the \(requests) requests (by port: \(byPort))")
        }
        if !retried.isEmpty {
            problems.append("nginx passed requests on after an instance failed them:\n" + retried.prefix(10).joined(separator: "\n"))
        }
        return problems.isEmpty ? nil : problems.joined(separator: "\n")
    }

    func cleanup() {
        balancer.stop()
        for daemon in instances { daemon.cleanup() }
    }
}

/// `TestClient` through the balancer.
struct BalancedClient: TestClient {
    let balancer: LiveClient
    /// Each instance directly, for what only the instances together can say.
    let instances: [LiveClient]

    func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) async throws -> TestResponse {
        try await balancer.execute(method, path, headers: headers, body: body)
    }

    /// Requests parked in alertd as a whole: each instance counts only those parked on it
    /// (`/readyz`), so the sum, each asked directly (a read through nginx reaches one).
    func waiters() async throws -> Int {
        var total = 0
        for instance in instances {
            let parked = try await instance.waiters()
            guard parked >= 0 else { return parked }
            total += parked
        }
        return total
    }
}
