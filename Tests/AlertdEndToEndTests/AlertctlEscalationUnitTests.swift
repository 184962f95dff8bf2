// alertctl and escalation (SPEC §12), in process: --escalate and --no-escalation make the
// alert's own policy; get and watch say that an alert came by escalation, and from where.

import AlertdWire
import ArgumentParser
import Foundation
import Testing

@testable import alertctl

@Suite("alertctl: escalation")
struct AlertctlEscalationUnitTests {
    private func parsed(_ arguments: [String]) throws -> NewAlert {
        let all = ["post", "ops", "--title", "Deploy?", "--button", "Deploy"] + arguments
        let command = try alertctl.Alertctl.parseAsRoot(all)
        let post = try #require(command as? Post)
        return try post.newAlert(arguments: ["alertctl"] + all)
    }

    @Test("--escalate after:client, repeated, is the alert's own escalation in order; durations as everywhere")
    func escalate() throws {
        let alert = try parsed(["--escalate", "5m:ops-lead", "--escalate", "1h30m:cto", "--escalate", "90:sre"])
        #expect(
            alert.escalation == [
                EscalationStep(after: 300, to: "ops-lead"), EscalationStep(after: 5400, to: "cto"), EscalationStep(after: 90, to: "sre"),
            ])
    }

    @Test("without --escalate the client's policy applies (nothing sent); --no-escalation sends [] to turn it off")
    func policyOrOff() throws {
        #expect(try parsed([]).escalation == nil)
        #expect(try parsed(["--no-escalation"]).escalation == [])
        #expect(throws: (any Error).self) { try parsed(["--no-escalation", "--escalate", "5m:lead"]) }
    }

    @Test(
        "a step that is not after:client is refused before anything is sent, saying why",
        arguments: [
            ("ops-lead", "has no colon"), ("5 minutes:lead", "not a number of seconds or a duration"), ("5m:", "no client to ask"),
            ("0:lead", "greater than 0"),
        ])
    func refused(text: String, reason: String) throws {
        do {
            _ = try parsed(["--escalate", text])
            Issue.record("--escalate \(text) was taken")
        } catch {
            let message = alertctl.Alertctl.message(for: error)
            #expect(message.contains(reason), "\(message)")
        }
    }

    private func resource(client: String = "ops", escalatedTo: [EscalatedTo] = []) -> AlertResource {
        var alert = ConsoleStateTests.alert(buttons: [.default("Deploy"), .cancel("Cancel")], title: "Deploy build 1234?")
        alert.client = client
        alert.escalation = [EscalationStep(after: 300, to: "ops-lead"), EscalationStep(after: 900, to: "cto")]
        alert.escalatedTo = escalatedTo
        return alert
    }

    @Test("get shows the policy and the steps taken")
    func details() {
        let alert = resource(escalatedTo: [EscalatedTo(client: "ops-lead", at: Timestamp(milliseconds: 300_000))])
        let text = Text.details(alert)
        #expect(text.contains("escalation: 5m ops-lead (asked 1970-01-01T00:05:00.000Z), 15m cto"), "\(text)")
    }

    @Test("watch on the client it escalated to says it came by escalation, and from where; on its own client it does not")
    func watch() {
        let alert = resource(escalatedTo: [EscalatedTo(client: "ops-lead", at: Timestamp(milliseconds: 300_000))])
        var lead = ConsoleState(client: "ops-lead")
        lead.show(alert)
        let screen = ConsoleStateTests.visible(lead.frame(now: Date())).joined(separator: "\n")
        #expect(screen.contains("↑ escalated from ops: nobody answered there"), "\(screen)")
        var own = ConsoleState(client: "ops")
        own.show(alert)
        #expect(!ConsoleStateTests.visible(own.frame(now: Date())).joined(separator: "\n").contains("escalated from"))
    }
}
