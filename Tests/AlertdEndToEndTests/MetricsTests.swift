import AlertdTestSupport
import AlertdVersion
import Foundation
import Testing

/// `promtool check metrics` on `text` (Debian's prometheus package): exit status and output.
private func promtool(_ text: String) async throws -> (status: Int32, output: String) {
    let run = try await Program.run("/usr/bin/promtool", ["check", "metrics"], stdin: text)
    return (run.status, run.stdout + run.stderr)
}

/// The value of the sample line that starts with `series ` (name and labels as written).
private func sample(_ text: String, _ series: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
}

@Suite("/metrics in the Prometheus text format")
struct MetricsTests {
    @Test("real activity shows in /metrics, promtool accepts it, and no client id becomes a label")
    func metricsReflectActivity() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool"), "install Debian's prometheus package")
        let hook = try await WebhookReceiver.listening()
        defer { hook.close() }
        let daemon = try await Daemon.start(
            .init(
                config: "callbacks: { allow: [\"127.0.0.1\"] }\n"
                    + "webhooks:\n  - { client: secret-team-name, url: \"\(hook.url)\", secret: \"s\" }\n"))
        defer { daemon.cleanup() }
        let http = daemon.client()
        let first = try await http.postAlert("secret-team-name", #"{"title":"A","buttons":[{"title":"OK"}]}"#)
        _ = try await http.postAlert("secret-team-name", #"{"title":"B","buttons":[{"title":"OK"}]}"#)
        #expect(try await http.choose("secret-team-name", id(first), #"{"button":"OK"}"#).status == 200)
        _ = try await hook.waitForRequests(count: 1, timeout: 20)
        #expect(try await http.get("/v1/nowhere").status == 404)
        #expect(try await http.post("/v1/clients/secret-team-name/alerts", json: "{}").status == 400)

        // The delivery is recorded just after the receiver answered: poll until it shows.
        var text = ""
        let deadline = ContinuousClock.now + .seconds(10)
        repeat {
            let response = try await http.get("/metrics")
            #expect(response.status == 200)
            #expect(response.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            text = response.text
        } while sample(text, #"alertd_deliveries_total{kind="callback",result="delivered"}"#) == nil && ContinuousClock.now < deadline

        let checked = try await promtool(text)
        #expect(checked.status == 0, "promtool: \(checked.output)")
        #expect(sample(text, "alertd_alerts_created_total") == 2)
        #expect(sample(text, #"alertd_alerts_terminal_total{outcome="answered"}"#) == 1)
        #expect(sample(text, "alertd_alerts_pending") == 1)
        #expect(sample(text, "alertd_waiters") == 0)
        #expect(sample(text, #"alertd_http_requests_total{route="post_alert",status="201"}"#) == 2)
        #expect(sample(text, #"alertd_http_requests_total{route="choose",status="200"}"#) == 1)
        #expect(sample(text, #"alertd_http_requests_total{route="unmatched",status="404"}"#) == 1)
        #expect(sample(text, #"alertd_http_requests_total{route="post_alert",status="400"}"#) == 1)
        // One duration histogram per route, whatever the statuses.
        #expect(sample(text, #"alertd_http_request_duration_seconds_count{route="post_alert"}"#) == 3)
        #expect((sample(text, "alertd_store_commit_duration_seconds_count") ?? 0) >= 2)
        #expect(sample(text, #"alertd_deliveries_total{kind="callback",result="delivered"}"#) == 1)
        #expect(sample(text, "alertd_delivery_latency_seconds_count") == 1)
        #expect(!text.contains("secret-team-name"), "client ids are not labels")
        #expect(text.contains("# HELP alertd_http_requests_total"))
        #expect(sample(text, #"alertd_build_info{version="\#(AlertdVersion.string)"}"#) == 1)
        // The process, under Prometheus' standard names.
        #expect((sample(text, "process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((sample(text, "process_open_fds") ?? 0) > 3)
        #expect((sample(text, "process_max_fds") ?? 0) >= (sample(text, "process_open_fds") ?? .infinity))
        #expect((sample(text, "process_cpu_seconds_total") ?? -1) >= 0)
        let started = sample(text, "process_start_time_seconds") ?? 0
        #expect(abs(started - Date().timeIntervalSince1970) < 600, "started \(started)")
        #expect(sample(text, #"alertd_deliveries_pending{state="waiting"}"#) == 0)
    }

    @Test("a receiver that is down shows as a growing backlog of deliveries waiting")
    func deliveryBacklog() async throws {
        let down = try ReservedPort()
        defer { down.release() }
        let port = down.port
        let daemon = try await Daemon.start(
            .init(
                config: """
                    callbacks: { retry_initial_seconds: 60, retry_max_interval_seconds: 60, allow: ["127.0.0.1"] }
                    webhooks:
                      - { client: ops, url: "http://127.0.0.1:\(port)/down", secret: "s" }
                    """))
        defer { daemon.cleanup() }
        let http = daemon.client()
        for title in ["A", "B", "C"] {
            let alert = try await http.postAlert("ops", #"{"title":"\#(title)","buttons":[{"title":"OK"}]}"#)
            #expect(try await http.choose("ops", id(alert), #"{"button":"OK"}"#).status == 200)
        }
        // Each first attempt fails; the deliveries then wait a minute for their next one. All three
        // stay pending: waiting, or (an attempt still connecting) in flight.
        var text = ""
        func backlog() -> Double {
            (sample(text, #"alertd_deliveries_pending{state="waiting"}"#) ?? 0)
                + (sample(text, #"alertd_deliveries_pending{state="in_flight"}"#) ?? 0)
        }
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            text = try await http.get("/metrics").text
        } while (sample(text, #"alertd_deliveries_total{kind="callback",result="retry"}"#) ?? 0) < 1 && ContinuousClock.now < deadline
        #expect(backlog() == 3, "\(text)")
        #expect((sample(text, #"alertd_deliveries_pending{state="waiting"}"#) ?? 0) >= 1, "\(text)")
        #expect(try await promtool(text).status == 0)
    }

    @Test("metrics.require_token puts /metrics behind any valid token; without it /metrics is open even with tokens")
    func requireToken() async throws {
        let entry = "    - { name: reader, sha256: \"\(Self.hex)\", roles: [read], clients: [ops] }\n"
        let guarded = try await Daemon.start(.init(config: "metrics: { require_token: true }\nauth:\n  tokens:\n" + entry))
        defer { guarded.cleanup() }
        let http = guarded.client()
        #expect(try await http.get("/metrics").status == 401)
        #expect(try await http.get("/metrics", headers: [("Authorization", "Bearer wrong")]).status == 401)
        #expect(try await http.get("/metrics", headers: [("Authorization", "Bearer metrics-secret")]).status == 200)
        #expect(try await http.get("/healthz").status == 200)

        let open = try await Daemon.start(.init(config: "auth:\n  tokens:\n" + entry))
        defer { open.cleanup() }
        #expect(try await open.client().get("/metrics").status == 200)

        let noTokens = try await Daemon.start(.init(config: "metrics: { require_token: true }\n"))
        defer { noTokens.cleanup() }
        #expect(try await noTokens.client().get("/metrics").status == 401, "no token can be valid when none is configured")
    }

    /// SHA-256 of "metrics-secret".
    static let hex = "d31c4153216654104062c2381a35a508ce65581c2abea7770a7cfd76c92e828e"
}
