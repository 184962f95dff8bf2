import AlertdInProcess
import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import Crypto
import Foundation
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon

@Suite("GET /v1/keys lists the public keys of signed receipts as a JWKS (SPEC §14)")
struct ReceiptKeysTests {
    static func keySet(_ response: TestResponse) throws -> ReceiptKeySet {
        try ReceiptKeySet(jwks: try JSONParser.parse(response.text))
    }

    @Test("with SQLite and no key_file: the key alertd made in state_dir, the same after a restart")
    func sqliteOwnKey() async throws {
        let state = try ScratchDirectory()
        let first = try await withAlertd(stateDir: state.url.path) { daemon in
            let response = try await daemon.send("GET", "/v1/keys")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            return try Self.keySet(response)
        }
        let file = state.url.appendingPathComponent("receipts-key.pem").path
        let key = try ReceiptSigningKey(pem: String(contentsOfFile: file, encoding: .utf8))
        #expect(first.keys == [key.publicKey])
        let second = try await withAlertd(stateDir: state.url.path) { daemon in try Self.keySet(try await daemon.send("GET", "/v1/keys")) }
        #expect(second == first)
    }

    @Test("key_file first, then previous_keys, each with its thumbprint as kid")
    func configuredKeys() async throws {
        let directory = try ScratchDirectory()
        let current = ReceiptSigningKey.generate()
        let old = ReceiptSigningKey.generate()
        let currentFile = directory.url.appendingPathComponent("current.pem")
        let oldFile = directory.url.appendingPathComponent("old.pub.pem")
        try Data(current.pem.utf8).write(to: currentFile)
        try Data(old.publicKey.pem.utf8).write(to: oldFile)
        let config = "receipts:\n  key_file: \(currentFile.path)\n  previous_keys: [\(oldFile.path)]\n"
        try await withAlertd(config: config) { daemon in
            let response = try await daemon.send("GET", "/v1/keys")
            #expect(response.status == 200)
            #expect(try Self.keySet(response).keys == [current.publicKey, old.publicKey])
            let first = try #require(try JSONParser.parse(response.text)["keys"]?.arrayValue?.first)
            #expect(first == current.publicKey.jwk)
            #expect(first["kid"]?.stringValue == current.keyID && first["use"] == "sig" && first["alg"] == "EdDSA")
            // The state directory holds no key of its own when key_file is set.
            #expect(!FileManager.default.fileExists(atPath: daemon.stateDir + "/receipts-key.pem"))
        }
    }

    @Test("with tokens it needs one, any role; it takes no query")
    func tokens() async throws {
        let secret = "keys-reader-secret"
        let digest = Token.hex(Array(SHA256.hash(data: Array(secret.utf8))))
        let config = "auth:\n  tokens:\n    - { name: auditor, sha256: \"\(digest)\", roles: [read], clients: [nobody] }\n"
        try await withAlertd(config: config) { daemon in
            #expect(try await daemon.send("GET", "/v1/keys").status == 401)
            let response = try await daemon.send("GET", "/v1/keys", headers: [("Authorization", "Bearer \(secret)")])
            #expect(response.status == 200)
            #expect(try Self.keySet(response).keys.count == 1)
            #expect(try await daemon.send("GET", "/v1/keys?x=1", headers: [("Authorization", "Bearer \(secret)")]).status == 400)
        }
        guard case .found(let route, _) = Router(API.routes).match(method: "GET", path: "/v1/keys") else {
            Issue.record("no route for GET /v1/keys")
            return
        }
        #expect(route.permission == .open && route.name == "receipt_keys")
    }
}
