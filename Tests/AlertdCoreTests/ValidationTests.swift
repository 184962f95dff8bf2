import AlertdCore
import AlertdWire
import Testing

/// Parses `text` as JSON and validates it as a posted alert.
private func validate(_ text: String, rules: AlertRules = AlertRules(), namedDeciders: Bool = true) throws -> Result<NewAlert, InvalidAlert>
{
    NewAlert.validate(try JSONParser.parse(text), rules: rules, namedDeciders: namedDeciders)
}

/// The violations found in `text`; empty when it is a valid alert.
private func violations(_ text: String, rules: AlertRules = AlertRules()) throws -> [FieldError] {
    switch try validate(text, rules: rules) {
    case .success: []
    case .failure(let invalid): invalid.errors
    }
}

/// The field paths of the violations found in `text`.
private func fields(_ text: String, rules: AlertRules = AlertRules()) throws -> [String] {
    try violations(text, rules: rules).map(\.field)
}

/// The draft `text` validates to; throws the violations when it is invalid.
private func draft(_ text: String, rules: AlertRules = AlertRules()) throws -> NewAlert {
    try validate(text, rules: rules).get()
}

/// `{"title":"x"` plus the given members, closed.
private func alert(_ members: String) -> String {
    #"{"title":"x","# + members + "}"
}

private func buttonList(_ count: Int) -> String {
    "[" + (0..<count).map { #"{"title":"B\#($0)"}"# }.joined(separator: ",") + "]"
}

@Suite("A valid alert maps every field")
struct ValidAlertTests {
    @Test("Every field of a full alert reaches the draft")
    func fullAlert() throws {
        let body = """
            {"title":"Deploy v2?","message":"Rolls out to prod","style":"action_sheet",
             "buttons":[{"title":"Deploy","style":"destructive"},{"title":"Cancel","style":"cancel"},{"title":"Later","style":"default"}],
             "priority":-7,"expires_in":3600.5,"callback_url":"https://hooks.example.com:8443/alertd?x=1",
             "metadata":{"ticket":"OPS-1","weight":1.50,"tags":["a","b"]}}
            """
        let result = try draft(body)
        #expect(
            result
                == NewAlert(
                    title: "Deploy v2?", message: "Rolls out to prod", style: .actionSheet,
                    buttons: [
                        Button(title: "Deploy", style: .destructive), Button(title: "Cancel", style: .cancel),
                        Button(title: "Later", style: .default),
                    ],
                    priority: -7, expiresIn: 3600.5, dismissAfter: nil,
                    callbackURL: "https://hooks.example.com:8443/alertd?x=1",
                    metadata: ["ticket": "OPS-1", "weight": 1.5, "tags": ["a", "b"]], quorum: 1))
        // Metadata is kept as posted: member order and number spelling.
        #expect(result.metadata?.keys == ["ticket", "weight", "tags"])
        #expect(result.metadata?["weight"]?.numberValue?.literal == "1.50")
    }

    @Test("A buttonless alert may set dismiss_after")
    func dismissAfterWithoutButtons() throws {
        let result = try draft(#"{"title":"Backup done","dismiss_after":0.25}"#)
        #expect(result.dismissAfter == 0.25)
        #expect(result.buttons == [], "a validated alert has its defaults: no buttons is an empty list")
    }

    @Test("Absent fields take their defaults: style alert, button style default, priority 0, quorum 1")
    func defaults() throws {
        let result = try draft(#"{"title":"Hi","buttons":[{"title":"OK"}]}"#)
        #expect(
            result == NewAlert(title: "Hi", style: .alert, buttons: [Button(title: "OK", style: .default)], priority: 0, quorum: 1))
        #expect(result.style == .alert)
        #expect(result.priority == 0)
        #expect(result.message == nil && result.expiresIn == nil && result.dismissAfter == nil)
        #expect(result.callbackURL == nil && result.metadata == nil)
    }

    @Test("null for an optional field is the same as leaving it out")
    func nullIsAbsent() throws {
        let body = """
            {"title":"x","message":null,"style":null,"buttons":null,"priority":null,"expires_in":null,
             "dismiss_after":null,"callback_url":null,"metadata":null,"quorum":null}
            """
        #expect(try draft(body) == NewAlert(title: "x", style: .alert, buttons: [], priority: 0, quorum: 1))
        let withButton = try draft(#"{"title":"x","buttons":[{"title":"OK","style":null}]}"#)
        #expect(withButton.buttons == [Button(title: "OK", style: .default)])
    }

    @Test("An empty message is allowed")
    func emptyMessage() throws {
        #expect(try draft(alert(#""message":"""#)).message == "")
    }
}

@Suite("Each violation names its field")
struct FieldErrorTests {
    @Test(
        "One violation gives exactly one error at the field's path",
        arguments: [
            (#"{}"#, "title"),
            (#"{"title":null}"#, "title"),
            (#"{"title":""}"#, "title"),
            (#"{"title":5}"#, "title"),
            (alert(#""message":7"#), "message"),
            (alert(#""style":"popup""#), "style"),
            (alert(#""style":1"#), "style"),
            (alert(#""buttons":{}"#), "buttons"),
            (alert(#""buttons":["OK"]"#), "buttons[0]"),
            (alert(#""buttons":[{"title":"A"},{"title":""}]"#), "buttons[1].title"),
            (alert(#""buttons":[{"title":"A"},{}]"#), "buttons[1].title"),
            (alert(#""buttons":[{"title":"A"},{"title":7}]"#), "buttons[1].title"),
            (alert(#""buttons":[{"title":"A"},{"title":"B"},{"title":"C","style":"primary"}]"#), "buttons[2].style"),
            (alert(#""buttons":[{"title":"A"},{"title":"B"},{"title":"C","style":true}]"#), "buttons[2].style"),
            (alert(#""buttons":[{"title":"A","colour":"red"}]"#), "buttons[0].colour"),
            (alert(#""colour":"red""#), "colour"),
            (alert(#""Title":"again""#), "Title"),
            (alert(#""metadata":[1]"#), "metadata"),
            (alert(#""metadata":"a=b""#), "metadata"),
            (alert(#""priority":"5""#), "priority"),
            (alert(#""priority":5.5"#), "priority"),
            (alert(#""priority":1.5e0"#), "priority"),
            (alert(#""priority":1e2000"#), "priority"),
            (alert(#""priority":101"#), "priority"),
            (alert(#""priority":-101"#), "priority"),
            (alert(#""priority":true"#), "priority"),
            (alert(#""expires_in":0"#), "expires_in"),
            (alert(#""expires_in":-5"#), "expires_in"),
            (alert(#""expires_in":"60""#), "expires_in"),
            (alert(#""expires_in":604801"#), "expires_in"),
            (alert(#""dismiss_after":0"#), "dismiss_after"),
            (alert(#""dismiss_after":-1"#), "dismiss_after"),
            (alert(#""dismiss_after":"2""#), "dismiss_after"),
            (alert(#""buttons":[{"title":"OK"}],"dismiss_after":5"#), "dismiss_after"),
            (alert(#""callback_url":5"#), "callback_url"),
        ] as [(String, String)])
    func singleViolation(body: String, field: String) throws {
        let errors = try violations(body)
        #expect(errors.map(\.field) == [field])
        #expect(errors.allSatisfy { !$0.reason.isEmpty })
    }

    @Test("Every violation is listed at once, not only the first")
    func allViolations() throws {
        let body = """
            {"title":"","colour":1,
             "buttons":[{"title":"A"},{"title":"A","shape":"round"},{"title":"B","style":"cancel"},{"title":"C","style":"cancel"}],
             "priority":500,"expires_in":-1,"dismiss_after":3,"callback_url":"gopher://example.com/","metadata":[]}
            """
        #expect(
            try fields(body).sorted() == [
                "buttons[1].shape", "buttons[1].title", "buttons[3].style", "callback_url", "colour", "dismiss_after",
                "expires_in", "metadata", "priority", "title",
            ])
    }

    @Test("Errors in several buttons are each reported at their own index")
    func errorsInSeveralButtons() throws {
        let body = alert(#""buttons":[{"title":""},{"title":"ok","x":1},{"title":"B","style":"loud"}]"#)
        #expect(try fields(body).sorted() == ["buttons[0].title", "buttons[1].x", "buttons[2].style"])
    }

    @Test("A body that is not an object is one error", arguments: ["[]", #""title""#, "null", "5", "true", #"[{"title":"x"}]"#])
    func notAnObject(body: String) throws {
        let errors = try violations(body)
        #expect(errors.count == 1)
    }
}

@Suite("Lengths count Unicode code points")
struct LengthTests {
    /// One code point each, from one to four UTF-8 bytes.
    static let units = ["a", "é", "中", "😀"]

    @Test("A title of 256 code points is accepted, 257 is not", arguments: units)
    func titleLength(unit: String) throws {
        let title256 = String(repeating: unit, count: 256)
        #expect(try draft(#"{"title":"\#(title256)"}"#).title == title256)
        #expect(try fields(#"{"title":"\#(title256)\#(unit)"}"#) == ["title"])
    }

    @Test(
        "Combining marks and emoji sequences count as their code points, not as characters",
        arguments: ["e\u{301}", "👍🏽", "🇫🇷"])
    func titleCountsCodePoints(pair: String) throws {
        #expect(pair.unicodeScalars.count == 2 && pair.count == 1)
        // 128 characters, 256 code points: accepted.
        let title = String(repeating: pair, count: 128)
        #expect(try fields(#"{"title":"\#(title)"}"#) == [])
        // 129 characters but 258 code points: too long, though far below 256 characters.
        #expect(try fields(#"{"title":"\#(title)\#(pair)"}"#) == ["title"])
        #expect(try fields(#"{"title":"\#(title)a"}"#) == ["title"])
    }

    @Test("A message of 4096 code points is accepted, 4097 is not", arguments: ["m", "é", "😀"])
    func messageLength(unit: String) throws {
        let message = String(repeating: unit, count: 4096)
        #expect(try draft(alert(#""message":"\#(message)""#)).message == message)
        #expect(try fields(alert(#""message":"\#(message)\#(unit)""#)) == ["message"])
    }

    @Test("A button title of 64 code points is accepted, 65 is not", arguments: ["b", "😀"])
    func buttonTitleLength(unit: String) throws {
        let title = String(repeating: unit, count: 64)
        #expect(try draft(alert(#""buttons":[{"title":"\#(title)"}]"#)).buttons == [Button(title: title)])
        #expect(try fields(alert(#""buttons":[{"title":"OK"},{"title":"\#(title)\#(unit)"}]"#)) == ["buttons[1].title"])
    }
    @Test(
        "U+0000 in a title, message or button title is refused on every store (PostgreSQL's text cannot hold it)",
        arguments: [
            (#"{"title":"a\u0000b"}"#, "title"), (#"{"title":"\u0000"}"#, "title"),
            (#"{"title":"x","message":"line\u0000"}"#, "message"),
            (#"{"title":"x","buttons":[{"title":"OK"},{"title":"\u0000Yes"}]}"#, "buttons[1].title"),
        ])
    func nulRefused(body: String, field: String) throws {
        let errors = try violations(body)
        #expect(errors.map(\.field) == [field])
        #expect(errors.first?.reason == "must not contain U+0000")
        // Other control characters stay text like any other.
        let other = body.replacing("\\u0000", with: "\\u0001")
        #expect(try fields(other) == [], "\(other)")
    }
}

@Suite("Button rules")
struct ButtonRuleTests {
    @Test("16 buttons are accepted, 17 are not")
    func buttonCount() throws {
        #expect(try draft(alert(#""buttons":\#(buttonList(16))"#)).buttons?.count == 16)
        #expect(try draft(alert(#""buttons":[]"#)).buttons == [])
        #expect(try fields(alert(#""buttons":\#(buttonList(17))"#)) == ["buttons"])
    }

    @Test("A repeated button title is reported at the repeat")
    func duplicateTitles() throws {
        #expect(try fields(alert(#""buttons":[{"title":"Go"},{"title":"Go","style":"destructive"}]"#)) == ["buttons[1].title"])
        #expect(try fields(alert(#""buttons":[{"title":"A"},{"title":"B"},{"title":"A"}]"#)) == ["buttons[2].title"])
        // Titles differing only in case are different titles.
        #expect(try fields(alert(#""buttons":[{"title":"Go"},{"title":"go"}]"#)) == [])
    }

    @Test("A second cancel button is reported at its style")
    func twoCancelButtons() throws {
        let body = alert(#""buttons":[{"title":"Stop","style":"cancel"},{"title":"OK"},{"title":"Abort","style":"cancel"}]"#)
        #expect(try fields(body) == ["buttons[2].style"])
        let one = alert(#""buttons":[{"title":"Stop","style":"cancel"},{"title":"Drop","style":"destructive"}]"#)
        #expect(try draft(one).buttons?.map(\.style) == [.cancel, .destructive])
    }
}

@Suite("Numbers: priority, expires_in, dismiss_after")
struct NumberRuleTests {
    @Test("Priority accepts every integer from -100 to 100", arguments: [-100, -1, 0, 1, 100])
    func priorityInRange(priority: Int) throws {
        #expect(try draft(alert(#""priority":\#(priority)"#)).priority == priority)
    }

    @Test("Priority rejects integers outside -100…100", arguments: [-101, 101, 1000, Int.max])
    func priorityOutOfRange(priority: Int) throws {
        #expect(try fields(alert(#""priority":\#(priority)"#)) == ["priority"])
    }

    @Test("expires_in may be up to the configured maximum, fractions included")
    func expiresInBounds() throws {
        let rules = AlertRules(defaultExpiresIn: 30, maxExpiresIn: 60)
        #expect(try draft(alert(#""expires_in":60"#), rules: rules).expiresIn == 60)
        #expect(try draft(alert(#""expires_in":0.5"#), rules: rules).expiresIn == 0.5)
        #expect(try fields(alert(#""expires_in":60.5"#), rules: rules) == ["expires_in"])
        #expect(try fields(alert(#""expires_in":61"#), rules: rules) == ["expires_in"])
        // The default maximum is 604 800 s (7 days).
        #expect(try draft(alert(#""expires_in":604800"#)).expiresIn == 604_800)
    }

    @Test(
        "expires_in and dismiss_after must be at least a millisecond (deadlines are kept in milliseconds)",
        arguments: ["0", "-0", "0.0", "-1", "-0.001", "0.0009", "1e-9"])
    func nonPositiveSeconds(literal: String) throws {
        #expect(try fields(alert(#""expires_in":\#(literal)"#)) == ["expires_in"])
        #expect(try fields(alert(#""dismiss_after":\#(literal)"#)) == ["dismiss_after"])
    }
}

@Suite("priority is a whole number however JSON writes it (JSON Schema's integer)")
struct WholeNumberPriorityTests {
    @Test(
        "5.0, 1e1, 500e-2 and -1.0e2 are the integers they write",
        arguments: [("5.0", 5), ("1e1", 10), ("500e-2", 5), ("-1.0e2", -100), ("100", 100), ("0.0", 0), ("-0", 0)])
    func accepted(literal: String, value: Int) throws {
        #expect(try draft(alert(#""priority":\#(literal)"#)).priority == value)
    }

    @Test("a whole number out of range says so, not \"must be an integer\"", arguments: ["101.0", "1e3", "-2e2"])
    func outOfRange(literal: String) throws {
        let error = try #require(try violations(alert(#""priority":\#(literal)"#)).first)
        #expect(error.field == "priority" && error.reason == "must be between -100 and 100")
    }

    @Test("expires_in of exactly one millisecond is kept")
    func oneMillisecond() throws {
        #expect(try draft(alert(#""expires_in":0.001"#)).expiresIn == NewAlert.minimumSeconds)
    }
}

@Suite("Metadata is at most 4096 bytes of compact JSON")
struct MetadataRuleTests {
    /// `{"k":"…"}` is 8 bytes plus the string's UTF-8.
    private func metadata(stringBytes: Int, spaced: Bool) -> String {
        let value = String(repeating: "x", count: stringBytes)
        return spaced ? #"{ "k" : "\#(value)" }"# : #"{"k":"\#(value)"}"#
    }

    @Test("Exactly 4096 compact bytes are accepted, 4097 are not, whatever the spacing posted", arguments: [false, true])
    func boundary(spaced: Bool) throws {
        let fits = alert(#""metadata":\#(metadata(stringBytes: 4088, spaced: spaced))"#)
        #expect(try draft(fits).metadata?["k"]?.stringValue?.utf8.count == 4088)
        let over = alert(#""metadata":\#(metadata(stringBytes: 4089, spaced: spaced))"#)
        #expect(try fields(over) == ["metadata"])
    }

    @Test("Metadata is measured in UTF-8 bytes, not code points")
    func measuredInBytes() throws {
        let two = String(repeating: "é", count: 2044)  // 4088 bytes
        #expect(try fields(alert(#""metadata":{"k":"\#(two)"}"#)) == [])
        #expect(try fields(alert(#""metadata":{"k":"\#(two)a"}"#)) == ["metadata"])
    }

    @Test("Metadata may be an empty or nested object")
    func shapes() throws {
        #expect(try draft(alert(#""metadata":{}"#)).metadata == JSONObject())
        #expect(try draft(alert(#""metadata":{"a":{"b":[1,null,true]}}"#)).metadata?["a"]?["b"] == [1, .null, true])
    }

    @Test("Metadata that is not an object is rejected", arguments: ["[]", "1", #""{}""#, "true"])
    func notAnObject(literal: String) throws {
        #expect(try fields(alert(#""metadata":\#(literal)"#)) == ["metadata"])
    }
}

@Suite("callback_url is an absolute http or https URL")
struct CallbackURLRuleTests {
    @Test(
        "Absolute http and https URLs with a host are accepted",
        arguments: [
            "http://example.com", "https://example.com:8443/hook?x=1#frag", "HTTPS://EXAMPLE.COM/",
            "http://user:secret@example.com/hook", "http://[::1]/hook", "http://[::1]:9000/hook",
            "https://[2001:db8::1]:8443/", "http://127.0.0.1:65535/",
            "http://localhost:1", "https://hooks.example.com/a%20b",
            "http://[::]/", "http://[::ffff:127.0.0.1]:80/", "http://[fe80::1:2:3:4:5]/", "http://[1:2:3:4:5:6:7:8]/",
            "http://[1:2:3:4:5:6:1.2.3.4]/", "http://u:p@[2001:db8::1]/",
        ])
    func accepted(url: String) throws {
        #expect(try draft(alert(#""callback_url":"\#(url)""#)).callbackURL == url)
    }

    @Test(
        "Other URLs are rejected at callback_url",
        arguments: [
            "ftp://example.com/", "mailto:ops@example.com", "example.com/hook", "/hook", "", "http:example.com",
            "http://", "https:///path", "http://:8080/", "http://user@/x",
            "http://example.com:0/", "http://example.com:65536/", "http://example.com:80a/", "http://example.com:/",
            "http://exa mple.com/", "http://example.com/a b", " http://example.com/", "http://example.com/\\u00e9",
            "http://[::1/", "http://[::1]:x/",
            // Brackets hold an IPv6 address and nothing else, and only in the host (RFC 3986).
            "http://[example.com]/", "http://[1.2.3.4]/", "http://[::1::2]/", "http://[1:2:3:4:5:6:7:8:9]/",
            "http://[12345::1]/", "http://[::g]/", "http://[::1.2.3.04]/", "http://[::1.2.3.256]/",
            "http://[::1%25eth0]/", "http://a[b]@example.com/", "http://exam[ple.com/", "http://example.com]/",
        ])
    func rejected(url: String) throws {
        #expect(try fields(alert(#""callback_url":"\#(url)""#)) == ["callback_url"])
    }
}

/// SPEC §10: `quorum` is an integer 1–10; above 1 it needs buttons and deciders with names.
@Suite("quorum: how many different deciders must agree")
struct QuorumValidationTests {
    private static let buttons = #""buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]"#

    @Test("Every quorum from 1 to 10 is accepted with buttons and named deciders", arguments: 1...10)
    func accepted(quorum: Int) throws {
        #expect(try draft(alert(Self.buttons + #","quorum":\#(quorum)"#)).quorum == quorum)
    }

    @Test("A whole number however JSON writes it", arguments: ["2", "2.0", "2e0", "0.2e1"])
    func wholeNumbers(text: String) throws {
        #expect(try draft(alert(Self.buttons + #","quorum":\#(text)"#)).quorum == 2)
    }

    @Test(
        "Out of range, not whole or not a number is refused at quorum",
        arguments: [
            ("0", "must be between 1 and 10"), ("11", "must be between 1 and 10"), ("-1", "must be between 1 and 10"),
            ("1e3", "must be between 1 and 10"), ("1.5", "must be an integer"), (#""2""#, "must be an integer, not a string"),
            ("true", "must be an integer, not a boolean"), ("[2]", "must be an integer, not an array"),
        ])
    func refused(text: String, reason: String) throws {
        let errors = try violations(alert(Self.buttons + #","quorum":\#(text)"#))
        #expect(errors == [FieldError(field: "quorum", reason: reason)])
    }

    @Test("Above 1 needs buttons", arguments: ["", #","buttons":[]"#])
    func needsButtons(buttons: String) throws {
        #expect(try fields(alert(#""quorum":2"# + buttons)) == ["quorum"])
        // Quorum 1 is any alert's, buttons or not.
        #expect(try fields(alert(#""quorum":1"# + buttons)) == [])
    }

    @Test("Above 1 needs deciders with names: without tokens every choice is anonymous")
    func needsNamedDeciders() throws {
        let body = alert(Self.buttons + #","quorum":2"#)
        guard case .failure(let invalid) = try validate(body, namedDeciders: false) else {
            Issue.record("quorum 2 validated without named deciders")
            return
        }
        #expect(invalid.errors.map(\.field) == ["quorum"])
        #expect(invalid.errors.first?.reason.contains("auth.tokens") == true)
        // Quorum 1 needs no names, and neither does an absent one.
        #expect((try? validate(alert(Self.buttons + #","quorum":1"#), namedDeciders: false).get())?.quorum == 1)
        #expect((try? validate(alert(Self.buttons), namedDeciders: false).get())?.quorum == 1)
    }

    @Test("Without buttons and without names: both reasons, each once at quorum")
    func bothReasons() throws {
        guard case .failure(let invalid) = try validate(alert(#""quorum":3"#), namedDeciders: false) else {
            Issue.record("validated")
            return
        }
        #expect(invalid.errors.map(\.field) == ["quorum", "quorum"])
    }
}
