import AlertdWire
import MCP

/// The tools `alertctl mcp` offers, each with a JSON Schema (2020-12) for its input and its
/// structured result.
enum Tools {
    static let askHuman = "ask_human"
    static let checkAnswer = "check_answer"
    static let withdrawQuestion = "withdraw_question"
    static let notifyHuman = "notify_human"
    static let requestPermission = "request_permission"

    /// The argument names each tool takes (``Arguments`` refuses others, except for
    /// request_permission, which a host calls and may send more).
    static let names: [String: [String]] = [
        askHuman: ["title", "message", "buttons", "priority", "timeout_seconds", "client", "quorum", "fields"],
        checkAnswer: ["alert_id", "wait_seconds", "client"],
        withdrawQuestion: ["alert_id", "client"],
        notifyHuman: ["title", "message", "priority", "dismiss_after", "client"],
        requestPermission: ["tool_name", "input", "tool_use_id"],
    ]

    /// The longest a call may wait: a day. Longer questions are asked with `timeout_seconds`
    /// and followed with check_answer.
    static let maxWait: Double = 86_400

    static func all(client: String, defaultTimeout: Double, maxPriority: Int = 0) -> [Tool] {
        let priority = priority(maxPriority)
        return [
            Tool(
                name: askHuman, title: "Ask a person",
                description: """
                    Ask a person a question and wait for their answer. The question appears on the alertd dashboard \
                    of client '\(client)', where an operator picks one of the buttons. Use it before anything \
                    destructive, irreversible, costly or outside what you were asked to do, and when you need a \
                    decision only a person can make. The result says which button was chosen (status 'answered'; \
                    'cancelled' is true for the cancel-style button: do not go ahead), who chose it (decided_by), \
                    or that nobody did: 'expired', 'withdrawn', or 'not_answered_yet' when timeout_seconds passed \
                    first — then call check_answer with the alert_id to keep waiting. Calling again with the same \
                    arguments before you got an answer waits for the same question; it never asks twice. The person \
                    may give a comment (why), returned as 'comment'; 'fields' asks them for values (a ticket, a \
                    window), returned as 'values'. 'quorum' asks several different people to agree.
                    """,
                inputSchema: object(
                    [
                        "title": string("The question, one line (1–256 characters), e.g. 'Drop table orders_old on prod-db?'.", max: 256),
                        "message": string(
                            "What the person needs to decide: what you will do, why, and what each answer leads to (at most 4096 characters).",
                            max: 4096),
                        "buttons": buttons,
                        "priority": priority,
                        "timeout_seconds": seconds(
                            "How long to wait for the answer (default \(Arguments.format(defaultTimeout))). 0 asks and returns at once.",
                            minimum: 0),
                        "client": clientProperty(client),
                        "quorum": [
                            "type": "integer", "minimum": 1, "maximum": 10,
                            "description":
                                "How many different people must choose the same button (default 1). Any one choosing the cancel-style button stops it at once.",
                        ],
                        "fields": fields,
                    ], required: ["title", "buttons"]),
                annotations: .init(
                    title: "Ask a person", readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true),
                outputSchema: answerSchema),
            Tool(
                name: checkAnswer, title: "Check an answer",
                description: """
                    The state of a question asked earlier with ask_human, by its alert_id: answered (and which button, \
                    by whom), still waiting, expired or withdrawn. With wait_seconds it waits up to that long for the answer.
                    """,
                inputSchema: object(
                    [
                        "alert_id": string("The alert_id an earlier ask_human returned.", max: 128),
                        "wait_seconds": seconds("Wait up to this long for an answer (default 0: look and return).", minimum: 0),
                        "client": clientProperty(client),
                    ], required: ["alert_id"]),
                annotations: .init(title: "Check an answer", readOnlyHint: true, idempotentHint: true, openWorldHint: true),
                outputSchema: answerSchema),
            Tool(
                name: withdrawQuestion, title: "Withdraw a question",
                description: """
                    Take back a question that is still waiting (you changed your mind, or no longer need the answer): \
                    it disappears from the dashboard. If a person answered first, the result says so (status 'answered').
                    """,
                inputSchema: object(
                    [
                        "alert_id": string("The alert_id of the question to withdraw.", max: 128),
                        "client": clientProperty(client),
                    ], required: ["alert_id"]),
                annotations: .init(
                    title: "Withdraw a question", readOnlyHint: false, destructiveHint: false, idempotentHint: true,
                    openWorldHint: true),
                outputSchema: answerSchema),
            Tool(
                name: notifyHuman, title: "Notify a person",
                description: """
                    Show a person a notice without buttons on the alertd dashboard of client '\(client)' (finished \
                    work, something to know). It is displayed in turn and dismissed dismiss_after seconds after it \
                    appears; this call returns as soon as alertd holds it and does not wait.
                    """,
                inputSchema: object(
                    [
                        "title": string("The notice, one line (1–256 characters).", max: 256),
                        "message": string("More text (at most 4096 characters).", max: 4096),
                        "priority": priority,
                        "dismiss_after": seconds(
                            "Seconds the notice stays displayed (default: alertd's, 2 s unless configured).", minimum: 0,
                            exclusive: true),
                        "client": clientProperty(client),
                    ], required: ["title"]),
                annotations: .init(
                    title: "Notify a person", readOnlyHint: false, destructiveHint: false, idempotentHint: true,
                    openWorldHint: true),
                outputSchema: noticeSchema),
            Tool(
                name: requestPermission, title: "Ask a person for permission",
                description: """
                    Claude Code's permission prompt (claude --permission-prompt-tool mcp__alertd__request_permission): \
                    asks a person on the alertd dashboard of client '\(client)' whether the agent may use tool_name with \
                    input, and returns as text {"behavior": "allow", "updatedInput": <input>} when they chose Allow, else \
                    {"behavior": "deny", "message": <their comment, or why nobody allowed it>}. Nobody answering in \
                    time, an expiry, or alertd out of reach denies; only a person allows.
                    """,
                inputSchema: [
                    "type": "object",
                    "properties": [
                        "tool_name": ["type": "string", "minLength": 1, "description": "The tool the agent wants to use."],
                        "input": ["type": "object", "description": "The tool's input, shown to the person."],
                        "tool_use_id": ["type": "string", "description": "The host's id of this use of the tool."],
                    ],
                    "required": ["tool_name", "input"],
                    // A host calls it, not a model; members a newer host sends are ignored.
                    "additionalProperties": true,
                ],
                annotations: .init(
                    title: "Ask a person for permission", readOnlyHint: false, destructiveHint: false, idempotentHint: true,
                    openWorldHint: true),
                outputSchema: permissionSchema),
        ]
    }

    // MARK: Schemas

    static let states: [Value] = AlertState.allCases.map { .string($0.rawValue) }

    /// The structured result of ask_human, check_answer and withdraw_question (see ``Answer``).
    static let answerSchema: Value = [
        "type": "object",
        "properties": [
            "status": [
                "type": "string",
                "enum": ["answered", "not_answered_yet", "dismissed", "expired", "withdrawn"],
                "description": "answered: a button was chosen; not_answered_yet: still waiting; otherwise why nobody answered.",
            ],
            "alert_id": ["type": "string", "description": "The question's id on alertd, for check_answer and withdraw_question."],
            "client": ["type": "string"],
            "state": ["type": "string", "enum": .array(states)],
            "position": [
                "type": ["integer", "null"], "description": "0 while displayed, n while n questions are ahead of it; null once decided.",
            ],
            "button": ["type": ["string", "null"], "description": "The chosen button's title."],
            "button_index": ["type": ["integer", "null"]],
            "cancelled": ["type": "boolean", "description": "True when the chosen button is the cancel-style one."],
            "decided_by": [
                "type": ["string", "null"], "description": "The name of the alertd token that answered or withdrew it.",
            ],
            "decided_at": ["type": ["string", "null"], "description": "RFC 3339."],
            "expires_at": ["type": "string", "description": "When it expires if nobody answers (RFC 3339)."],
            "comment": ["type": ["string", "null"], "description": "Why: what the person who decided wrote, if anything."],
            "values": [
                "type": "object", "additionalProperties": ["type": "string"],
                "description": "The values of 'fields' the person gave, by field name; {} when none.",
            ],
            "votes": [
                "type": "array",
                "description": "Every choice made so far (with a quorum, one per person), in order.",
                "items": [
                    "type": "object",
                    "properties": [
                        "decided_by": ["type": ["string", "null"]], "button": ["type": ["string", "null"]],
                        "comment": ["type": ["string", "null"]],
                    ],
                    "required": ["decided_by", "button", "comment"],
                    "additionalProperties": false,
                ],
            ],
        ],
        "required": [
            "status", "alert_id", "client", "state", "position", "button", "button_index", "cancelled", "decided_by",
            "decided_at", "expires_at", "comment", "values", "votes",
        ],
        "additionalProperties": false,
    ]

    /// The structured result of request_permission (its text is the same object as JSON).
    static let permissionSchema: Value = [
        "type": "object",
        "properties": [
            "behavior": ["type": "string", "enum": ["allow", "deny"]],
            "updatedInput": ["type": "object", "description": "With allow: the input, as it came."],
            "message": ["type": "string", "description": "With deny: the person's comment, or why nobody allowed it."],
        ],
        "required": ["behavior"],
        "additionalProperties": false,
    ]

    /// A field of ask_human (SPEC §13).
    private static let fields: Value = [
        "type": "array",
        "maxItems": 5,
        "description": """
        Values to ask the person for with their answer, e.g. [{"name": "ticket", "label": "Change ticket", "required": true}]. \
        Each belongs to every button but the cancel one unless 'buttons' names which.
        """,
        "items": [
            "type": "object",
            "properties": [
                "name": ["type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$", "description": "The key of its value in 'values'."],
                "label": ["type": "string", "minLength": 1, "maxLength": 64],
                "placeholder": ["type": "string", "maxLength": 256],
                "required": ["type": "boolean"],
                "max_length": ["type": "integer", "minimum": 1, "maximum": 1000],
                "buttons": ["type": "array", "items": ["type": "string"], "minItems": 1],
            ],
            "required": ["name"],
            "additionalProperties": false,
        ],
    ]

    /// The structured result of notify_human.
    static let noticeSchema: Value = [
        "type": "object",
        "properties": [
            "alert_id": ["type": "string"],
            "client": ["type": "string"],
            "state": ["type": "string", "enum": .array(states)],
            "position": ["type": ["integer", "null"], "description": "0 when displayed now, n when n alerts are ahead of it."],
        ],
        "required": ["alert_id", "client", "state", "position"],
        "additionalProperties": false,
    ]

    private static let buttons: Value = [
        "type": "array",
        "minItems": 1,
        "maxItems": 16,
        "description": """
        The answers the person can choose, in order, e.g. [{"title": "Deploy"}, {"title": "Cancel", "style": "cancel"}]. \
        Titles are unique, 1–64 characters; at most one button has style cancel.
        """,
        "items": [
            "type": "object",
            "properties": [
                "title": ["type": "string", "minLength": 1, "maxLength": 64],
                "style": [
                    "type": "string", "enum": ["default", "cancel", "destructive"],
                    "description": "default (the default), cancel (means no), destructive (shown in red).",
                ],
            ],
            "required": ["title"],
            "additionalProperties": false,
        ],
    ]

    private static func priority(_ maximum: Int) -> Value {
        [
            "type": "integer", "minimum": -100, "maximum": .int(maximum),
            "description": .string(
                "−100…\(maximum), default 0; higher is shown earlier. Keep 0 unless it is urgent"
                    + (maximum == 0 ? " (this server allows no higher)." : ".")),
        ]
    }

    private static func object(_ properties: [String: Value], required: [String]) -> Value {
        [
            "type": "object", "properties": .object(properties), "required": .array(required.map { .string($0) }),
            "additionalProperties": false,
        ]
    }

    private static func string(_ description: String, max: Int) -> Value {
        ["type": "string", "minLength": 1, "maxLength": .int(max), "description": .string(description)]
    }

    private static func seconds(_ description: String, minimum: Double, exclusive: Bool = false) -> Value {
        [
            "type": "number", (exclusive ? "exclusiveMinimum" : "minimum"): .double(minimum), "maximum": .double(maxWait),
            "description": .string(description),
        ]
    }

    private static func clientProperty(_ client: String) -> Value {
        [
            "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
            "description": .string("The alertd client (queue) to use; default '\(client)'. Leave it out unless told otherwise."),
        ]
    }
}
