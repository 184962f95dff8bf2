import AlertdCore
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

@testable import AlertdDaemon

@Suite("clients.<id>.escalation in the config file (SPEC §12)")
struct EscalationConfigTests {
    private func problems(_ yaml: String) -> [String] {
        do {
            _ = try Config.parse(yaml: yaml)
            return []
        } catch let errors as ConfigErrors {
            return errors.errors.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    @Test("a policy is read with durations as the config writes them elsewhere, in order; it names its clients for /metrics")
    func reads() throws {
        let config = try Config.parse(
            yaml: """
                clients:
                  ops:
                    policy: stack
                    escalation:
                      - { after: 5m, to: ops-lead }
                      - { after: 900, to: cto }
                """)
        #expect(config.clients["ops"]?.escalation == [EscalationStep(after: 300, to: "ops-lead"), EscalationStep(after: 900, to: "cto")])
        #expect(config.queueSettings["ops"].escalation.count == 2)
        #expect(config.queueSettings["other"].escalation.isEmpty)
        #expect(config.namedClients == ["ops", "ops-lead", "cto"])
    }

    @Test(
        "each bad policy or step is one line naming its key",
        arguments: [
            ("[{ after: 5m, to: ops }]", "clients.ops.escalation[0].to is the alert's own client"),
            ("[{ after: 10m, to: a }, { after: 5m, to: b }]", "clients.ops.escalation[1].after must be greater than the step before"),
            ("[{ after: 5m, to: a }, { after: 10m, to: a }]", "clients.ops.escalation[1].to is asked by an earlier step already"),
            ("[{ after: 5m, to: \"no spaces\" }]", "clients.ops.escalation[0].to is not a valid client id"),
            ("[{ after: 30d, to: a }]", "clients.ops.escalation[0].after must be below the alert's expiry"),
            ("[{ after: soon, to: a }]", "clients.ops.escalation[0].after must be a number of seconds or a duration"),
            ("[{ to: a }]", "clients.ops.escalation[0].after is required"),
            ("[{ after: 5m }]", "clients.ops.escalation[0].to is required"),
            ("[{ after: 5m, to: a, when: always }]", "unknown key clients.ops.escalation[0].when"),
            (
                "[{ after: 1m, to: a }, { after: 2m, to: b }, { after: 3m, to: c }, { after: 4m, to: d }, { after: 5m, to: e }, { after: 6m, to: f }]",
                "clients.ops.escalation at most 5 steps"
            ),
            ("5m", "clients.ops.escalation must be a list"),
        ] as [(String, String)])
    func refused(escalation: String, line: String) {
        let found = problems("clients:\n  ops:\n    escalation: \(escalation)\n")
        #expect(found.contains { $0.contains(line) }, "\(found)")
    }

    @Test("check-config's start check warns of a step at or past alerts.default_expires_in: alerts posted with the default never take it")
    func warnsOfALateStep() throws {
        let config = try Config.parse(
            yaml: """
                alerts: { default_expires_in: 1h }
                clients:
                  ops:
                    escalation: [{ after: 30m, to: ops-lead }, { after: 2h, to: cto }]
                """)
        let warnings = config.startCheck(listeningHost: "127.0.0.1").warnings
        #expect(
            warnings.filter { $0.contains("escalation") } == [
                "clients.ops.escalation[1].after is at or past alerts.default_expires_in (3600 seconds): alerts posted without a longer expires_in never take that step"
            ])
    }

    @Test("alertd check-config refuses a bad policy with its line and exit 1, and passes a good one")
    func checkConfig() async throws {
        let directory = try ScratchDirectory(prefix: "alertd-escalation-config")
        let good = directory.url.appendingPathComponent("good.yaml")
        try Data("clients:\n  ops:\n    escalation: [{ after: 5m, to: ops-lead }]\n".utf8).write(to: good)
        let ok = try await Program.alertd(["check-config", good.path])
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        let bad = directory.url.appendingPathComponent("bad.yaml")
        try Data("clients:\n  ops:\n    escalation: [{ after: 5m, to: ops }]\n".utf8).write(to: bad)
        let refused = try await Program.alertd(["check-config", bad.path])
        #expect(refused.status == 1)
        #expect((refused.stdout + refused.stderr).contains("clients.ops.escalation[0].to is the alert's own client"), "\(refused.stderr)")
    }
}
