// Web Push (SPEC §11) through the API, on every store and through two instances: the VAPID
// key, subscriptions and their roles, a displayed alert pushed (encrypted for the device,
// signed with the key alertd publishes), answered once through its answer_url, the decision
// pushed after it, a device its push service says is gone. The push service here is a
// WebhookReceiver on loopback (push.allow_http); the device is PushDevice, which opens a push
// as a browser does. The Python tier (Tests/Push) checks the same against a stand-in push
// service that verifies with Mozilla's http_ece and its own JWT check, and Chromium the
// service worker.

import AlertdPush
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

/// A config with push on (http endpoints allowed for the receiver on loopback), callbacks
/// allowed to loopback, and the role tokens (`reader`, `deployer`, `console`, `root`).
private func pushConfig(allowHTTP: Bool = true) async throws -> (config: String, secrets: [String: String]) {
    let (tokens, secrets) = try await roleTokens()
    let config =
        callbackConfig() + tokens
        + "push:\n  subject: \"mailto:ops@example.com\"\n" + (allowHTTP ? "  allow_http: true\n" : "")
    return (config, secrets)
}

private func bearer(_ secret: String?) -> [(String, String)] { [("Authorization", "Bearer \(secret ?? "")")] }

/// Through two instances, waits until each pushes to `count` subscriptions
/// (`alertd_push_subscriptions`): a subscription made or ended through one counts on the
/// other once its notification came, milliseconds later (docs/high-availability.md). A
/// single alertd counts it as it answers.
private func everyInstance(_ http: some TestClient, pushesTo count: Int) async throws {
    guard let balanced = http as? BalancedClient else { return }
    for (index, instance) in balanced.instances.enumerated() {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let metrics = try await instance.get("/metrics").text
            let gauge = metrics.split(separator: "\n").first { $0.hasPrefix("alertd_push_subscriptions ") }
            if let gauge, Double(gauge.split(separator: " ").last ?? "") == Double(count) { break }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("instance \(index) never pushed to \(count) subscriptions: \(gauge.map(String.init) ?? "no gauge")")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// `device` subscribed to `ops` at `endpoint` with `secret`'s token (201 expected), once
/// every instance pushes to it (``everyInstance(_:pushesTo:)``).
private func subscribe(
    _ http: some TestClient, _ device: PushDevice, at endpoint: String, answer: Bool, token secret: String?
) async throws {
    let made = try await http.post(
        "/v1/push/subscriptions", json: device.subscription(endpoint: endpoint, clients: ["ops"], answer: answer),
        headers: bearer(secret))
    try #require(made.status == 201, "\(made.text)")
    try await everyInstance(http, pushesTo: 1)
}

@Suite("Web Push (§11): subscriptions, pushes, answers from the notification")
struct PushTests {
    @Test("without push.subject the push endpoints are 404 and say how to turn push on")
    func off() async throws {
        let (tokens, secrets) = try await roleTokens()
        try await withTestClient(config: callbackConfig() + tokens) { http in
            let key = try await http.get("/v1/push/key", headers: bearer(secrets["reader"]))
            #expect(key.status == 404 && key.text.contains("push.subject"), "\(key.text)")
            let device = PushDevice()
            let made = try await http.post(
                "/v1/push/subscriptions", json: device.subscription(endpoint: "https://push.example/x", clients: ["ops"], answer: false),
                headers: bearer(secrets["reader"]))
            #expect(made.status == 404, "\(made.text)")
        }
    }

    @Test("the VAPID key is a P-256 point, the same for every read; a subscription is listed without its keys and replaced by its endpoint")
    func keyAndSubscriptions() async throws {
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config) { http in
            let read = bearer(secrets["reader"])
            let key = try await http.get("/v1/push/key", headers: read).jsonObject()["public_key"] as? String
            let point = try #require(key.flatMap(Base64URL.decode))
            #expect(point.count == 65 && point[0] == 4)
            for _ in 0..<4 { #expect(try await http.get("/v1/push/key", headers: read).jsonObject()["public_key"] as? String == key) }

            let device = PushDevice()
            let endpoint = "https://push.example/wpush/v2/abc"
            let made = try await http.post(
                "/v1/push/subscriptions", json: device.subscription(endpoint: endpoint, clients: ["ops", "team-a"], answer: false),
                headers: read)
            #expect(made.status == 201, "\(made.text)")
            let first = try made.jsonObject()
            #expect(first["endpoint"] as? String == endpoint && first["decider"] as? String == "reader")
            #expect(first["clients"] as? [String] == ["ops", "team-a"] && first["answer"] as? Bool == false)
            #expect(!made.text.contains(device.p256dh) && !made.text.contains(device.authText), "the device's keys are never shown")
            // The same endpoint again (the browser subscribed again): replaced, 200, one listed.
            let again = try await http.post(
                "/v1/push/subscriptions", json: device.subscription(endpoint: endpoint, clients: ["ops"], answer: false), headers: read)
            #expect(again.status == 200, "\(again.text)")
            let listed = try await http.get("/v1/push/subscriptions", headers: read).jsonObject()["subscriptions"] as? [[String: Any]]
            #expect(listed?.count == 1 && listed?.first?["clients"] as? [String] == ["ops"], "\(String(describing: listed))")
            #expect(!(try await http.get("/v1/push/subscriptions", headers: read).text.contains(device.p256dh)))
        }
    }

    @Test("subscriptions are bounded per token and in all (429 queue-full naming the key); an endpoint again replaces its own")
    func bounded() async throws {
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config + "  max_subscriptions_per_token: 2\n  max_subscriptions: 3\n") { http in
            let device = PushDevice()
            func subscribe(_ n: Int, _ token: String) async throws -> TestResponse {
                try await http.post(
                    "/v1/push/subscriptions",
                    json: device.subscription(endpoint: "https://push.example/wpush/\(n)", clients: ["ops"], answer: false),
                    headers: bearer(secrets[token]))
            }
            func count() async throws -> Int {
                (try await http.get("/v1/push/subscriptions", headers: bearer(secrets["root"])).jsonObject()["subscriptions"] as? [Any])?
                    .count ?? -1
            }
            #expect(try await subscribe(1, "reader").status == 201)
            #expect(try await subscribe(2, "reader").status == 201)
            let third = try await subscribe(3, "reader")
            Contract.expectProblem(third, status: 429, code: "queue-full")
            #expect(third.text.contains("push.max_subscriptions_per_token") && third.text.contains("reader"), "\(third.text)")
            #expect(try await subscribe(1, "reader").status == 200, "the same endpoint replaces its own, at the bound too")
            #expect(try await subscribe(4, "console").status == 201)
            let past = try await subscribe(5, "console")
            Contract.expectProblem(past, status: 429, code: "queue-full")
            #expect(past.text.contains("push.max_subscriptions)"), "\(past.text)")
            #expect(try await count() == 3, "nothing refused was stored")
            // One removed: room again.
            let mine = try await http.get("/v1/push/subscriptions", headers: bearer(secrets["reader"])).jsonObject()["subscriptions"]
            let id = try #require((mine as? [[String: Any]])?.first?["id"] as? String)
            #expect(try await http.delete("/v1/push/subscriptions/\(id)", headers: bearer(secrets["reader"])).status == 204)
            #expect(try await subscribe(3, "reader").status == 201)
        }
    }

    @Test("roles: a client the token may not touch, answer without the answer role, another token's subscription")
    func roles() async throws {
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config) { http in
            let device = PushDevice()
            // console may touch ops only; reader may not answer.
            let foreign = try await http.post(
                "/v1/push/subscriptions", json: device.subscription(endpoint: "https://push.example/1", clients: ["web"], answer: false),
                headers: bearer(secrets["console"]))
            #expect(foreign.status == 403 && foreign.text.contains("may not touch client web"), "\(foreign.text)")
            let answering = try await http.post(
                "/v1/push/subscriptions", json: device.subscription(endpoint: "https://push.example/1", clients: ["ops"], answer: true),
                headers: bearer(secrets["reader"]))
            #expect(answering.status == 403 && answering.text.contains("may not answer"), "\(answering.text)")
            let mine = try await http.post(
                "/v1/push/subscriptions", json: device.subscription(endpoint: "https://push.example/1", clients: ["ops"], answer: true),
                headers: bearer(secrets["console"]))
            #expect(mine.status == 201, "\(mine.text)")
            let id = try #require(try mine.jsonObject()["id"] as? String)
            // reader sees none of console's; root (admin) sees it; reader cannot delete it.
            #expect(
                (try await http.get("/v1/push/subscriptions", headers: bearer(secrets["reader"])).jsonObject()["subscriptions"] as? [Any])?
                    .isEmpty == true)
            #expect(
                (try await http.get("/v1/push/subscriptions", headers: bearer(secrets["root"])).jsonObject()["subscriptions"] as? [Any])?
                    .count == 1)
            #expect(try await http.delete("/v1/push/subscriptions/\(id)", headers: bearer(secrets["reader"])).status == 404)
            #expect(try await http.delete("/v1/push/subscriptions/\(id)", headers: bearer(secrets["console"])).status == 204)
            #expect(try await http.delete("/v1/push/subscriptions/\(id)", headers: bearer(secrets["console"])).status == 404)
            // Without a token: 401, as every /v1 request.
            #expect(try await http.get("/v1/push/key").status == 401)
        }
    }

    @Test(
        "a subscription that cannot be taken is a 400 naming its field, and nothing is stored",
        arguments: [
            (
                #"{"endpoint":"https://push.example/1","keys":{"p256dh":"AAAA","auth":"AAAAAAAAAAAAAAAAAAAAAA"},"clients":["ops"]}"#,
                "keys.p256dh"
            ),
            ("KEYS_OK_AUTH_SHORT", "keys.auth"),
            ("HTTP_ENDPOINT", "endpoint"),
            ("DENIED_ENDPOINT", "endpoint"),
            ("NO_CLIENTS", "clients"),
            ("BAD_CLIENT", "clients[0]"),
            (#"{"endpoint":"https://push.example/1","keys":{"p256dh":"x","auth":"y"},"clients":["ops"],"answr":true}"#, "answr"),
            (#"{"keys":{"p256dh":"x","auth":"y"},"clients":["ops"]}"#, "endpoint"),
        ])
    func badSubscriptions(body: String, field: String) async throws {
        let (config, secrets) = try await pushConfig(allowHTTP: false)
        let device = PushDevice()
        let keys = #""keys":{"p256dh":"\#(device.p256dh)","auth":"\#(device.authText)"}"#
        let bodies = [
            "KEYS_OK_AUTH_SHORT":
                #"{"endpoint":"https://push.example/1","keys":{"p256dh":"\#(device.p256dh)","auth":"AAAAAAAA"},"clients":["ops"]}"#,
            "HTTP_ENDPOINT": #"{"endpoint":"http://push.example/1",\#(keys),"clients":["ops"]}"#,
            "DENIED_ENDPOINT": #"{"endpoint":"https://169.254.169.254/latest",\#(keys),"clients":["ops"]}"#,
            "NO_CLIENTS": #"{"endpoint":"https://push.example/1",\#(keys),"clients":[]}"#,
            "BAD_CLIENT": #"{"endpoint":"https://push.example/1",\#(keys),"clients":["no spaces"]}"#,
        ]
        try await withTestClient(config: config) { http in
            let root = bearer(secrets["root"])
            let answer = try await http.post("/v1/push/subscriptions", json: bodies[body] ?? body, headers: root)
            #expect(answer.status == 400, "\(answer.text)")
            let problem = try answer.jsonObject()
            let fields = (problem["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String } ?? []
            #expect(fields.contains(field) || (problem["detail"] as? String)?.contains(field) == true, "\(answer.text)")
            let listed = try await http.get("/v1/push/subscriptions", headers: root).jsonObject()["subscriptions"] as? [Any]
            #expect(listed?.isEmpty == true, "nothing stored")
        }
    }

    @Test(
        "a displayed alert is pushed encrypted and signed; its answer_url answers once as the subscription's decider; the decision is pushed"
    )
    func displayedAnsweredDecided() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(201))
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config) { http in
            let key = try #require(
                try await http.get("/v1/push/key", headers: bearer(secrets["reader"])).jsonObject()["public_key"] as? String)
            let device = PushDevice()
            try await subscribe(http, device, at: service.url, answer: true, token: secrets["console"])
            let alert = try await http.postAlert(
                "ops",
                #"{"title":"Deploy 4.2?","message":"to production","priority":60,"metadata":{"secret":"s3cr3t"},"buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}"#,
                headers: bearer(secrets["deployer"]))
            let id = try #require(alert["id"] as? String)

            let pushed = try #require(try await service.waitForRequests(count: 1, timeout: 20).first)
            #expect(pushed.header("content-encoding") == "aes128gcm")
            #expect(pushed.header("urgency") == "high", "priority 60")
            #expect(pushed.header("topic") == id)
            let ttl = Int(pushed.header("ttl") ?? "") ?? -1
            #expect((86_000...86_400).contains(ttl), "TTL \(ttl): until the alert expires, at most a day")
            // VAPID: the key alertd publishes signed a token for the receiver's origin.
            let authorization = try #require(pushed.header("authorization"))
            let match = try #require(authorization.wholeMatch(of: /vapid t=([^,]+), k=(.+)/))
            #expect(String(match.2) == key)
            let claims = try #require(VAPID.verify(String(match.1), publicKey: Base64URL.decode(key)!))
            #expect(claims["aud"] == .string(VAPID.origin(of: service.url)!))
            #expect(claims["sub"] == .string("mailto:ops@example.com"))

            let payload = try device.payload(pushed.body)
            #expect(payload["type"] as? String == "alert.displayed")
            let shown = try #require(payload["alert"] as? [String: Any])
            #expect(shown["id"] as? String == id && shown["title"] as? String == "Deploy 4.2?" && shown["client"] as? String == "ops")
            let plain = String(decoding: try device.open(pushed.body), as: UTF8.self)
            #expect(shown["metadata"] == nil && !plain.contains("s3cr3t"))
            let answerURL = try #require(payload["answer_url"] as? String)
            #expect(answerURL.hasPrefix("/v1/answers/") && payload["answer_expires_at"] is String)

            // No Authorization: the link is the capability. It answers once, as console.
            let answered = try await http.post(answerURL, json: #"{"button":"Deploy"}"#)
            #expect(answered.status == 200, "\(answered.text)")
            let result = try #require(try answered.jsonObject()["result"] as? [String: Any])
            #expect(result["button"] as? String == "Deploy" && result["decided_by"] as? String == "console")
            let twice = try await http.post(answerURL, json: #"{"button":"Deploy"}"#)
            #expect(twice.status == 410 && (try? twice.jsonObject()["code"] as? String) == "answer-used", "\(twice.text)")

            // The decision closes the notification: alert.decided, same Topic.
            let all = try await service.waitForRequests(count: 2, timeout: 20)
            let decided = try device.payload(all[1].body)
            #expect(decided["type"] as? String == "alert.decided")
            #expect((decided["alert"] as? [String: Any])?["state"] as? String == "answered")
            #expect(all[1].header("topic") == id)
            // One push each, however many instances (two behind nginx in the balanced pass).
            try await Task.sleep(for: .milliseconds(300))
            #expect(service.requests.count == 2, "\(service.requests.count) pushes")
            // The deliveries API lists the pushes, the device's endpoint redacted even for admin.
            let listed = try await http.get("/v1/clients/ops/alerts/\(id)/deliveries", headers: bearer(secrets["root"]))
            #expect(listed.text.contains("push.alert.displayed") && !listed.text.contains(service.url), "\(listed.text)")
        }
    }

    @Test("an answer link: a destructive button needs confirm; a forged or malformed token is 404; no token needed or checked")
    func answerLinkRules() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(201))
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config) { http in
            let device = PushDevice()
            try await subscribe(http, device, at: service.url, answer: true, token: secrets["console"])
            let alert = try await http.postAlert(
                "ops", #"{"title":"Drop table?","buttons":[{"title":"Drop","style":"destructive"},{"title":"Keep","style":"cancel"}]}"#,
                headers: bearer(secrets["deployer"]))
            let pushed = try #require(try await service.waitForRequests(count: 1, timeout: 20).first)
            let answerURL = try #require(try device.payload(pushed.body)["answer_url"] as? String)
            let unconfirmed = try await http.post(answerURL, json: #"{"button":"Drop"}"#)
            #expect(
                unconfirmed.status == 409 && (try? unconfirmed.jsonObject()["code"] as? String) == "confirmation-required",
                "\(unconfirmed.text)")
            let unknown = try await http.post(answerURL, json: #"{"button":"Maybe"}"#)
            #expect(unknown.status == 422, "\(unknown.text)")
            // Nothing used up by the refusals: confirmed, it answers.
            let confirmed = try await http.post(answerURL, json: #"{"button":"Drop","confirm":true}"#)
            #expect(confirmed.status == 200, "\(confirmed.text)")
            #expect(try confirmed.jsonObject()["state"] as? String == "answered")
            let forged = try await http.post(
                "/v1/answers/" + Base64URL.encode([UInt8](repeating: 7, count: 32)), json: #"{"button":"Keep"}"#)
            #expect(forged.status == 404, "\(forged.text)")
            #expect(try await http.post("/v1/answers/short", json: #"{"button":"Keep"}"#).status == 404)
            _ = alert
        }
    }

    @Test("an answer link answers its own alert only: once that alert is decided it is 410, and the alert displayed after it is untouched")
    func linkForAnotherAlert() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(201))
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config) { http in
            let device = PushDevice()
            try await subscribe(http, device, at: service.url, answer: true, token: secrets["console"])
            let first = try await http.postAlert("ops", oneButton, headers: bearer(secrets["deployer"]))
            let second = try await http.postAlert("ops", oneButton, headers: bearer(secrets["deployer"]))
            let pushed = try #require(try await service.waitForRequests(count: 1, timeout: 20).first)
            let link = try #require(try device.payload(pushed.body)["answer_url"] as? String)
            // The first is withdrawn: the second is displayed, and pushed with a link of its own.
            #expect(try await http.delete("/v1/clients/ops/alerts/\(id(first))", headers: bearer(secrets["deployer"])).status == 200)
            let used = try await http.post(link, json: #"{"button":"Deploy"}"#)
            #expect(used.status == 410 && (try? used.jsonObject()["code"] as? String) == "answer-used", "\(used.text)")
            let current = try await http.get("/v1/clients/ops/alerts/current", headers: bearer(secrets["reader"])).jsonObject()
            #expect(current["id"] as? String == id(second) && current["state"] as? String == "displayed")
            #expect((current["votes"] as? [Any])?.isEmpty == true, "the link of the first did not touch the second")
        }
    }

    @Test("only a displayed alert is pushed: one queued behind it and withdrawn wakes no device, neither as displayed nor as decided")
    func queuedAlertsPushNothing() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(201))
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config) { http in
            let device = PushDevice()
            try await subscribe(http, device, at: service.url, answer: false, token: secrets["reader"])
            let shown = try await http.postAlert("ops", oneButton, headers: bearer(secrets["deployer"]))
            let queued = try await http.postAlert("ops", oneButton, headers: bearer(secrets["deployer"]))
            _ = try await service.waitForRequests(count: 1, timeout: 20)
            #expect(try await http.delete("/v1/clients/ops/alerts/\(id(queued))", headers: bearer(secrets["deployer"])).status == 200)
            // The withdrawal committed with whatever it pushes; then the displayed one is withdrawn
            // too, and its alert.decided is the next push: nothing came between.
            #expect(try await http.delete("/v1/clients/ops/alerts/\(id(shown))", headers: bearer(secrets["deployer"])).status == 200)
            let all = try await service.waitForRequests(count: 2, timeout: 20)
            let second = try device.payload(all[1].body)
            #expect(second["type"] as? String == "alert.decided" && (second["alert"] as? [String: Any])?["id"] as? String == id(shown))
            try await Task.sleep(for: .milliseconds(300))
            #expect(service.requests.count == 2, "\(service.requests)")
        }
    }

    @Test("a push service that answers 410 ends the subscription: it is not listed, and nothing more is pushed to it")
    func goneEndsSubscription() async throws {
        let service = try await WebhookReceiver.listening()
        defer { service.close() }
        service.behave(.status(410))
        let (config, secrets) = try await pushConfig()
        try await withTestClient(config: config) { http in
            let device = PushDevice()
            try await subscribe(http, device, at: service.url, answer: false, token: secrets["reader"])
            let first = try await http.postAlert("ops", oneButton, headers: bearer(secrets["deployer"]))
            let second = try await http.postAlert("ops", oneButton, headers: bearer(secrets["deployer"]))
            _ = try await service.waitForRequests(count: 1, timeout: 20)
            let deadline = ContinuousClock.now + .seconds(20)
            var listed: [Any] = [0]
            while !listed.isEmpty, ContinuousClock.now < deadline {
                listed =
                    try await http.get("/v1/push/subscriptions", headers: bearer(secrets["reader"])).jsonObject()["subscriptions"] as? [Any]
                    ?? []
                if !listed.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(listed.isEmpty, "the subscription outlived its 410")
            try await everyInstance(http, pushesTo: 0)
            // Another display (the first withdrawn, the second shown): no push to a subscription that
            // is gone. A push would be written with the withdrawal and sent within milliseconds.
            #expect(try await http.delete("/v1/clients/ops/alerts/\(id(first))", headers: bearer(secrets["deployer"])).status == 200)
            #expect(
                try await http.get("/v1/clients/ops/alerts/current", headers: bearer(secrets["reader"])).jsonObject()["id"] as? String
                    == id(second))
            try await Task.sleep(for: .milliseconds(500))
            #expect(service.requests.count == 1, "\(service.requests)")
        }
    }
}
