import AlertdClient
import AlertdMCP
import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct MCPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract: "Serve the Model Context Protocol on stdin/stdout: tools that let an AI agent ask a person.",
        discussion: """
            An MCP client (an AI agent's host) starts `alertctl mcp --client ops` and speaks newline-delimited \
            JSON-RPC 2.0 with it on stdin and stdout; nothing else is written to stdout. The tools:

              ask_human           a question with buttons: waits for the answer
              check_answer        a question's state by its id, optionally waiting
              withdraw_question   takes back a question still waiting
              notify_human        a notice without buttons, dismissed after a while
              request_permission  Claude Code's permission prompt, for a person

            ask_human (with fields, a quorum) returns the outcome, the button, decided_by, the \
            person's comment and values, and the alert id, or "not answered yet" \
            with the id once its timeout_seconds (default --timeout) pass. While a call waits it sends \
            progress notifications (when the client asked for them with a progressToken), at most \
            --progress-interval seconds apart. A cancelled call (notifications/cancelled) stops waiting; with \
            --withdraw-on-cancel it also withdraws its question, as does the end of input or SIGTERM while \
            a question is waited for. Every alertd error (a refused token, a full queue, a rate limit, a \
            daemon that cannot be reached) is a tool result marked as an error that says what to do. A post \
            carries an Idempotency-Key derived from the question and this session: the agent calling again \
            with the same arguments before it saw the answer gets the same question, never a second one.

            What the agent may do is bounded besides the token: it posts to --client only \
            (--allow-client ID widens that, repeatable, * for any the token has), at a priority of \
            at most --max-priority (default 0), and check_answer and withdraw_question act only on \
            the questions this session asked (--any-question widens that).

            The token needs the post and read roles on the agents' clients, and nothing else. An MCP \
            client's configuration:

              {"mcpServers": {"alertd": {
                "command": "alertctl", "args": ["mcp", "--client", "ops"],
                "env": {"ALERTD_URL": "https://alertd.internal:8443",
                        "ALERTD_TOKEN": "alertd_..."}}}}

            See docs/agents.md.
            """)

    /// What `alertctl mcp` says when its stdin is a terminal rather than an MCP client.
    static func onATerminal(client: String) -> String {
        "this is an MCP server: it speaks the Model Context Protocol (JSON-RPC, one message a line) on stdin and "
            + "stdout, for an AI agent's host to start (its tools ask people on client \(client)). It now waits for an MCP "
            + "client's messages on this terminal; Ctrl-D or Ctrl-C ends it. To configure a host: alertctl help mcp, docs/agents.md"
    }

    @OptionGroup var connection: Connection

    @Option(name: .long, help: "The client (display target) questions go to unless a tool call names another.")
    var client: String

    @Flag(name: .customLong("withdraw-on-cancel"), help: "Withdraw the question of an ask_human call that is cancelled.")
    var withdrawOnCancel = false

    @Option(name: .long, help: "Seconds ask_human waits when the call gives no timeout_seconds.")
    var timeout: Double = 600

    @Option(name: .customLong("progress-interval"), help: "The longest pause, in seconds, between two progress notifications.")
    var progressInterval: Double = 15

    @Option(
        name: .customLong("retry-for"),
        help: "Seconds a waiting call keeps trying while alertd cannot be reached, before it fails.")
    var retryFor: Double = 60

    @Option(
        name: .customLong("allow-client"),
        help: "Another client a tool call may name (repeatable; * matches any run of characters). Default: --client only.")
    var allowClient: [String] = []

    @Flag(
        name: .customLong("any-question"),
        help: "Let check_answer and withdraw_question act on any alert id, not only the questions this session asked.")
    var anyQuestion = false

    @Option(name: .customLong("max-priority"), help: "The highest priority a tool call may ask for (-100…100).")
    var maxPriority: Int = 0

    @Option(
        name: .customLong("permission-quorum"),
        help: "How many different people must choose Allow for request_permission (1–10); any one Deny denies.")
    var permissionQuorum: Int = 1

    func validate() throws {
        guard client.range(of: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", options: .regularExpression) != nil else {
            throw ValidationError("--client must be a client id (letters, digits, '.', '_', '-'; at most 64), not \(client)")
        }
        guard timeout >= 0, timeout <= 86_400 else { throw ValidationError("--timeout must be 0 to 86400 seconds") }
        guard progressInterval >= 1, progressInterval <= 60 else {
            throw ValidationError("--progress-interval must be 1 to 60 seconds")
        }
        guard retryFor >= 0, retryFor.isFinite else { throw ValidationError("--retry-for must be 0 or more seconds") }
        guard (-100...100).contains(maxPriority) else { throw ValidationError("--max-priority must be -100 to 100") }
        guard (1...10).contains(permissionQuorum) else { throw ValidationError("--permission-quorum must be 1 to 10") }
        for pattern in allowClient where pattern.isEmpty {
            throw ValidationError("--allow-client needs a client id or a pattern (*), not an empty string")
        }
    }

    func run() async throws {
        try await guarded {
            let alertd = try connection.client()
            var options = MCPOptions(client: client, daemon: alertd.url)
            options.withdrawOnCancel = withdrawOnCancel
            options.defaultTimeout = timeout
            options.progressInterval = progressInterval
            options.retryFor = retryFor
            options.allowedClients = allowClient
            options.anyQuestion = anyQuestion
            options.maxPriority = maxPriority
            options.permissionQuorum = permissionQuorum
            // Started by hand, it would wait in silence for JSON-RPC: say what it is (stderr, so
            // that stdout stays the protocol's).
            if isatty(STDIN_FILENO) == 1 { complain(Self.onATerminal(client: client)) }
            // A client that went away makes writes fail with EPIPE instead of killing the process.
            signal(SIGPIPE, SIG_IGN)
            let transport = LineTransport()
            // SIGINT or SIGTERM ends the session as the client closing stdin does (questions
            // waited for are withdrawn with --withdraw-on-cancel), then the process exits.
            let interrupts = Interrupts {
                Task {
                    await transport.disconnect()
                    // The server then withdraws (with --withdraw-on-cancel) and exits; if it
                    // cannot within 3 s, a signal still ends the process.
                    try? await Task.sleep(for: .seconds(3))
                    Foundation.exit(Exit.interrupted)
                }
            }
            defer { interrupts.stop() }
            do {
                try await AlertdMCPServer(alerts: alertd, options: options).run(transport: transport)
            } catch {
                throw Failure("the MCP server stopped: \(error)", code: Exit.unreachable)
            }
        }
    }
}
