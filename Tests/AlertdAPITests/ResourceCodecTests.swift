import AlertdEngine
import AlertdCore
import AlertdReceipts
import AlertdTestSupport
import AlertdWire
import PropertyBased
import Testing

@testable import AlertdAPI
@testable import AlertdDaemon
@testable import AlertdClient

// Over 400 lines because the generator of random *valid* alerts (consistent
// states, results, buttons, metadata built by the daemon's own parser) is most
// of it, and it belongs next to the properties that use it.

/// The alert resource has one writer (AlertdWire's `AlertResource.write`, which the
/// daemon calls straight from its domain `Alert`) and one reader (the SDK's Codable
/// decode). These properties hold the pair to one shape over random valid alerts: the
/// daemon's bytes decode into what the alert says, and the decoded value writes back to
/// the same bytes (metadata through the SDK's `JSONObject` included).
@Suite("The daemon's alert resource and the SDK's Wire types are one codec")
struct ResourceCodecTests {
    @Test("a random valid alert, rendered, decodes as the SDK decodes it into what the alert says, and writes back to the same bytes")
    func roundTrip() async {
        await checkAlerts(count: 500) { sample in
            let bytes = sample.alert.json(position: sample.position)
            let decoded: AlertResource
            do {
                decoded = try Transport.decoder.decode(AlertResource.self, from: bytes)
            } catch {
                Issue.record("the SDK cannot decode \(String(decoding: bytes, as: UTF8.self)): \(error)")
                return
            }
            #expect(decoded == Self.expected(sample.alert, position: sample.position))

            var json = JSONWriter()
            decoded.write(into: &json)
            let difference = Self.firstDifference(json.bytes, bytes)
            #expect(difference == nil, "written back: \(difference ?? "")")
        }
    }

    @Test("the writer writes the members of the resource, its result and its buttons in the order the Wire types name them")
    func memberOrder() async {
        await checkAlerts(count: 100) { sample in
            let bytes = sample.alert.json(position: sample.position)
            guard case .object(let resource)? = try? JSONParser.parse(bytes) else {
                Issue.record("not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
                return
            }
            #expect(resource.keys == AlertResource.memberNames)
            for case .object(let vote) in resource["votes"]?.arrayValue ?? [] {
                #expect(vote.keys == Vote.memberNames)
            }
            if case .object(let result)? = resource["result"] {
                #expect(result.keys == AlertResult.memberNames)
                for case .object(let vote) in result["votes"]?.arrayValue ?? [] {
                    #expect(vote.keys == Vote.memberNames)
                }
            } else {
                #expect(resource["result"] == .null && sample.alert.result == nil)
            }
            for case .object(let button) in resource["buttons"]?.arrayValue ?? [] {
                #expect(button.keys == Button.memberNames)
            }
            for case .object(let field) in resource["fields"]?.arrayValue ?? [] {
                #expect(field.keys == AlertField.memberNames)
            }
        }
    }

    /// SPEC §14: a receipt hashes what was asked as a reader of the alert holds it. The draft
    /// takes the members from the alert, each as the resource's writer writes it; the oracle
    /// here is the whole resource rendered and read back, as a verifier holding it computes.
    @Test("a receipt's content_sha256 and votes are those of the alert's resource as rendered, for random alerts")
    func receiptDraftIsTheResources() async {
        await checkAlerts(count: 300) { sample in
            let alert = sample.alert
            guard alert.state.isTerminal else { return }  // no receipt: the next test
            let resource = try #require(try JSONParser.parse(alert.json(position: nil)).objectValue)
            let draft = try ReceiptDraft(decided: alert)
            #expect(draft.contentSHA256 == (try ReceiptContent.sha256(ofAlert: resource)))
            #expect(JSONValue.array(draft.votes) == resource["votes"])
            #expect(draft.alertID == alert.id.description && draft.client == alert.client)
        }
    }

    @Test("an alert not decided, or whose stored metadata is not JSON, has no receipt: the draft throws rather than misstate it")
    func receiptDraftRefusesWhatItCannotState() async {
        await checkAlerts(count: 100) { sample in
            var alert = sample.alert
            if !alert.state.isTerminal {
                #expect(throws: ReceiptDraft.Undraftable.self) { try ReceiptDraft(decided: alert) }
                return
            }
            alert.metadata = CompactJSON(trusting: Array(#"{"deploy":"#.utf8))
            #expect(throws: ReceiptDraft.Undraftable.self) { try ReceiptDraft(decided: alert) }
        }
    }

    @Test("the generator's alerts are valid: their posted form passes the daemon's validation unchanged")
    func generatedAlertsAreValid() async {
        await checkAlerts(count: 200) { sample in
            let alert = sample.alert
            let rules = AlertRules(maxExpiresIn: Double(RandomAlert.maxDurationMilliseconds) / 1000)
            let body = try JSONParser.parse(RandomAlert.postedBody(alert))
            switch NewAlert.validate(body, rules: rules, namedDeciders: true) {
            case .failure(let invalid):
                Issue.record("invalid: \(invalid.errors)")
            case .success(let draft):
                #expect(Array(draft.title.utf8) == Array(alert.title.utf8))
                #expect(draft.message.map { Array($0.utf8) } == alert.message.map { Array($0.utf8) })
                #expect(draft.buttons == alert.buttons && draft.callbackURL == alert.callbackURL)
                #expect(draft.metadata.map(CompactJSON.init) == alert.metadata)
                #expect(draft.quorum == alert.quorum)
                #expect((draft.fields ?? []) == alert.fields)
                #expect(ClientID.isValid(alert.client))
            }
            #expect(alert.id.timestamp == alert.createdAt)
            #expect(alert.buttons.isEmpty == (alert.dismissAfterMilliseconds != nil))
            #expect(alert.result?.outcome == (alert.state.isTerminal ? alert.state : nil))
            #expect((alert.decidedAt != nil) == alert.state.isTerminal)
            // §10: a decider votes once; an answered alert's result is its completing vote.
            #expect(Set(alert.votes.map(\.decidedBy)).count == alert.votes.count)
            #expect(alert.result.map { $0.votes == alert.votes } ?? true)
            if alert.state == .answered, let last = alert.votes.last {
                #expect(last.buttonIndex == alert.result?.buttonIndex && last.decidedBy == alert.result?.decidedBy)
                // §13: the result's words are its deciding vote's.
                #expect(last.comment == alert.result?.comment && last.values == alert.result?.values)
            }
        }
    }

    /// The resource the SDK should see, built from the domain alert field by field.
    static func expected(_ alert: Alert, position: Int?) -> AlertResource {
        AlertResource(
            id: alert.id.description, client: alert.client, state: alert.state,
            // §2: a position only while pending.
            position: alert.state.isTerminal ? nil : position,
            title: alert.title, message: alert.message, style: alert.style, buttons: alert.buttons,
            priority: alert.priority,
            expiresIn: Double(alert.expiresAt.milliseconds - alert.createdAt.milliseconds) / 1000,
            dismissAfter: alert.dismissAfterMilliseconds.map { Double($0) / 1000 },
            callbackURL: alert.callbackURL,
            metadata: alert.metadata.map { CompactJSON(trusting: $0.bytes).object ?? [:] },
            createdAt: alert.createdAt, displayedAt: alert.displayedAt, decidedAt: alert.decidedAt,
            expiresAt: alert.expiresAt,
            result: alert.result.map {
                AlertResult(
                    outcome: $0.outcome, button: $0.button, buttonIndex: $0.buttonIndex, cancelled: $0.cancelled,
                    decidedBy: $0.decidedBy, votes: $0.votes, comment: $0.comment, values: $0.values)
            },
            quorum: alert.quorum, votes: alert.votes, fields: alert.fields
        )
    }

    /// Where two byte strings first differ, with some text around it; nil when equal.
    static func firstDifference(_ actual: [UInt8], _ expected: [UInt8]) -> String? {
        guard actual != expected else { return nil }
        let at = zip(actual, expected).prefix { $0 == $1 }.count
        func around(_ bytes: [UInt8]) -> String {
            String(decoding: bytes[max(0, at - 60)..<min(bytes.count, at + 60)], as: UTF8.self)
        }
        return "byte \(at) of \(actual.count) (expected \(expected.count)): …\(around(actual))… instead of …\(around(expected))…"
    }
}

/// PropertyBased's `propertyCheck` over ``RandomAlert``s, with an error the body throws recorded
/// as an issue of its sample: PropertyBased runs the body under `try?` (0.x, Swift 6.2), so a
/// throwing step would otherwise end the sample as if it had passed.
func checkAlerts(
    count: Int, sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping (RandomAlert) async throws -> Void
) async {
    await propertyCheck(
        count: count, input: RandomAlert.generator,
        perform: { sample in
            do {
                try await body(sample)
            } catch is ExpectationFailedError {
                // A failed #require: recorded already.
            } catch {
                Issue.record(error, "thrown for \(sample)", sourceLocation: sourceLocation)
            }
        }, sourceLocation: sourceLocation)
}

/// A random valid domain alert, in any state, and the position it is rendered with.
struct RandomAlert: Sendable, CustomStringConvertible {
    var alert: Alert
    var position: Int?

    var description: String {
        let json = String(decoding: alert.json(position: position), as: UTF8.self)
        return "\(alert.state.rawValue) alert with \(alert.buttons.count) buttons, rendered as \(json)"
    }

    /// Alerts drawn from PropertyBased's seeded generator, so a failure names a seed
    /// that reproduces it. No shrinking: a smaller alert would have to stay valid.
    static let generator = Generator<RandomAlert, Shrink.None<RandomAlert>> { rng in
        var random = SplitMix64(seed: rng.next())
        return RandomAlert(using: &random)
    }

    /// Ten years: beyond the default `max_expires_in` of a week, as a config may allow.
    static let maxDurationMilliseconds: Int64 = 10 * 365 * 86_400_000

    init(using rng: inout SplitMix64) {
        let state = AlertState.allCases.randomElement(using: &rng)!
        // Answered alerts have a button to answer with; dismissed ones are buttonless notices.
        let buttonCount: Int
        switch state {
        case .answered: buttonCount = Int.random(in: 1...16, using: &rng)
        case .dismissed: buttonCount = 0
        default: buttonCount = rng.chance(0.3) ? 0 : Int.random(in: 1...16, using: &rng)
        }
        var buttons: [Button] = []
        var titles: Set<String> = []
        while buttons.count < buttonCount {
            // Unique as validation sees it: String equality, canonical equivalence included.
            let title = Text.random(
                scalars: rng.chance(0.2) ? 64 : Int.random(in: 1...64, using: &rng), nul: false, using: &rng)
            guard titles.insert(title).inserted else { continue }
            var style = ButtonStyle.allCases.randomElement(using: &rng)!
            if style == .cancel, buttons.contains(where: { $0.style == .cancel }) { style = .default }
            buttons.append(Button(title: title, style: style))
        }

        let created = Self.time(using: &rng)
        let expiresIn = Self.duration(using: &rng)
        let dismissAfter = buttons.isEmpty ? Self.duration(using: &rng) : nil
        let expiresAt = created.adding(milliseconds: expiresIn)
        var displayedAt: Timestamp?
        var decidedAt: Timestamp?
        var result: AlertResult?
        /// A time from `start` to the expiry.
        func before(expiryFrom start: Timestamp) -> Timestamp {
            Timestamp(milliseconds: Int64.random(in: start.milliseconds...expiresAt.milliseconds, using: &rng))
        }
        func shown() -> Timestamp { before(expiryFrom: created) }
        switch state {
        case .queued:
            break
        case .displayed:
            displayedAt = shown()
        case .answered:
            displayedAt = shown()
            decidedAt = before(expiryFrom: displayedAt!)
            let index = Int.random(in: buttons.indices, using: &rng)
            result = AlertResult(
                outcome: .answered, button: buttons[index].title, buttonIndex: index, cancelled: buttons[index].style == .cancel,
                decidedBy: rng.chance(0.5) ? Text.random(scalars: Int.random(in: 1...64, using: &rng), using: &rng) : nil)
        case .dismissed:
            displayedAt = shown()
            decidedAt = displayedAt!.adding(milliseconds: dismissAfter!)
            result = AlertResult(outcome: .dismissed)
        case .expired:
            displayedAt = rng.chance(0.5) ? shown() : nil
            decidedAt = expiresAt
            result = AlertResult(outcome: .expired)
        case .withdrawn:
            displayedAt = rng.chance(0.5) ? shown() : nil
            decidedAt = before(expiryFrom: displayedAt ?? created)
            result = AlertResult(
                outcome: .withdrawn,
                decidedBy: rng.chance(0.5) ? Text.random(scalars: Int.random(in: 1...64, using: &rng), using: &rng) : nil)
        }
        // §10: above 1 only with buttons; votes only once displayed, one per decider, fewer
        // than the quorum for one button while pending, the completing one last when answered.
        let quorum = !buttons.isEmpty && rng.chance(0.3) ? Int.random(in: 2...10, using: &rng) : 1
        var votes: [Vote] = []
        if let displayedAt {
            let last = decidedAt ?? expiresAt
            let others = quorum > 1 && state != .dismissed ? Int.random(in: 0...min(quorum - 1, 4), using: &rng) : 0
            for n in 0..<others {
                // Another button's vote, never the cancel one (that would have answered it).
                guard
                    let index = buttons.indices.filter({ buttons[$0].style != .cancel && $0 != result?.buttonIndex }).randomElement(
                        using: &rng)
                else { break }
                let name =
                    rng.chance(0.5) ? "decider \(n)" : "\(n) " + Text.random(scalars: Int.random(in: 1...32, using: &rng), using: &rng)
                votes.append(Vote(decidedBy: name, button: buttons[index].title, buttonIndex: index, at: before(expiryFrom: displayedAt)))
            }
            if state == .answered, let chosen = result, let index = chosen.buttonIndex {
                let agreeing = buttons[index].style == .cancel ? 1 : quorum
                for n in 0..<agreeing {
                    let name = n == agreeing - 1 ? chosen.decidedBy : "agreeing \(n)"
                    let at = n == agreeing - 1 ? last : before(expiryFrom: displayedAt)
                    votes.append(Vote(decidedBy: name, button: buttons[index].title, buttonIndex: index, at: at))
                }
            }
        }
        // §13: fields only with buttons, each naming some of them; votes carry words (values of
        // the fields, any text), the result its deciding vote's.
        var fields: [AlertField] = []
        if !buttons.isEmpty, rng.chance(0.3) {
            for n in 0..<Int.random(in: 1...5, using: &rng) {
                var titles = buttons.map(\.title).filter { _ in rng.chance(0.5) }
                if titles.isEmpty { titles = [buttons[0].title] }
                fields.append(
                    AlertField(
                        name: rng.chance(0.5)
                            ? "f\(n)"
                            : "f\(n)_"
                                + String((0..<Int.random(in: 0...28, using: &rng)).map { _ in "abcxyz019_".randomElement(using: &rng)! }),
                        label: rng.chance(0.5) ? Text.random(scalars: Int.random(in: 1...64, using: &rng), nul: false, using: &rng) : nil,
                        placeholder: rng.chance(0.3)
                            ? Text.random(scalars: Int.random(in: 0...256, using: &rng), nul: false, using: &rng) : nil,
                        required: rng.chance(0.5), maxLength: rng.chance(0.5) ? 200 : Int.random(in: 1...1000, using: &rng), buttons: titles
                    ))
            }
        }
        for index in votes.indices {
            if rng.chance(0.4) {
                votes[index].comment = Text.random(
                    scalars: Int.random(in: 1...(rng.chance(0.1) ? 1000 : 80), using: &rng), nul: false, using: &rng)
            }
            for field in fields where rng.chance(0.5) {
                votes[index].values[field.name] = Text.random(
                    scalars: Int.random(in: 1...field.maxLength, using: &rng), nul: false, using: &rng)
            }
        }
        result?.votes = votes
        if state == .answered, let deciding = votes.last {
            result?.comment = deciding.comment
            result?.values = deciding.values
        }

        let titleLength =
            rng.chance(0.1) ? [1, 256].randomElement(using: &rng)! : Int.random(in: 1...(rng.chance(0.5) ? 16 : 256), using: &rng)
        let message: String? =
            switch Int.random(in: 0..<10, using: &rng) {
            case 0, 1: nil
            case 2: Text.random(scalars: [0, 4096].randomElement(using: &rng)!, nul: false, using: &rng)
            case 3: Text.random(scalars: Int.random(in: 0...4096, using: &rng), nul: false, using: &rng)
            default: Text.random(scalars: Int.random(in: 0...200, using: &rng), nul: false, using: &rng)
            }
        alert = Alert(
            // The id carries the creation time in its top 48 bits, as the board's ids do.
            id: AlertID(high: UInt64(created.milliseconds) << 16 | UInt64.random(in: 0...0xFFFF, using: &rng), low: rng.next()),
            client: Self.client(using: &rng),
            title: Text.random(scalars: titleLength, nul: false, using: &rng),
            message: message,
            style: AlertStyle.allCases.randomElement(using: &rng)!,
            buttons: buttons,
            priority: rng.chance(0.2) ? [-100, 0, 100].randomElement(using: &rng)! : Int.random(in: -100...100, using: &rng),
            callbackURL: rng.chance(0.5) ? Self.callbackURL(using: &rng) : nil,
            metadata: rng.chance(0.6) ? Metadata.random(using: &rng) : nil,
            state: state, createdAt: created, displayedAt: displayedAt, decidedAt: decidedAt, expiresAt: expiresAt,
            dismissAfterMilliseconds: dismissAfter, result: result, quorum: quorum, votes: votes, fields: fields
        )
        // The renderer prints a position for pending alerts only; terminal ones get a
        // stray one now and then, which must not show.
        switch state {
        case .queued: position = rng.chance(0.8) ? Int.random(in: 1...10_000, using: &rng) : nil
        case .displayed: position = rng.chance(0.8) ? 0 : nil
        default: position = rng.chance(0.3) ? Int.random(in: 0...10_000, using: &rng) : nil
        }
    }

    /// Mostly this century, sometimes anywhere from 1970 to 9989 (RFC 3339 has four-digit years).
    static func time(using rng: inout SplitMix64) -> Timestamp {
        let range: ClosedRange<Int64> =
            rng.chance(0.8) ? 946_684_800_000...4_102_444_800_000 : 0...253_086_508_800_000
        return Timestamp(milliseconds: Int64.random(in: range, using: &rng))
    }

    /// Whole seconds (written as integers) as often as not; 0 where a tiny duration rounds to it.
    static func duration(using rng: inout SplitMix64) -> Int64 {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: [0, 1, 999, 1000, 1001, maxDurationMilliseconds].randomElement(using: &rng)!
        case 1, 2, 3, 4: Int64.random(in: 1...604_800, using: &rng) * 1000
        case 5: Int64.random(in: 1...maxDurationMilliseconds, using: &rng)
        default: Int64.random(in: 1...604_800_000, using: &rng)
        }
    }

    /// `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    static func client(using rng: inout SplitMix64) -> String {
        let alnum = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let rest = alnum + Array("._-")
        let length = rng.chance(0.1) ? 64 : Int.random(in: 1...20, using: &rng)
        return String([alnum.randomElement(using: &rng)!] + (1..<length).map { _ in rest.randomElement(using: &rng)! })
    }

    /// An absolute http(s) URL with a host, printable ASCII only: quotes, backslashes and `</script>` included.
    static func callbackURL(using rng: inout SplitMix64) -> String {
        let hosts = ["hooks.example.com", "127.0.0.1", "[::1]", "a", "xn--bcher-kva.example"]
        var url = (rng.chance(0.5) ? "https://" : "http://") + hosts.randomElement(using: &rng)!
        if rng.chance(0.3) { url += ":\(Int.random(in: 1...65535, using: &rng))" }
        url += "/"
        let pieces = ["a", "/", "?", "&", "=", "#", "%20", "\"", "\\", "</script>", "'", "~", "@", "{}", "<>"]
        for _ in 0..<Int.random(in: 0...30, using: &rng) {
            url +=
                rng.chance(0.5)
                ? pieces.randomElement(using: &rng)!
                : String(UnicodeScalar(UInt8.random(in: 0x21...0x7E, using: &rng)))
        }
        return url
    }

    /// The alert as a poster would have posted it (what validation reads).
    static func postedBody(_ alert: Alert) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.key("title")
        json.string(alert.title)
        if let message = alert.message {
            json.key("message")
            json.string(message)
        }
        json.key("style")
        json.string(alert.style.rawValue)
        json.key("buttons")
        json.beginArray()
        for button in alert.buttons { button.write(into: &json) }
        json.endArray()
        json.key("priority")
        json.int(alert.priority)
        json.key("quorum")
        json.int(alert.quorum)
        if !alert.fields.isEmpty {
            json.key("fields")
            json.fields(alert.fields)
        }
        let expiresIn = alert.expiresAt.milliseconds - alert.createdAt.milliseconds
        if expiresIn > 0 {
            json.key("expires_in")
            json.double(Double(expiresIn) / 1000)
        }
        if let dismissAfter = alert.dismissAfterMilliseconds, dismissAfter > 0 {
            json.key("dismiss_after")
            json.double(Double(dismissAfter) / 1000)
        }
        if let callbackURL = alert.callbackURL {
            json.key("callback_url")
            json.string(callbackURL)
        }
        if let metadata = alert.metadata {
            json.key("metadata")
            json.raw(metadata.bytes)
        }
        json.endObject()
        return json.bytes
    }
}

/// Random text of an exact number of Unicode scalars, mixing what tends to break JSON
/// writers: quotes, backslashes, control characters, `</script>`, line and paragraph
/// separators, combining marks, emoji sequences, astral and private-use scalars.
/// An alert's own text (title, message, button titles) never holds U+0000 (§2 as
/// alertd reads it: PostgreSQL cannot store it), so `nul: false` leaves it out;
/// other strings (`decided_by`, metadata) keep it, for the writers' escaping.
enum Text {
    static let fragments: [String] = [
        "</script>", "<script>alert(1)</script>", "<!--", "]]>", "\"", "\\", "\\u0000", "\\\"", "\"}", "]}", "\r\n",
        "\u{2028}", "\u{2029}", "\u{FEFF}", "\u{7F}", "\u{0}", "e\u{301}", "\u{E9}", "👩‍👩‍👧‍👦", "🇩🇪", "👍🏽", "\u{10FFFF}",
        "\u{FFFD}", "\u{FFFE}", "\u{FFFF}", "\u{1D11E}", "日本語", "Ωmega", "&amp;", "'", "/", "\t",
    ]

    static func random(scalars count: Int, nul: Bool = true, using rng: inout SplitMix64) -> String {
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(count + 16)
        while scalars.count < count {
            switch Int.random(in: 0..<20, using: &rng) {
            case 0..<7: scalars.append(scalar(in: 0x20...0x7E, using: &rng))
            case 7: scalars.append(scalar(in: 0x00...0x1F, using: &rng))
            case 8, 9: scalars.append(contentsOf: fragments.randomElement(using: &rng)!.unicodeScalars)
            case 10, 11: scalars.append(scalar(in: 0xA0...0x24F, using: &rng))
            case 12, 13: scalars.append(scalar(in: 0x370...0xD7FF, using: &rng))
            case 14: scalars.append(scalar(in: 0xE000...0xFFFF, using: &rng))
            case 15, 16: scalars.append(scalar(in: 0x1F300...0x1FAFF, using: &rng))
            case 17: scalars.append(scalar(in: 0x10000...0x10FFFF, using: &rng))
            default: scalars.append(scalar(in: 0x300...0x36F, using: &rng))  // combining marks
            }
        }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars.prefix(count).map { nul || $0 != "\u{0}" ? $0 : "\u{1}" })
        return String(text)
    }

    /// A scalar in `range`; surrogate code points (not scalars) become U+FFFD.
    static func scalar(in range: ClosedRange<UInt32>, using rng: inout SplitMix64) -> Unicode.Scalar {
        Unicode.Scalar(UInt32.random(in: range, using: &rng)) ?? "\u{FFFD}"
    }
}

/// Random metadata, made as the daemon makes it: JSON text as a poster might write it
/// (any number spelling, escapes, whitespace, unicode keys, nesting), parsed by the
/// daemon's parser, kept as `CompactJSON` when it fits the 4 KiB limit.
enum Metadata {
    static func random(using rng: inout SplitMix64) -> CompactJSON {
        while true {
            var text = ""
            if rng.chance(0.05) {
                // As deep as a posted body allows: the body is one level, metadata 63 more.
                let depth = Int.random(in: 1...63, using: &rng)
                text =
                    "{\"deep\":" + String(repeating: "[", count: depth - 1) + number(using: &rng)
                    + String(repeating: "]", count: depth - 1) + "}"
            } else {
                object(depth: 0, into: &text, using: &rng)
            }
            guard case .object(let object)? = try? JSONParser.parse(text, maxDepth: 63) else { continue }
            let compact = CompactJSON(object)
            if compact.bytes.count <= NewAlert.metadataLimit { return compact }
        }
    }

    static func object(depth: Int, into text: inout String, using rng: inout SplitMix64) {
        text += "{" + space(using: &rng)
        // Keys unique as the parser sees them (String equality).
        var keys: Set<String> = []
        for _ in 0..<Int.random(in: 0...(depth == 0 ? 14 : 4), using: &rng) {
            let key = Text.random(scalars: Int.random(in: 0...12, using: &rng), using: &rng)
            guard keys.insert(key).inserted else { continue }
            if keys.count > 1 { text += "," + space(using: &rng) }
            string(key, into: &text, using: &rng)
            text += space(using: &rng) + ":" + space(using: &rng)
            value(depth: depth + 1, into: &text, using: &rng)
            text += space(using: &rng)
        }
        text += "}"
    }

    static func value(depth: Int, into text: inout String, using rng: inout SplitMix64) {
        // Containers only down to five levels.
        let kind = Int.random(in: 0..<(depth < 5 ? 10 : 6), using: &rng)
        switch kind {
        case 0: text += ["null", "true", "false"].randomElement(using: &rng)!
        case 1, 2, 3: text += number(using: &rng)
        case 4, 5: string(Text.random(scalars: Int.random(in: 0...40, using: &rng), using: &rng), into: &text, using: &rng)
        case 6, 7: object(depth: depth, into: &text, using: &rng)
        default:
            text += "[" + space(using: &rng)
            for i in 0..<Int.random(in: 0...4, using: &rng) {
                if i > 0 { text += "," + space(using: &rng) }
                value(depth: depth + 1, into: &text, using: &rng)
            }
            text += "]"
        }
    }

    /// A number as RFC 8259 allows it to be spelled, including ones no `Double` holds exactly,
    /// within a double's range (a post refuses `1e400`: it has no canonical form for a
    /// receipt, SPEC §14; BadInputTests and the receipts' contract tests hold that refusal).
    static func number(using rng: inout SplitMix64) -> String {
        if rng.chance(0.3) {
            return [
                "0", "-0", "-0.0", "1.50e3", "1E+2", "1e-400", "5e-324", "1.7976931348623157e308", "9007199254740993",
                "18446744073709551616", "123456789012345678901234567890", "0.1", "1e-7", "2.5E-3", "100",
            ].randomElement(using: &rng)!
        }
        var n = rng.chance(0.3) ? "-" : ""
        n += rng.chance(0.2) ? "0" : String(Int.random(in: 1...9, using: &rng)) + digits(0...25, using: &rng)
        if rng.chance(0.4) { n += "." + digits(1...20, using: &rng) }
        if rng.chance(0.3) {
            // Up to 2 digits: at most 26 digits times 1e99 stays far below a double's 1.8e308.
            n += (rng.chance(0.5) ? "e" : "E") + ["", "+", "-"].randomElement(using: &rng)! + digits(1...2, using: &rng)
        }
        return n
    }

    static func digits(_ count: ClosedRange<Int>, using rng: inout SplitMix64) -> String {
        String((0..<Int.random(in: count, using: &rng)).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) })
    }

    static func space(using rng: inout SplitMix64) -> String {
        rng.chance(0.8)
            ? "" : String((0..<Int.random(in: 1...3, using: &rng)).map { _ in [" ", "\t", "\n", "\r"].randomElement(using: &rng)! })
    }

    /// A JSON string literal, each scalar written raw or escaped at random (`\u` with surrogate pairs too).
    static func string(_ s: String, into text: inout String, using rng: inout SplitMix64) {
        text += "\""
        for scalar in s.unicodeScalars {
            let mustEscape = scalar.value < 0x20 || scalar == "\"" || scalar == "\\"
            if !mustEscape && rng.chance(0.8) {
                text.unicodeScalars.append(scalar)
                continue
            }
            let short: [Unicode.Scalar: String] = [
                "\"": "\\\"", "\\": "\\\\", "/": "\\/", "\u{8}": "\\b", "\u{C}": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            ]
            if let escape = short[scalar], rng.chance(0.7) {
                text += escape
            } else {
                for unit in String(scalar).utf16 {
                    let hex = String(unit, radix: 16, uppercase: rng.chance(0.5))
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                }
            }
        }
        text += "\""
    }
}

extension SplitMix64 {
    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}
