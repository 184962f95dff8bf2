import AlertdCore
import AlertdWire
import Testing

// Answers with words (SPEC §13): an alert's fields as posted, and the comment and values a
// choice carries, on the board with a manual clock.

/// The field paths and reasons of a posted alert's violations; empty when valid.
private func violations(_ text: String, buttons: String = #"[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]"#) throws
    -> [FieldError]
{
    switch NewAlert.validate(
        try JSONParser.parse(#"{"title":"Deploy?","buttons":\#(buttons),"fields":\#(text)}"#), rules: AlertRules(), namedDeciders: true)
    {
    case .success: []
    case .failure(let invalid): invalid.errors
    }
}

private func paths(_ text: String, buttons: String = #"[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]"#) throws -> [String] {
    try violations(text, buttons: buttons).map(\.field)
}

/// Deploy (default), Roll back (destructive), Cancel (cancel); a required ticket for Deploy and
/// Roll back, an optional reason for Cancel only.
private func deploy(quorum: Int = 1) throws -> NewAlert {
    let body = #"""
        {"title":"Deploy build 1234?","quorum":\#(quorum),
         "buttons":[{"title":"Deploy"},{"title":"Roll back","style":"destructive"},{"title":"Cancel","style":"cancel"}],
         "fields":[{"name":"ticket","label":"Change ticket","placeholder":"OPS-123","required":true,"max_length":12},
                   {"name":"reason","buttons":["Cancel"]}]}
        """#
    return try NewAlert.validate(try JSONParser.parse(body), rules: AlertRules(), namedDeciders: true).get()
}

@Suite("An alert's fields (SPEC §13)")
struct AlertFieldValidationTests {
    @Test("A valid field list reaches the draft, each field's buttons resolved: by default every button but the cancel one")
    func valid() throws {
        let draft = try deploy()
        let fields = try #require(draft.fields)
        #expect(fields.map(\.name) == ["ticket", "reason"])
        #expect(
            fields[0]
                == AlertField(
                    name: "ticket", label: "Change ticket", placeholder: "OPS-123", required: true, maxLength: 12,
                    buttons: ["Deploy", "Roll back"]))
        #expect(fields[1] == AlertField(name: "reason", buttons: ["Cancel"]))
        #expect(fields[1].maxLength == 200 && !fields[1].required)
    }

    @Test("No fields, [] or null: none")
    func none() throws {
        for text in ["[]", "null"] {
            let draft = try NewAlert.validate(
                try JSONParser.parse(#"{"title":"x","buttons":[{"title":"OK"}],"fields":\#(text)}"#), rules: AlertRules(),
                namedDeciders: true
            ).get()
            #expect(draft.fields == nil)
        }
    }

    @Test(
        "Each broken rule is named at its path",
        arguments: [
            (#"[{"name":"Ticket"}]"#, "fields[0].name"),
            (#"[{"name":"1ticket"}]"#, "fields[0].name"),
            (#"[{"name":"tick-et"}]"#, "fields[0].name"),
            (#"[{"name":"a234567890123456789012345678901234"}]"#, "fields[0].name"),
            (#"[{"name":""}]"#, "fields[0].name"),
            (#"[{"label":"x"}]"#, "fields[0].name"),
            (#"[{"name":5}]"#, "fields[0].name"),
            (#"[{"name":"a"},{"name":"a"}]"#, "fields[1].name"),
            (#"[{"name":"a","label":""}]"#, "fields[0].label"),
            (#"[{"name":"a","label":"\#(String(repeating: "l", count: 65))"}]"#, "fields[0].label"),
            (#"[{"name":"a","placeholder":"\#(String(repeating: "p", count: 257))"}]"#, "fields[0].placeholder"),
            (#"[{"name":"a","required":"yes"}]"#, "fields[0].required"),
            (#"[{"name":"a","max_length":0}]"#, "fields[0].max_length"),
            (#"[{"name":"a","max_length":1001}]"#, "fields[0].max_length"),
            (#"[{"name":"a","max_length":2.5}]"#, "fields[0].max_length"),
            (#"[{"name":"a","buttons":["Nope"]}]"#, "fields[0].buttons[0]"),
            (#"[{"name":"a","buttons":["Deploy","Deploy"]}]"#, "fields[0].buttons[1]"),
            (#"[{"name":"a","buttons":[]}]"#, "fields[0].buttons"),
            (#"[{"name":"a","buttons":[1]}]"#, "fields[0].buttons[0]"),
            (#"[{"name":"a","buttons":"Deploy"}]"#, "fields[0].buttons"),
            (#"[{"name":"a","typ":"text"}]"#, "fields[0].typ"),
            (#"["a"]"#, "fields[0]"),
            (#"{"name":"a"}"#, "fields"),
        ])
    func refused(text: String, path: String) throws {
        #expect(try paths(text) == [path])
    }

    @Test("Six fields are too many; five are not")
    func sixFields() throws {
        let five = "[" + (1...5).map { #"{"name":"f\#($0)"}"# }.joined(separator: ",") + "]"
        let six = "[" + (1...6).map { #"{"name":"f\#($0)"}"# }.joined(separator: ",") + "]"
        #expect(try paths(five).isEmpty)
        let refused = try violations(six)
        #expect(refused.map(\.field) == ["fields"])
        #expect(refused.first?.reason == "at most 5 fields, got 6")
    }

    @Test("Fields need buttons; on an alert whose only button is the cancel one, a field must name it")
    func needsButtons() throws {
        #expect(try paths(#"[{"name":"a"}]"#, buttons: "[]") == ["fields"])
        #expect(try paths(#"[{"name":"a"}]"#, buttons: #"[{"title":"Stop","style":"cancel"}]"#) == ["fields[0].buttons"])
        #expect(try paths(#"[{"name":"a","buttons":["Stop"]}]"#, buttons: #"[{"title":"Stop","style":"cancel"}]"#).isEmpty)
    }

    @Test("A field's name, label and placeholder count in the pending alert's footprint")
    func footprint() throws {
        let plain = Alert.footprint(title: "t", message: nil, buttons: [.default("OK")], callbackURL: nil, metadata: nil)
        let asked = Alert.footprint(
            title: "t", message: nil, buttons: [.default("OK")], callbackURL: nil, metadata: nil,
            fields: [AlertField(name: "ticket", label: "Ticket", placeholder: String(repeating: "p", count: 100))])
        #expect(asked - plain == Alert.buttonFootprint + 6 + 6 + 100)
    }
}

@Suite("A choice's comment and values (SPEC §13)")
struct ChoiceWordsTests {
    @Test("Words that fit are kept: empty values and an empty comment are none")
    func kept() throws {
        let draft = try deploy()
        let words = ChoiceWords(comment: "window agreed", values: ["ticket": "OPS-1"])
        #expect(try words.checked(button: 0, of: draft.buttons!, fields: draft.fields!).get() == words)
        let blank = ChoiceWords(comment: "", values: ["reason": ""])
        #expect(try blank.checked(button: 2, of: draft.buttons!, fields: draft.fields!).get() == ChoiceWords())
    }

    @Test(
        "Each part that does not fit is named at its path",
        arguments: [
            (0, ChoiceWords(values: [:]), ["values.ticket"]),
            (0, ChoiceWords(values: ["ticket": ""]), ["values.ticket"]),
            (1, ChoiceWords(values: [:]), ["values.ticket"]),
            (0, ChoiceWords(values: ["ticket": "OPS-1234567890"]), ["values.ticket"]),
            (0, ChoiceWords(values: ["ticket": "OPS-1", "tikcet": "x"]), ["values.tikcet"]),
            (0, ChoiceWords(values: ["ticket": "OPS-1", "reason": "x"]), ["values.reason"]),
            (2, ChoiceWords(values: ["ticket": "OPS-1"]), ["values.ticket"]),
            (0, ChoiceWords(comment: String(repeating: "c", count: 1001), values: ["ticket": "OPS-1"]), ["comment"]),
            (0, ChoiceWords(comment: "a\u{0}b", values: ["ticket": "OPS-1"]), ["comment"]),
            (0, ChoiceWords(values: ["ticket": "a\u{0}"]), ["values.ticket"]),
            (0, ChoiceWords(comment: String(repeating: "c", count: 1001)), ["comment", "values.ticket"]),
        ] as [(Int, ChoiceWords, [String])])
    func refused(button: Int, words: ChoiceWords, paths: [String]) throws {
        let draft = try deploy()
        switch words.checked(button: button, of: draft.buttons!, fields: draft.fields!) {
        case .success(let kept): Issue.record("kept \(kept)")
        case .failure(let invalid): #expect(invalid.errors.map(\.field) == paths)
        }
    }

    @Test("A comment of 1 000 code points is taken, 1 001 is not, whatever their bytes", arguments: ["c", "é", "😀"])
    func commentLength(unit: String) throws {
        let draft = try deploy()
        let fits = ChoiceWords(comment: String(repeating: unit, count: 1000))
        #expect((try? fits.checked(button: 2, of: draft.buttons!, fields: draft.fields!).get()) == fits)
        let over = ChoiceWords(comment: String(repeating: unit, count: 1001))
        #expect(over.shapeProblems.map(\.reason) == ["must be at most 1000 characters, got 1001"])
    }

    @Test("The reasons say what to do")
    func reasons() throws {
        let draft = try deploy()
        let words = ChoiceWords(values: ["nope": "x", "reason": "y"])
        let errors = try #require(words.checked(button: 0, of: draft.buttons!, fields: draft.fields!).failure).errors
        #expect(
            errors == [
                FieldError(field: "values.nope", reason: "the alert has no field nope; its fields are ticket, reason"),
                FieldError(field: "values.reason", reason: #"is not asked for button "Deploy" (it belongs to "Cancel")"#),
                FieldError(field: "values.ticket", reason: #"is required for button "Deploy""#),
            ])
    }
}

@Suite("Words on the board: kept in the vote and the result, refused without a change")
struct BoardWordsTests {
    @Test("A choice's comment and values are in its vote and in the result")
    func keptInResult() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(try deploy(), now: at(0))
        #expect(alert.fields.map(\.name) == ["ticket", "reason"])
        let words = ChoiceWords(comment: "window agreed", values: ["ticket": "OPS-1"])
        let (answered, change) = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", words: words, now: at(10))
        #expect(answered.state == .answered)
        #expect(answered.result?.comment == "window agreed" && answered.result?.values == ["ticket": "OPS-1"])
        #expect(
            answered.votes == [
                Vote(
                    decidedBy: "alice", button: "Deploy", buttonIndex: 0, at: at(10), comment: "window agreed", values: ["ticket": "OPS-1"])
            ])
        #expect(change.decided == [answered])
    }

    @Test("Words that do not fit are invalid-answer with each error, and change nothing")
    func refusedWithoutChange() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(try deploy(), now: at(0))
        let before = board.alert(alert.id)
        do {
            _ = try board.choose(.title("Deploy"), for: alert.id, on: "ops", by: "alice", words: ChoiceWords(comment: "go"), now: at(10))
            Issue.record("a Deploy without its required ticket was taken")
        } catch {
            #expect(error.code == .invalidAnswer)
            #expect(error.errors.map(\.field) == ["values.ticket"])
        }
        #expect(board.alert(alert.id) == before)
        #expect(board.displayed(on: "ops")?.votes.isEmpty == true)
        // The cancel button asks for no ticket: a person can say no without one, and say why.
        let (cancelled, _) = try board.choose(
            .title("Cancel"), for: alert.id, on: "ops", by: "bob",
            words: ChoiceWords(comment: "freeze until Monday", values: ["reason": "freeze"]),
            now: at(20))
        #expect(cancelled.result?.cancelled == true && cancelled.result?.comment == "freeze until Monday")
        #expect(cancelled.result?.values == ["reason": "freeze"])
    }

    @Test("Under a quorum each vote keeps its own words; the result has the deciding vote's")
    func quorumVotes() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(try deploy(quorum: 2), now: at(0))
        let (voted, _) = try board.choose(
            .title("Deploy"), for: alert.id, on: "ops", by: "alice", words: ChoiceWords(comment: "LGTM", values: ["ticket": "OPS-1"]),
            now: at(10))
        #expect(voted.state == .displayed && voted.votes.first?.comment == "LGTM")
        let (answered, _) = try board.choose(
            .title("Deploy"), for: alert.id, on: "ops", by: "bob", words: ChoiceWords(values: ["ticket": "OPS-2"]), now: at(20))
        #expect(answered.state == .answered)
        #expect(answered.votes.map(\.comment) == ["LGTM", nil])
        #expect(answered.votes.map(\.values) == [["ticket": "OPS-1"], ["ticket": "OPS-2"]])
        #expect(answered.result?.comment == nil && answered.result?.values == ["ticket": "OPS-2"])
        #expect(answered.result?.decidedBy == "bob")
    }

    @Test("A vote again is a safe retry whatever its words: nothing changes, nothing is checked")
    func repeatIgnoresWords() throws {
        var board = AlertBoard()
        let alert = try board.postCommitted(try deploy(quorum: 2), now: at(0))
        let (voted, _) = try board.choose(
            .title("Deploy"), for: alert.id, on: "ops", by: "alice", words: ChoiceWords(values: ["ticket": "OPS-1"]), now: at(10))
        let (again, change) = try board.choose(
            .title("Deploy"), for: alert.id, on: "ops", by: "alice", words: ChoiceWords(comment: "other"), now: at(20))
        #expect(change.saved.isEmpty && again == voted)
    }

    @Test("A result read back from a store takes its words from its deciding vote")
    func resultFromVotes() {
        let votes = [
            Vote(decidedBy: "alice", button: "Deploy", buttonIndex: 0, at: at(1), comment: "a"),
            Vote(decidedBy: "bob", button: "Deploy", buttonIndex: 0, at: at(2), comment: "b", values: ["ticket": "x"]),
        ]
        let result = Alert.result(AlertResult(outcome: .answered, button: "Deploy", buttonIndex: 0, decidedBy: "bob"), votes: votes)
        #expect(result?.comment == "b" && result?.values == ["ticket": "x"] && result?.votes == votes)
        let withdrawn = Alert.result(AlertResult(outcome: .withdrawn, decidedBy: "poster"), votes: [votes[0]])
        #expect(withdrawn?.comment == nil && withdrawn?.values == [:] && withdrawn?.votes == [votes[0]])
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
