// The receipt (SPEC §14) against bytes computed elsewhere: the golden values below were made
// by Python's `rfc8785` and `cryptography` (RFC 8032's TEST 1 key), not by this module, so
// the module's canonical form, hashes and signature are checked against another
// implementation's, not against themselves.

import AlertdWire
import Testing

@testable import AlertdReceipts

/// RFC 8032's TEST 1 key (RFC 8037 A.1's).
let testKey = try! ReceiptSigningKey(
    seed: stride(from: 0, to: 64, by: 2).map {
        let hex = Array("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60".utf8)
        return UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)!
    })

enum Golden {
    /// An alert resource as alertd serves it (state, result and the rest are not what was asked).
    static let alert = #"""
        {"id":"01JDEPLOY00000000000000000","client":"ops","title":"Deploy v2 to production?","message":"Build 1187 passed \u2014 ship it? \ud83d\ude80","style":"alert","buttons":[{"title":"Deploy","style":"default"},{"title":"Cancel","style":"cancel"}],"priority":5,"quorum":1,"fields":[{"name":"ticket","label":"Ticket","placeholder":"OPS-123","required":false,"max_length":200,"buttons":["Deploy"]}],"metadata":{"build":1187,"ratio":0.10,"big":1E30,"path":"a/b","ctl":"\u0007"},"posted_by":"ci","created_at":"2026-11-21T19:00:00.000Z","state":"answered","position":null,"decided_at":"2026-11-21T19:01:00.123Z"}
        """#
    static let contentJCS = #"""
        {"buttons":[{"style":"default","title":"Deploy"},{"style":"cancel","title":"Cancel"}],"client":"ops","created_at":"2026-11-21T19:00:00.000Z","fields":[{"buttons":["Deploy"],"label":"Ticket","max_length":200,"name":"ticket","placeholder":"OPS-123","required":false}],"message":"Build 1187 passed — ship it? 🚀","metadata":{"big":1e+30,"build":1187,"ctl":"\u0007","path":"a/b","ratio":0.1},"posted_by":"ci","priority":5,"quorum":1,"style":"alert","title":"Deploy v2 to production?"}
        """#
    static let contentSHA256 = "05bbfbc3d014ba1a5dd1ecc35969c167fb59172373046be48574afa3754303fb"
    static let unsigned = #"""
        {"alert_id":"01JDEPLOY00000000000000000","button":"Deploy","button_index":0,"client":"ops","comment":"ship it","content_sha256":"05bbfbc3d014ba1a5dd1ecc35969c167fb59172373046be48574afa3754303fb","decided_at":"2026-11-21T19:01:00.123Z","decided_by":"alice","key_id":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","outcome":"answered","prev_sha256":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"v":1,"values":{"ticket":"OPS-123"},"votes":[{"at":"2026-11-21T19:01:00.123Z","button":"Deploy","button_index":0,"comment":"ship it","decided_by":"alice","values":{"ticket":"OPS-123"}}]}
        """#
    static let signature = "7YQemEB7JLnVNjvUU8ng_BUfhsNbSyR9OQL_ak1OGBae-nRxtcDyE8NmbD5s8ZnVdJ28WXkKY2kkVdCyiqdrCg"
    static let signed = #"""
        {"alert_id":"01JDEPLOY00000000000000000","button":"Deploy","button_index":0,"client":"ops","comment":"ship it","content_sha256":"05bbfbc3d014ba1a5dd1ecc35969c167fb59172373046be48574afa3754303fb","decided_at":"2026-11-21T19:01:00.123Z","decided_by":"alice","key_id":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","outcome":"answered","prev_sha256":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"signature":"7YQemEB7JLnVNjvUU8ng_BUfhsNbSyR9OQL_ak1OGBae-nRxtcDyE8NmbD5s8ZnVdJ28WXkKY2kkVdCyiqdrCg","v":1,"values":{"ticket":"OPS-123"},"votes":[{"at":"2026-11-21T19:01:00.123Z","button":"Deploy","button_index":0,"comment":"ship it","decided_by":"alice","values":{"ticket":"OPS-123"}}]}
        """#
    static let signedSHA256 = "ad895ba190127e63928df5e74f0acd73d4489dad7d9e892600bb2feaa8f3fb16"

    static let vote: JSONValue = [
        "decided_by": "alice", "button": "Deploy", "button_index": 0, "at": "2026-11-21T19:01:00.123Z", "comment": "ship it",
        "values": ["ticket": "OPS-123"],
    ]

    static func receipt() throws -> Receipt {
        Receipt(
            after: .start, alertID: "01JDEPLOY00000000000000000", client: "ops",
            contentSHA256: try ReceiptContent.sha256(ofAlert: try #require(try JSONParser.parse(alert).objectValue)),
            outcome: .answered, button: "Deploy", buttonIndex: 0, decidedBy: "alice", votes: [vote], comment: "ship it",
            values: ["ticket": "OPS-123"], decidedAt: "2026-11-21T19:01:00.123Z")
    }
}

@Suite("Receipts (SPEC §14)")
struct ReceiptTests {
    @Test("content_sha256 is the hash of the JCS of what was asked, as another implementation computes it")
    func contentHash() throws {
        let alert = try #require(try JSONParser.parse(Golden.alert).objectValue)
        let content = ReceiptContent.content(ofAlert: alert)
        #expect(String(decoding: try JCS.canonicalize(.object(content)), as: UTF8.self) == Golden.contentJCS)
        #expect(try ReceiptContent.sha256(ofAlert: alert) == Golden.contentSHA256)
    }

    @Test("what was asked is hashed, not how it ended or how the resource spells it")
    func contentIgnoresTheRest() throws {
        var alert = try #require(try JSONParser.parse(Golden.alert).objectValue)
        alert["state"] = "queued"
        alert["result"] = ["outcome": "answered"]
        alert["metadata"] = try JSONParser.parse(#"{"path":"a/b","ctl":"\u0007","big":1e30,"ratio":1e-1,"build":1187.0}"#)
        #expect(try ReceiptContent.sha256(ofAlert: alert) == Golden.contentSHA256)
        alert["title"] = "Deploy v3 to production?"
        #expect(try ReceiptContent.sha256(ofAlert: alert) != Golden.contentSHA256)
    }

    @Test("a member the resource leaves out is hashed as null, like one it has as null")
    func contentAbsentIsNull() throws {
        var alert = try #require(try JSONParser.parse(Golden.alert).objectValue)
        alert["posted_by"] = nil
        let absent = try ReceiptContent.sha256(ofAlert: alert)
        alert["posted_by"] = .null
        #expect(try ReceiptContent.sha256(ofAlert: alert) == absent)
        #expect(absent != Golden.contentSHA256)
    }

    @Test("signed with RFC 8032's TEST 1 key, the receipt is byte for byte the one Python's rfc8785 and cryptography make")
    func golden() throws {
        let signed = try testKey.sign(try Golden.receipt())
        #expect(String(decoding: try signed.receipt.signingInput(), as: UTF8.self) == Golden.unsigned)
        #if os(Linux)
            #expect(Base64URL.encode(signed.signature) == Golden.signature)
            #expect(String(decoding: try signed.encoded(), as: UTF8.self) == Golden.signed)
            #expect(try signed.sha256() == Golden.signedSHA256)
            #expect(try signed.link() == ChainLink(seq: 1, sha256: Golden.signedSHA256))
        #endif
        try signed.verify(with: ReceiptKeySet([testKey.publicKey]))
    }

    @Test("the golden receipt, decoded, verifies; the next receipt links to its hash")
    func decodeGolden() throws {
        let signed = try SignedReceipt(text: Golden.signed)
        #expect(
            signed.receipt
                == (try {
                    var r = try Golden.receipt(); r.keyID = testKey.keyID; return r
                }()))
        try signed.verify(with: ReceiptKeySet([testKey.publicKey]))
        let next = Receipt(
            after: try signed.link(), alertID: "01JNEXT", client: "ops", contentSHA256: Golden.contentSHA256, outcome: .expired,
            decidedAt: "2026-11-21T20:00:00.000Z")
        #expect(next.seq == 2)
        #expect(next.prevSHA256 == Golden.signedSHA256)
        #expect(next.json["button"] == .null && next.json["decided_by"] == .null && next.json["votes"] == [])
    }

    @Test("every member of the golden receipt is covered by the signature")
    func everyMemberSigned() throws {
        let original = try #require(try JSONParser.parse(Golden.signed).objectValue)
        let keys = ReceiptKeySet([testKey.publicKey])
        let changes: [(String, JSONValue)] = [
            ("seq", 2), ("alert_id", "01JOTHER"), ("client", "dev"), ("content_sha256", .string(String(repeating: "a", count: 64))),
            ("outcome", "withdrawn"), ("button", "Cancel"), ("button_index", 1), ("decided_by", "mallory"), ("votes", []),
            ("comment", "no"), ("values", [:]), ("decided_at", "2026-11-21T19:01:00.124Z"),
            ("prev_sha256", .string(String(repeating: "1", count: 64))),
        ]
        for (member, value) in changes {
            var changed = original
            changed[member] = value
            let receipt = try SignedReceipt(json: changed)
            #expect(throws: ReceiptError.badSignature, "\(member) changed and still verified") { try receipt.verify(with: keys) }
        }
        var otherKey = original
        otherKey["key_id"] = .string(ReceiptSigningKey.generate().keyID)
        #expect(throws: ReceiptError.unknownKey) { try SignedReceipt(json: otherKey).verify(with: keys) }
    }

    @Test("what is not a receipt of format 1 is refused, naming the member")
    func malformed() throws {
        let original = try #require(try JSONParser.parse(Golden.signed).objectValue)
        let cases: [(String, JSONValue?, String)] = [
            ("v", 2, "v "), ("seq", 0, "seq "), ("seq", 1.5, "seq "), ("seq", nil, "seq "), ("outcome", "queued", "outcome "),
            ("button", nil, "button "), ("button_index", "0", "button_index "), ("content_sha256", "ABC", "content_sha256 "),
            ("prev_sha256", .string(String(repeating: "A", count: 64)), "prev_sha256 "), ("votes", [:], "votes "),
            ("values", ["ticket": 1], "values.ticket "), ("decided_at", "yesterday", "decided_at "), ("key_id", "", "key_id "),
            ("extra", 1, "unknown member extra"), ("signature", "abc", "signature "), ("signature", nil, "signature "),
        ]
        for (member, value, named) in cases {
            var changed = original
            changed[member] = value
            let error = #expect(throws: ReceiptError.malformed, "\(member): \(String(describing: value))") {
                try SignedReceipt(json: changed)
            }
            #expect(error?.detail.hasPrefix(named) == true, "\(error?.detail ?? "") should name \(named)")
        }
        #expect(throws: ReceiptError.malformed) { try SignedReceipt(text: "[1]") }
        #expect(throws: ReceiptError.malformed) { try SignedReceipt(text: "{") }
        // A padded signature is another spelling of the same bytes: refused, so one receipt has one text.
        var padded = original
        padded["signature"] = .string(Golden.signature + "==")
        #expect(throws: ReceiptError.malformed) { try SignedReceipt(json: padded) }
    }
}

/// SplitMix64: a seeded generator, so a failure names a seed that repeats it.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Receipts and JCS under random input")
struct ReceiptPropertyTests {
    @Test("every one-byte change of a signed receipt's line either stops it reading, or fails verification, or leaves its value unchanged")
    func mutations() throws {
        let line = Array(Golden.signed.utf8)
        let keys = ReceiptKeySet([testKey.publicKey])
        var (unreadable, refused, sameValue) = (0, 0, 0)
        for index in line.indices {
            for replacement in [UInt8(ascii: "0"), UInt8(ascii: "a"), UInt8(ascii: "\""), UInt8(ascii: " "), line[index] ^ 0x01] {
                guard replacement != line[index] else { continue }
                var mutated = line
                mutated[index] = replacement
                guard let receipt = try? SignedReceipt(text: String(decoding: mutated, as: UTF8.self)) else {
                    unreadable += 1
                    continue
                }
                if (try? receipt.verify(with: keys)) != nil {
                    // Verified: only if it is the same receipt, spelled otherwise.
                    #expect(try receipt.encoded() == line, "byte \(index) → \(replacement) verified a different receipt")
                    sameValue += 1
                } else {
                    refused += 1
                }
            }
        }
        // Most changes break the JSON or a member's type; many others the signature.
        #expect(unreadable > 0 && refused > 0, "unreadable \(unreadable), refused \(refused), same value \(sameValue)")
    }

    /// A random JSON value: strings of scalars from every plane (controls and astral ones too),
    /// numbers as doubles and integers in several spellings, nested arrays and objects.
    static func value(_ rng: inout SeededGenerator, depth: Int = 0) -> JSONValue {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .string(string(&rng))
        case 3:
            let double = Double(bitPattern: rng.next())
            let literals = [
                double.isFinite ? "\(double)" : "0", String(Int.random(in: -9_999_999...9_999_999, using: &rng)),
                "\(Int.random(in: 1...999, using: &rng))e\(Int.random(in: -30...30, using: &rng))",
                "-0.\(Int.random(in: 0...99999, using: &rng))E+\(Int.random(in: 0...5, using: &rng))",
            ]
            return .number(JSONNumber(literal: literals.randomElement(using: &rng)!)!)
        case 4: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(&rng, depth: depth + 1) })
        default:
            var object = JSONObject()
            for _ in 0..<Int.random(in: 0...5, using: &rng) { object[string(&rng)] = value(&rng, depth: depth + 1) }
            return .object(object)
        }
    }

    static func string(_ rng: inout SeededGenerator) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...8, using: &rng) {
            let ranges: [ClosedRange<UInt32>] = [0...0x7F, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF]
            if let scalar = Unicode.Scalar(UInt32.random(in: ranges.randomElement(using: &rng)!, using: &rng)) { scalars.append(scalar) }
        }
        return String(scalars)
    }

    /// Equal as JCS sees values: numbers as the doubles they denote.
    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): x.double == y.double
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x), .object(let y)):
            x.count == y.count && x.allSatisfy { member in y[member.key].map { same(member.value, $0) } ?? false }
        default: a == b
        }
    }

    @Test(
        "JCS of random values: its output is strict JSON of the same value, and canonical again as it is",
        arguments: [1, 2, 3, 4] as [UInt64])
    func randomValues(seed: UInt64) throws {
        var rng = SeededGenerator(state: seed)
        for _ in 0..<1500 {
            let original = Self.value(&rng)
            let canonical = try JCS.canonicalize(original)
            let parsed = try JSONParser.parse(canonical)
            #expect(Self.same(parsed, original), "seed \(seed): \(original) came back as \(parsed)")
            #expect(
                try JCS.canonicalize(parsed) == canonical, "seed \(seed): not a fixed point: \(String(decoding: canonical, as: UTF8.self))")
            // No byte outside what RFC 8785 writes: controls only as escapes.
            #expect(!canonical.contains { $0 < 0x20 })
        }
    }
}

@Suite("A receipt's canonical bytes, written member by member")
struct ReceiptCanonicalWriterTests {
    /// Values' names that sort differently by UTF-16 code units and by scalars or UTF-8 (RFC 8785
    /// §3.2.3): a surrogate pair (U+1F600) below U+FB33 in UTF-16, above it by scalar.
    static let names = ["ticket", "é", "\u{1F600}", "\u{FB33}", "a_b", "ab", "€", "\r", "Z"]

    @Test("the writer's bytes are JCS's of the receipt's JSON, signed and unsigned, for receipts of every shape", arguments: 0..<200)
    func writerIsJCS(seed: Int) throws {
        let outcome = Receipt.Outcome.allCases[seed % 4]
        var values: [String: String] = [:]
        // Each case a subset of the names: those of the bits of its seed.
        for (bit, name) in Self.names.enumerated() where (seed >> bit) & 1 == 1 {
            values[name] = String(repeating: "x\u{7}\"é", count: seed % 3)
        }
        let votes: [JSONValue] = (0..<(seed % 3)).map { index in
            [
                "decided_by": .string("d\(index)"), "button": "Deploy", "button_index": .number(JSONNumber(index)),
                "at": "2026-11-21T19:01:00.123Z",
                "comment": index == 0 ? .null : "why \u{1F680}",
                "values": .object(JSONObject(values.map { (key: $0.key, value: .string($0.value)) })),
            ]
        }
        let receipt = Receipt(
            after: ChainLink(seq: seed * 7_919, sha256: String(repeating: "ab", count: 32)), alertID: "01JDEPLOY0000000000000\(seed)",
            client: "ops-\(seed)", contentSHA256: Golden.contentSHA256, outcome: outcome,
            button: outcome == .answered ? "Déploy \u{1F680}" : nil, buttonIndex: outcome == .answered ? seed % 16 : nil,
            decidedBy: seed % 5 == 0 ? nil : "alice", votes: votes, comment: seed % 2 == 0 ? nil : "line\nbreak", values: values,
            decidedAt: "2026-11-21T19:01:00.123Z", keyID: testKey.keyID)
        #expect(try receipt.signingInput() == JCS.canonicalize(.object(receipt.json)))
        let signed = try testKey.sign(receipt)
        #expect(try signed.encoded() == JCS.canonicalize(.object(signed.json)))
        #expect(try SignedReceipt(text: String(decoding: try signed.encoded(), as: UTF8.self)) == signed)
        // The chain writes its receipts' bytes in one pass, the signature spliced in: the same bytes.
        var chain = ReceiptChain(key: testKey, head: ChainLink(seq: seed * 7_919, sha256: String(repeating: "ab", count: 32)))
        let appended = try chain.append(
            ReceiptDraft(
                alertID: receipt.alertID, client: receipt.client, contentSHA256: receipt.contentSHA256, outcome: receipt.outcome,
                button: receipt.button, buttonIndex: receipt.buttonIndex, decidedBy: receipt.decidedBy, votes: receipt.votes,
                comment: receipt.comment, values: receipt.values, decidedAt: receipt.decidedAt))
        #expect(appended.receipt == signed, "Ed25519 signatures are deterministic: the same receipt, the same signature")
        #expect(appended.bytes == (try JCS.canonicalize(.object(signed.json))))
        #expect(chain.head == (try signed.link()))
    }
}
