// `alertctl push list|rm` (issue 41, item 5) against the real daemon: the token's own
// subscriptions (an admin's: every one), the endpoint's host only, removal; and check-config
// with `push:`.

import AlertdTestSupport
import Foundation
import Testing

@Suite("alertctl push: the devices subscribed to Web Push")
struct PushAlertctlTests {
    @Test("push list names each subscription without its endpoint's path; rm removes it; an alertd without push says how to turn it on")
    func listAndRemove() async throws {
        let (aliceSecret, alice) = try await newToken("alice", roles: "answer", clients: "*")
        let (rootSecret, root) = try await newToken("root", roles: "admin", clients: "*")
        let daemon = try await Daemon.start(
            .init(config: "auth:\n  tokens:\n" + alice + root + "push:\n  subject: \"mailto:ops@example.com\"\n"))
        defer { daemon.cleanup() }
        let device = PushDevice()
        let made = try await daemon.client().post(
            "/v1/push/subscriptions",
            json: device.subscription(
                endpoint: "https://fcm.googleapis.com/fcm/send/device-secret-part", clients: ["ops", "web"], answer: true),
            headers: [("Authorization", "Bearer \(aliceSecret)")])
        #expect(made.status == 201, "\(made.text)")
        let id = try #require(try made.jsonObject()["id"] as? String)

        let asAlice = Alertctl(url: daemon.baseURL, token: aliceSecret)
        let listed = try await asAlice.run("push", "list")
        #expect(listed.status == 0, "\(listed)")
        #expect(listed.stdout.contains(id) && listed.stdout.contains("clients: ops, web") && listed.stdout.contains("answers as alice"))
        #expect(
            listed.stdout.contains("push service: fcm.googleapis.com") && !listed.stdout.contains("device-secret-part"), "\(listed.stdout)")
        let json = try await asAlice.json("push", "list") as? [String: Any]
        #expect((json?["subscriptions"] as? [[String: Any]])?.first?["id"] as? String == id)

        // root (admin) sees it and removes it; alice's list is then empty.
        let asRoot = Alertctl(url: daemon.baseURL, token: rootSecret)
        #expect(try await asRoot.run("push", "list").stdout.contains(id))
        let removed = try await asRoot.run("push", "rm", id)
        #expect(removed.status == 0 && removed.stdout == "removed \(id)\n", "\(removed)")
        let after = try await asAlice.run("push", "list")
        #expect(after.status == 0 && after.stdout == "no push subscription\n", "\(after)")
        let again = try await asRoot.run("push", "rm", id)
        #expect(again.status == 3 && again.stderr.contains("no push subscription \(id)"), "\(again)")
        let bare = try await asRoot.run("push")
        #expect(bare.status == 64 && bare.stderr.contains("list"), "\(bare)")
    }

    @Test("an alertd without push: push list is refused, saying to set push.subject")
    func pushOff() async throws {
        let daemon = try await Daemon.start()
        defer { daemon.cleanup() }
        let run = try await Alertctl(url: daemon.baseURL).run("push", "list")
        #expect(run.status == 3 && run.stderr.contains("push.subject"), "\(run)")
    }

    @Test(
        "check-config takes a push section and refuses a bad one, naming the key",
        arguments: [
            ("push:\n  subject: \"mailto:ops@example.com\"\n  remind_every: 10m\n", nil),
            ("push:\n  remind_every: 10m\n", "push.subject is required"),
            ("push:\n  subject: \"ops@example.com\"\n", "push.subject must be a mailto: or https: URI"),
            (
                "push:\n  subject: \"mailto:ops@example.com\"\n  remind_every: 10s\n",
                "push.remind_every must be at least a minute (60s, 10m), not 10 s"
            ),
            ("push:\n  subject: \"mailto:ops@example.com\"\n  remind: 10m\n", "push.remind"),
            (
                "push:\n  subject: \"mailto:ops@example.com\"\n  max_subscriptions_per_token: 0\n",
                "push.max_subscriptions_per_token must be between 1 and 1000, not 0"
            ),
            ("push:\n  subject: \"mailto:ops@example.com\"\n  max_subscriptions: many\n", "push.max_subscriptions must be an integer"),
        ] as [(String, String?)])
    func checkConfig(section: String, problem: String?) async throws {
        let scratch = try ScratchDirectory()
        let file = scratch.url.appendingPathComponent("alertd.yaml")
        try Data("state_dir: \(scratch.url.path)/state\n\(section)".utf8).write(to: file)
        let run = try await Program.alertd(["check-config", file.path])
        if let problem {
            #expect(run.status == 1 && run.stderr.contains(problem), "\(run.stderr)")
        } else {
            #expect(run.status == 0 && run.stdout.contains("ok"), "\(run.stdout)\(run.stderr)")
        }
    }
}
