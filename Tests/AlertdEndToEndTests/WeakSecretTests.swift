import AlertdTestSupport
import Foundation
import Testing

/// Issue 32, item 10: a secret someone can guess is said before it signs anything.
@Suite("Weak signing secrets")
struct WeakSecretTests {
    @Test("check-config warns about a signing_secret or config webhook secret under 16 bytes, and passes one of 16")
    func checkConfigWarns() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("weak-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("alertd.yaml")
        try Data(
            """
            state_dir: ./state
            callbacks: { signing_secret: change-me }
            webhooks:
              - { client: ops, url: "https://hooks.example.com/a", secret: "12345" }

            """.utf8
        ).write(to: file)
        let weak = try await Program.alertd(["check-config", file.path])
        #expect(weak.status == 0, "a warning, not an error: \(weak)")
        #expect(weak.stderr.contains("warning: callbacks.signing_secret is 9 bytes, fewer than the 16"), "\(weak)")
        #expect(weak.stderr.contains("warning: webhooks[0] (client ops): secret is 5 bytes"), "\(weak)")
        try Data("state_dir: ./state\ncallbacks: { signing_secret: sixteen-bytes-ok }\n".utf8).write(to: file)
        let strong = try await Program.alertd(["check-config", file.path])
        #expect(strong.status == 0 && !strong.stderr.contains("warning"), "\(strong)")
    }
}
