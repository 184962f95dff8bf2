import AlertdDaemon
import AlertdEngine
import AlertdInProcess
import AlertdReceipts
import AlertdSQLite
import AlertdTestSupport
import AlertdWire
import Foundation
import Testing

@Suite("A failing store")
struct StoreFailureTests {
    @Test("a failed commit answers 503 with Retry-After and hides the change; once commits work, changes resume without a restart")
    func failedCommit() async throws {
        let store = ControlledStore()
        try await withAlertd(wrapStore: store.wrap) { daemon in
            let kept = try await daemon.postAlert("ops", #"{"title":"Committed","buttons":[{"title":"OK"}]}"#)

            store.failing = true
            let refused = try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"Lost","buttons":[{"title":"OK"}]}"#)
            #expect(refused.status == 503)
            #expect(try refused.jsonObject()["code"] as? String == "unavailable")
            #expect(refused.header("Retry-After") != nil)

            // Until a commit goes through again, changes are refused before they reach the store.
            // (The store still fails here: the readiness service, which probes it on its own,
            // must not find it writable in between.)
            let begunBefore = store.begun.value.count
            let later = try await daemon.send(
                "POST", "/v1/clients/ops/alerts/\(kept["id"] as! String)/choice", json: #"{"button":"OK"}"#)
            #expect(later.status == 503)
            #expect(later.header("Retry-After") != nil)
            #expect(store.begun.value.count == begunBefore, "the refused change never reached the store")
            #expect(try await daemon.send("GET", "/readyz").status == 503)
            // Readers still see what was committed, and only that.
            let list = try await daemon.send("GET", "/v1/clients/ops/alerts").jsonObject()["alerts"] as! [[String: Any]]
            #expect(list.map { $0["title"] as? String } == ["Committed"])

            // The readiness probe finds the store writable again: changes are taken, no restart.
            store.failing = false
            await daemon.alertd.engine.checkStore()
            #expect(try await daemon.send("GET", "/readyz").status == 200)
            #expect(
                try await daemon.send("POST", "/v1/clients/ops/alerts/\(kept["id"] as! String)/choice", json: #"{"button":"OK"}"#).status
                    == 200)
            #expect(try await daemon.postAlert("ops", #"{"title":"After","buttons":[{"title":"OK"}]}"#)["state"] as? String == "displayed")
        }
    }

    @Test("a decision whose commit reached the disk but failed: after the recovery, the next receipt goes on from the one on disk")
    func receiptsAfterAFailureThatWrote() async throws {
        let store = ControlledStore()
        try await withAlertd(wrapStore: store.wrap) { daemon in
            let first = try await daemon.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)["id"] as! String
            let second = try await daemon.postAlert("dev", #"{"title":"Second","buttons":[{"title":"OK"}]}"#)["id"] as! String
            store.failOnceAfterWriting()
            #expect(try await daemon.choose("ops", first, #"{"button":"OK"}"#).status == 503)
            await daemon.alertd.engine.checkStore()
            // The board is read back from the disk, which holds the decision and its receipt.
            let decided = try await daemon.send("GET", "/v1/clients/ops/alerts/\(first)").jsonObject()
            #expect(decided["state"] as? String == "answered")
            #expect(try await daemon.choose("dev", second, #"{"button":"OK"}"#).status == 200)
            let page = try JSONParser.parse(try await daemon.send("GET", "/v1/audit?after=0&limit=10").body)
            let receipts = try (try #require(page["receipts"]?.arrayValue)).map { try SignedReceipt(json: try #require($0.objectValue)) }
            #expect(receipts.map(\.receipt.seq) == [1, 2])
            #expect(receipts.map(\.receipt.alertID) == [first, second])
            let keys = try ReceiptKeySet(jwks: try JSONParser.parse(try await daemon.send("GET", "/v1/keys").body))
            let report = ChainVerifier.verify(receipts, keys: keys)
            #expect(report.isValid && report.firstLinkChecked, "\(report)")
        }
    }

    @Test("a store that really fills (max_page_count): the batch fails whole, reads go on, writes resume once it has room")
    func fullStore() async throws {
        let store = ControlledStore()
        try await withAlertd(wrapStore: store.wrap) { daemon in
            let sqlite = try #require(store.inner as? SQLiteStore)
            let first = try await daemon.postAlert("ops", #"{"title":"First","buttons":[{"title":"OK"}]}"#)
            try sqlite.limitPages(try sqlite.pageCount())

            // Posts of 4 KiB messages fill the pages left; one is refused, whole.
            let message = String(repeating: "x", count: 4000)
            var acknowledged: [String] = []
            var refused: TestResponse?
            for index in 0..<200 where refused == nil {
                let response = try await daemon.send(
                    "POST", "/v1/clients/ops/alerts", json: #"{"title":"Filler \#(index)","message":"\#(message)"}"#)
                if response.status == 201 {
                    acknowledged.append(try response.jsonObject()["id"] as! String)
                } else {
                    refused = response
                }
            }
            let full = try #require(refused, "the store never filled")
            #expect(full.status == 503)
            #expect(try full.jsonObject()["code"] as? String == "unavailable")
            #expect(full.header("Retry-After") == "2")
            // Reads keep working; /readyz says why not ready.
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/\(first["id"] as! String)").status == 200)
            #expect(try await daemon.send("GET", "/v1/clients/ops/alerts/current").status == 200)
            #expect(try await daemon.send("GET", "/readyz").status == 503)
            // Still full: the probe finds no room and changes stay refused.
            await daemon.alertd.engine.checkStore()
            #expect(try await daemon.send("POST", "/v1/clients/ops/alerts", json: #"{"title":"Still full"}"#).status == 503)

            // Room again: the next probe resumes writes by itself.
            try sqlite.limitPages(nil)
            await daemon.alertd.engine.checkStore()
            #expect(try await daemon.send("GET", "/readyz").status == 200)
            let after = try await daemon.postAlert("ops", #"{"title":"After","buttons":[{"title":"OK"}]}"#)

            // Across a restart: every acknowledged alert is there, the refused ones are not.
            try await daemon.restart()
            let titles = try await daemon.send("GET", "/v1/clients/ops/alerts?limit=1000").jsonObject()["alerts"] as! [[String: Any]]
            let ids = Set(titles.map { $0["id"] as! String })
            #expect(ids == Set(acknowledged + [first["id"] as! String, after["id"] as! String]))
            #expect(!titles.contains { ($0["title"] as? String) == "Still full" })
        }
    }
}

@Suite("The state directory holds secrets")
struct StateFilePermissionTests {
    @Test("a new state dir is 0700 and its files 0600 whatever the umask; an existing 0644 database is tightened")
    func modes() async throws {
        let old = umask(0)
        defer { umask(old) }
        let dir = NSTemporaryDirectory() + "alertd-modes-\(UUID().uuidString)/state"
        defer { try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent) }
        func mode(_ path: String) throws -> Int {
            var info = stat()
            try #require(stat(path, &info) == 0, "stat \(path)")
            return Int(info.st_mode & 0o777)
        }
        try await withAlertd(stateDir: dir) { daemon in
            _ = try await daemon.postAlert("ops", #"{"title":"secret-bearing"}"#)
            #expect(try mode(dir) == 0o700)
            for file in ["alertd.sqlite", "alertd.sqlite-wal", "alertd.sqlite-shm", "alertd.lock"] {
                #expect(try mode(dir + "/" + file) == 0o600, "\(file)")
            }
            try await daemon.stop()
            chmod(dir + "/alertd.sqlite", 0o644)
            try await daemon.start()
            #expect(try mode(dir + "/alertd.sqlite") == 0o600)
        }
    }
}
