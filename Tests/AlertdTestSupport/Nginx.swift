import Foundation
import Glibc

/// Debian's nginx as the load balancer in front of alertd instances: round-robin over
/// their ports, as docs/high-availability.md deploys it. A child of the test process, its
/// config, logs, pid file and temporary paths in a scratch directory of its own.
///
/// ```swift
/// let balancer = try await Nginx.start(roundRobin: [first.port, second.port])
/// defer { balancer.stop() }
/// let http = LiveClient(port: balancer.port)
/// ```
///
/// One process (`master_process off`): a master's workers would outlive a master killed
/// with the test process and keep the port. Needs the `nginx-light` (or any nginx) package.
public final class Nginx: Sendable {
    /// The port nginx listens on (127.0.0.1).
    public let port: Int
    private let process: ChildProcess
    private let directory: ScratchDirectory

    /// Debian's nginx binary, nil when it is not installed.
    public static var binary: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { access($0, X_OK) == 0 }
    }

    public static var isInstalled: Bool { binary != nil }

    private init(port: Int, process: ChildProcess, directory: ScratchDirectory) {
        self.port = port
        self.process = process
        self.directory = directory
    }

    deinit { stop() }

    /// Starts nginx proxying to `127.0.0.1:<port>` for each of `upstreams`, round-robin, with
    /// keep-alive connections to them and long-polls allowed up to `readTimeout` seconds;
    /// returns once it answers `/healthz` (proxied to an instance).
    public static func start(roundRobin upstreams: [Int], readTimeout: Int = 120) async throws -> Nginx {
        guard let binary else { throw ProcessError("nginx is not installed (apt-get install nginx-light)") }
        let directory = try ScratchDirectory(prefix: "alertd-nginx")
        let path = directory.url.path
        let reserved = try ReservedPort()
        let port = reserved.port
        reserved.release()
        let servers = upstreams.map { "        server 127.0.0.1:\($0);" }.joined(separator: "\n")
        let config = """
            master_process off;
            error_log \(path)/error.log notice;
            pid \(path)/nginx.pid;
            events { worker_connections 1024; }
            http {
                log_format upstream '$upstream_addr $status "$request"';
                access_log \(path)/access.log upstream;
                client_body_temp_path \(path)/body;
                proxy_temp_path \(path)/proxy;
                fastcgi_temp_path \(path)/fastcgi;
                uwsgi_temp_path \(path)/uwsgi;
                scgi_temp_path \(path)/scgi;
                upstream alertd {
            \(servers)
                    keepalive 32;
                }
                server {
                    listen 127.0.0.1:\(port);
                    location / {
                        proxy_pass http://alertd;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_set_header Host $host;
                        proxy_read_timeout \(readTimeout)s;
                        proxy_buffering off;
                    }
                }
            }

            """
        let file = directory.url.appendingPathComponent("nginx.conf")
        try Data(config.utf8).write(to: file)
        let process = try await ChildProcess.spawn(
            binary, arguments: ["-c", file.path, "-p", path, "-e", "\(path)/error.log", "-g", "daemon off;"],
            environment: ["PATH=/usr/sbin:/usr/bin:/bin"], dieWithParent: true)
        let nginx = Nginx(port: port, process: process, directory: directory)
        // Listening once a request through it reaches an instance.
        let probe = LiveClient(port: port, timeout: .seconds(2))
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let status = process.exitStatus {
                throw ProcessError("nginx exited at start", exitStatus: status, stderr: process.stderr.text + nginx.errorLog)
            }
            if (try? await probe.get("/healthz"))?.status == 200 { return nginx }
            try await Task.sleep(for: .milliseconds(20))
        }
        nginx.stop()
        throw ProcessError("nginx did not answer /healthz on port \(port) within 20 s", stderr: process.stderr.text + nginx.errorLog)
    }

    /// Its error log so far (`notice` and above).
    public var errorLog: String {
        (try? String(contentsOf: directory.url.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// Its access log so far: one line per request it proxied, `UPSTREAM STATUS "REQUEST"`,
    /// where UPSTREAM is the `127.0.0.1:port` that answered, or several, comma-separated,
    /// when nginx tried the next one after an error.
    public var accessLog: String {
        (try? String(contentsOf: directory.url.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
    }

    /// From the access log: the requests logged, how many each upstream port answered,
    /// and the lines of requests nginx had to pass to another upstream after an error.
    public func answered() -> (requests: Int, byPort: [Int: Int], retried: [Substring]) {
        var byPort: [Int: Int] = [:]
        var retried: [Substring] = []
        let lines = accessLog.split(separator: "\n")
        for line in lines {
            // `127.0.0.1:p1, 127.0.0.1:p2 502 "GET …"`: the addresses, then the status.
            let addresses = line.prefix { $0 != "\"" }.split(separator: " ").dropLast().map { $0.filter { $0 != "," } }
            if addresses.count > 1 { retried.append(line) }
            if let port = addresses.last?.split(separator: ":").last.flatMap({ Int($0) }) { byPort[port, default: 0] += 1 }
        }
        return (lines.count, byPort, retried)
    }

    /// SIGKILLs it without waiting; the scratch directory goes once it has been reaped.
    public func stop() {
        process.send(SIGKILL)
        process.keepUntilExit(directory)
    }
}
