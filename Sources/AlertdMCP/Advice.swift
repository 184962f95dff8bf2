import AlertdClient
import AlertdWire

/// What a tool was doing when alertd failed it, for the sentence that explains the failure.
enum Step: Sendable {
    /// Posting a question or a notice to a client.
    case posting(client: String)
    /// Reading, or waiting for, an alert.
    case reading(client: String, id: String)
    /// Withdrawing an alert.
    case withdrawing(client: String, id: String)

    var client: String {
        switch self {
        case .posting(let client), .reading(let client, _), .withdrawing(let client, _): client
        }
    }

    /// The alert concerned, once it exists.
    var alertID: String? {
        switch self {
        case .posting: nil
        case .reading(_, let id), .withdrawing(_, let id): id
        }
    }
}

/// Turns an alertd error into what the agent reads: what happened and what to do next.
/// Every error a tool meets ends here, so none crashes the server or reaches the client
/// as a protocol error.
enum Advice {
    static func failure(_ error: AlertdError, _ step: Step, daemon: String) -> ToolFailure {
        ToolFailure(text(error, step, daemon: daemon))
    }

    static func text(_ error: AlertdError, _ step: Step, daemon: String) -> String {
        let client = step.client
        var pending = ""
        if let id = step.alertID {
            pending =
                " The question is alert \(id) on \(client); it stays as it is on alertd: call check_answer with "
                + "alert_id \(id) once alertd can be reached again."
        }
        guard let code = error.code else {
            switch error.kind {
            case .connection:
                // The SDK's message starts with "cannot reach alertd: " or "no answer from alertd: ".
                var reason = error.message
                for prefix in ["cannot reach alertd: ", "no answer from alertd: "] where reason.hasPrefix(prefix) {
                    reason.removeFirst(prefix.count)
                }
                var text = "alertd at \(daemon) cannot be reached: \(reason)."
                switch error.certificateProblem {
                case .untrusted:
                    text += " Its TLS certificate is not trusted: give alertctl mcp the CA with --cacert FILE (or ALERTD_CACERT)."
                case .wrongHost:
                    text += " Its TLS certificate is not valid for that host name: use the name the certificate holds in --url."
                case nil:
                    text += " Tell the user alertd seems to be down or the URL (--url, ALERTD_URL) is wrong; try again later."
                }
                if step.alertID == nil {
                    text += " Calling again with the same arguments is safe: it never asks the same question twice."
                }
                return text + pending
            case .invalidURL:
                return "alertctl mcp is configured with a URL that is not an http(s) URL (\(error.message)). Fix --url or ALERTD_URL."
            default:
                return "alertd at \(daemon) answered something that is not alertd's API (\(error.message)). "
                    + "Check that --url names alertd." + pending
            }
        }
        let detail = error.problem.map { " (\($0.status) \($0.code): \($0.detail))" } ?? ""
        switch code {
        case .unauthorized:
            return "alertd refused the token\(detail): alertctl mcp has no valid token. Tell the user to give it a token "
                + "with the post and read roles on \(client) (ALERTD_TOKEN in the MCP server's env, or token_file in "
                + "~/.config/alertd/alertctl.yaml) and restart the MCP server. Retrying will not help."
        case .forbidden:
            let needs =
                switch step {
                case .posting: "post"
                case .reading: "read"
                case .withdrawing: "post"
                }
            return "The token may not do this on client \(client)\(detail): it needs the \(needs) role on \(client). "
                + "Use a client the token is given, or tell the user the token needs post and read on \(client). "
                + "Retrying will not help."
        case .notFound:
            guard let id = step.alertID else { return "alertd knows no such thing\(detail)." }
            return "alertd has no alert \(id) on client \(client)\(detail). Check the alert_id and the client it was asked on; "
                + "an answered alert stays readable only for alertd's retention (7 days by default)."
        case .queueFull:
            return "Client \(client)'s queue is full\(detail): people have too many questions waiting. Do not ask more now; "
                + "tell the user, or try again later."
        case .rateLimited:
            let wait = error.retryAfter.map { "\(Arguments.format($0.rounded(.up))) seconds" } ?? "a few seconds"
            return "alertd is rate-limiting this token\(detail). Wait \(wait), then call again with the same arguments: "
                + "that creates nothing twice." + pending
        case .tooManyWaiters, .unavailable:
            return "alertd is busy or shutting down\(detail). Try again in a few seconds with the same arguments: "
                + "that creates nothing twice." + pending
        case .invalidAlert:
            let fields = error.problem?.errors ?? []
            let list = fields.map { "\($0.field): \($0.reason)" }.joined(separator: "; ")
            return "alertd refused the question as invalid: \(list.isEmpty ? error.description : list). "
                + "Fix those arguments and call again."
        case .badRequest:
            return "alertd refused the request\(detail). Check the client name (letters, digits, '.', '_', '-', at most 64) "
                + "and the alert_id."
        case .idempotencyMismatch:
            return "alertd refused the question\(detail): the same key was used for another question. Change the title or "
                + "message slightly and ask again."
        default:
            return "alertd refused the request\(detail)." + pending
        }
    }
}
